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
# "Make it faster" starts with "measure where the time goes". A training step is data loading,
# forward, backward and the optimizer, and the slow part is often not the one you would guess. This
# notebook times code correctly and profiles a training step with `torch.profiler`. It removes a
# data-loading bottleneck and hidden host-device syncs, measures what `torch.compile` really buys on
# this machine (compile time included), and writes a data-dependent choice that compiles into one
# graph. (Exporting a model for deployment is the next notebook.)
#
# **Run time:** this notebook compiles C++ code (`torch.compile`: one small function, then a whole
# training step), so its first run is the slowest of the course. With a cold compiler cache, the
# whole notebook takes about 30 s on a quiet 2-core machine, most of it compiling; on a busy
# machine, one compile alone can take 25-50 s (section 4 prints each compile time as measured). A
# second run reuses the compiled kernels from Inductor's on-disk cache: a compile then takes well
# under a second.
#
# **Needs a C++ compiler:** `torch.compile` builds the code it generates with one. On Linux that is
# g++ (Debian/Ubuntu: `sudo apt install g++`); on macOS, Apple's command line tools
# (`xcode-select --install`); on Windows, Visual Studio Build Tools with the "Desktop development
# with C++" workload, with Jupyter started from a *Developer PowerShell for VS* so that `cl` is
# found. Without a compiler the compile cells say so and skip; every other cell runs.
#
# ## You will learn (≈ 35 min)
#
# 1. Time code correctly: warm-up, synchronisation, mean per call.
# 2. Profile a training step with `torch.profiler` and read the `key_averages()` table; tell data
#    loading from compute.
# 3. Find and remove host-device syncs (`.item()` every step).
# 4. Measure `torch.compile` honestly, on a small function and on a whole training step:
#    first-call compile time vs steady state vs eager, recompiles, and the on-disk cache.
# 5. Find graph breaks with `torch._dynamo.explain` and write a data-dependent choice without one
#    (`torch.where`, `torch.cond`).

# %%
# Makes course_utils importable: installed (laptop, Binder), in a folder above (JupyterHub),
# or installed from the course's repository without touching torch (Colab). setup() says which.
import importlib.util, os, pathlib, subprocess, sys
COURSE_REPO = "git+https://github.com/pytorch-inside/course"  # a fork: see pyproject.toml [tool.course]
if importlib.util.find_spec("course_utils"):
    os.environ["COURSE_BOOTSTRAP"] = "installed"
elif here := next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
                   if (p / "course_utils" / "__init__.py").is_file()), None):
    sys.path.insert(0, str(here))
    os.environ["COURSE_BOOTSTRAP"] = f"folder:{here}"
else:
    source = os.environ.get("COURSE_REPO_URL", COURSE_REPO)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", source], check=True)
    importlib.invalidate_caches()
    os.environ["COURSE_BOOTSTRAP"] = f"pip:{source}"

from course_utils.setup import setup

info = setup(seed=0)

# %%
import math
import subprocess
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch._dynamo.utils import counters
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, TensorDataset

from course_utils.claims import confirm
from course_utils.devices import pick_device, skip_unless_compiler, skip_unless_gpu
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
# may be 0), then return the mean seconds per call over `repeats` calls. Read the time with
# `clock()`. When `sync` is given, call it once after the warm-up and once after the last timed
# call, not inside the timed loop (a sync per call would time each call alone, with the device
# idle in between). (The checker passes a fake, asynchronous "GPU" whose steps vary in length and
# a fake clock, so it can test your logic exactly and instantly.)

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
# From here on, the notebook uses the same function from `course_utils.profiling`, which has
# exactly this contract. It passes `sync=device_sync(device)`: `torch.cuda.synchronize` on a GPU,
# nothing on the CPU.

# %%
from course_utils.profiling import time_it as measure


# %% [markdown]
# ## 2. Profiling a training step
#
# Here is a small classifier, and a dataset whose `__getitem__` does real work per sample (think:
# decoding and augmenting an image). It is written the way many first pipelines are.

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
# ranges. Then the table can answer "how long did *data* take vs *forward*?".

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
# `prof.key_averages()` groups the events by name. Sort by total CPU time to see where the step
# goes: the time inside the event, *including* everything it called. *Self* time excludes the
# children. The numbers vary from run to run and machine to machine; the ranking is what matters.

# %% tags=["nbval-ignore-output"]
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
names = [event.key for event in prof.key_averages()]
confirm({"data", "forward", "backward", "optimizer", "aten::addmm"} <= set(names),
        "the table has a row for each of our four labels and for the linear layers' aten::addmm")

# %% [markdown]
# The top rows are `data` and the DataLoader's iterator. Almost all of the iterator's time is
# **self** time: Python code (our per-sample loop) that runs no PyTorch operator, so no `aten::` row
# accounts for it. A large self time on a Python-level row is the profiler's way of saying "plain
# Python here".
#
# The model's operators (`aten::addmm`, the backward functions) come far below. A small helper turns
# our four labels into shares of the step:

# %%
STAGES = ("data", "forward", "backward", "optimizer")


def stage_shares(prof) -> dict[str, float]:
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in STAGES}
    return {stage: totals[stage] / sum(totals.values()) for stage in STAGES}


# %% tags=["nbval-ignore-output"]
slow_shares = stage_shares(prof)
print({stage: f"{share:.0%}" for stage, share in slow_shares.items()})
confirm(slow_shares["data"] > 0.5, "data loading takes more than half of the step")

# %% [markdown]
# Data loading dominates: a faster model, a GPU or `torch.compile` would change almost nothing. The
# fixes are on the data side:
#
# - do expensive preprocessing **once** (cache it, as below);
# - work on whole batches instead of one sample at a time;
# - or load in parallel with `num_workers` (notebook 05).
#
# Below we do the first two. The per-sample work runs once. Each batch is fetched with a single
# indexing operation instead of 32 `__getitem__` calls plus a collate: a `BatchSampler` hands the
# dataset a list of 32 indices, and `TensorDataset` indexes all its tensors with it.

# %% tags=["nbval-ignore-output"]
slow = SlowFeatures()
features = torch.stack([slow[i][0] for i in range(len(slow))])     # preprocess once
cached = TensorDataset(features, slow.labels)
batches = BatchSampler(RandomSampler(cached), batch_size=32, drop_last=False)
fast_loader = DataLoader(cached, sampler=batches, batch_size=None)  # one indexing op per batch
run_epoch(fast_loader)                                              # warm-up, as for the slow loader
with profile(activities=[ProfilerActivity.CPU]) as prof_fast:
    for _ in range(3):                                              # 12 steps: less noise than 4
        run_epoch(fast_loader)
fast_shares = stage_shares(prof_fast)
print({stage: f"{share:.0%}" for stage, share in fast_shares.items()})
confirm(fast_shares["data"] < slow_shares["data"], "with the cached dataset, data loading takes a smaller share of the step")

# %% [markdown]
# Now the model's own work (forward, backward, optimizer) is most of the step. This is the point
# where model-side optimisations start to pay.
#
# On a GPU machine, the first sign of a data bottleneck is usually **low GPU utilisation**. Watch
# `nvidia-smi` (or `watch -n 1 nvidia-smi`) in a terminal while training runs.
#
# Its `GPU-Util` column is the share of the last sample period (between 1/6 s and 1 s, depending on
# the GPU) in which at least one kernel was running. So it lies between 0 and 100 % (never
# "200 %"). Even 100 % only says that *some* kernel was always running, not that the whole GPU was
# busy.
#
# `torch.cuda.utilization()` reads the same figure from Python (it needs the `nvidia-ml-py`
# package). The cell below reads it while two loops run: one keeps the GPU busy, the other waits
# 10 ms for every batch, as a slow data pipeline does.

# %% tags=["nbval-ignore-output"]
def gpu_utilisation() -> int:
    """The driver's GPU-Util figure (0-100 %) for its last sample period."""
    try:
        return torch.cuda.utilization()
    except ModuleNotFoundError:                   # no nvidia-ml-py: ask nvidia-smi directly
        query = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]
        return int(subprocess.run(query, capture_output=True, text=True, check=True).stdout.split()[0])


def utilisation_during(step, seconds: float = 2.0) -> int:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        step()
    return gpu_utilisation()                      # read while the loop's last second is still recent


if skip_unless_gpu("GPU utilisation while a busy loop and a data-starved loop run", expect=(
        "typically 90-100 % for the loop of large matrix products and under 20 % for the loop "
        "that waits 10 ms per batch, on any recent NVIDIA GPU; the figure never exceeds 100 %")):
    big_matrix = torch.randn(4096, 4096, device="cuda")
    small = torch.randn(256, 256, device="cuda")

    def busy_step() -> None:
        for _ in range(10):
            big_matrix @ big_matrix
        torch.cuda.synchronize()                  # keep the queue short: the loop measures, not queues

    def starved_step() -> None:
        time.sleep(0.010)                         # "waiting for the next batch"
        small @ small
        torch.cuda.synchronize()

    busy, starved = utilisation_during(busy_step), utilisation_during(starved_step)
    print(f"GPU-Util, busy loop:         {busy:3d} %")
    print(f"GPU-Util, data-starved loop: {starved:3d} %")
    confirm(0 <= starved <= 100 and 0 <= busy <= 100, "GPU-Util lies between 0 and 100 %")

# %% [markdown]
# Two habits for real runs:
#
# - Profile a few steps *after* a warm-up. Pass
#   `schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)` to `profile`, and call
#   `prof.step()` at the end of every training step. The schedule counts those calls to know which
#   steps to skip, warm up on and record.
# - Export a timeline with `prof.export_chrome_trace(path)`, and look at it in Perfetto or
#   `chrome://tracing`.
#
# ## 3. Hidden host-device syncs
#
# Notebook 01 measured `.item()` in a loop. Here is the same habit inside a training step: logging
# the loss with `.item()` every step, versus accumulating it as a tensor and converting once. The
# profiler counts the device-to-host copies (`aten::item` → `aten::_local_scalar_dense`):

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

# %% [markdown]
# Ten copies against one. The cost of a copy depends on the device.
#
# On a CPU, operations run synchronously anyway, so there is no queue to wait for. `.item()` is a
# small copy plus Python overhead, far below the timing noise of 20 training steps: no time
# difference is expected, so the cell below times the two loops on a GPU only.
#
# On a GPU, the CPU normally runs *ahead*: it queues the next step's kernels while the GPU works.
# Each `.item()` makes it stop and wait until the GPU has finished everything queued. Python
# overhead and GPU work then no longer overlap. The same applies to `print(loss)`, `float(loss)`,
# `tensor.tolist()`, `.cpu()`, and Python `if`s on tensor values.

# %% tags=["nbval-ignore-output"]
sync = device_sync(device)          # used by every timing below
if skip_unless_gpu(".item() every step vs a tensor accumulator, timed", expect=(
        "typically the .item() loop is a little slower (ratio above 1) for this small model; the gap "
        "grows with the GPU work per step, which .item() stops from overlapping with Python")):
    t_item = measure(lambda: train_steps(20, True), warmup=2, repeats=30, sync=sync)
    t_tensor = measure(lambda: train_steps(20, False), warmup=2, repeats=30, sync=sync)
    print(f"{device.type}: .item() every step {t_item * 1e3:.1f} ms, tensor accumulator "
          f"{t_tensor * 1e3:.1f} ms per 20 steps (ratio {t_item / t_tensor:.2f})")
    confirm(t_item > 0 and t_tensor > 0, "both training loops ran on the GPU and were timed")


# %% [markdown]
# To find syncs you did not know about, CUDA has a switch: `torch.cuda.set_sync_debug_mode("warn")`
# warns at every synchronising operation (`"error"` raises instead). It exists only for CUDA, so
# the cell below runs on a GPU machine only.

# %% tags=["nbval-ignore-output"]
if skip_unless_gpu("torch.cuda.set_sync_debug_mode('warn') on .item() vs a tensor accumulator",
                   expect=("a UserWarning 'called a synchronizing CUDA operation' for .item(), and "
                           "no warning for the tensor accumulator")):
    gpu_loss = torch.ones((), device="cuda")
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with capture_messages() as item_messages:
            gpu_loss.item()
        with capture_messages() as tensor_messages:
            gpu_running = gpu_loss.detach() + gpu_loss.detach()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for label, got in ((".item()", item_messages), ("tensor accumulator", tensor_messages)):
        print(f"{label}: {[w.split(' (Triggered')[0] for w in got.warnings] or 'no warning'}")
    confirm(item_messages.warnings and not tensor_messages.warnings,
            ".item() warns as a synchronising operation; the tensor accumulator does not")

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
# `torch.compile(fn)` returns a function. On its first call, it:
#
# 1. *captures* the Python code into a graph of tensor operations (TorchDynamo);
# 2. when the graph needs gradients, traces its backward ahead of time (AOTAutograd), so the
#    forward and the backward are both compiled;
# 3. *generates* fused code for it (Inductor: C++/OpenMP on CPU, Triton on GPU);
# 4. *compiles* that code.
#
# Later calls with inputs of the same shapes and dtypes reuse it.
#
# The win comes mostly from **fusion**. In eager mode, `0.5 * x * (1 + tanh(...))` runs about ten
# separate operators, each reading and writing a whole tensor in memory. The compiled kernel does it
# in one pass.
#
# The cost is the first call. Everything here uses the default settings. On the CPU, the very first
# compile in a fresh cache also precompiles a large header of common C++ includes, once. This
# one-off cost makes every later kernel quicker to build (the training step below needs several).

# %%
def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


compiled_gelu = torch.compile(gelu_tanh)
x_big = torch.randn(1_000_000, device=device)

# %% tags=["nbval-ignore-output"]
if skip_unless_compiler("the first compile of gelu_tanh, timed against eager"):
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
    confirm(torch.allclose(y_compiled, gelu_tanh(x_big), atol=1e-5), "the compiled function computes the same values")
    confirm(first_call > compiled_s, "the first call, which compiles, takes longer than a steady-state call")

# %% [markdown]
# How to read your numbers:
#
# - The **first call** costs seconds; a steady-state call costs milliseconds. With a cold cache on a
#   small machine, the first call takes tens of seconds: it runs a C++ compiler (your figure is
#   above). Compilation only pays off over many calls; the break-even line above says how many.
# - On a chain of element-wise operations, the fused kernel usually wins clearly (your speed-up is
#   printed above).
# - But the built-in `F.gelu(x, approximate="tanh")` is a single fused kernel too, in the same range
#   as the compiled one (compare the two lines; on a busy machine single timings scatter). When
#   PyTorch already has a fused kernel for what you do, `compile` adds little.
# - It helps least on tiny tensors (the fixed per-call overhead dominates) and on code with
#   **graph breaks** (below).
# - Inductor caches what it compiled on disk (`/tmp/torchinductor_<user>`), keyed by the captured
#   graph. So compiling the *same* code again is much cheaper: in a later session, or after
#   `torch._dynamo.reset()` has made this process forget every compiled function. The next cell
#   measures the second case, and checks that the second compile came from the cache. (If you run
#   the notebook a second time, the first call above found the cache too, and both figures are
#   small.)

# %% tags=["nbval-ignore-output"]
if skip_unless_compiler("compiling gelu_tanh again from the on-disk cache"):
    torch._dynamo.reset()                       # forget every compiled function in this process
    cache_hits = counters["inductor"]["fxgraph_cache_hit"]
    start = time.perf_counter()
    torch.compile(gelu_tanh)(x_big)             # capture again; the generated code comes from the cache
    if sync is not None:
        sync()
    again = time.perf_counter() - start
    print(f"first compile {first_call:.2f} s, same function compiled again {again:.2f} s")
    confirm(counters["inductor"]["fxgraph_cache_hit"] > cache_hits,
            "compiling the same function again reuses the generated code from Inductor's on-disk cache")

# %% [markdown]
# **Changing shapes.** A compiled function is specialised to what it saw. Its *guards* check every
# later input, and a failed guard means a new compile.
#
# For sizes, PyTorch's default (automatic dynamic shapes) is pragmatic. The first call compiles for
# the exact size. The first time a size *changes*, it compiles once more, with that dimension as a
# symbol, and that graph then serves every later size. (0 and 1 stay special cases, and a limit
# stops endless recompiles.)
#
# The cell below makes this visible without generating any code. A custom *backend* (the function
# `torch.compile` hands each captured graph to) records every graph it receives and runs it as is.

# %%
graphs_seen = []


def recording_backend(graph_module, example_inputs):
    symbolic = any(isinstance(value, torch.SymInt) for value in example_inputs)
    graphs_seen.append("a symbolic size" if symbolic else "this exact size")
    return graph_module.forward            # run the captured graph as it is (no code generation)


@torch.compile(backend=recording_backend)
def normalise_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True)


for rows in (8, 16, 32, 64, 128):
    normalise_rows(torch.randn(rows, 4))
    print(f"{rows:3d} rows: {len(graphs_seen)} graph(s) compiled so far, the newest for {graphs_seen[-1]}")

# %% [markdown]
# One compile for the first size, one more at the first change, none after. Marking a dimension
# dynamic up front (`torch._dynamo.mark_dynamic(x, 0)`) saves that second compile.
#
# `torch.compile(..., dynamic=False)` would compile once per size instead. Padding inputs to a few
# fixed sizes then keeps the number of compiles small, when you want code specialised to each size.
#
# **TF32 on a GPU.** On an Ampere or newer NVIDIA GPU (A100, H100), the largest one-line speed-up for
# float32 training is often not `compile` at all. `torch.set_float32_matmul_precision("high")` lets
# float32 matrix multiplications use TF32, the tensor cores' faster, less precise format (notebook
# 08, the note after its matrix-multiplication benchmark). PyTorch leaves it off by default, and
# `torch.compile` only mentions it in an info-level log, so you will not see a hint. On a CPU it
# changes nothing.
#
# ### A whole training step
#
# A micro-benchmark is not a training step. The function below is one: the forward, loss, backward
# and optimizer update of a small MLP. We compile all of it with one `torch.compile` call.
#
# Dynamo cannot put `loss.backward()` itself into a graph. So it captures the code before it
# (forward and loss; AOTAutograd derives and compiles the matching backward graph at the same time).
# Then it lets autograd run the backward, and captures the optimizer update as a separate graph.
#
# Two common alternatives do the same work: `model.compile()` compiles the model's forward (and its
# backward), and `torch.compile(optimizer.step)` compiles the update.
#
# Two copies of the same model start from the same weights. One trains eagerly, one compiled, on the
# same batch, for the same number of steps.

# %%
def make_small_mlp(on: torch.device) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(on)


def make_train_step(net: nn.Module, opt: torch.optim.Optimizer):
    def train_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()
    return train_step


eager_net, compiled_net = make_small_mlp(device), make_small_mlp(device)
eager_step = make_train_step(eager_net, torch.optim.SGD(eager_net.parameters(), lr=0.05))
compiled_step = torch.compile(make_train_step(compiled_net,
                                              torch.optim.SGD(compiled_net.parameters(), lr=0.05)))

# %% tags=["nbval-ignore-output"]
if skip_unless_compiler("the compiled training step, timed against eager"):
    first_steps = {}
    for name, step_fn in (("eager", eager_step), ("compiled", compiled_step)):
        start = time.perf_counter()
        with capture_messages():                    # Dynamo notes that it skips the optimizer's profiler label
            step_fn(x_fixed, y_fixed)               # compiled: capture + generate + compile + run
        if sync is not None:
            sync()
        first_steps[name] = time.perf_counter() - start

    eager_step_s = measure(lambda: eager_step(x_fixed, y_fixed), warmup=3, repeats=100, sync=sync)
    compiled_step_s = measure(lambda: compiled_step(x_fixed, y_fixed), warmup=3, repeats=100, sync=sync)
    print(f"first step: eager {first_steps['eager'] * 1e3:.1f} ms, compiled {first_steps['compiled']:.2f} s")
    print(f"steady state: eager {eager_step_s * 1e3:.3f} ms, compiled {compiled_step_s * 1e3:.3f} ms per step "
          f"(speed-up x{eager_step_s / compiled_step_s:.2f})")
    if eager_step_s > compiled_step_s:
        print(f"compiling the step pays off after ~{first_steps['compiled'] / (eager_step_s - compiled_step_s):,.0f} steps")
    else:
        print("on this machine the compiled step is not faster: compiling it never pays off here")
    confirm(first_steps["compiled"] > compiled_step_s, "the first compiled step, which compiles, takes longer than a later one")

# %%
if skip_unless_compiler("comparing the compiled step's weights with eager ones"):
    for p_eager, p_compiled in zip(eager_net.parameters(), compiled_net.parameters()):
        torch.testing.assert_close(p_compiled, p_eager, rtol=1e-4, atol=1e-5)
    print("after", 1 + 3 + 100, "steps each: compiled and eager weights agree")

# %% [markdown]
# The two ways of compiling a model differ when you save it:
#
# - `torch.compile(model)` returns a wrapper that keeps your model as `._orig_mod`. So every
#   `state_dict` key gains the prefix `_orig_mod.` (notebook 09 shows the load error that follows,
#   and how to strip it).
# - `model.compile()` compiles in place and keeps the keys.
#
# Neither compiles anything yet: that happens at the first call.

# %%
wrapped = torch.compile(make_small_mlp(device))
in_place = make_small_mlp(device)
in_place.compile()
print("torch.compile(model) keys:", list(wrapped.state_dict())[:2])
print("model.compile() keys:     ", list(in_place.state_dict())[:2])
confirm(all(key.startswith("_orig_mod.") for key in wrapped.state_dict()), "torch.compile(model) prefixes every key")
confirm(list(in_place.state_dict()) == list(make_small_mlp(device).state_dict()), "model.compile() keeps the keys")

# %% [markdown]
# The weight comparison two cells up is the first check to make after compiling a step: the
# compiled model learns the same thing (up to rounding, since fused kernels may add in a different
# order).
#
# The speed verdict above is about *this* machine and *this* model. It may say the compiled step is
# not faster, as on the small 2-core machine this course is tested on. That is expected:
#
# - a small MLP's step on a CPU is mostly matrix products, which eager PyTorch already hands to an
#   optimised library, plus a few cheap element-wise operations: there is little for fusion to win;
# - every compiled call pays a fixed price for checking its guards, and for switching between its
#   two graphs and the eager backward.
#
# On a GPU, the same small step is typically limited by launching many tiny kernels, and by Python.
# There, two things give the larger gains: fusion (fewer kernels, the optimizer update for all
# parameters in one), and `mode="reduce-overhead"`, which records the GPU work once as a *CUDA graph*
# and replays it with a single launch.
#
# The often-quoted "20–50 % more throughput" is a range reported for real models trained on
# data-centre GPUs. It is not measured on this machine, and it is no promise for yours.
#
# On a GPU machine, the two cells below measure it. The first times the same training step, eager
# and compiled. The second times a forward pass in eager mode and with two compile modes.

# %% tags=["nbval-ignore-output"]
if skip_unless_gpu("the same training step, eager vs compiled, on a GPU", expect=(
        "typically, for this small MLP at batch 256 on a recent data-centre GPU (A100/H100 class), "
        "a first compiled step of several seconds to a minute, then a compiled step anywhere from somewhat "
        "slower than to about 2x faster than the eager one, which takes roughly 0.1-0.5 ms")):
    gpu = torch.device("cuda")
    x_gpu, y_gpu = torch.randn(256, 64, device=gpu), torch.randint(0, 10, (256,), device=gpu)
    for name in ("eager", "compiled"):
        gpu_net = make_small_mlp(gpu)
        gpu_step = make_train_step(gpu_net, torch.optim.SGD(gpu_net.parameters(), lr=0.05))
        if name == "compiled":
            gpu_step = torch.compile(gpu_step)
        start = time.perf_counter()
        gpu_step(x_gpu, y_gpu)
        torch.cuda.synchronize()
        gpu_first = time.perf_counter() - start
        per_step = measure(lambda: gpu_step(x_gpu, y_gpu), warmup=5, repeats=200,
                           sync=torch.cuda.synchronize)
        print(f"{name:>8}: first step {gpu_first:6.2f} s, then {per_step * 1e3:.3f} ms per step")
        confirm(gpu_first > per_step, "the first step, which compiles (or warms up), takes longer than a later one")

# %% tags=["nbval-ignore-output"]
if skip_unless_gpu("mode='reduce-overhead' (CUDA graphs) on a small model's forward pass", expect=(
        "typically, at batch 64 on a recent data-centre GPU, tens of microseconds per call for "
        "eager and for the default compile, and clearly less (often 1.5-4x less) for "
        "reduce-overhead, which replays the whole pass as one CUDA graph")):
    gpu_net = make_small_mlp(torch.device("cuda")).eval()
    x_gpu = torch.randn(64, 64, device="cuda")
    with torch.no_grad():
        for mode in ("eager", "default", "reduce-overhead"):
            torch._dynamo.reset()               # each mode compiles afresh
            forward = gpu_net if mode == "eager" else torch.compile(gpu_net, mode=mode)
            per_call = measure(lambda: forward(x_gpu), warmup=5, repeats=500,
                               sync=torch.cuda.synchronize)
            print(f"{mode:>16}: {per_call * 1e6:7.1f} µs per call")
            confirm(torch.allclose(forward(x_gpu), gpu_net(x_gpu), atol=1e-4), f"mode {mode} computes the same outputs")

# %% [markdown]
# **What about `torch.jit.script`?** Older advice compiles many small operations with TorchScript
# (`torch.jit.script`, `torch.jit.trace`). In 2.14 both still run, but they are deprecated. The next
# cell scripts a tiny function once, to show the warning. For speed, use `torch.compile`, as above;
# for running a model outside Python, `torch.export` (notebook 12).

# %%
def relu_scale(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * 2 + 1


with capture_messages() as script_messages:      # keep the warning, print it below
    scripted = torch.jit.script(relu_scale)
print("\n".join(script_messages.warnings))
values = torch.linspace(-1, 1, 5)
print("the scripted function still runs and agrees:", torch.equal(scripted(values), relu_scale(values)))

# %% [markdown]
# A **graph break** is a place where Dynamo cannot capture the code into the graph, and falls back
# to Python. `print(tensor.item())` is one, for the same reason it is a sync: the Python value must
# exist *now*. `torch._dynamo.explain` reports graph breaks without compiling anything:

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
# fullgraph=True)` turns any graph break into an error: what you want for code whose speed matters.
#
# The most common break in model code is a Python `if` on a tensor *value*. `if x.norm() > 1:` needs
# a Python `bool`, so the value must be copied to the host (a sync), and the graph ends there. Two
# ways keep the choice inside the graph:
#
# - `torch.where(condition, a, b)` computes both `a` and `b` and picks element-wise: right when
#   both sides are cheap.
# - `torch.cond(pred, true_fn, false_fn, operands)` records both branches as sub-graphs and runs
#   only the chosen one. Its branches must return new tensors (not their input itself) and must not
#   change their inputs. It keeps one graph. But to pick the branch, it still reads `pred` on the
#   host: on a GPU, every call is a sync. Notebook 12 uses it again, to export a model with a
#   data-dependent branch.
#
# So `torch.where` is the only one of the two without a host sync; `torch.cond` pays one sync to
# skip the branch it does not need.

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
confirm(torch.allclose(clip_if(3 * probe), clip_where(3 * probe)), "the two versions give the same result")

# %% [markdown]
# ### Exercise 3 — `clip_norm`, compile-friendly
#
# Write `clip_norm(x)`: return `x / x.norm()` when `x.norm() > 1`, and an unchanged **copy** of
# `x` otherwise, with no graph break: no Python `if` on a tensor value, no `.item()`. `x.norm()`
# is the norm of all of `x`'s entries, whatever its shape, and an all-zero `x` comes back as a
# copy too. (The checker first runs your function on a tensor that records `.item()`, `float()`
# and `bool()` of its values; a `bool()` or `torch.cond` it then captures once, as a single
# graph, with `torch.export`, which fails on a Python `if`. Then it runs your function on eight
# inputs: both sides of norm 1, all zeros, and a 2-d tensor.) The solution uses `torch.where`,
# which also avoids the host sync; `torch.cond` passes too (one graph), but reads its predicate on
# the host, and its branches must return new tensors, not their input itself.

# %%
def clip_norm(x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    norm = x.norm()
    return torch.where(norm > 1, x / norm, x)  # a new tensor either way; no sync
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
#   measure both, and expect little on tiny tensors or where a fused built-in exists. Compile a
#   whole training step the same way, check that it learns the same weights, and measure its
#   break-even on your hardware; `torch.jit.script` is deprecated.
# - A size change costs one recompile (the dimension becomes symbolic); the on-disk cache makes
#   compiling the same code again cheap.
# - A Python `if` on a tensor value is a graph break and a host sync: `torch.compile(...,
#   fullgraph=True)` finds breaks. `torch.where` or `torch.cond` keep the choice in one graph;
#   only `torch.where` (which computes both sides) also avoids the sync, while `torch.cond` runs one
#   branch but reads its predicate on the host.
#
# ## Further reading
#
# - PyTorch docs: [torch.profiler](https://docs.pytorch.org/docs/stable/profiler.html) and the recipe
#   [PyTorch Profiler](https://docs.pytorch.org/tutorials/recipes/recipes/profiler_recipe.html).
# - PyTorch docs: [torch.compile](https://docs.pytorch.org/docs/stable/generated/torch.compile.html)
#   and the [torch.compiler](https://docs.pytorch.org/docs/stable/torch.compiler.html) pages
#   (introduction, troubleshooting, "Dynamo overview", graph breaks).
# - PyTorch docs: [torch.cond](https://docs.pytorch.org/docs/stable/generated/torch.cond.html)
#   (control flow operators) and [torch.where](https://docs.pytorch.org/docs/stable/generated/torch.where.html).
# - PyTorch docs: [CUDA semantics](https://docs.pytorch.org/docs/stable/notes/cuda.html)
#   (asynchronous execution, `torch.cuda.set_sync_debug_mode`).
# - PyTorch docs: [torch.set_float32_matmul_precision](https://docs.pytorch.org/docs/stable/generated/torch.set_float32_matmul_precision.html) (TF32).
# - Next: [12 · Export and deployment](12_export_and_deployment.ipynb).
