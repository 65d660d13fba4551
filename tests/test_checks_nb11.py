"""Notebook 11 exercises: other right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import time

import pytest
import torch

from course_utils.checks.nb11 import FakeAsyncDevice, time_it_reference
from course_utils.exercises import check
from course_utils.profiling import time_it


def test_fake_device_models_an_asynchronous_gpu() -> None:
    dev = FakeAsyncDevice(cost=0.01, first=1.0, launch=0.001)
    dev.fn()
    assert dev.clock() == 0.001            # the call returned after the launch only
    dev.sync()
    assert abs(dev.clock() - 1.001) < 1e-12  # sync waited for the queued work
    cpu = FakeAsyncDevice(cost=0.01, first=1.0, launch=0.001, asynchronous=False)
    cpu.fn()
    assert abs(cpu.clock() - 1.001) < 1e-12


def test_time_it_course_version_passes_and_a_sync_per_call_is_named() -> None:
    """The task text: sync once after the warm-up and once after the last timed call (not per call)."""
    def sync_every_call(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
        for _ in range(warmup):
            fn()
        if sync:
            sync()
        elapsed = 0.0
        for _ in range(repeats):
            start = clock()
            fn()
            if sync:
                sync()
            elapsed += clock() - start
        return elapsed / repeats

    result = check("11.time_it", sync_every_call)
    assert result.status == "fail" and "Hint (syncs inside the timed loop)" in result.message, result.message
    assert check("11.time_it", time_it).passed  # the course_utils version has the same contract


def test_time_it_with_wrong_call_count_fails() -> None:
    def extra_call(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
        fn()
        return time_it_reference(fn, warmup, repeats, sync, clock)

    assert check("11.time_it", extra_call).status == "fail"


def test_real_time_it_on_cpu_is_positive_and_small() -> None:
    x = torch.randn(1000)
    assert 0 < time_it(lambda: x * 2, warmup=1, repeats=5) < 0.5


def test_mean_epoch_loss_alternatives() -> None:
    assert check("11.mean_epoch_loss", lambda ls: sum(loss.detach() for loss in ls) / len(ls)).passed
    assert check("11.mean_epoch_loss", lambda ls: torch.stack(ls).mean().detach()).passed
    result = check("11.mean_epoch_loss",
                   lambda ls: torch.tensor(sum(float(loss.detach()) for loss in ls) / len(ls)))
    assert "Hint (calls .item() every step" in result.message


def test_clip_norm_where_is_accepted_and_python_if_is_named() -> None:
    assert check("11.clip_norm", lambda x: torch.where(x.norm() > 1, x / x.norm(), x)).passed

    def python_if(x):
        return x / x.norm() if x.norm() > 1 else x.clone()

    result = check("11.clip_norm", python_if)
    assert result.status == "fail" and "Hint (Python if on a tensor value)" in result.message


# --- learners' answers: wrong ones must FAIL with a message naming the fix, right ones must pass ---


def _timer(*, warmup="loop", sync_after_warmup=True, sync_end=True, guard=True, clock="argument",
           result="mean", extra_call=False):
    def time_it(fn, warmup_n=2, repeats=10, sync=None, clock_fn=time.perf_counter):
        read = clock_fn if clock == "argument" else time.perf_counter

        def wait():
            if sync is not None or not guard:
                sync()
        for _ in range(warmup_n if warmup == "loop" else max(warmup_n, 1) if warmup == "at least one" else 0):
            fn()
        if sync_after_warmup:
            wait()
        start = read()
        for _ in range(repeats + (1 if extra_call else 0)):
            fn()
        if sync_end:
            wait()
        elapsed = read() - start
        return elapsed if result == "total" else elapsed / repeats
    # keep the task's parameter names
    return lambda fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter: time_it(fn, warmup, repeats, sync, clock)


def _mean(*, how="stack", detach=True):
    def mean_epoch_loss(step_losses):
        if how == "items":
            return torch.tensor(sum(v.item() for v in step_losses) / len(step_losses))
        if how == "float accumulate":
            total = torch.zeros(())
            for loss in step_losses:
                total += loss.detach()
            return total / len(step_losses)
        if how == "sum":
            return torch.stack([v.detach() for v in step_losses]).sum()
        if how == "tensor of list":
            return torch.tensor(step_losses).mean()
        if how == "detach_ in place":
            return torch.stack([v.detach_() for v in step_losses]).mean()
        if how == "python float":
            return torch.stack([v.detach() for v in step_losses]).mean().item()
        losses = [v.detach() if detach else v for v in step_losses]
        return torch.stack(losses).mean()
    return mean_epoch_loss


def _clip(how):
    def clip_norm(x):
        if how == "python if":
            return x / x.norm() if x.norm() > 1 else x.clone()
        if how == "always":
            return x / x.norm()
        if how == "swapped":
            return torch.cond(x.norm() > 1, lambda v: v.clone(), lambda v: v / v.norm(), (x,))
        if how == "alias":
            return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v, (x,))
        if how == "below":
            return torch.cond(x.norm() < 1, lambda v: v / v.norm(), lambda v: v.clone(), (x,))
        if how == "in place":
            return torch.cond(x.norm() > 1, lambda v: v.div_(v.norm()), lambda v: v.clone(), (x,))
        if how == "max":
            return x / max(x.norm(), 1)
        if how == "normalize":
            return torch.nn.functional.normalize(x, dim=0)
        if how == "cond":
            return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v.clone(), (x,))
        if how == "clamp":
            return x / x.norm().clamp(min=1.0)
        if how == "where":
            n = x.norm()
            return torch.where(n > 1, x / n, x)
        raise ValueError(how)
    return clip_norm


WRONG = [
    ("11.time_it", _timer(warmup="none"), ["warm-up"]),
    ("11.time_it", _timer(warmup="at least one"), ["test case 5", "warmup + repeats"]),
    ("11.time_it", _timer(sync_after_warmup=False), ["after the warm-up"]),
    ("11.time_it", _timer(sync_end=False), ["synchronization"]),
    ("11.time_it", _timer(sync_after_warmup=False, sync_end=False), ["synchronization"]),
    ("11.time_it", _timer(guard=False), ["if sync is not None"]),
    ("11.time_it", _timer(clock="perf_counter"), ["clock argument"]),
    ("11.time_it", _timer(result="total"), ["divide the elapsed time by `repeats`"]),
    ("11.time_it", _timer(extra_call=True), ["warmup + repeats"]),
    ("11.mean_epoch_loss", _mean(how="items"), ["device -> host", ".item()"]),
    ("11.mean_epoch_loss", _mean(how="tensor of list"), ["device -> host"]),
    ("11.mean_epoch_loss", _mean(detach=False), ["graph"]),
    ("11.mean_epoch_loss", _mean(how="sum"), ["expected the mean", "Hint (sums instead of averaging)"]),
    ("11.mean_epoch_loss", _mean(how="float accumulate"), ["test case 4", "dtype torch.float64"]),
    ("11.mean_epoch_loss", _mean(how="detach_ in place"), ["detach()"]),
    ("11.mean_epoch_loss", _mean(how="python float"), ["device -> host"]),
    ("11.clip_norm", _clip("python if"), ["torch.cond"]),
    ("11.clip_norm", _clip("always"), ["unchanged"]),
    ("11.clip_norm", _clip("swapped"), ["true_fn", "swapped"]),
    ("11.clip_norm", _clip("alias"), ["v.clone()"]),
    ("11.clip_norm", _clip("below"), ["swapped"]),
    ("11.clip_norm", _clip("in place"), ["must not change their inputs"]),
    ("11.clip_norm", _clip("normalize"), ["unchanged"]),
]


@pytest.mark.parametrize(("exercise_id", "wrong", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_learners_wrong_answers_fail_with_a_message_naming_the_fix(exercise_id, wrong, words) -> None:
    result = check(exercise_id, wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


RIGHT = [
    ("11.time_it", _timer()),
    ("11.mean_epoch_loss", _mean()),
    ("11.mean_epoch_loss", lambda losses: sum(loss.detach() for loss in losses) / len(losses)),
    ("11.clip_norm", _clip("cond")),
    ("11.clip_norm", _clip("clamp")),
    ("11.clip_norm", _clip("where")),
    ("11.clip_norm", _clip("max")),  # torch.export records max(norm, 1) as a clamp: exportable
]


@pytest.mark.parametrize(("exercise_id", "right"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_learners_right_answers_pass(exercise_id, right) -> None:
    result = check(exercise_id, right)
    assert result.passed, result.message
