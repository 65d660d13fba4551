"""Every registered exercise: the reference passes, a stub is [TODO], every listed mistake
fails with a hint that names it. The one table of required ids and mistake names, ``REQUIRED``,
must be registered."""

from __future__ import annotations

import ast
import inspect
import pkgutil
import textwrap
from typing import Any, Callable

import pytest

import course_utils.checks
from course_utils.exercises import check, get_exercise, list_exercises

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
    "01.to_device": ["moves only the top level", "returns non-tensors changed", "namedtuple"],
    "02.per_sample_mse": ["broadcast to (N,N)", "mean over everything"],
    "02.center_columns": ["subtracts row means", "subtracts global mean"],
    "02.pairwise_sq_dists": [],
    "03.accumulated_grads": ["no division by the number of micro-batches", "stale grads not zeroed first",
                             "zeroing inside the loop"],
    "03.gradient_at": [],
    "03.finite_difference_grad": [],
    "04.count_trainable": ["frozen", "shared params twice"],
    "04.kaiming_init": ["Xavier", "biases not zeroed", "non-Linear"],
    "05.normalization_stats": ["global instead of per-channel", "wrong axes"],
    "05.make_loaders": ["shuffles the validation set", "not shuffled", "drop_last", "BatchNorm"],
    "05.pad_collate": ["batch_first", "lengths", "fixed length"],
    "06.train_one_epoch": ["missing zero_grad", "missing model.train()", "softmax before CrossEntropyLoss",
                           "last loss or a tensor", "unweighted mean of batch losses"],
    "06.evaluate": ["missing eval()", "gradients tracked", "argmax over the wrong dim",
                    "mean of per-batch accuracies"],
    "06.clipped_step": ["zero_grad", "before backward", "after optimizer.step()", "tensor"],
    "08.training_memory": ["Adam counted once", "grads forgotten", "dtype size ignored"],
    "08.amp_train_step": ["backward on unscaled loss", "`optimizer.step()` instead of `scaler.step`",
                          "no `scaler.update()`"],
    "08.saved_activation_bytes": ["shared tensors counted twice", "parameters counted",
                                  "pack hook returns the tensor itself (graph never freed)"],
    "09.save_checkpoint": ["optimizer state missing", "scheduler missing", "RNG state missing",
                           "non-atomic write"],
    "09.load_checkpoint": ["optimizer state missing", "scheduler missing", "RNG state missing",
                           "weights_only"],
    "09.latest_checkpoint": ["as text", "temp", "modification time"],
    "09.clean_state_dict": ["anywhere", "_orig_mod.", "in place"],
    "10.seed_everything": ["numpy not seeded", "python `random` not seeded"],
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
