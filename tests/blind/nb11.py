"""Blind answers for notebook 11, written from notebooks/11_performance_and_compile.ipynb only."""
from tests.blind import Answer


def _time(warm: str = "for _ in range(warmup):\n        fn()",
          after_warm: str = "if sync is not None:\n        sync()",
          start: str = "start = clock()",
          body: str = "for _ in range(repeats):\n        fn()",
          after_body: str = "if sync is not None:\n        sync()",
          stop: str = "stop = clock()",
          result: str = "return (stop - start) / repeats") -> str:
    return f'''
import time

def time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
    {warm}
    {after_warm}
    {start}
    {body}
    {after_body}
    {stop}
    {result}
'''


def _mean(body: str) -> str:
    return f'''
def mean_epoch_loss(step_losses):
    {body}
'''


def _clip(body: str) -> str:
    return f'''
def clip_norm(x):
    {body}
'''


ANSWERS = [
    # ------------------------------------------------------------------ 11.time_it: correct
    Answer("11.time_it", "ok", _time(), label="the plain recipe"),
    Answer("11.time_it", "ok", '''
import time

def _maybe_sync(sync):
    if sync is not None:
        sync()

def time_it(fn, warmup: int = 2, repeats: int = 10, sync=None, clock=time.perf_counter) -> float:
    """Mean seconds per call, after `warmup` untimed calls, synchronised around the timed block."""
    for _ in range(warmup):
        fn()
    _maybe_sync(sync)
    t0 = clock()
    for _ in range(repeats):
        fn()
    _maybe_sync(sync)
    return (clock() - t0) / repeats
''', label="helper for the optional sync, clock() inline", name="time_it"),
    Answer("11.time_it", "ok", _time(after_warm="sync and sync()", after_body="sync and sync()"),
           label="`sync and sync()` short-circuit"),
    Answer("11.time_it", "ok", _time(warm="i = 0\n    while i < warmup:\n        fn()\n        i += 1",
                                     body="n = repeats\n    while n:\n        fn()\n        n -= 1",
                                     result="elapsed = stop - start\n    return elapsed / float(repeats)"),
           label="while loops"),
    Answer("11.time_it", "ok", _time(after_warm="if callable(sync):\n        sync()",
                                     after_body="if callable(sync):\n        sync()",
                                     warm="[fn() for _ in range(warmup)]",
                                     body="[fn() for _ in range(repeats)]"),
           label="list comprehensions for the loops, callable(sync)"),
    Answer("11.time_it", "ok", '''
import time

def time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
    do_sync = sync if sync is not None else (lambda: None)
    for _ in range(warmup):
        fn()
    do_sync()
    begin = clock()
    for _ in range(repeats):
        fn()
    do_sync()
    end = clock()
    return float(end - begin) / repeats
''', label="no-op lambda when sync is None"),
    # ------------------------------------------------------------------ 11.time_it: wrong
    Answer("11.time_it", "fail", _time(warm="pass"), label="no warm-up calls", words=("warm-up",)),
    Answer("11.time_it", "fail", '''
import time

def time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
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
''', label="clock started before the warm-up", words=("clock before",)),
    Answer("11.time_it", "fail", _time(after_warm="pass", after_body="pass"), label="never calls sync", words=("sync",)),
    Answer("11.time_it", "fail", _time(after_warm="pass"), label="no sync after the warm-up", words=("warm",)),
    Answer("11.time_it", "fail", _time(after_body="pass"), label="no sync after the timed calls", words=("before reading the clock",)),
    Answer("11.time_it", "fail", _time(after_body="pass", stop="stop = clock()\n    if sync is not None:\n        sync()"),
           label="reads the clock before the final sync", words=("before reading the clock",)),
    Answer("11.time_it", "fail", _time(result="return stop - start"), label="returns the total, not the mean", words=("repeats",)),
    Answer("11.time_it", "fail", _time(result="return (stop - start) / (repeats + warmup)"),
           label="divides by repeats + warmup", words=("by `repeats`",)),
    Answer("11.time_it", "fail", _time(start="start = time.perf_counter()", stop="stop = time.perf_counter()"),
           label="uses time.perf_counter, not the clock argument", words=("clock()",)),
    Answer("11.time_it", "fail", _time(body="for _ in range(repeats - 1):\n        fn()"),
           label="one timed call too few", words=("found 6 calls",)),
    Answer("11.time_it", "fail", '''
import time

def time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    if sync is not None:
        sync()
    return sum(times) / len(times)
''', label="times each call separately without syncing (measures queueing)", words=("launches",)),
    Answer("11.time_it", "fail", _time(after_warm="sync()", after_body="sync()"),
           label="calls sync even when it is None", words=("None",)),
    Answer("11.time_it", "fail", _time(warm="for _ in range(max(warmup, 1)):\n        fn()"),
           label="always at least one warm-up call (warmup=0 ignored)", words=("found 4 calls",)),
    Answer("11.time_it", "fail", _time(result="return (stop - start) / repeats * 1000"),
           label="milliseconds instead of seconds", words=("found 10 s",)),
    Answer("11.time_it", "fail", '''
import time

def time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if sync is not None:
            sync()
        t0 = clock()
        fn()
        if sync is not None:
            sync()
        times.append(clock() - t0)
    return min(times)
''', label="best of the per-call times, sync around each call", words=("min(",)),
    Answer("11.time_it", "fail", _time(body="for _ in range(repeats):\n        if sync is not None:\n            sync()\n        fn()"),
           label="syncs before every timed call as well", words=("sync",)),
    Answer("11.time_it", "fail", _time(after_warm="if sync:\n        sync", after_body="if sync:\n        sync"),
           label="writes `sync` without calling it", words=("sync()",)),
    Answer("11.time_it", "fail", _time(body="for _ in range(repeats):\n        out = fn()", result="return out"),
           label="returns fn's result instead of the time", words=("fn()'s",)),

    # ------------------------------------------------------------------ 11.mean_epoch_loss: correct
    Answer("11.mean_epoch_loss", "ok", _mean("return torch.stack(step_losses).mean().detach()"),
           label="stack, mean, detach"),
    Answer("11.mean_epoch_loss", "ok", _mean("return (sum(step_losses) / len(step_losses)).detach()"),
           label="Python sum of tensors, divide, detach"),
    Answer("11.mean_epoch_loss", "ok", _mean("return torch.mean(torch.stack([loss.detach() for loss in step_losses]))"),
           label="detach each first, torch.mean"),
    Answer("11.mean_epoch_loss", "ok", '''
def mean_epoch_loss(step_losses: list[torch.Tensor]) -> torch.Tensor:
    """Mean of the step losses, on their device and in their dtype, without a host sync."""
    total = torch.zeros_like(step_losses[0]).detach()
    for loss in step_losses:
        total = total + loss.detach()
    return total / len(step_losses)
''', label="out-of-place accumulator from zeros_like"),
    Answer("11.mean_epoch_loss", "ok", '''
def mean_epoch_loss(step_losses):
    with torch.no_grad():
        return torch.cat([loss.reshape(1) for loss in step_losses]).mean()
''', label="no_grad, cat of reshape(1)"),
    Answer("11.mean_epoch_loss", "ok", _mean("dtype = step_losses[0].dtype\n    return torch.stack(step_losses).detach().double().mean().to(dtype)"),
           label="mean in float64, cast back to the losses' dtype"),
    # ------------------------------------------------------------------ 11.mean_epoch_loss: wrong
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.tensor(sum(l.item() for l in step_losses) / len(step_losses))"),
           label=".item() per loss", words=(".item()",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.tensor(sum(float(l) for l in step_losses) / len(step_losses), dtype=step_losses[0].dtype)"),
           label="float() per loss", words=("float()",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return sum(l.item() for l in step_losses) / len(step_losses)"),
           label="returns a Python float", words=(".item()",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.stack(step_losses).mean()"),
           label="not detached (keeps the graph)", words=("detach",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.stack(step_losses).sum().detach()"),
           label="sum, not mean", words=("mean",)),
    Answer("11.mean_epoch_loss", "fail", '''
def mean_epoch_loss(step_losses):
    total = step_losses[0].detach()
    for loss in step_losses[1:]:
        total += loss.detach()          # += on a tensor is in place: the first loss changes
    return total / len(step_losses)
''', label="total = losses[0]; total += ...: accumulates into the caller's first tensor", words=("in place",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.stack(step_losses).detach().float().mean()"),
           label="casts to float32 (dtype of float16/float64 losses changes)", words=("dtype",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.stack(step_losses).detach().mean(dim=0, keepdim=True)"),
           label="keepdim: shape [1], not 0-dim", words=("shape ()",)),
    Answer("11.mean_epoch_loss", "fail", _mean("values = torch.stack(step_losses).detach().tolist()\n    return torch.tensor(sum(values) / len(values))"),
           label=".tolist() then Python mean", words=(".tolist()",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return (torch.stack(step_losses).sum() / (len(step_losses) - 1)).detach()"),
           label="divides by len - 1", words=("len(step_losses)",)),
    Answer("11.mean_epoch_loss", "fail", _mean("for loss in step_losses:\n        loss.detach_()\n    return torch.stack(step_losses).mean()"),
           label="detach_() on the caller's tensors", words=("detach_",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.tensor(step_losses).mean()"),
           label="torch.tensor(list of tensors): converts every element on the host", words=("host copies",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return np.mean([l.detach().numpy() for l in step_losses])"),
           label="numpy mean: not a tensor", words=("0-dim tensor",)),
    Answer("11.mean_epoch_loss", "fail", '''
def mean_epoch_loss(step_losses):
    running = step_losses[0].detach().clone()
    for loss in step_losses[1:]:
        running = (running + loss.detach()) / 2      # "running average"
    return running
''', label="pairwise running average (weights the last steps more)", words=("running",)),
    Answer("11.mean_epoch_loss", "fail", _mean("return torch.stack(step_losses).mean().clone()"),
           label="clone() instead of detach(): still in the graph", words=("detach",)),

    # ------------------------------------------------------------------ 11.clip_norm: correct
    Answer("11.clip_norm", "ok", _clip("norm = x.norm()\n    return torch.where(norm > 1, x / norm, x)"),
           label="torch.where (a new tensor either way)"),
    Answer("11.clip_norm", "ok", _clip("return torch.cond(x.norm() > 1, lambda t: t / t.norm(), lambda t: t.clone(), (x,))"),
           label="torch.cond with lambdas, clone() in the false branch"),
    Answer("11.clip_norm", "ok", _clip("return x / torch.clamp(x.norm(), min=1.0)"),
           label="divide by max(norm, 1) with clamp"),
    Answer("11.clip_norm", "ok", _clip("norm = torch.linalg.vector_norm(x)\n    return x / torch.maximum(norm, torch.ones_like(norm))"),
           label="linalg.vector_norm, torch.maximum"),
    Answer("11.clip_norm", "ok", '''
def _scaled(t: torch.Tensor) -> torch.Tensor:
    return t / t.norm()

def _copied(t: torch.Tensor) -> torch.Tensor:
    return t.clone()

def clip_norm(x: torch.Tensor) -> torch.Tensor:
    """x / ||x|| when ||x|| > 1, else a copy of x; no graph break, no host sync."""
    return torch.cond(x.norm() > 1, _scaled, _copied, (x,))
''', label="torch.cond with named branch functions", name="clip_norm"),
    Answer("11.clip_norm", "ok", _clip("norm = x.norm()\n    over = (norm > 1).to(x.dtype)\n    return x / (over * norm + (1 - over))"),
           label="arithmetic mask in the denominator"),
    # ------------------------------------------------------------------ 11.clip_norm: wrong
    Answer("11.clip_norm", "fail", _clip("if x.norm() > 1:\n        return x / x.norm()\n    return x.clone()"),
           label="Python if on a tensor value", words=("Python `if`",)),
    Answer("11.clip_norm", "fail", _clip("if x.norm().item() > 1:\n        return x / x.norm()\n    return x.clone()"),
           label=".item() in the condition", words=("host sync",)),
    Answer("11.clip_norm", "fail", _clip("return torch.cond(x.norm() > 1, lambda t: t / t.norm(), lambda t: t, (x,))"),
           label="torch.cond false branch returns its input itself", words=("clone",)),
    Answer("11.clip_norm", "fail", _clip("return x.clamp(-1.0, 1.0)"), label="clamps each element to [-1, 1]", words=("element",)),
    Answer("11.clip_norm", "fail", _clip("return x / x.norm()"), label="always normalises (also below norm 1)", words=("unchanged",)),
    Answer("11.clip_norm", "fail", _clip("norm = x.norm(dim=-1, keepdim=True)\n    return torch.where(norm > 1, x / norm, x)"),
           label="row-wise norms instead of the norm of the whole tensor", words=("dim",)),
    Answer("11.clip_norm", "fail", _clip("x /= torch.clamp(x.norm(), min=1.0)\n    return x"),
           label="divides x in place and returns it", words=("in place",)),
    Answer("11.clip_norm", "fail", _clip("norm = x.abs().sum()\n    return torch.where(norm > 1, x / norm, x)"),
           label="L1 norm", words=("L2",)),
    Answer("11.clip_norm", "fail", _clip("sq = (x * x).sum()\n    return torch.where(sq > 1, x / sq, x)"),
           label="divides by the squared norm", words=("squared",)),
    Answer("11.clip_norm", "fail", _clip("return x / torch.clamp(x.norm(), max=1.0)"),
           label="clamp(max=1): scales small tensors up", words=("min=",)),
    Answer("11.clip_norm", "fail", _clip("norm = x.norm()\n    return torch.where(norm > 1, x / norm, x), norm"),
           label="returns (clipped, norm)", words=("tuple",)),
    Answer("11.clip_norm", "fail", _clip("n = float(x.norm())\n    return x / n if n > 1 else x.clone()"),
           label="float(x.norm()): a host sync", words=("host sync",)),
    Answer("11.clip_norm", "fail", _clip("norm = x.norm().item()\n    return torch.where(torch.tensor(norm > 1), x / norm, x)"),
           label="torch.where but the norm taken with .item()", words=(".item()",)),
    Answer("11.clip_norm", "fail", _clip("return torch.renorm(x, p=2, dim=0, maxnorm=1.0)"),
           label="torch.renorm: clips every slice along dim 0 separately", words=("renorm",)),
    Answer("11.clip_norm", "fail", _clip("norm = x.norm()\n    return torch.where(norm > 1, x, x / norm)"),
           label="branches of torch.where swapped", words=("swapped",)),
    Answer("11.clip_norm", "fail", _clip("norm = x.norm()\n    over = (norm > 1).to(x.dtype)\n    return x / norm * over + x * (1 - over)"),
           label="mask arithmetic: a zero tensor gives NaN (0/0 * 0)", words=("nan",)),
]
