"""Every registered exercise: the reference passes, a stub is [TODO], every listed mistake
fails with a hint that names it. The one table of required ids and mistake names, ``REQUIRED``,
must be registered."""

from __future__ import annotations

import ast
import inspect
import pkgutil
import textwrap
import time
from typing import Any, Callable

import numpy as np
import pytest
import torch
from torch import nn

import course_utils.checks
from course_utils.exercises import _reference_run, check, get_exercise, list_exercises

# The lessons' exercises only: toy exercises registered by other test modules (tests/mutation_toy.py,
# imported at collection by --doctest-modules) are not part of the course.
_LESSONS = {info.name[2:] for info in pkgutil.iter_modules(course_utils.checks.__path__) if info.name.startswith("nb")}
EXERCISES = [e for e in list_exercises() if e.split(".", 1)[0] in _LESSONS]

# A wrong answer whose numbers depend on Python object lifetimes (keyed by id()) sometimes behaves
# exactly like another listed mistake on the first failing case; that other hint is then also true.
ALSO_TRUE: dict[tuple[str, str], tuple[str, ...]] = {
    ("08.saved_activation_bytes", "deduplicated by the tensor object instead of its storage"):
        ("shared tensors counted twice",),
}

# The one table of required exercises (COURSE_DESIGN section 4 and each notebook's exercises): every id
# must be registered, and each word must appear in the name of one of its mistakes.
REQUIRED: dict[str, list[str]] = {
    "00.double": ["modifies the input in place"],
    "00.shrink_until_small": [],
    "00.layer_shapes": [],
    "01.independent_copy": ["from_numpy", "dtype"],
    "01.flatten_batch": [],
    "01.to_device": ["moves only the top level", "returns non-tensors changed", "namedtuple", "containers changed type"],
    "02.per_sample_mse": ["broadcast to (N,N)", "mean over everything", "squeeze() breaks a batch of one"],
    "02.center_columns": ["subtracts row means", "subtracts global mean", "modifies the input in place"],
    "02.pairwise_sq_dists": [],
    "03.accumulated_grads": ["no division by the number of micro-batches", "stale grads not zeroed first",
                             "zeroing inside the loop", ".grad is None"],
    "03.gradient_at": [],
    "03.finite_difference_grad": [],
    "04.count_trainable": ["frozen", "shared params twice"],
    "04.kaiming_init": ["Xavier", "uniform instead of normal", "biases not zeroed", "non-Linear"],
    "05.normalization_stats": ["global instead of per-channel", "wrong axes"],
    "05.make_loaders": ["shuffles the validation set", "not shuffled", "drop_last", "BatchNorm"],
    "05.pad_collate": ["batch_first", "lengths", "fixed length"],
    "06.train_one_epoch": ["missing zero_grad", "missing model.train()", "softmax before CrossEntropyLoss",
                           "last loss or a tensor", "unweighted mean of batch losses", "not moved to `device`"],
    "06.evaluate": ["missing eval()", "gradients tracked", "argmax over the wrong dim",
                    "mean of per-batch accuracies", "global grad mode left off", "not moved to `device`"],
    "06.clipped_step": ["zero_grad", "before backward", "after optimizer.step()", "tensor"],
    "08.training_memory": ["Adam counted once", "grads forgotten", "dtype size ignored"],
    "08.amp_train_step": ["backward on unscaled loss", "`optimizer.step()` instead of `scaler.step`",
                          "no `scaler.update()`", "no `zero_grad`", "wrong low-precision dtype"],
    "08.saved_activation_bytes": ["shared tensors counted twice", "parameters counted",
                                  "pack hook returns the tensor itself (graph never freed)"],
    "09.save_checkpoint": ["optimizer state missing", "scheduler missing", "RNG state missing",
                           "non-atomic write", "no os.fsync"],
    "09.load_checkpoint": ["optimizer state missing", "scheduler missing", "RNG state missing",
                           "weights_only", "`map_location` ignored"],
    "09.latest_checkpoint": ["as text", "temp", "modification time"],
    "09.clean_state_dict": ["anywhere", "_orig_mod.", "in place"],
    "10.seed_everything": ["numpy not seeded", "python `random` not seeded", "global generator returned"],
    "10.nonfinite_layers": ["hooks not removed", "misses Inf"],
    "10.fix_train_step": ["ZERO_GRAD_MISSING", "SOFTMAX_BEFORE_CE", "EVAL_MODE_LEFT_ON"],
    "11.time_it": ["warm-up", "synchronization", "total"],
    "11.mean_epoch_loss": [".item()", "graph", "sums"],
    "11.clip_norm": ["Python if", "swapped", "aliasing"],
    "13.shard_indices": ["overlap", "drops the remainder without padding"],
    "13.average_gradients": ["sums without dividing"],
    "13.should_save": ["every rank saves"],
    "13.unwrapped_state_dict": ["'module.' prefix", "getattr"],
    "07.param_groups": ["biases decayed", "norm weights decayed", "norm layer found by its name",
                        "parameters missing", "tied parameters listed twice", "frozen parameters included",
                        "embedding excluded"],
    "07.early_stopping": ["without a copy", "never loaded back", "`>` instead of `>=`", "min_delta"],
    "07.warmup_cosine": ["start_factor=0", "milestone", "T_max", "ChainedScheduler"],
    "12.onnx_parity": ["training mode", "float64", "NHWC", "no dynamic batch", "different input",
                       "allclose"],
    "12.predict": ["no eval()", "Normalize(0.5, 0.5)", "ImageNet", "wrong dim", "logits returned",
                   "uint8 not scaled", "HWC", "gradients tracked", "single image not batched"],
    "12.save_for_serving": ["torch.save instead of safetensors", "tied (shared) tensors", "buffers missing",
                            "metadata"],
    "14.config_from_args": ["types not converted", "defaults lost", "type=bool", "returns the Namespace",
                            "returns a dict"],
    "14.update_ratio": ["not normalised", "divides by the new weights", "wrong norm", "difference of norms",
                        "tensors, not floats"],
    "14.log_row": ["tensor left in the row", "lr from optimizer.defaults", "step as a float"],
}


def _stub_raises(*args, **kwargs):
    raise NotImplementedError("Your turn: write this function")


def _stub_ellipsis(*args, **kwargs):
    ...


def _stub_return_ellipsis(*args, **kwargs):
    """The learner's stub."""
    return ...  # your code here


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_reference_passes(exercise_id: str) -> None:
    result = check(exercise_id, get_exercise(exercise_id).reference)
    assert result.status == "ok", result.message
    assert result.passed and result.message.startswith("[OK]")


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_is_todo(exercise_id: str) -> None:
    for stub in (_stub_raises, _stub_ellipsis, _stub_return_ellipsis, lambda *a, **k: ...):
        result = check(exercise_id, stub)
        assert result.status == "todo", (stub.__name__, result.message)
        assert result.message.startswith("[TODO]") and not result.passed


class _DropReturns(ast.NodeTransformer):
    """``return value`` -> ``value`` in the function itself (not in functions nested inside it)."""

    def __init__(self) -> None:
        self.depth = 0
        self.dropped = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.depth += 1
        if self.depth == 1:
            self.generic_visit(node)
        self.depth -= 1
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None):
            return node
        self.dropped += 1
        return ast.copy_location(ast.Expr(node.value), node)


def forgot_return(func: Callable[..., Any]) -> Callable[..., Any] | None:
    """``func`` as a learner who forgot ``return`` writes it (None when it returns nothing anyway)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    transformer = _DropReturns()
    tree = ast.fix_missing_locations(transformer.visit(tree))
    if not transformer.dropped:
        return None
    namespace: dict[str, Any] = {}
    exec(compile(tree, f"<forgot-return {func.__name__}>", "exec"), dict(func.__globals__), namespace)
    return namespace[func.__name__]


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_forgotten_return_is_named(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    if not exercise.returns:
        pytest.skip("a side-effect task: returning None is right")
    candidate = forgot_return(exercise.reference)
    assert candidate is not None, "a task that returns a value has a reference with a `return`"
    result = check(exercise_id, candidate)
    assert result.status == "fail", result.message
    assert "did you forget `return`?" in result.message, result.message


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_every_mistake_fails_with_its_own_hint_and_no_other(exercise_id: str) -> None:
    """The confusion matrix: mistake i's example gets hint i, and never the hint of mistake j."""
    exercise = get_exercise(exercise_id)
    assert len(exercise.mistakes) >= 1, "each exercise lists at least one typical mistake"
    wrong: list[str] = []
    for mistake in exercise.mistakes:
        result = check(exercise_id, mistake.example)
        shown = [m.name for m in exercise.mistakes if f"Hint ({m.name})" in result.message]
        allowed = [[mistake.name]] + [[name] for name in ALSO_TRUE.get((exercise_id, mistake.name), ())]
        if result.status != "fail" or shown not in allowed or result.message.count("Hint (") != 1:
            wrong.append(f"{mistake.name!r} -> {result.status}, hints {shown}: {result.message}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_raising_candidate_is_reported_not_raised(exercise_id: str) -> None:
    def broken(*args, **kwargs):
        raise ValueError("learner bug")

    result = check(exercise_id, broken)
    assert result.status == "fail"
    assert "ValueError: learner bug" in result.message
    assert "Traceback" not in result.message


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_wrong_type_is_reported(exercise_id: str) -> None:
    result = check(exercise_id, lambda *a, **k: "a string")
    assert result.status == "fail"
    assert "Traceback" not in result.message


def _missing(exercise_id: str, words: list[str]) -> list[str]:
    """What the registry lacks of one REQUIRED entry: the id itself, or words no mistake name contains."""
    if exercise_id not in list_exercises():
        return [f"{exercise_id} is not registered"]
    names = [m.name for m in get_exercise(exercise_id).mistakes]
    return [f"{exercise_id}: no mistake named with {word!r} (have: {' | '.join(names)})"
            for word in words if not any(word in name for name in names)]


@pytest.mark.parametrize("exercise_id", sorted(REQUIRED))
def test_required_exercise_and_mistakes_present(exercise_id: str) -> None:
    missing = _missing(exercise_id, REQUIRED[exercise_id])
    assert not missing, missing


def test_required_check_catches_a_missing_id_or_mistake() -> None:
    assert _missing("00.no_such_exercise", [])
    assert _missing("00.double", ["a mistake nobody registered"])
    assert _missing("00.double", ["modifies the input in place"]) == []


# --- the four generic mistakes, derived from each exercise's reference ---------------------------------
# A forgotten `return` (above), an endless loop, an in-place edit of an input and a batch never moved to
# `device` must each get a [FAIL] that names that mistake on its first line, on every exercise where the
# mistake can occur. The wrong answers are derived from the reference, so the tests also cover exercises
# added later. Where a mistake cannot occur, the derivation finds nothing to change: for the lessons
# below the exercise must then be listed with its reason (so an exercise never silently drops out);
# for other lessons the test skips with the derived reason.

#: lessons whose exercises must be listed in CANNOT_MODIFY / CANNOT_SKIP_MOVE when the derivation finds nothing
STRICT_LESSONS = {"00", "01", "02", "03", "04", "05", "06", "08", "09", "10", "13"}

#: exercises with no input the task forbids changing in place (a tensor, a module's weights, a container)
CANNOT_MODIFY: dict[str, str] = {
    "04.make_mlp": "its only input is a list of ints (layer sizes)",
    "04.kaiming_init": "the task is to change `module`'s weights in place",
    "05.make_loaders": "its inputs are datasets, which hold no tensor the framework snapshots",
    "06.train_one_epoch": "the task updates `model` and `optimizer`; the batches come from a loader",
    "09.load_checkpoint": "the task is to load state into the model, optimizer, scheduler and generator",
    "09.latest_checkpoint": "its only input is a folder name",
    "10.seed_everything": "its only input is an int",
    "13.shard_indices": "its inputs are ints",
    "13.should_save": "its inputs are ints",
}

#: exercises that take a `device` but whose reference has no `.to(device)` a learner could forget
CANNOT_SKIP_MOVE: dict[str, str] = {}


def _lesson(exercise_id: str) -> str:
    return exercise_id.split(".", 1)[0]


def _first_line(message: str) -> str:
    return message.split("\n", 1)[0]


@pytest.fixture
def short_time_limit(request):
    """The exercise with a short time limit (the endless-loop case waits for it), restored afterwards."""
    exercise = get_exercise(request.param)
    saved = exercise.time_limit, exercise.inspect_time_limit
    exercise.time_limit = exercise.inspect_time_limit = 0.5
    try:
        yield exercise
    finally:
        exercise.time_limit, exercise.inspect_time_limit = saved


def _spin() -> None:
    """A loop whose condition never changes (outside the candidate's own body, so an exercise whose task
    forbids Python loops in the answer still runs it)."""
    done = False
    while not done:
        pass


@pytest.mark.parametrize("short_time_limit", EXERCISES, indirect=True)
def test_endless_loop_is_named(short_time_limit) -> None:
    exercise = short_time_limit
    reference = exercise.reference

    def endless(*args, **kwargs):
        out = reference(*args, **kwargs)
        _spin()
        return out

    started = time.monotonic()
    result = check(exercise.exercise_id, endless)
    assert result.status == "fail", result.message
    assert "loop that never ends" in _first_line(result.message), result.message
    assert "Traceback" not in result.message
    assert time.monotonic() - started < 10, "the time limit stops the loop"


def _forbidden_arguments(exercise) -> set[str] | None:
    """Names of the reference's parameters the task forbids changing: all, less those in ``may_modify`` and
    those the reference itself changes on some case (None when a case cannot be built)."""
    allowed = set(exercise.may_modify)
    try:
        for factory in exercise.cases:
            allowed |= _reference_run(exercise, factory).allowed
    except Exception:  # noqa: BLE001 - a case that cannot run here: the test skips
        return None
    return set(inspect.signature(exercise.reference).parameters) - allowed


def _modifiable_tensor(value: Any) -> Any:
    """The first tensor or NumPy array in ``value`` (a tensor, a module's weights and buffers, a container)
    whose in-place change the framework can see."""
    def usable(t: Any) -> bool:
        if isinstance(t, np.ndarray):
            return t.size > 0 and t.flags.writeable
        return (isinstance(t, torch.Tensor) and t.numel() > 0 and not t.is_sparse
                and t.device.type != "meta")
    if isinstance(value, nn.Module):
        return next((t for t in value.state_dict(keep_vars=True).values() if usable(t)), None)
    if usable(value):
        return value
    items = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) else []
    for item in items:
        found = _modifiable_tensor(item)
        if found is not None:
            return found
    return None


def _nudge(t: Any) -> None:
    if isinstance(t, np.ndarray):
        if t.dtype == bool:
            np.logical_not(t, out=t)
        else:
            t += 1
        return
    with torch.no_grad():
        if t.dtype == torch.bool:
            t.logical_not_()
        else:
            t.add_(1)


def _nudge_first(names: list[str], arguments: dict[str, Any]) -> None:
    """Change the first modifiable tensor among ``names`` (outside the candidate's body: no loop there)."""
    for name in names:
        tensor = _modifiable_tensor(arguments.get(name))
        if tensor is not None:
            _nudge(tensor)
            return


def modifies_an_input(exercise) -> tuple[Callable[..., Any] | None, str]:
    """(the reference followed by an in-place edit of its first forbidden tensor input, the input's name),
    or (None, why there is none)."""
    forbidden = _forbidden_arguments(exercise)
    if forbidden is None:
        return None, "a case could not be built here"
    reference = exercise.reference
    signature = inspect.signature(reference)
    names = [n for n in signature.parameters if n in forbidden]
    args, kwargs = exercise.cases[0]()
    bound = signature.bind(*args, **kwargs)
    if not any(_modifiable_tensor(bound.arguments.get(n)) is not None for n in names):
        return None, f"no tensor among the inputs the task forbids changing ({', '.join(names) or 'none'})"

    def modifies(*args, **kwargs):
        out = reference(*args, **kwargs)
        _nudge_first(names, signature.bind(*args, **kwargs).arguments)  # e.g. `x += 1` on the caller's x
        return out

    return modifies, ""


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_input_modified_in_place_is_named(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    candidate, why = modifies_an_input(exercise)
    if candidate is None:
        if _lesson(exercise_id) in STRICT_LESSONS:
            assert exercise_id in CANNOT_MODIFY, f"{why}: list it in CANNOT_MODIFY with the reason"
        pytest.skip(CANNOT_MODIFY.get(exercise_id, why))
    assert exercise_id not in CANNOT_MODIFY, f"listed in CANNOT_MODIFY, but an input can be modified: {why}"
    result = check(exercise_id, candidate)
    assert result.status == "fail", result.message
    assert "in place" in _first_line(result.message), result.message


class _SkipMove(ast.NodeTransformer):
    """``t.to(device, ...)`` / ``t.cuda()`` -> ``t`` (the learner who never moves the batch)."""

    def __init__(self, device_names: set[str]) -> None:
        self.device_names = device_names
        self.removed = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute):
            return node
        uses_device = any(isinstance(a, ast.Name) and a.id in self.device_names
                          for a in [*node.args, *(k.value for k in node.keywords if k.arg == "device")])
        if (func.attr == "to" and uses_device) or func.attr == "cuda":
            self.removed += 1
            return func.value
        return node


def skips_the_move(exercise) -> tuple[Callable[..., Any] | None, str]:
    """(the reference without its moves to ``device``, "") or (None, why there is none)."""
    reference = exercise.reference
    devices = {n for n in inspect.signature(reference).parameters if n == "device"}
    if not devices:
        return None, "no `device` argument"
    tree = ast.parse(textwrap.dedent(inspect.getsource(reference)))
    transformer = _SkipMove(devices)
    tree = ast.fix_missing_locations(transformer.visit(tree))
    if not transformer.removed:
        return None, "the reference has no `.to(device)` a learner could leave out"
    namespace: dict[str, Any] = {}
    exec(compile(tree, f"<not-moved {reference.__name__}>", "exec"), dict(reference.__globals__), namespace)
    return namespace[reference.__name__], ""


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_batch_not_moved_to_device_is_named(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    candidate, why = skips_the_move(exercise)
    if candidate is None:
        if why != "no `device` argument" and _lesson(exercise_id) in STRICT_LESSONS:
            assert exercise_id in CANNOT_SKIP_MOVE, f"{why}: list it in CANNOT_SKIP_MOVE with the reason"
        pytest.skip(CANNOT_SKIP_MOVE.get(exercise_id, why))
    result = check(exercise_id, candidate)
    assert result.status == "fail", result.message
    assert "`device`" in _first_line(result.message), result.message


def test_derived_wrong_answers_differ_from_the_reference() -> None:
    """The derivations can fail: each finds its mistake on an exercise where it exists and nothing where
    it does not."""
    assert forgot_return(get_exercise("00.double").reference) is not None
    assert forgot_return(get_exercise("04.kaiming_init").reference) is None
    assert modifies_an_input(get_exercise("00.double"))[0] is not None
    assert modifies_an_input(get_exercise("10.seed_everything"))[0] is None
    assert skips_the_move(get_exercise("06.evaluate"))[0] is not None
    assert skips_the_move(get_exercise("00.double")) == (None, "no `device` argument")
