"""Checkers of notebook 11 (performance and compile), in notebook order: ``11.time_it``,
``11.mean_epoch_loss``, ``11.clip_norm``.

``11.time_it`` runs the candidate on a fake asynchronous device (:class:`FakeAsyncDevice`, exact fake
time, steps of different lengths, ``sync()`` calls recorded); ``11.mean_epoch_loss`` hands it loss tensors
of a subclass that counts device-to-host copies; ``11.clip_norm``'s ``inspect`` first runs the candidate
on a tensor subclass that records host reads (``.item()``, ``float()``, ``bool()``), and only for a
``bool()`` read or ``torch.cond`` captures it as one graph with ``torch.export`` to catch a Python ``if``
on a tensor value (so a ``torch.where`` answer never pays for the compiler).
"""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import N_, t, use_language


# --- 11.time_it -----------------------------------------------------------------------------------
# Warm up, synchronise and time a function, checked on a fake asynchronous device.

# The checker cannot use a real GPU, so it hands the candidate a *fake asynchronous device*:
# fn() "launches" work and returns at once (like a CUDA kernel launch), the work finishes
# later on the device's own timeline, sync() waits for it, and clock() reads fake time.
# The arithmetic is exact, so the check is instant and never flaky.


class FnResult:
    """What the fake ``fn()`` returns (a real step returns a loss or an output): never the time."""

    def __repr__(self) -> str:
        return "<fn()'s result>"


class FakeAsyncDevice:
    """fn() costs ``launch`` s on the host and queues ``first`` (first call) or ``cost`` s of device work.

    ``cost`` may be a sequence: the calls after the first cycle through it (steps are never all equally
    long, so the mean, the minimum and a single call differ). ``syncs`` records how many calls had been made
    at each ``sync()``.
    """

    def __init__(self, cost: float | tuple[float, ...], first: float, launch: float = 1e-5,
                 asynchronous: bool = True):
        self.cost, self.first, self.launch, self.asynchronous = cost, first, launch, asynchronous
        self.costs = tuple(cost) if isinstance(cost, (tuple, list)) else (cost,)
        self.now = 0.0          # host time
        self.device_free = 0.0  # when the device finishes everything queued so far
        self.calls = 0
        self.syncs: list[int] = []

    def fresh(self) -> "FakeAsyncDevice":
        """A new device with the same costs, at time 0."""
        return FakeAsyncDevice(self.cost, self.first, self.launch, self.asynchronous)

    def fn(self) -> FnResult:
        self.calls += 1
        work = self.first if self.calls == 1 else self.costs[(self.calls - 2) % len(self.costs)]
        self.now += self.launch
        self.device_free = max(self.device_free, self.now) + work
        if not self.asynchronous:  # a CPU: the call returns when the work is done
            self.now = self.device_free
        return FnResult()

    def sync(self) -> None:
        self.syncs.append(self.calls)
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
    return (isinstance(out, (int, float)) and out < 0.5 * min(_device_of(kwargs).costs)
            and not _same_as(_time_no_sync, _time_sync_first_only)(out, args, kwargs))


def _time_cases():
    def make(cost, first, warmup, repeats, asynchronous=True, with_sync=True):
        def factory():
            dev = FakeAsyncDevice(cost, first, asynchronous=asynchronous)
            kwargs = {"warmup": warmup, "repeats": repeats, "clock": dev.clock,
                      "sync": dev.sync if with_sync else None}
            return (dev.fn,), kwargs
        return factory
    # steps of different lengths (case 1), a CPU (no sync to call), and no warm-up at all (then the first
    # call is timed)
    return [make((0.01, 0.014, 0.008, 0.012, 0.006), 2.0, 2, 5), make(0.003, 1.5, 1, 8), make(0.02, 0.5, 3, 4),
            make(0.005, 1.0, 2, 6, asynchronous=False, with_sync=False), make(0.004, 0.3, 0, 3)]


def _device_of(kwargs: dict[str, Any]) -> FakeAsyncDevice:
    return kwargs["clock"].__self__


def _syncs_in_loop(kwargs: dict[str, Any]) -> int:
    """sync() calls made between the first and the last timed call (the task: none)."""
    warmup, repeats = kwargs["warmup"], kwargs["repeats"]
    return sum(warmup < calls < warmup + repeats for calls in _device_of(kwargs).syncs)


def _syncs_inside_loop(out: Any, args: tuple, kwargs: dict) -> bool:
    """Detector: fn was called warmup + repeats times and sync() ran between two timed calls."""
    return (kwargs["sync"] is not None and _device_of(kwargs).calls == kwargs["warmup"] + kwargs["repeats"]
            and _syncs_in_loop(kwargs) > 0)


def _time_verify(out, ref, args, kwargs):
    setting = t("with warmup={warmup}, repeats={repeats}", warmup=kwargs["warmup"], repeats=kwargs["repeats"])
    if isinstance(out, FnResult):
        return t("{setting} expected the seconds per call (a float), found fn()'s result (what fn() returned)",
                 setting=setting)
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if not isinstance(out, (int, float)) or isinstance(out, bool):
        return t("{setting} expected a float (seconds per call), found {got}", setting=setting, got=describe(out))
    if _device_of(kwargs).calls != kwargs["warmup"] + kwargs["repeats"]:
        return t("expected fn to be called warmup + repeats = {n} times, found {calls} calls",
                 n=kwargs["warmup"] + kwargs["repeats"], calls=_device_of(kwargs).calls)
    # 1 %: the mean over the timed calls, whatever the order of the (exact) fake-clock arithmetic
    if not math.isclose(out, ref, rel_tol=0.01, abs_tol=1e-12):
        return t("{setting} expected {ref:.4g} s per call, found {out:.4g} s", setting=setting, ref=ref, out=out)
    if kwargs["sync"] is not None and _syncs_in_loop(kwargs):
        return t("expected sync() once after the warm-up and once after the last timed call, found "
                 "{more} more between the {repeats} timed calls",
                 more=_syncs_in_loop(kwargs), repeats=kwargs["repeats"])
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


def _time_clock_before_warmup(fn, warmup=2, repeats=10, sync=None, clock=None):
    start = clock()
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / repeats


def _time_divides_by_all_calls(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / (repeats + warmup)


def _time_min_synced(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if sync is not None:
            sync()
        start = clock()
        fn()
        if sync is not None:
            sync()
        times.append(clock() - start)
    return min(times)


def _time_min_after_warmup_sync(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        if sync is not None:
            sync()
        times.append(clock() - start)
    return min(times)


def _time_sync_every_call(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
        if sync is not None:
            sync()
    return (clock() - start) / repeats


def _time_returns_fn_result(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    for _ in range(repeats):
        out = fn()
    if sync is not None:
        sync()
    return out


def _same_as(*variants: Callable[..., float]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's number equals what one of these wrong versions gives."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        if not isinstance(out, (int, float)):
            return False
        old = _device_of(kwargs)
        for variant in variants:
            dev = old.fresh()
            wrong = variant(dev.fn, warmup=kwargs["warmup"], repeats=kwargs["repeats"],
                            sync=dev.sync if kwargs["sync"] is not None else None, clock=dev.clock)
            if math.isclose(out, wrong, rel_tol=1e-6):
                return True
        return False
    return detect


register(Exercise(
    "11.time_it",
    "time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter) calls fn() `warmup` "
    "times untimed (warmup may be 0), then returns the mean seconds per call over `repeats` calls. Read the time "
    "with clock(); when sync is given, call it once after the warm-up and once after the last timed call "
    "(not inside the timed loop).",
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
        Mistake("starts the clock before the warm-up (the warm-up is timed)",
                "you start the clock before the warm-up calls, so their one-time costs are in the "
                "measurement: call clock() only after the warm-up and its sync().",
                _time_clock_before_warmup, detect=_same_as(_time_clock_before_warmup)),
        Mistake("divides by repeats + warmup",
                "only the timed calls are in the measurement: divide the elapsed time by `repeats`, "
                "not by repeats + warmup.",
                _time_divides_by_all_calls, detect=_same_as(_time_divides_by_all_calls)),
        Mistake("the fastest call (min) instead of the mean",
                "the task asks for the mean seconds per call over the timed calls, not the fastest one "
                "(min(times)): time the whole loop once and divide by `repeats`.",
                _time_min_synced, detect=_same_as(_time_min_synced, _time_min_after_warmup_sync)),
        Mistake("returns fn()'s result instead of the time",
                "fn()'s result is the work's output, not how long it took: return the elapsed time "
                "divided by `repeats`.",
                _time_returns_fn_result, detect=lambda out, a, k: isinstance(out, FnResult)),
        Mistake("syncs inside the timed loop",
                "a sync() per call waits for every call before the next one is launched, so you time "
                "each call alone with the device idle in between: call sync() only after the warm-up "
                "and after the whole timed loop.",
                _time_sync_every_call, detect=_syncs_inside_loop),
    ],
))


# --- 11.mean_epoch_loss ---------------------------------------------------------------------------
# Average the per-step losses on the device, without host-device syncs.

_SYNCING = (torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__float__, torch.Tensor.__int__)


class _SyncCounter(torch.Tensor):
    """A tensor that counts device -> host copies (.item(), float(), .tolist()).

    Every test case makes its own subclass, so its count cannot be reset by the next case.
    """

    syncs = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _SYNCING:
            cls.syncs += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _syncs(args: tuple) -> int:
    return type(args[0][0]).syncs


def mean_epoch_loss_reference(step_losses: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack([loss.detach() for loss in step_losses]).mean()


def _loss_items(step_losses):
    return torch.tensor(sum(loss.item() for loss in step_losses) / len(step_losses))


def _loss_graph(step_losses):
    return sum(step_losses) / len(step_losses)


def _loss_sum(step_losses):
    return torch.stack([loss.detach() for loss in step_losses]).sum()


def _loss_len_minus_one(step_losses):
    return torch.stack([loss.detach() for loss in step_losses]).sum() / (len(step_losses) - 1)


def _loss_running_pairs(step_losses):
    running = step_losses[0].detach().clone()
    for loss in step_losses[1:]:
        running = (running + loss.detach()) / 2
    return running


def _loss_like(variant: Callable[[list[torch.Tensor]], torch.Tensor]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's value is this wrong version's on the same losses (and that is wrong here)."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            return False
        plain = [loss.detach().as_subclass(torch.Tensor) for loss in args[0]]
        with torch.no_grad():
            wrong = variant(plain).double()
            right = mean_epoch_loss_reference(plain).double()
        value = out.detach().as_subclass(torch.Tensor).double().reshape(())
        return (bool(torch.isfinite(wrong)) and torch.allclose(value, wrong, rtol=1e-4, atol=1e-6)
                and not torch.allclose(wrong, right, rtol=1e-4, atol=1e-6))
    return detect


def _loss_cases():
    def make(seed, steps, dtype=torch.float32):
        def factory():
            counting = type("SyncCountingTensor", (_SyncCounter,), {"syncs": 0})
            gen = torch.Generator().manual_seed(seed)
            w = torch.randn(3, generator=gen, dtype=dtype, requires_grad=True)
            x = torch.randn(steps, 3, generator=gen, dtype=dtype)
            losses = [((x[i] * w).sum() ** 2).as_subclass(counting) for i in range(steps)]
            return (losses,), {}
        return factory
    return [make(0, 4), make(1, 7), make(2, 1), make(3, 5, torch.float64)]  # float64 stays float64


def _loss_verify(out, ref, args, kwargs):
    if _syncs(args):
        return t("expected no device -> host copies, found {n} (.item()/float()/.tolist() calls) for {steps} steps",
                 n=_syncs(args), steps=len(args[0]))
    if not isinstance(out, torch.Tensor):
        return t("expected a 0-dim tensor, found {got}", got=describe(out))
    out = out.as_subclass(torch.Tensor)
    if out.requires_grad:
        return t("expected a detached tensor (requires_grad=False), found one that still holds the graph")
    ref = ref.as_subclass(torch.Tensor)
    problem = compare_tensors(out, ref, name=t("mean loss"))
    if problem and out.shape == ref.shape == () and out.dtype == ref.dtype:
        losses = [round(float(loss.detach().as_subclass(torch.Tensor)), 4) for loss in args[0]]
        return t("for the step losses {losses} expected the mean {ref:.6g}, found {out:.6g}",
                 losses=losses, ref=float(ref), out=float(out))
    return problem


register(Exercise(
    "11.mean_epoch_loss",
    "mean_epoch_loss(step_losses) returns the mean of the per-step loss tensors as a detached "
    "0-dim tensor in their dtype, without any .item()/float()/.tolist() (each one is a host-device "
    "sync) and without changing the given tensors.",
    mean_epoch_loss_reference,
    _loss_cases(),
    _loss_verify,
    [
        Mistake("calls .item() every step (a host-device sync each time)",
                "keep the values on the device: torch.stack([l.detach() for l in step_losses]).mean(), "
                "and call .item() once, when you really print.",
                _loss_items, detect=lambda out, a, k: _syncs(a) > 0),
        Mistake("keeps the autograd graph (no detach)",
                "summing the loss tensors themselves keeps every step's graph (and its activations) "
                "alive: detach each loss before accumulating.",
                _loss_graph,
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.requires_grad),
        Mistake("sums instead of averaging",
                "divide by the number of steps (or use .mean()).",
                _loss_sum, detect=_loss_like(_loss_sum)),
        Mistake("divides by len - 1",
                "the mean divides the sum by the number of steps, len(step_losses), not len - 1 "
                "(that is the correction of a sample variance, not part of a mean).",
                _loss_len_minus_one, detect=_loss_like(_loss_len_minus_one)),
        Mistake("pairwise running average ((running + loss) / 2)",
                "(running + loss) / 2 halves the weight of everything before at every step: the last step "
                "counts 1/2, the first 1/2**(n-1). Sum all steps and divide by len(step_losses) (or keep a "
                "running mean: running += (loss - running) / (i + 1)).",
                _loss_running_pairs, detect=_loss_like(_loss_running_pairs)),
    ],
))


# --- 11.clip_norm ---------------------------------------------------------------------------------
# A compile-friendly data-dependent choice: no graph break (torch.where, also sync-free; or torch.cond).

class _AsModule(nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


_ALIAS_NAME = N_("returns the input itself from a branch (aliasing)")
_ALIAS_TEXT = N_("torch.cond branches must return new tensors: return v.clone(), not v.")


def _alias_hint() -> str:
    """The aliasing mistake's hint line, as the framework shows a hint."""
    return t("  Hint ({name}): {hint}", name=t(_ALIAS_NAME), hint=t(_ALIAS_TEXT))

_HOST_READS = {torch.Tensor.item: "item", torch.Tensor.__float__: "float", torch.Tensor.__int__: "int",
               torch.Tensor.__index__: "index", torch.Tensor.tolist: "tolist", torch.Tensor.numpy: "numpy",
               torch.Tensor.__bool__: "bool"}


class _HostReadCounter(torch.Tensor):
    """A tensor that records reads of its values on the host (.item(), float(), bool() of a comparison, ...).

    Every probe makes its own subclass, so two probes never share a record.
    """

    reads: list[str] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _HOST_READS:
            cls.reads.append(_HOST_READS[func])
        return super().__torch_function__(func, types, args, kwargs or {})


_SYNC_PROBLEM = N_("your function copies a tensor value to the host (.item(), float(), int(), .tolist() or "
                 ".numpy()): a host sync on a GPU, and a graph break under torch.compile")
_PY_IF_PROBLEM = N_("your function cannot be captured as one graph: it uses a Python `if` on a tensor value "
                  "(a graph break and a host sync)")


def _host_reads(candidate: Callable[..., Any]) -> list[str] | None:
    """What the candidate reads on the host from a tensor whose values it must not need (None: it raised)."""
    counting = type("HostReadCounter", (_HostReadCounter,), {"reads": []})
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            candidate(torch.full((4,), 2.0).as_subclass(counting))
    except Exception:  # noqa: BLE001 - torch.cond refuses a subclass; learner errors show on a case
        return None
    return counting.reads


def _exportable(candidate: Callable[..., Any]) -> str | None:
    """Inspection: no host read of a tensor value, and (for a Python `if`, torch.cond) one exportable graph.

    A probe tensor records .item()/float()/bool() reads in eager mode (cheap: no compiler). Only when the
    candidate converts a tensor to bool (a Python `if`, or `max(norm, 1)`, which torch.export records as a
    clamp) or refuses the probe (torch.cond) is it exported once, to decide whether the graph breaks.
    """
    reads = _host_reads(candidate)
    if reads and set(reads) - {"bool"}:
        return t(_SYNC_PROBLEM)
    if reads == []:
        return None
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            torch.export.export(_AsModule(candidate), (torch.full((4,), 2.0),))
    except Exception as exc:  # anything else (stub, learner bug) is reported by the normal run
        text = f"{type(exc).__name__}: {exc}"
        if "data-dependent" in text or "GuardOnDataDependent" in text:
            return t(_PY_IF_PROBLEM)
        if "aliasing" in text:
            return t("torch.cond refused your branches: one returns its input tensor itself") + "\n" + _alias_hint()
    return None


def clip_norm_reference(x: torch.Tensor) -> torch.Tensor:
    norm = x.norm()
    return torch.where(norm > 1, x / norm, x)  # a new tensor either way, and no host sync (torch.cond reads pred)


def _clip_python_if(x):
    if x.norm() > 1:
        return x / x.norm()
    return x.clone()


def _clip_item(x):
    norm = x.norm().item()
    return torch.where(torch.tensor(norm > 1), x / norm, x)


def _clip_swapped(x):
    return torch.cond(x.norm() > 1, lambda v: v.clone(), lambda v: v / v.norm(), (x,))


def _clip_always(x):
    return x / x.norm()


def _clip_alias(x):
    return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v, (x,))


def _clip_in_place(x):
    return torch.cond(x.norm() > 1, lambda v: v.div_(v.norm()), lambda v: v.clone(), (x,))


def _clip_elementwise(x):
    return x.clamp(-1.0, 1.0)


def _clip_l1(x):
    norm = x.abs().sum()
    return torch.where(norm > 1, x / norm, x)


def _clip_squared(x):
    squared = (x * x).sum()
    return torch.where(squared > 1, x / squared, x)


def _clip_per_row(x):
    norm = x.norm(dim=-1, keepdim=True)
    return torch.where(norm > 1, x / norm, x)


def _clip_nan_at_zero(x):
    norm = x.norm()
    over = (norm > 1).to(x.dtype)
    return x / norm * over + x * (1 - over)


def _clip_like(variant: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's values are this wrong version's on the same input (and wrong there)."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        if not isinstance(out, torch.Tensor) or out.shape != args[0].shape:
            return False
        with torch.no_grad():
            wrong, right = variant(args[0]), clip_norm_reference(args[0])
        same = torch.allclose(out.detach(), wrong, rtol=1e-4, atol=1e-6, equal_nan=True)
        return same and not torch.allclose(wrong, right, rtol=1e-4, atol=1e-6, equal_nan=True)
    return detect


def _clip_cases():
    def make(seed, scale, *shape):
        return lambda: ((scale * torch.randn(*shape, generator=torch.Generator().manual_seed(seed)),), {})
    # norm exactly 1 is a boundary where both branches give x itself (">" and ">=" agree there)
    # norm 1.5 sits between 1 and 2: a threshold of 2 instead of 1 fails it
    # an all-zero tensor (norm 0: x / x.norm() is nan there, the copy is what must come back)
    # a 2-d tensor: its norm is the norm of all its entries (one row alone has norm < 1, the other > 1)
    return [make(0, 3.0, 4), make(1, 0.05, 4), make(2, 10.0, 4), make(3, 0.1, 4),
            lambda: ((torch.tensor([0.0, 1.5, 0.0, 0.0]),), {}),
            lambda: ((torch.tensor([0.0, 1.0, 0.0, 0.0]),), {}),
            lambda: ((torch.zeros(4),), {}),
            lambda: ((torch.tensor([[0.3, -0.4, 0.0], [1.2, 0.0, -0.9]]),), {})]


def _rounded(t: torch.Tensor) -> Any:
    """The values of ``t`` as nested lists, rounded to 4 decimals (for messages)."""
    def walk(v: Any) -> Any:
        return [walk(item) for item in v] if isinstance(v, list) else round(v, 4)
    return walk(t.detach().double().tolist())


def _clip_verify(out, ref, args, kwargs):
    (x,) = args
    what = t("for the input {x} (norm {norm:.4g})", x=_rounded(x), norm=float(x.norm()))
    if isinstance(out, torch.Tensor) and out.shape == ref.shape and bool(torch.isnan(out).any()):
        return t("{what} expected {ref}, found NaN in {out}", what=what, ref=_rounded(ref), out=_rounded(out))
    problem = compare_tensors(out, ref)
    if problem:
        with use_language("en"):  # the framework's wording, whatever the language shown
            wrong_values = "wrong values" in (compare_tensors(out, ref) or "")
        if wrong_values:
            return t("{what} expected {ref}, found {out}", what=what, ref=_rounded(ref), out=_rounded(out))
        return t("{what}: {problem}", what=what, problem=problem)
    if out.data_ptr() == x.data_ptr():
        return t("{what} expected a new tensor, found the input itself", what=what)
    return None


_SWAP_HINT = N_("big tensors came back unchanged and small ones scaled up: the two outcomes are swapped. In "
              "torch.where(cond, a, b) and torch.cond(pred, true_fn, false_fn, operands) the first one is "
              "taken when the norm is larger than 1; with clamp the divisor must be at least 1: "
              "x / x.norm().clamp(min=1), not clamp(max=1).")

register(Exercise(
    "11.clip_norm",
    "clip_norm(x) returns x / x.norm() (the norm of all of x's entries, whatever its shape) when "
    "x.norm() > 1 and an unchanged copy of x otherwise (also for an all-zero x), with no graph break "
    "(no Python if on a tensor value, no .item()): torch.where (no host sync either) or torch.cond "
    "(one graph, but it reads the predicate on the host).",
    clip_norm_reference,
    _clip_cases(),
    _clip_verify,
    [
        Mistake("reads a tensor value on the host (.item(), float())",
                "x.norm().item() or float(x.norm()) copies the value to the host: on a GPU a sync, under "
                "torch.compile a graph break. Keep the norm a tensor: norm = x.norm(); "
                "torch.where(norm > 1, x / norm, x).",
                _clip_item),
        Mistake("Python if on a tensor value",
                "`if x.norm() > 1:` asks for a Python bool, which only exists after a host sync, and the "
                "graph breaks there (one graph cannot record both paths). Use torch.where(x.norm() > 1, "
                "x / x.norm(), x), which computes both and picks on the device (torch.cond(pred, true_fn, "
                "false_fn, (x,)) keeps one graph too, but reads pred on the host).",
                _clip_python_if),
        Mistake("NaN for an all-zero input",
                "at norm 0, x / x.norm() is 0 / 0 = nan, and nan * 0 is still nan: mask arithmetic cannot "
                "hide it. torch.where(norm > 1, x / norm, x) picks x there without computing with the nan.",
                _clip_nan_at_zero, detect=lambda out, a, k: isinstance(out, torch.Tensor)
                and not bool(a[0].any()) and bool(torch.isnan(out).any())),
        Mistake("always normalises",
                "vectors with norm <= 1 must come back unchanged: choose between two branches.",
                _clip_always, detect=_clip_like(_clip_always)),
        Mistake("branches swapped (or clamp(max=1) instead of clamp(min=1))",
                _SWAP_HINT, _clip_swapped,
                detect=_clip_like(lambda x: torch.where(x.norm() > 1, x, x / x.norm()))),
        Mistake("clamps each element instead of scaling by the norm",
                "x.clamp(-1, 1) limits each element on its own and changes the direction of x; scale the "
                "whole tensor instead: x / x.norm() when the norm is larger than 1.",
                _clip_elementwise, detect=_clip_like(_clip_elementwise)),
        Mistake("L1 norm instead of the L2 norm",
                "x.norm() is the Euclidean (L2) norm, the square root of the sum of squares; "
                "x.abs().sum() is the L1 norm.",
                _clip_l1, detect=_clip_like(_clip_l1)),
        Mistake("divides by the squared norm",
                "(x * x).sum() is the squared norm: divide by its square root, x.norm(), so the result has "
                "norm 1.",
                _clip_squared, detect=_clip_like(_clip_squared)),
        Mistake("norm per row (dim=-1) instead of the norm of the whole tensor",
                "x.norm(dim=-1) gives each row its own norm, so every row is clipped on its own; the task "
                "uses x.norm() with no dim: one norm for the whole tensor.",
                _clip_per_row, detect=_clip_like(_clip_per_row)),
        Mistake("modifies the input in place inside a branch",
                "torch.cond branches must not change their inputs: return v / v.norm(), not v.div_(...).",
                _clip_in_place, error_match="captured completely"),
        Mistake(_ALIAS_NAME,
                _ALIAS_TEXT,
                _clip_alias, error_match="aliasing"),
    ],
    inspect=_exportable,
))
