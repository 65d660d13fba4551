"""The check() contract itself: unknown ids, non-callables, messages, fresh inputs; and what the framework
checks on every run (stubs, a forgotten `return`, time limit, inputs modified in place, global state
left changed, hooks, HostTensor), on toy exercises registered for one test only."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Iterator

import pytest
import torch
from torch import nn

from course_utils import exercises
from course_utils.exercises import CheckResult, Exercise, HostTensor, Mistake, check, is_stub, list_exercises


def test_unknown_id_suggests_close_match() -> None:
    result = check("01.indepndent_copy", lambda a: a)
    assert result.status == "fail"
    assert "Did you mean 01.independent_copy" in result.message


def test_non_callable_candidate() -> None:
    result = check("00.double", torch.ones(2))
    assert result.status == "fail" and "expected a function" in result.message


def test_called_instead_of_passed() -> None:
    result = check("00.double", None)
    assert result.status == "fail" and "without calling it" in result.message


def test_result_repr_is_the_message() -> None:
    result = check("00.double", lambda x: 2 * x)
    assert isinstance(result, CheckResult)
    assert repr(result) == result.message
    assert result.message.startswith("[OK] 00.double: passed ") and result.message.endswith(" test cases.")


def test_wrong_shape_is_named() -> None:
    result = check("00.double", lambda x: (2 * x).reshape(-1, 1))
    assert result.status == "fail" and "shape" in result.message


def test_candidate_runs_on_fresh_inputs() -> None:
    seen = []

    def spy(x):
        seen.append(x.clone())
        return 2 * x

    check("00.double", spy)
    assert len(seen) >= 2 and seen[0].shape != seen[1].shape


def test_a_hardcoded_answer_fails() -> None:
    example = torch.tensor([1.0, 2.0, 3.0])
    result = check("00.double", lambda x: 2 * example)
    assert result.status == "fail"


def test_ids_are_sorted_and_prefixed() -> None:
    ids = list_exercises()
    assert ids == sorted(ids)
    assert all(i[:2].isdigit() and i[2] == "." for i in ids)


# --- toy exercises -----------------------------------------------------------------------------------

@pytest.fixture
def toy() -> Iterator[Callable[..., str]]:
    """Register a toy exercise for one test: toy(reference, cases, **fields) -> its id."""
    added: list[str] = []

    def make(reference: Callable[..., Any], cases: list[Callable[[], Any]] | None = None,
             verify: Callable[..., Any] | None = None, **fields: Any) -> str:
        exercise_id = f"99.toy_{len(added)}"
        exercises.register(Exercise(
            exercise_id, "a toy task", reference,
            cases or [lambda: ((torch.arange(4.0),), {}), lambda: ((torch.ones(2, 3),), {})],
            verify or (lambda out, ref, args, kwargs: exercises.compare_tensors(out, ref)),
            **fields))
        added.append(exercise_id)
        return exercise_id

    yield make
    for exercise_id in added:
        exercises._REGISTRY.pop(exercise_id, None)


def _double(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


def test_stub_bodies_are_todo_and_a_missing_return_is_a_fail(toy) -> None:
    exercise_id = toy(_double)

    def raises(x):
        raise NotImplementedError("your code here")

    def ellipsis(x):
        ...

    def docstring_only(x):
        """Double x."""

    def return_ellipsis(x):
        y = x + 1  # noqa: F841 - setup lines before the learner's `return ...`
        return ...  # your code here

    def forgot_return(x):
        y = 2 * x  # noqa: F841 - the learner forgot `return y`

    for stub in (raises, ellipsis, docstring_only, return_ellipsis, lambda x: ...):
        result = check(exercise_id, stub)
        assert result.status == "todo", (stub, result.message)
    result = check(exercise_id, forgot_return)
    assert result.status == "fail" and "returned None: did you forget `return`?" in result.message
    assert is_stub(ellipsis) and not is_stub(forgot_return) and not is_stub(_double)


def test_todo_names_what_the_stub_is(toy) -> None:
    exercise_id = toy(_double)

    def raises(x):
        raise NotImplementedError("your code here")

    def ellipsis(x):
        ...

    def passes(x):
        pass

    def return_ellipsis(x):
        y = x + 1  # noqa: F841 - setup lines before the learner's `return ...`
        return ...  # your code here

    def raises_later(x):
        y = x + 1  # noqa: F841 - a started answer that still raises the stub's error
        raise NotImplementedError("the rest")

    expected = {raises: "the `raise NotImplementedError`", ellipsis: "the `...`", passes: "the `pass`",
                return_ellipsis: "the `...` your function returns", raises_later: "the `raise NotImplementedError`"}
    for stub, words in expected.items():
        result = check(exercise_id, stub)
        assert result.status == "todo", result.message
        assert f"Replace {words} with your code" in result.message, (stub.__name__, result.message)


def test_not_implemented_from_a_library_is_not_a_stub(toy) -> None:
    exercise_id = toy(_double)

    def calls_module_without_forward(x):
        return nn.Module()(x)  # torch raises NotImplementedError: a finished but wrong answer

    result = check(exercise_id, calls_module_without_forward)
    assert result.status == "fail" and "NotImplementedError" in result.message


def test_side_effect_task_accepts_none(toy) -> None:
    def fill(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.ones_(module.weight)

    def verify(out, ref, args, kwargs):
        return None if bool((args[0].weight == 1).all()) else "expected weights of ones, found others"

    exercise_id = toy(fill, [lambda: ((nn.Linear(3, 2),), {})], verify, returns=False, may_modify=("module",))
    assert check(exercise_id, fill).status == "ok"
    result = check(exercise_id, lambda module: None)
    assert result.status == "todo"

    def wrong(module):
        nn.init.zeros_(module.weight)

    assert "weights of ones" in check(exercise_id, wrong).message


def _spin(x: torch.Tensor) -> torch.Tensor:
    while True:
        x = x + 0


def test_check_runs_on_one_torch_thread_and_restores_the_count(toy) -> None:
    """Tiny cases on a thread pool wait for busy workers (seconds on a loaded machine): one thread."""
    seen: list[int] = []

    def counting(x: torch.Tensor) -> torch.Tensor:
        seen.append(torch.get_num_threads())
        return 2 * x

    exercise_id = toy(_double)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert check(exercise_id, counting).status == "ok"
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_endless_loop_fails_within_the_limit_on_the_main_thread(toy) -> None:
    exercise_id = toy(_double, time_limit=0.3)
    started = time.monotonic()
    result = check(exercise_id, _spin)
    assert time.monotonic() - started < 3
    assert result.status == "fail" and "did not finish within 0.3 s" in result.message
    assert "loop that never ends" in result.message
    assert check(exercise_id, _double).status == "ok"  # still usable afterwards


def test_sleeping_candidate_is_interrupted(toy) -> None:
    exercise_id = toy(_double, time_limit=0.2)
    started = time.monotonic()
    result = check(exercise_id, lambda x: time.sleep(30))
    assert time.monotonic() - started < 3 and "did not finish" in result.message


def test_endless_loop_fails_on_another_thread_too(toy) -> None:
    exercise_id = toy(_double, time_limit=0.3)
    results: list[CheckResult] = []
    previous = sys.gettrace()
    thread = threading.Thread(target=lambda: results.append(check(exercise_id, _spin)))
    started = time.monotonic()
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - started < 5
    assert "did not finish within 0.3 s" in results[0].message
    assert sys.gettrace() is previous


def test_time_limit_restores_a_previous_alarm() -> None:
    import signal

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        with exercises.time_limit(1.0):
            pass
        remaining, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        assert 3.0 < remaining <= 5.0
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not fired


def test_input_modified_in_place_fails_directly_and_through_a_view(toy) -> None:
    exercise_id = toy(_double)

    def direct(x):
        x.mul_(2)
        return x.clone()

    def through_view(x):
        x.view(-1)[0] = 100.0
        return 2 * x.view(-1).clone().view(x.shape).fill_(0) + 2 * x - 2 * x + _double(x.clone())

    def changes_requires_grad(x):
        x.requires_grad_(True)
        return 2 * x.detach()

    for candidate in (direct, through_view):
        result = check(exercise_id, candidate)
        assert result.status == "fail", result.message
        assert "modified its input `x` in place" in result.message and "x.clone()" in result.message
    assert "requires_grad" in check(exercise_id, changes_requires_grad).message


def test_module_and_container_inputs_modified_in_place(toy) -> None:
    def total(model: nn.Module, tensors: list[torch.Tensor]) -> torch.Tensor:
        return model(torch.stack(tensors)).sum()

    def cases():
        torch.manual_seed(0)
        return (nn.Linear(3, 1), [torch.ones(3), torch.zeros(3)]), {}

    exercise_id = toy(total, [cases], lambda out, ref, a, k: exercises.compare_tensors(out, ref))
    assert check(exercise_id, total).status == "ok"

    def edits_weights(model, tensors):
        out = total(model, tensors)
        with torch.no_grad():
            model.weight.zero_()
        return out

    def appends(model, tensors):
        out = total(model, tensors)
        tensors.append(torch.ones(3))
        return out

    assert "`model` in place (`weight`" in check(exercise_id, edits_weights).message
    assert "`tensors` in place (its length changed" in check(exercise_id, appends).message


def test_may_modify_and_reference_changes_are_allowed(toy) -> None:
    def halve_(x: torch.Tensor) -> None:
        x.mul_(0.5)

    def verify(out, ref, args, kwargs):
        return None

    assert check(toy(_double, may_modify=("x",)), lambda x: x.mul_(2)).status == "ok"
    assert check(toy(halve_, verify=verify, returns=False), halve_).status == "ok"


def test_grad_mode_left_off_fails_and_is_restored(toy) -> None:
    exercise_id = toy(_double)

    def leaves_grad_off(x):
        torch.set_grad_enabled(False)
        return 2 * x

    assert torch.is_grad_enabled()
    result = check(exercise_id, leaves_grad_off)
    assert torch.is_grad_enabled()
    assert result.status == "fail" and "grad mode was left off" in result.message
    assert "with torch.no_grad():" in result.message


def test_default_dtype_left_changed_fails_and_is_restored(toy) -> None:
    exercise_id = toy(_double)

    def leaves_float64(x):
        torch.set_default_dtype(torch.float64)
        return 2 * x

    result = check(exercise_id, leaves_float64)
    assert torch.get_default_dtype() == torch.float32
    assert "default dtype was left changed" in result.message


def _forward_sum(model: nn.Module, x: torch.Tensor) -> float:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(x).sum().item()
    model.train(was_training)
    return out


def _model_case() -> tuple[tuple[Any, ...], dict[str, Any]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1))
    return (model, torch.ones(2, 3)), {}


def _close(out, ref, args, kwargs):
    return None if isinstance(out, float) and abs(out - ref) < 1e-5 else f"expected {ref}, found {out!r}"


def test_eval_mode_left_on_fails(toy) -> None:
    exercise_id = toy(_forward_sum, [_model_case], _close)
    assert check(exercise_id, _forward_sum).status == "ok"

    def leaves_eval(model, x):
        model.eval()
        with torch.no_grad():
            return model(x).sum().item()

    result = check(exercise_id, leaves_eval)
    assert result.status == "fail" and "`model` was left in eval mode" in result.message
    assert "model.train(was_training)" in result.message


def test_hooks_left_registered_fail_unless_the_task_keeps_them(toy) -> None:
    def with_hook(model, x):
        model[0].register_forward_hook(lambda m, i, o: None)
        return _forward_sum(model, x)

    def with_tensor_hook(model, x):
        model[0].weight.register_hook(lambda g: g)
        return _forward_sum(model, x)

    def removes_hook(model, x):
        handle = model[0].register_forward_hook(lambda m, i, o: None)
        try:
            return _forward_sum(model, x)
        finally:
            handle.remove()

    exercise_id = toy(_forward_sum, [_model_case], _close)
    for leaky in (with_hook, with_tensor_hook):
        result = check(exercise_id, leaky)
        assert result.status == "fail" and "hook(s) were left registered" in result.message
        assert "finally:" in result.message
    assert check(exercise_id, removes_hook).status == "ok"
    assert check(toy(_forward_sum, [_model_case], _close, keeps_hooks=True), with_hook).status == "ok"


def test_global_module_hook_left_registered_is_removed(toy) -> None:
    exercise_id = toy(_forward_sum, [_model_case], _close)

    def global_hook(model, x):
        nn.modules.module.register_module_forward_hook(lambda m, i, o: None)
        return _forward_sum(model, x)

    before = len(nn.modules.module._global_forward_hooks)
    result = check(exercise_id, global_hook)
    assert "every module (a global hook)" in result.message
    assert len(nn.modules.module._global_forward_hooks) == before


def test_hints_only_on_a_matching_fingerprint(toy) -> None:
    def triple(x):
        return 3 * x

    def raises(x):
        raise ValueError("boom")

    exercise_id = toy(_double, mistakes=[
        Mistake("triples", "use 2, not 3", triple),
        Mistake("raises boom", "do not raise", raises, error_match="boom"),
    ])
    assert "Hint (triples)" in check(exercise_id, triple).message
    other = check(exercise_id, lambda x: 4 * x)
    assert other.status == "fail" and "Hint (" not in other.message and "Task:" in other.message
    assert "Hint (raises boom)" in check(exercise_id, raises).message
    result = check(exercise_id, lambda x: x.no_such_method())
    assert "AttributeError" in result.message and "Hint (" not in result.message


# --- HostTensor --------------------------------------------------------------------------------------

def test_host_tensor_behaves_like_the_tensor_and_moves_clean() -> None:
    weight = torch.ones(3)
    x = HostTensor.wrap(torch.arange(3.0))
    assert (x + 1).tolist() == [1.0, 2.0, 3.0] and x.shape == (3,) and len(x) == 3 and x[1].item() == 1.0
    assert not HostTensor.used_unmoved(x)
    moved = x.to("cpu")
    assert type(moved) is torch.Tensor
    assert torch.equal(moved * weight, torch.arange(3.0))
    assert not HostTensor.used_unmoved(x)
    assert type(HostTensor.wrap(torch.ones(2)).cuda()) is torch.Tensor  # stays on the CPU without a GPU
    assert HostTensor.wrap(torch.ones(2)).to(device="cpu", dtype=torch.float64).dtype == torch.float64


def test_host_tensor_records_a_use_before_the_move() -> None:
    model = nn.Linear(3, 2)
    x = HostTensor.wrap(torch.ones(4, 3))
    _ = x.to("cpu")  # moved, but the result was not assigned
    model(x.float())  # computed from the host tensor alone, then used with the weights
    assert HostTensor.used_unmoved(x)
    y = HostTensor.wrap(torch.ones(4, 3))
    model(y.float().to("cpu"))
    assert not HostTensor.used_unmoved(y)
    HostTensor.reset()
    z = HostTensor.wrap(torch.ones(2))
    assert not HostTensor.any_used_unmoved()
    _ = z * torch.ones(2)
    assert HostTensor.any_used_unmoved()


def test_host_tensor_batches_in_an_exercise(toy) -> None:
    def apply(model: nn.Module, batches: list[torch.Tensor], device: str) -> float:
        return sum(model(x.to(device)).sum().item() for x in batches)

    def case():
        torch.manual_seed(0)
        return (nn.Linear(3, 1), [HostTensor.wrap(torch.ones(2, 3)) for _ in range(2)], "cpu"), {}

    def verify(out, ref, args, kwargs):
        if any(HostTensor.used_unmoved(x) for x in args[1]):
            return "the batch was used without moving it to `device`: write `x = x.to(device)`"
        return _close(out, ref, args, kwargs)

    exercise_id = toy(apply, [case], verify)
    assert check(exercise_id, apply).status == "ok"

    def not_moved(model, batches, device):
        total = 0.0
        for x in batches:
            x.to(device)
            total += model(x).sum().item()
        return total

    assert "without moving it to `device`" in check(exercise_id, not_moved).message


# --- display ---------------------------------------------------------------------------------------

def test_html_block_colours_escapes_and_keeps_the_text_cue() -> None:
    ok = check("00.double", lambda x: 2 * x)
    fail = CheckResult("00.x", "fail", "[FAIL] 00.x: on test case 1: expected <a>, found <b & c>\n"
                                       "  Hint (a name): a long hint that wraps at words")
    todo = CheckResult("00.x", "todo", "[TODO] 00.x: not attempted yet.")
    html_ok, html_fail, html_todo = ok._repr_html_(), fail._repr_html_(), todo._repr_html_()
    assert "[OK]" in html_ok and "#1a7f37" in html_ok
    assert "[FAIL]" in html_fail and "#c62828" in html_fail and "[TODO]" in html_todo
    assert "&lt;a&gt;" in html_fail and "&lt;b &amp; c&gt;" in html_fail and "<a>" not in html_fail
    assert "<b>expected</b>" in html_fail and "<b>found</b>" in html_fail
    assert "word-break: normal" in html_fail and "Hint (a name):" in html_fail
    assert repr(fail) == fail.message


def _moved(batch: list) -> list:
    return [t.to("meta") for t in batch]


def test_an_input_replaced_by_a_tensor_on_another_device_is_named_not_a_traceback(toy) -> None:
    # A learner's to_device that writes the moved tensors back into the caller's list.
    exercise_id = toy(_moved, cases=[lambda: (([torch.ones(2), torch.zeros(3)],), {})],
                      verify=lambda out, ref, args, kwargs: None)

    def in_place(batch: list) -> list:
        for i, t in enumerate(batch):
            batch[i] = t.to("meta")
        return batch

    result = check(exercise_id, in_place)
    assert result.status == "fail" and "in place" in result.message


def test_the_time_limit_never_interrupts_an_import(toy, tmp_path, monkeypatch) -> None:
    # A slow first import (torch.func, sympy...) cut half-way leaves a broken module behind.
    (tmp_path / "slow_probe_module.py").write_text("import time\ntime.sleep(0.8)\nDONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "slow_probe_module", raising=False)

    def imports_slowly(x: torch.Tensor) -> torch.Tensor:
        import slow_probe_module

        assert slow_probe_module.DONE
        return 2 * x

    exercise_id = toy(_double, time_limit=0.3)
    result = check(exercise_id, imports_slowly)
    assert result.status == "ok", result.message


# --- the whole observable state of the caller's objects -------------------------------------------

class _TiedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.embed.weight


def _tied_case() -> tuple[tuple[Any, ...], dict[str, Any]]:
    torch.manual_seed(0)
    return (_TiedNet(),), {}


def _weight_sum(model: nn.Module) -> float:
    return float(sum(p.detach().sum() for p in model.parameters()))


def test_broken_tie_replaced_parameter_and_changed_strides_are_named(toy) -> None:
    exercise_id = toy(_weight_sum, [_tied_case], _close)
    assert check(exercise_id, _weight_sum).status == "ok"

    def unties(model):
        total = _weight_sum(model)
        model.out.weight = nn.Parameter(model.out.weight.detach().clone())
        return total

    result = check(exercise_id, unties)
    assert result.status == "fail" and "`out.weight`" in result.message, result.message

    def re_strided(model):
        model.embed.weight.data = model.embed.weight.data.t().contiguous().t()
        return _weight_sum(model)

    result = check(exercise_id, re_strided)
    assert result.status == "fail" and "strides" in result.message, result.message


def _first_pixel(images: list) -> int:
    import numpy as np

    return int(sum(np.asarray(image)[0, 0, 0] for image in images))


def _image_case() -> tuple[tuple[Any, ...], dict[str, Any]]:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    return ([Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)) for _ in range(2)],), {}


def test_pil_images_and_list_items_replaced_or_changed_are_named(toy) -> None:
    from PIL import Image

    exercise_id = toy(_first_pixel, [_image_case], lambda out, ref, a, k: None if out == ref else "expected")
    assert check(exercise_id, _first_pixel).status == "ok"

    def replaces(images):
        for i, image in enumerate(images):
            images[i] = image.convert("RGB").copy()
        return _first_pixel(images)

    result = check(exercise_id, replaces)
    assert result.status == "fail" and "[0]: it was replaced" in result.message, result.message

    def draws(images):
        images[1].putpixel((3, 3), (0, 0, 0))
        return _first_pixel(images)

    result = check(exercise_id, draws)
    assert result.status == "fail" and "the image changed" in result.message, result.message
    assert Image  # imported for the case factory


def _to_eval(model: nn.Module, x: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return model(x).sum().item()


def test_train_flags_must_end_as_the_task_leaves_them_in_every_submodule(toy) -> None:
    """The reference leaves the model in eval mode: a candidate that switches it back, or leaves a
    submodule in train mode, fails although its number is right."""
    exercise_id = toy(_to_eval, [lambda: ((_model_case()[0][0].train(), torch.ones(2, 3)), {})], _close)
    assert check(exercise_id, _to_eval).status == "ok"

    def switches_back(model, x):
        out = _to_eval(model, x)
        model.train()
        return out

    result = check(exercise_id, switches_back)
    assert result.status == "fail" and "left in train mode" in result.message, result.message

    def dropout_left_on(model, x):
        out = _to_eval(model, x)
        model[1].train()
        return out

    result = check(exercise_id, dropout_left_on)
    assert result.status == "fail" and "`model.1` was left in train mode" in result.message, result.message


def test_one_case_is_singular_and_colour_codes_are_stripped(toy) -> None:
    exercise_id = toy(_double, [lambda: ((torch.arange(4.0),), {})])
    assert check(exercise_id, _double).message.endswith("passed 1 test case.")

    def coloured(x):
        raise RuntimeError("\x1b[1;31m[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions\x1b[m")

    message = check(exercise_id, coloured).message
    assert "\x1b" not in message and "ONNX Runtime refused the call (INVALID_ARGUMENT)" in message, message


# --------------------------------------------------------------------------- reference stand-ins
def _stand_in_exercises() -> list[str]:
    from course_utils.exercises import get_exercise, list_exercises

    return [e for e in list_exercises() if get_exercise(e).reference_effects is not None]


@pytest.mark.parametrize("exercise_id", _stand_in_exercises())
def test_reference_stand_in_allows_what_the_reference_allows(exercise_id: str) -> None:
    """An exercise's ``reference_effects`` (a cheap stand-in) must allow exactly what the reference
    allows on every case: the same arguments changed, flags, globals and hooks."""
    from course_utils.exercises import _reference_run, get_exercise

    ex = get_exercise(exercise_id)
    for factory in ex.cases:
        real, stand_in = _reference_run(ex, factory, stand_in=False), _reference_run(ex, factory, stand_in=True)
        for field_name in ("allowed", "allowed_globals", "keeps_hooks", "allowed_flags", "wanted_flags"):
            assert getattr(stand_in, field_name) == getattr(real, field_name), field_name


def test_a_stand_in_that_forgets_an_effect_is_caught() -> None:
    from dataclasses import replace

    from course_utils.exercises import _reference_run, get_exercise

    ex = get_exercise("12.onnx_parity")
    forgetful = replace(ex, reference_effects=lambda model, batches, path: None)  # leaves the model training
    factory = ex.cases[0]
    assert _reference_run(forgetful, factory).wanted_flags != _reference_run(ex, factory, stand_in=False).wanted_flags
