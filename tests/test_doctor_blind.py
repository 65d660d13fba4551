"""The training doctor on bugs reduced blind (tests/doctor_corpus/blind_cases.py): real bugs from public
threads, reduced by someone who had not read the doctor's checks, with the expected cause written from
the thread before the doctor ran.

For every case: the buggy program gets its cause among the findings (the corpus criterion: the code is
in ``report.codes``; every finding is an error or a warning), the fixed program gets no error, and
``diagnose`` leaves the caller's objects exactly as it found them (parameters and buffers, every
submodule's ``training`` flag, ``requires_grad`` and ``.grad``, the optimizer's ``state_dict()``, a
scheduler's ``state_dict()`` and ``last_epoch``, the batch, the global torch RNG state, grad mode).

What the doctor gets wrong stays here as a strict expected failure, listed in ``DEFECTS`` (key:
``"<check>: <case name>"``, check one of ``cause``, ``fixed``, ``untouched buggy``, ``untouched
fixed``, ``crash buggy``, ``crash fixed``); the doctor's fixers empty it.
"""

from __future__ import annotations

import copy
import functools
import statistics
import time
from typing import Any

import pytest
import torch
from doctor_corpus.blind_cases import BLIND_CASES, OUT_OF_SCOPE

from course_utils.doctor import CODES, diagnose

BY_NAME = {case.name: case for case in BLIND_CASES}

#: What the doctor does wrong on a blind case (filled from the first run; see the module docstring).
DEFECTS: dict[str, str] = {}


def _param(check: str, name: str) -> Any:
    reason = DEFECTS.get(f"{check}: {name}")
    marks = [pytest.mark.xfail(strict=True, reason=f"doctor: {reason}")] if reason else []
    return pytest.param(name, marks=marks, id=name)


def _params(check: str) -> list:
    return [_param(check, name) for name in sorted(BY_NAME)]


# --- what the caller owns ---------------------------------------------------------------------------------

def _schedulers(optimizer: torch.optim.Optimizer, step: Any) -> dict[str, Any]:
    found = {"optimizer.scheduler": getattr(optimizer, "scheduler", None),
             "train_step.scheduler": getattr(step, "scheduler", None)}
    return {k: v for k, v in found.items() if v is not None}


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    return copy.copy(value)


def _snapshot(model, optimizer, batch, step) -> dict[str, Any]:
    return {
        "model.state_dict": _clone(model.state_dict()),
        "module.training": {name or "<root>": m.training for name, m in model.named_modules()},
        "param.requires_grad": {name: p.requires_grad for name, p in model.named_parameters()},
        "param.grad": {name: _clone(p.grad) for name, p in model.named_parameters()},
        "optimizer.state_dict": _clone(optimizer.state_dict()),
        "optimizer.param_ids": [[id(p) for p in g["params"]] for g in optimizer.param_groups],
        "schedulers": {k: (_clone(s.state_dict()), s.last_epoch) for k, s in _schedulers(optimizer, step).items()},
        "batch": _clone(batch),
        "torch.rng_state": torch.get_rng_state().clone(),
        "grad_enabled": torch.is_grad_enabled(),
    }


def _differences(before: Any, after: Any, where: str) -> list[str]:
    if isinstance(before, torch.Tensor) or isinstance(after, torch.Tensor):
        same = (isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor)
                and before.dtype == after.dtype and before.shape == after.shape
                and torch.equal(before, after))
        return [] if same else [where]
    if isinstance(before, dict) and isinstance(after, dict):
        if set(before) != set(after):
            return [f"{where} (keys {sorted(map(str, set(before) ^ set(after)))})"]
        return [d for k in before for d in _differences(before[k], after[k], f"{where}[{k!r}]")]
    if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)):
        if len(before) != len(after):
            return [f"{where} (length {len(before)} -> {len(after)})"]
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in _differences(b, a, f"{where}[{i}]")]
    try:
        same = before == after
        same = bool(same)
    except Exception:  # noqa: BLE001 -- objects without a usable ==
        same = before is after
    return [] if same else [f"{where}: {before!r} -> {after!r}"]


@functools.cache
def _diagnosed(name: str, kind: str) -> tuple[Any, list[str], float, str | None]:
    """Diagnose one side of a case once: (report, what changed in the caller's objects, seconds, crash)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, loss_fn, optimizer, batch, step = getattr(BY_NAME[name], kind)()
        before = _snapshot(model, optimizer, batch, step)
        started = time.perf_counter()
        try:
            report, crash = diagnose(model, loss_fn, optimizer, batch, step), None
        except Exception as exc:  # noqa: BLE001 -- a crash is a finding of this test
            report, crash = None, f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - started
        changed = _differences(before, _snapshot(model, optimizer, batch, step), "")
        return report, changed, seconds, crash
    finally:
        torch.set_num_threads(threads)


# --- the cases themselves ---------------------------------------------------------------------------------

def test_blind_corpus_is_real_and_varied() -> None:
    assert len(BLIND_CASES) >= 22 and len(BY_NAME) == len(BLIND_CASES)
    assert len({case.source for case in BLIND_CASES}) == len(BLIND_CASES), "one thread per case"
    for case in BLIND_CASES:
        assert case.source.startswith(("https://github.com/", "https://discuss.pytorch.org/",
                                       "https://stackoverflow.com/")), case.source
        assert case.expected in CODES or case.expected == OUT_OF_SCOPE, case.name
    assert sum(case.expected == OUT_OF_SCOPE for case in BLIND_CASES) <= 3
    with_scheduler = [case.name for case in BLIND_CASES
                      if _schedulers(*(lambda s: (s[2], s[4]))(case.fixed()))]
    assert len(with_scheduler) >= 3, with_scheduler


@pytest.mark.parametrize("name", _params("cause"))
def test_buggy_program_gets_the_thread_cause(name: str) -> None:
    case = BY_NAME[name]
    report, _, _, crash = _diagnosed(name, "buggy")
    assert crash is None, f"{name}: diagnose raised {crash}"
    flagged = {f.code for f in report.findings if f.severity in ("error", "warning")}
    if case.expected == OUT_OF_SCOPE:
        assert "NOT_CHECKED" not in flagged, f"{name} ({case.source}): the doctor could not run\n{report}"
    else:
        assert case.expected in flagged, f"{name} ({case.source}): expected {case.expected}\n{report}"


@pytest.mark.parametrize("name", _params("fixed"))
def test_fixed_program_gets_no_error(name: str) -> None:
    report, _, _, crash = _diagnosed(name, "fixed")
    assert crash is None, f"{name}: diagnose raised {crash}"
    errors = [f.code for f in report.findings if f.severity == "error"]
    assert not errors, f"{name} ({BY_NAME[name].source}): the fix got {errors}\n{report}"


@pytest.mark.parametrize("kind", ["buggy", "fixed"])
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_caller_objects_are_left_as_found(request, name: str, kind: str) -> None:
    reason = DEFECTS.get(f"untouched {kind}: {name}")
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"doctor: {reason}"))
    _, changed, seconds, crash = _diagnosed(name, kind)
    assert crash is None, f"{name} ({kind}): diagnose raised {crash}"
    assert not changed, f"{name} ({kind}): diagnose changed the caller's objects: {changed[:8]}"
    assert seconds <= 5.0, f"{name} ({kind}): one diagnosis took {seconds:.1f} s (budget: 5 s worst)"


@pytest.mark.parametrize("kind", ["buggy", "fixed"])
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_doctor_own_checks_do_not_stop(request, name: str, kind: str) -> None:
    """A crash inside the doctor is reported as a NOT_CHECKED finding ("the doctor's own checks stopped
    with ..."), not raised; it counts as a crash here."""
    reason = DEFECTS.get(f"crash {kind}: {name}")
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"doctor: {reason}"))
    report, _, _, crash = _diagnosed(name, kind)
    assert crash is None, f"{name} ({kind}): diagnose raised {crash}"
    stopped = [f.message for f in report.findings if f.message.startswith("the doctor's own checks stopped")]
    assert not stopped, f"{name} ({kind}): {stopped[0][:300]}"


def test_median_diagnosis_time_is_within_budget() -> None:
    seconds = [_diagnosed(name, kind)[2] for name in sorted(BY_NAME) for kind in ("buggy", "fixed")]
    assert statistics.median(seconds) <= 2.0, f"median {statistics.median(seconds):.2f} s: {sorted(seconds)}"
