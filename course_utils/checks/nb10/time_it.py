"""10.time_it: warm up, synchronise and time a function, checked on a fake asynchronous device."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 10.time_it ------------------------------------------------------------------------------
#
# The checker cannot use a real GPU, so it hands the candidate a *fake asynchronous device*:
# fn() "launches" work and returns at once (like a CUDA kernel launch), the work finishes
# later on the device's own timeline, sync() waits for it, and clock() reads fake time.
# The arithmetic is exact, so the check is instant and never flaky.


class FakeAsyncDevice:
    """fn() costs ``launch`` s on the host and queues ``first`` (first call) or ``cost`` s of device work."""

    def __init__(self, cost: float, first: float, launch: float = 1e-5, asynchronous: bool = True):
        self.cost, self.first, self.launch, self.asynchronous = cost, first, launch, asynchronous
        self.now = 0.0          # host time
        self.device_free = 0.0  # when the device finishes everything queued so far
        self.calls = 0

    def fn(self) -> None:
        self.calls += 1
        work = self.first if self.calls == 1 else self.cost
        self.now += self.launch
        self.device_free = max(self.device_free, self.now) + work
        if not self.asynchronous:  # a CPU: the call returns when the work is done
            self.now = self.device_free

    def sync(self) -> None:
        self.now = max(self.now, self.device_free)

    def clock(self) -> float:
        return self.now


def time_it_reference(fn: Callable[[], Any], warmup: int = 2, repeats: int = 10,
                      sync: Callable[[], None] | None = None,
                      clock: Callable[[], float] | None = None) -> float:
    """The solution is the course's own timer, :func:`course_utils.profiling.time_it`."""
    import time

    from course_utils.profiling import time_it

    return time_it(fn, warmup, repeats, sync, clock or time.perf_counter)


def _time_no_warmup(fn, warmup=2, repeats=10, sync=None, clock=None):
    start = clock()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / repeats


def _time_no_sync(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    start = clock()
    for _ in range(repeats):
        fn()
    return (clock() - start) / repeats


def _time_total(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return clock() - start


def _time_sync_unchecked(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    sync()
    start = clock()
    for _ in range(repeats):
        fn()
    sync()
    return (clock() - start) / repeats


def _time_real_clock(fn, warmup=2, repeats=10, sync=None, clock=None):
    import time

    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (time.perf_counter() - start) / repeats


def _real_clock_used(out: Any, args: tuple, kwargs: dict) -> bool:
    """A tiny time that no fake-clock variant produces: the candidate read the real clock."""
    return (isinstance(out, (int, float)) and out < 0.5 * _device_of(kwargs).cost
            and not _same_as(_time_no_sync, _time_sync_first_only)(out, args, kwargs))


def _time_cases():
    def make(cost, first, warmup, repeats, asynchronous=True, with_sync=True):
        def factory():
            dev = FakeAsyncDevice(cost, first, asynchronous=asynchronous)
            kwargs = {"warmup": warmup, "repeats": repeats, "clock": dev.clock,
                      "sync": dev.sync if with_sync else None}
            return (dev.fn,), kwargs
        return factory
    return [make(0.01, 2.0, 2, 5), make(0.003, 1.5, 1, 8), make(0.02, 0.5, 3, 4),
            make(0.005, 1.0, 2, 6, asynchronous=False, with_sync=False)]


def _device_of(kwargs: dict[str, Any]) -> FakeAsyncDevice:
    return kwargs["clock"].__self__


def _time_verify(out, ref, args, kwargs):
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if not isinstance(out, (int, float)) or isinstance(out, bool):
        return f"expected a float (seconds per call), found {describe(out)}"
    if _device_of(kwargs).calls != kwargs["warmup"] + kwargs["repeats"]:
        return (f"expected fn to be called warmup + repeats = {kwargs['warmup'] + kwargs['repeats']} "
                f"times, found {_device_of(kwargs).calls} calls")
    # 1 %: syncing after every call (latency) and once at the end (throughput) both pass
    if not math.isclose(out, ref, rel_tol=0.01, abs_tol=1e-12):
        return f"expected {ref:.4g} s per call, found {out:.4g} s"
    return None


def _time_warmup_unsynced(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    start = clock()  # the warm-up work is still queued and lands inside the measurement
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / repeats


def _time_sync_first_only(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
    return (clock() - start) / repeats


def _same_as(*variants: Callable[..., float]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's number equals what one of these wrong versions gives."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        if not isinstance(out, (int, float)):
            return False
        old = _device_of(kwargs)
        for variant in variants:
            dev = FakeAsyncDevice(old.cost, old.first, old.launch, old.asynchronous)
            wrong = variant(dev.fn, warmup=kwargs["warmup"], repeats=kwargs["repeats"],
                            sync=dev.sync if kwargs["sync"] is not None else None, clock=dev.clock)
            if math.isclose(out, wrong, rel_tol=1e-6):
                return True
        return False
    return detect


register(Exercise(
    "10.time_it",
    "time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter) calls fn() `warmup` "
    "times untimed, then returns the mean seconds per call over `repeats` calls. Read the time "
    "with clock(); when sync is given, call it after the warm-up and after the timed calls.",
    time_it_reference,
    _time_cases(),
    _time_verify,
    [
        Mistake("forgets warm-up (times the first, compiling call)",
                "run fn() `warmup` times BEFORE starting the clock: the first call pays one-time "
                "costs (compilation, allocation, caches) that steady-state steps never pay.",
                _time_no_warmup, detect=_same_as(_time_no_warmup)),
        Mistake("does not sync after the warm-up (warm-up work leaks into the timing)",
                "the warm-up calls are only queued: call sync() once after them, before you "
                "start the clock, or their (slow, compiling) work is counted in the timed loop.",
                _time_warmup_unsynced, detect=_same_as(_time_warmup_unsynced)),
        Mistake("forgets synchronization (measures only the launches)",
                "on a GPU, fn() returns as soon as the work is queued: call sync() after the "
                "warm-up and again before reading the clock at the end, or you time the launch only.",
                _time_no_sync, detect=_same_as(_time_no_sync, _time_sync_first_only)),
        Mistake("reads the real clock instead of the clock argument",
                "call clock() (the argument) to read the time, not time.perf_counter() directly: "
                "the checker's fake device only advances the clock it hands you.",
                _time_real_clock, detect=_real_clock_used),
        Mistake("returns the total instead of the time per call",
                "divide the elapsed time by `repeats`.",
                _time_total, detect=_same_as(_time_total)),
        Mistake("calls sync when it is None",
                "on the CPU there is nothing to wait for and sync is None: guard with "
                "`if sync is not None: sync()`.",
                _time_sync_unchecked, error_match="'NoneType' object is not callable"),
    ],
))
