"""Notebook 10 exercises: other right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import time

import torch

from course_utils.checks.nb10 import FakeAsyncDevice, time_it_reference
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


def test_time_it_variants_that_are_also_right() -> None:
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

    assert check("10.time_it", sync_every_call).passed
    assert check("10.time_it", time_it).passed  # the course_utils version has the same contract


def test_time_it_with_wrong_call_count_fails() -> None:
    def extra_call(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
        fn()
        return time_it_reference(fn, warmup, repeats, sync, clock)

    assert check("10.time_it", extra_call).status == "fail"


def test_real_time_it_on_cpu_is_positive_and_small() -> None:
    x = torch.randn(1000)
    assert 0 < time_it(lambda: x * 2, warmup=1, repeats=5) < 0.5


def test_mean_epoch_loss_alternatives() -> None:
    assert check("10.mean_epoch_loss", lambda ls: sum(loss.detach() for loss in ls) / len(ls)).passed
    assert check("10.mean_epoch_loss", lambda ls: torch.stack(ls).mean().detach()).passed
    result = check("10.mean_epoch_loss",
                   lambda ls: torch.tensor(sum(float(loss.detach()) for loss in ls) / len(ls)))
    assert "Hint (calls .item() every step" in result.message


def test_clip_norm_where_is_accepted_and_python_if_is_named() -> None:
    assert check("10.clip_norm", lambda x: torch.where(x.norm() > 1, x / x.norm(), x)).passed

    def python_if(x):
        return x / x.norm() if x.norm() > 1 else x.clone()

    result = check("10.clip_norm", python_if)
    assert result.status == "fail" and "Hint (Python if on a tensor value)" in result.message
