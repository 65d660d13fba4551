# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · Performance and `torch.compile`
#
# "Make it faster" starts with "measure where the time goes": a training step is data loading,
# forward, backward and the optimizer, and the slow part is often not the one you would guess.
# This notebook times code correctly, profiles a training step with `torch.profiler`, removes a
# data-loading bottleneck and hidden host-device syncs, measures what `torch.compile` really buys
# on this machine (including its compile time), and writes code that compiles into one graph:
# no graph break, no host sync. (Exporting a model for deployment is the next notebook.)
#
# **Run time:** this notebook compiles C++ code once (`torch.compile`), so its first run is the
# slowest of the course: on a small 2-core machine the C++ compiler alone needs 10–20 s. A second
# run reuses the compiled kernel from Inductor's on-disk cache and is much faster.
#
# ## You will learn (≈ 35 min)
#
# 1. Time code correctly: warm-up, synchronisation, mean per call.
# 2. Profile a training step with `torch.profiler` and read the `key_averages()` table; tell data
#    loading from compute.
# 3. Find and remove host-device syncs (`.item()` every step).
# 4. Measure `torch.compile` honestly: first-call compile time vs steady state vs eager.
# 5. Find graph breaks with `torch._dynamo.explain` and write a data-dependent choice without one
#    (`torch.where`, `torch.cond`).

# %%
# Makes course_utils importable: installed (laptop, Binder), in a folder above (JupyterHub),
# or installed from the course's repository without touching torch (Colab). Prints what it did.
import importlib.util, os, pathlib, subprocess, sys
COURSE_REPO = "git+https://github.com/pytorch-inside/course"  # a fork: see pyproject.toml [tool.course]
if importlib.util.find_spec("course_utils"):
    print("course_utils: already installed, nothing to do")
elif here := next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
                   if (p / "course_utils" / "__init__.py").is_file()), None):
    sys.path.insert(0, str(here))
    print(f"course_utils: using the course folder {here}")
else:
    source = os.environ.get("COURSE_REPO_URL", COURSE_REPO)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", source], check=True)
    importlib.invalidate_caches()
    print(f"course_utils: installed from {source} (--no-deps: torch and the rest left as they are)")

from course_utils.setup import setup

info = setup(seed=0)

# %%
import math
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, TensorDataset

from course_utils.devices import pick_device
from course_utils.exercises import check
from course_utils.profiling import capture_messages, device_sync, quiet_backend_logs

quiet_backend_logs()  # a CUDA build on a machine without a GPU logs harmless start-up notices
device = pick_device()
print("device:", device)


# %% [markdown]
# ## 1. Timing code correctly
#
# Three things make naive timings lie:
#
# - **Warm-up.** The first call pays one-time costs: memory allocation, caches, and for
#   `torch.compile` a whole compilation. Time steady-state calls, after a few untimed ones.
# - **Asynchrony.** On a GPU, a PyTorch call *queues* a kernel and returns immediately. A clock read
#   right after it measures the queueing, not the work. `torch.cuda.synchronize()` waits until the
#   queue is empty; call it after the warm-up and before reading the clock at the end.
# - **Noise.** One call is one sample. Average over several.
#
# ### Exercise 1 — `time_it`
#
# Write `time_it(fn, warmup, repeats, sync, clock)`: call `fn()` `warmup` times untimed (`warmup`
# may be 0), then return the mean seconds per call over `repeats` calls. Read the time with `clock()`. When `sync`
# is given, call it after the warm-up and after the timed calls. (The checker passes a fake,
# asynchronous "GPU" and a fake clock, so it can test your logic exactly and instantly.)

# %%
def time_it(fn, warmup: int = 2, repeats: int = 10, sync=None, clock=time.perf_counter) -> float:
    ### BEGIN SOLUTION
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
    ### END SOLUTION


# %%
check("11.time_it", time_it)

# %% [markdown]
# From here on the notebook uses the same function from `course_utils.profiling` (it has exactly
# this contract), with `sync=device_sync(device)`: `torch.cuda.synchronize` on a GPU, nothing on
# the CPU.

# %%
from course_utils.profiling import time_it as measure


# %% [markdown]
# ## 2. Profiling a training step
#
# A small classifier and a dataset whose `__getitem__` does real work per sample (think: decoding
# and augmenting an image) — written the way many first pipelines are.

# %%
class SlowFeatures(Dataset):
    """128 samples; each one is computed in Python when it is requested."""

    def __init__(self, n: int = 128) -> None:
        gen = torch.Generator().manual_seed(0)
        self.raw = torch.randn(n, 64, generator=gen)
        self.shift = (0.1 * torch.randn(64, generator=gen)).tolist()
        self.labels = torch.randint(0, 10, (n,), generator=gen)

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, i: int):
        values = self.raw[i].tolist()
        for _ in range(40):                      # per-sample work in plain Python
            values = [math.tanh(v + s) for v, s in zip(values, self.shift)]
        return torch.tensor(values), self.labels[i]


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                         nn.Linear(128, 10)).to(device)


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


# %% [markdown]
# `torch.profiler.profile` records every operator PyTorch runs (and, with
# `ProfilerActivity.CUDA`, every GPU kernel). `record_function("name")` adds your own labelled
# ranges, so the table can answer "how long did *data* take vs *forward*?".

# %%
def run_epoch(loader) -> None:
    batches = iter(loader)
    while True:
        with record_function("data"):
            batch = next(batches, None)
        if batch is None:
            break
        x, y = (t.to(device) for t in batch)
        with record_function("forward"):
            loss = F.cross_entropy(model(x), y)
        with record_function("backward"):
            optimizer.zero_grad()
            loss.backward()
        with record_function("optimizer"):
            optimizer.step()


slow_loader = DataLoader(SlowFeatures(), batch_size=32, shuffle=True)
run_epoch(DataLoader(SlowFeatures(n=32), batch_size=32))   # warm-up: first calls pay one-time costs
with profile(activities=[ProfilerActivity.CPU]) as prof:
    run_epoch(slow_loader)

# %% [markdown]
# `prof.key_averages()` groups the events by name. Sort by total CPU time (time inside the event
# *including* everything it called) to see where the step goes; *self* time excludes the children.
# The numbers vary from run to run and machine to machine; the ranking is what matters.

# %%
# NBVAL_IGNORE_OUTPUT
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
names = [event.key for event in prof.key_averages()]
assert {"data", "forward", "backward", "optimizer", "aten::addmm"} <= set(names)

# %% [markdown]
# The top rows are `data` and the DataLoader's iterator, and almost all of the iterator's time is
# **self** time: Python code (our per-sample loop) that runs no PyTorch operator, so no `aten::`
# row accounts for it — a large self time on a Python-level row is the profiler's way of saying
# "plain Python here". The model's operators (`aten::addmm`, the backward functions) come far
# below. A small helper turns our four labels into shares of the step:

# %%
STAGES = ("data", "forward", "backward", "optimizer")


def stage_shares(prof) -> dict[str, float]:
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in STAGES}
    return {stage: totals[stage] / sum(totals.values()) for stage in STAGES}


# %%
# NBVAL_IGNORE_OUTPUT
slow_shares = stage_shares(prof)
print({stage: f"{share:.0%}" for stage, share in slow_shares.items()})
assert slow_shares["data"] > 0.5, slow_shares

# %% [markdown]
# Data loading dominates: a faster model, a GPU or `torch.compile` would change almost nothing.
# The fixes are on the data side: do expensive preprocessing **once** (cache it, as below), work on
# whole batches instead of one sample at a time, or load in parallel with `num_workers` (notebook
# 05). Below we do the first two: the per-sample work runs once, and each batch is fetched with a
# single indexing operation (a `BatchSampler` hands the dataset a list of 32 indices, and
# `TensorDataset` indexes all its tensors with it) instead of 32 `__getitem__` calls plus a collate.

# %%
# NBVAL_IGNORE_OUTPUT
slow = SlowFeatures()
features = torch.stack([slow[i][0] for i in range(len(slow))])     # preprocess once
cached = TensorDataset(features, slow.labels)
batches = BatchSampler(RandomSampler(cached), batch_size=32, drop_last=False)
fast_loader = DataLoader(cached, sampler=batches, batch_size=None)  # one indexing op per batch
with profile(activities=[ProfilerActivity.CPU]) as prof_fast:
    run_epoch(fast_loader)
fast_shares = stage_shares(prof_fast)
print({stage: f"{share:.0%}" for stage, share in fast_shares.items()})
assert fast_shares["data"] < slow_shares["data"]

# %% [markdown]
# Now the model's own work (forward, backward, optimizer) is most of the step: this is the point
# where model-side optimisations start to pay.
#
# Two habits for real runs: profile a few steps *after* a warm-up (pass
# `schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)` to `profile` and call `prof.step()`
# at the end of every training step: the schedule counts those calls to know which steps to skip,
# warm up on and record), and export a timeline with
# `prof.export_chrome_trace(path)` to look at it in Perfetto or `chrome://tracing`.
#
# ## 3. Hidden host-device syncs
#
# Notebook 01 measured `.item()` in a loop. Here is the same habit inside a training step:
# logging the loss with `.item()` every step, versus accumulating it as a tensor and converting
# once. The profiler counts the device-to-host copies (`aten::item` → `aten::_local_scalar_dense`):

# %%
x_fixed, y_fixed = features[:32].to(device), slow.labels[:32].to(device)


def train_steps(steps: int, item_every_step: bool) -> float:
    running = torch.zeros((), device=device)
    total = 0.0
    for _ in range(steps):
        loss = F.cross_entropy(model(x_fixed), y_fixed)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if item_every_step:
            total += loss.item()              # waits for the device, copies one number
        else:
            running += loss.detach()          # stays on the device, no waiting
    return total if item_every_step else running.item()   # one copy at the end


def count_item_calls(item_every_step: bool) -> int:
    with profile(activities=[ProfilerActivity.CPU]) as p:
        train_steps(10, item_every_step)
    return sum(e.count for e in p.key_averages() if e.key == "aten::item")


print("aten::item calls in 10 steps, .item() every step:", count_item_calls(True))
print("aten::item calls in 10 steps, tensor accumulator: ", count_item_calls(False))

# %%
# NBVAL_IGNORE_OUTPUT
sync = device_sync(device)
t_item = measure(lambda: train_steps(20, True), warmup=1, repeats=3, sync=sync)
t_tensor = measure(lambda: train_steps(20, False), warmup=1, repeats=3, sync=sync)
print(f"{device.type}: .item() every step {t_item * 1e3:.1f} ms, tensor accumulator "
      f"{t_tensor * 1e3:.1f} ms per 20 steps (ratio {t_item / t_tensor:.2f})")
assert t_item > 0 and t_tensor > 0


# %% [markdown]
# On a CPU, operations run synchronously anyway, so there is no queue to wait for: `.item()` is a
# small copy plus Python overhead, and whatever difference you see above is that overhead (plus
# timing noise if the machine is busy). On a GPU the CPU normally runs *ahead*,
# queueing the next step's kernels while the GPU works; each `.item()` makes it stop and wait until
# the GPU has finished everything queued, so Python overhead and GPU work no longer overlap (on a
# CUDA machine the cell above runs on the GPU: compare your ratio). The same applies to
# `print(loss)`, `float(loss)`, `tensor.tolist()`, `.cpu()`, and Python `if`s on tensor values.
# On CUDA, `torch.cuda.set_sync_debug_mode("warn")` warns at every sync it sees.

# %% [markdown]
# ### Exercise 2 — `mean_epoch_loss`
#
# Write `mean_epoch_loss(step_losses)`: the mean of a list of per-step loss tensors, returned as a
# **detached 0-dim tensor** in the losses' dtype, with no `.item()`, `float()` or `.tolist()` (the
# checker counts them), and without changing the tensors you are given.

# %%
def mean_epoch_loss(step_losses: list[torch.Tensor]) -> torch.Tensor:
    ### BEGIN SOLUTION
    return torch.stack([loss.detach() for loss in step_losses]).mean()
    ### END SOLUTION


# %%
check("11.mean_epoch_loss", mean_epoch_loss)

# %% [markdown]
# ## 4. `torch.compile`, measured honestly
#
# `torch.compile(fn)` returns a function that, on its first call, (1) *captures* the Python code
# into a graph of tensor operations (TorchDynamo), (2) *generates* fused code for it (Inductor:
# C++/OpenMP on CPU, Triton on GPU) and (3) *compiles* that code. Later calls with inputs of the
# same shapes/dtypes reuse it. The win comes mostly from **fusion**: in eager mode,
# `0.5 * x * (1 + tanh(...))` runs about ten separate operators, each reading and writing a whole
# tensor in memory; the compiled kernel does it in one pass.
#
# The cost is the first call. Inductor's C++ path can first precompile a large header of common
# includes, which speeds up compiling *many* kernels but takes compiler time of its own. This
# notebook compiles one kernel, so we turn that off to shorten the first call. The supported switch
# is the environment variable `TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS=0`, set before Python
# starts; the cell below flips the same setting in `torch._inductor.config`, an internal module whose
# names can change between releases. Everything else is the default.

# %%
import torch._inductor.config as inductor_config

inductor_config.cpp_cache_precompile_headers = False   # one kernel to build: skip the big header


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


compiled_gelu = torch.compile(gelu_tanh)
x_big = torch.randn(1_000_000, device=device)

# %%
# NBVAL_IGNORE_OUTPUT
start = time.perf_counter()
y_compiled = compiled_gelu(x_big)          # capture + generate + compile + run
if sync is not None:
    sync()
first_call = time.perf_counter() - start

eager_s = measure(lambda: gelu_tanh(x_big), warmup=2, repeats=10, sync=sync)
compiled_s = measure(lambda: compiled_gelu(x_big), warmup=2, repeats=10, sync=sync)
builtin_s = measure(lambda: F.gelu(x_big, approximate="tanh"), warmup=2, repeats=10, sync=sync)

print(f"first compiled call (compile + run): {first_call:8.2f} s")
print(f"eager, ~10 separate ops:             {eager_s * 1e3:8.2f} ms per call")
print(f"compiled, one fused kernel:          {compiled_s * 1e3:8.2f} ms per call "
      f"(speed-up x{eager_s / compiled_s:.1f})")
print(f"built-in F.gelu(approximate='tanh'): {builtin_s * 1e3:8.2f} ms per call")
if eager_s > compiled_s:
    print(f"compiling pays off after ~{first_call / (eager_s - compiled_s):,.0f} calls")
assert torch.allclose(y_compiled, gelu_tanh(x_big), atol=1e-5)
assert first_call > compiled_s


# %% [markdown]
# How to read your numbers:
#
# - The **first call** costs seconds (10–20 s on a cold cache on a small machine: it runs a C++
#   compiler); a steady-state call costs milliseconds. Compilation only pays off over many calls — the
#   break-even line above says how many. Re-run this notebook and the first call is much faster:
#   Inductor caches compiled kernels on disk (`/tmp/torchinductor_<user>`), keyed by the graph.
# - On a chain of element-wise operations the fused kernel usually wins clearly (your speed-up is
#   printed above). But the hand-written built-in `F.gelu` is about as fast: when PyTorch already
#   has a fused kernel for what you do, `compile` adds little.
# - It helps least on tiny tensors (the fixed per-call overhead dominates), on code with **graph
#   breaks**, and when shapes keep changing (each new shape may trigger a recompile; mark
#   dimensions dynamic or pad to a few sizes). On a GPU, `mode="reduce-overhead"` (CUDA graphs)
#   also removes kernel-launch overhead, which matters for small models.
# - The often-quoted "20–50 % more throughput" is a typical range for real models on GPUs, not a
#   promise: measure your own step, as above. (It also suggests `torch.jit.script` for many small
#   ops: that is deprecated in 2.14 — `torch.compile` is its replacement.)
#
# A **graph break** is a place where Dynamo cannot capture the code into the graph and falls back
# to Python: `print(tensor.item())` is one, for the same reason it is a sync — the Python value
# must exist *now*. `torch._dynamo.explain` reports them without compiling anything:

# %%
def logged_step(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) * 2
    print("mean:", round(y.mean().item(), 4))      # needs a Python number: graph break
    return y.cos()


with capture_messages() as captured:               # Dynamo also logs a warning about the break
    report = torch._dynamo.explain(logged_step)(torch.linspace(0, 1, 8))
print("graphs:", report.graph_count, "| graph breaks:", report.graph_break_count)
print("reason:", str(report.break_reasons[0].reason).splitlines()[0])


# %% [markdown]
# Two graphs instead of one, and the Python code runs between them. `torch.compile(fn,
# fullgraph=True)` turns any graph break into an error, which is what you want for code whose speed
# matters.
#
# The most common break in model code is a Python `if` on a tensor *value*: `if x.norm() > 1:`
# needs a Python `bool`, so the value must be copied to the host (a sync) and the graph ends there.
# Two ways keep the choice inside the graph:
#
# - `torch.where(condition, a, b)` computes both `a` and `b` and picks element-wise: right when
#   both sides are cheap.
# - `torch.cond(pred, true_fn, false_fn, operands)` records both branches as sub-graphs and runs
#   only the chosen one. Its branches must return new tensors (not their input itself) and must not
#   change their inputs. Notebook 12 uses it again to export a model with a data-dependent branch.

# %%
def clip_if(x: torch.Tensor) -> torch.Tensor:
    if x.norm() > 1:                      # a Python bool from a tensor value
        return x / x.norm()
    return x.clone()


def clip_where(x: torch.Tensor) -> torch.Tensor:
    norm = x.norm()
    return torch.where(norm > 1, x / norm, x)


probe = torch.linspace(-1, 1, 8)
for fn in (clip_if, clip_where):
    with capture_messages():
        explained = torch._dynamo.explain(fn)(probe)
    print(f"{fn.__name__}: graphs {explained.graph_count}, graph breaks {explained.graph_break_count}")
assert torch.allclose(clip_if(3 * probe), clip_where(3 * probe))

# %% [markdown]
# ### Exercise 3 — `clip_norm`, compile-friendly
#
# Write `clip_norm(x)`: return `x / x.norm()` when `x.norm() > 1`, and an unchanged **copy** of
# `x` otherwise, with no graph break and no host sync: no Python `if` on a tensor value, no
# `.item()` (the checker captures your function as one graph, with `torch.export`, to find them).
# If you use `torch.cond`, remember that its branches must return new tensors, not their input
# itself.

# %%
def clip_norm(x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v.clone(), (x,))
    ### END SOLUTION


# %%
check("11.clip_norm", clip_norm)

# %% [markdown]
# ## Key points
#
# - Time steady state: warm up, synchronise (on GPUs) before reading the clock, average many calls.
# - Profile before optimising: `torch.profiler` + `record_function` labels + `key_averages()`
#   sorted by total time. If data loading dominates, fix the data pipeline first.
# - Keep per-step values on the device; `.item()`, `print(tensor)`, `.cpu()` are syncs.
# - `torch.compile` costs seconds on the first call and can save a lot per call on fusable code;
#   measure both, and expect little on tiny tensors or where a fused built-in exists.
# - A Python `if` on a tensor value is a graph break and a host sync: `torch.compile(...,
#   fullgraph=True)` finds breaks; `torch.where` or `torch.cond` keep the choice in the graph.
#
# ## Further reading
#
# - PyTorch docs: *torch.profiler* and the recipe *PyTorch Profiler*.
# - PyTorch docs: *torch.compile* (introduction, troubleshooting, "Dynamo overview", graph breaks).
# - PyTorch docs: *torch.cond* (control flow operators) and *torch.where*.
# - PyTorch docs: *CUDA semantics* (asynchronous execution, `torch.cuda.set_sync_debug_mode`).
# - Next: `12_export_and_deployment.ipynb`.
