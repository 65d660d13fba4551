# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Debugging and reproducibility
#
# A training run that gives different numbers every time cannot be debugged. A run that quietly
# learns nothing wastes hours before anyone notices.
#
# This notebook first makes runs repeatable, and shows where bit-for-bit repeatability ends. Then it
# turns the classic troubleshooting table into checks you can run:
#
# - forward hooks, to find the layer that produces NaN;
# - anomaly mode, for a NaN born in the backward pass;
# - per-layer gradient norms, for vanishing and exploding gradients;
# - finally `course_utils.doctor`, which runs those checks (and more) on *your* training code and
#   tells you what is wrong and how to fix it.
#
# ## You will learn (≈ 50 min)
#
# 1. Seed every random generator a training run uses: Python, NumPy, torch, the DataLoader's
#    shuffling and its worker processes; and what `torch.use_deterministic_algorithms` adds.
# 2. Why floating-point sums change with the summation order and the number of threads.
# 3. Find the first layer that produces NaN/Inf with forward hooks, and a NaN born in the
#    backward pass with `torch.autograd.detect_anomaly`.
# 4. Read per-layer gradient norms to spot vanishing and exploding gradients, and fix them with
#    the activation, the initialisation and normalisation.
# 5. Run the training doctor on broken training programs, read its report, and fix them.

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

_ = setup()

# %%
import inspect
import math
import random
import sys
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.claims import confirm
from course_utils.devices import skip_unless_gpu
from course_utils.doctor import CODES, diagnose
from course_utils.exercises import check
from course_utils.viz.gradients import plot_grad_norms

# Tiny models: the CPU is fastest here and keeps every printed number identical on every machine.
# The code is device-agnostic: set device = course_utils.devices.pick_device() to use a GPU.
device = torch.device("cpu")


# %% [markdown]
# ## 1. Reproducible runs
#
# ### Same code, different numbers
#
# Below is a small training run. Like most real ones, it draws random numbers from three separate
# generators:
#
# - torch: data, initialisation, dropout masks, the DataLoader's shuffling;
# - NumPy: a noise augmentation;
# - Python's `random`: a jittered learning rate, as a hyperparameter search would pick it.
#
# Run it twice in a row and the final loss differs. Each run continues the random streams where the
# previous one stopped:

# %%
def tiny_run(epochs: int = 4) -> float:
    x = torch.randn(128, 8)                                            # torch
    y = (x[:, :2].sum(dim=1) > 0).long()
    noise = np.random.normal(0.0, 0.3, size=(128, 8)).astype(np.float32)   # NumPy
    lr = 0.1 * random.uniform(0.5, 1.5)                                # Python's random
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loader = DataLoader(TensorDataset(x + torch.from_numpy(noise), y), batch_size=32, shuffle=True)
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb.to(device)), yb.to(device))
            loss.backward()
            optimizer.step()
    return loss.item()


print(f"run 1: {tiny_run():.6f}")
print(f"run 2: {tiny_run():.6f}")

# %% [markdown]
# Seeding only torch is the most common half-measure (many tutorials seed torch and NumPy only). It
# is not enough here, because NumPy and Python's `random` keep running:

# %%
for run in (1, 2):
    torch.manual_seed(0)
    print(f"torch seeded only, run {run}: {tiny_run():.6f}")

# %% [markdown]
# Seed all three and the run repeats exactly.
#
# `torch.manual_seed` seeds the CPU generator *and* every CUDA device's. So
# `torch.cuda.manual_seed_all` (still seen in older code) is not needed in addition.
#
# `PYTHONHASHSEED` sets the order of `set` iteration over strings. Python reads it only when it
# starts. Set it before starting Jupyter (e.g. `PYTHONHASHSEED=0 make lab`), so the kernels inherit
# it. Setting `os.environ["PYTHONHASHSEED"]` in a running kernel only affects the child processes it
# starts later. (The course's authoring and tests start their kernels with `PYTHONHASHSEED=0`.)

# %%
for run in (1, 2):
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    print(f"all three seeded, run {run}: {tiny_run():.6f}")


# %% [markdown]
# ### DataLoader workers
#
# With `num_workers > 0` the DataLoader starts worker processes, and `__getitem__` (where the
# augmentations run) executes there. Since PyTorch 1.9 each worker seeds `random` and torch with
# `base_seed + worker_id`, and NumPy's global generator with a seed derived from both `base_seed` and
# `worker_id`; `base_seed` is drawn from the loader's `generator` (or from torch's global generator
# when you pass none). Two things remain your job:
#
# * pass `generator=torch.Generator().manual_seed(seed)` so the shuffling order and the workers'
#   seeds do not depend on what else consumed torch's global generator before;
# * any generator PyTorch does not know about, such as a `np.random.Generator` stored in the
#   dataset, is **copied** into every worker with the same state: the workers produce identical
#   "random" augmentations. Reproduced below, with two workers.
#
# Worker processes are started with `fork` on Linux (a copy of this process, generator included)
# and with `spawn` on macOS and Windows (a fresh Python that unpickles the dataset, generator
# state included): the copies are identical either way. A spawned worker imports the dataset's
# class by module and name, so a class defined in a notebook cell cannot be used there (notebook 05
# shows the error). That is why `JitterDataset` lives in a `.py` file, `course_utils/workers.py`;
# this is all of it:

# %%
from course_utils import workers as worker_examples

print(inspect.getsource(worker_examples.JitterDataset))

# %%
JitterDataset = worker_examples.JitterDataset
workers = 2


def show(loader: DataLoader) -> list[tuple[int, int, float]]:
    rows = []
    for index, worker, jitter in loader:
        rows += [(i, w, round(j, 4)) for i, w, j in zip(index.tolist(), worker.tolist(), jitter.tolist())]
    return rows


loader = DataLoader(JitterDataset(), batch_size=2, num_workers=workers)
for index, worker, jitter in show(loader):
    print(f"item {index} from worker {worker}: jitter {jitter}")


# %% [markdown]
# Worker 0 and worker 1 drew the same sequence of jitters: each got a copy of the same generator.
# The fix is a `worker_init_fn`: it runs once in each worker, before any item is loaded, and can
# re-seed such generators from `get_worker_info().seed` (that worker's `base_seed + worker_id`).
# With a seeded `generator` on the loader, the whole thing is distinct per worker *and*
# repeatable:

# (Like the dataset, a `worker_init_fn` must be importable by a spawned worker, so it lives in
# `course_utils/workers.py` too.)

# %%
print(inspect.getsource(worker_examples.reseed_worker_rng))

# %%
worker_init_fn = worker_examples.reseed_worker_rng


def make_loader(seed: int) -> DataLoader:
    return DataLoader(JitterDataset(), batch_size=2, shuffle=True, num_workers=workers,
                      worker_init_fn=worker_init_fn, generator=torch.Generator().manual_seed(seed))


first, second = show(make_loader(seed=0)), show(make_loader(seed=0))
print("first run: ", first)
print("second run identical:", first == second)
print("distinct jitters:", len({j for _, _, j in first}), "of", len(first))

# %% [markdown]
# ### `torch.use_deterministic_algorithms`
#
# Seeds fix the random numbers. But some operations are non-deterministic even with identical
# inputs. Mostly these are kernels that add with atomic operations from many threads at once: on
# GPUs `index_add_`, `scatter_add_` and some backward passes; on CPUs a few, such as
# `index_put_(..., accumulate=True)`. Their order of additions changes from run to run.
#
# `torch.use_deterministic_algorithms(True)` makes PyTorch use deterministic implementations where
# they exist, and **raise** where none exists, instead of silently differing.
#
# For a repeatable GPU run, also keep `torch.backends.cudnn.benchmark = False` (the default). With
# `True`, cuDNN times several convolution algorithms on the first call and keeps the fastest. Which
# one wins can change from run to run with the timings (a GPU-only effect, not shown here).
#
# Older guides also set `CUBLAS_WORKSPACE_CONFIG=:4096:8`. Older PyTorch versions raised an error on
# CUDA matrix products in deterministic mode without it. torch 2.14 no longer asks for it (its
# `use_deterministic_algorithms` documentation lists no such requirement), and setting it does no
# harm.
#
# The price of all this is speed. So the usual advice holds: fix seeds while developing, and report
# the mean of several runs rather than trusting one.
#
# Three effects are visible even on a CPU. First, uninitialised memory is filled with NaN, so code
# that reads it by mistake fails the same way every time:

# %%
torch.use_deterministic_algorithms(True)
print("deterministic mode:", torch.are_deterministic_algorithms_enabled())
print("torch.empty(4):", torch.empty(4))

# %% [markdown]
# That fill is a cost you can measure. `torch.empty` normally only reserves memory; in deterministic
# mode it must also write every element. (The mode is still on; the cell switches it off for one
# measurement and back on.)

# %% tags=["nbval-ignore-output"]
def time_empty(n: int = 4_000_000, repeats: int = 3) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        torch.empty(n)
    return (time.perf_counter() - start) / repeats


filled = time_empty()
torch.use_deterministic_algorithms(False)
plain = time_empty()
torch.use_deterministic_algorithms(True)
print(f"torch.empty(4_000_000): {plain * 1e3:.2f} ms normally, {filled * 1e3:.2f} ms in deterministic mode")
confirm(filled > plain and torch.are_deterministic_algorithms_enabled(),
        "torch.empty takes longer in deterministic mode, because it fills the memory")

# %% [markdown]
# Second, an operation without a deterministic implementation raises. `put_` writes values at flat
# indices; when an index repeats, which write wins is not defined:

# %% tags=["raises-exception"]
torch.zeros(3).put_(torch.tensor([1, 1]), torch.tensor([10.0, 20.0]))

# %% [markdown]
# `warn_only=True` turns such errors into warnings. Switch the mode off again for the rest of the
# notebook:

# %%
torch.use_deterministic_algorithms(False)
print("deterministic mode:", torch.are_deterministic_algorithms_enabled())

# %% [markdown]
# The third effect is the one the mode exists for: a sum that changes from run to run.
#
# Two threads add 2 million numbers into one slot with `index_put_(..., accumulate=True)`. Each
# thread adds its half with atomic additions, so the additions interleave in a different order every
# run.
#
# Five runs without and with deterministic mode. (On a machine with a single core the threads rarely
# interleave, and the first line may show one sum.)

# %% tags=["nbval-ignore-output"]
values = torch.randn(2_000_000, generator=torch.Generator().manual_seed(0))
slot = torch.zeros(2_000_000, dtype=torch.long)   # every value goes to slot 0
torch.set_num_threads(2)
for mode in (False, True):
    torch.use_deterministic_algorithms(mode)
    start = time.perf_counter()
    sums = {torch.zeros(1).index_put_((slot,), values, accumulate=True).item() for _ in range(5)}
    print(f"deterministic={mode}: {len(sums)} distinct sum(s) in 5 runs, from {min(sums):.7g} to "
          f"{max(sums):.7g}, {(time.perf_counter() - start) / 5 * 1e3:.0f} ms per run")
torch.use_deterministic_algorithms(False)
torch.set_num_threads(1)
confirm(len(sums) == 1, "in deterministic mode the five sums are identical")

# %% [markdown]
# The sums differ only in their last digits (the next section shows why the order matters at all).
#
# Compare the two times above. For this operation the deterministic path costs little or nothing: it
# does not make two threads fight over one slot. For others, mostly on GPUs, it can cost a lot. The
# price depends on the operation and the hardware, which is why the mode is off by default.
#
# On a GPU machine the next cell shows the same with `index_add_` on CUDA, where atomic additions are
# everywhere:

# %% tags=["nbval-ignore-output"]
if skip_unless_gpu("index_add_ with float atomics gives run-to-run differences on CUDA",
                   expect="with deterministic=False the 5 sums typically take 2 to 5 distinct values that "
                          "differ only in the last digits (on any recent NVIDIA GPU), and with "
                          "deterministic=True exactly 1."):
    gpu = torch.device("cuda")
    values = torch.randn(1_000_000, generator=torch.Generator().manual_seed(0)).to(gpu)
    bins = torch.zeros(1_000_000, dtype=torch.long, device=gpu)
    for mode in (False, True):
        torch.use_deterministic_algorithms(mode)
        sums = {torch.zeros(1, device=gpu).index_add_(0, bins, values).item() for _ in range(5)}
        print(f"deterministic={mode}: {len(sums)} distinct result(s) in 5 runs: {sorted(sums)}")
    torch.use_deterministic_algorithms(False)
confirm(not torch.are_deterministic_algorithms_enabled(), "deterministic mode is off again for the rest of the notebook")

# %% [markdown]
# ### Why sums differ: the order of additions
#
# Floating-point addition is not associative. Every addition rounds to the nearest representable
# number, so the result depends on the order. With three numbers:

# %%
a, b, c = 1e16, 1.0, -1e16
print("(a + b) + c =", (a + b) + c, "   (a + c) + b =", (a + c) + b)

# %% [markdown]
# The same happens, more quietly, in every long sum. Here 100 000 numbers of very different sizes are
# added in three orders, each with a plain loop. Each result is compared with the exactly rounded
# `math.fsum`:

# %%
rng = random.Random(0)
numbers = [rng.choice((-1, 1)) * 10 ** rng.uniform(-3, 8) for _ in range(100_000)]


def loop_sum(values) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


exact = math.fsum(numbers)
for name, order in [("as given", numbers), ("sorted", sorted(numbers)), ("reversed", numbers[::-1])]:
    total = loop_sum(order)
    print(f"{name:<9} {total:.17g}   error vs fsum {total - exact:+.3g}")
print(f"math.fsum {exact:.17g}")

# %% [markdown]
# A parallel reduction changes the order too. With several threads, each thread sums a chunk and the
# partial sums are added at the end. So the result can change with the number of threads (and with
# the CPU's vector width, the library version, or GPU vs CPU).
#
# Measured on the machine that ran this notebook: a float32 sum of 2 million numbers with 1 and with
# 2 threads. Your digits may differ, which is the point. float64 is the reference:

# %% tags=["nbval-ignore-output"]
big = torch.randn(2_000_000, generator=torch.Generator().manual_seed(0)) * 100 + 3
by_threads = {}
for threads in (1, 2):
    torch.set_num_threads(threads)
    by_threads[threads] = big.sum().item()
    print(f"{threads} thread(s): {by_threads[threads]:.1f}")
torch.set_num_threads(1)
reference = big.double().sum().item()
print(f"float64:     {reference:.1f}")
print("1 thread == 2 threads:", by_threads[1] == by_threads[2])
confirm(all(abs(s - reference) / abs(reference) < 1e-5 for s in by_threads.values()),
        "both float32 sums agree with the float64 reference to float32 precision")


# %% [markdown]
# Both float32 results are as correct as float32 allows; they are just rounded differently. So:
#
# - compare results with a tolerance (`torch.allclose`);
# - expect the last digits of a loss to change between machines;
# - keep `setup()`'s fixed thread count when you need identical output.
#
# ## 2. Looking inside the forward pass: forward hooks
#
# The troubleshooting table's first line: the loss is NaN or Inf. Causes are a learning rate that is
# too high (section 5), bad values in the data, or a computation that is undefined for some inputs.
#
# To find *where* the first NaN appears, use a **forward hook**. It runs after a module's `forward`
# and sees its inputs and output, without changing the model's code.
#
# Here one hook per layer prints a line of statistics, for a model that returns NaN:

# %%
class LogCompress(nn.Module):
    """Compresses large activations with a logarithm (undefined for negative inputs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), LogCompress(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
x = torch.randn(16, 6, device=device)
print("output has NaN:", torch.isnan(model(x)).any().item())


# %%
def report_hook(name: str):
    def hook(module, inputs, output):
        bad = (~torch.isfinite(output)).sum().item()
        inputs_ok = all(torch.isfinite(t).all().item() for t in inputs)
        print(f"{name:<3} {type(module).__name__:<12} min {output.min().item():>9.4g}  "
              f"max {output.max().item():>9.4g}  non-finite {bad:>3}  inputs finite: {inputs_ok}")
    return hook


handles = [module.register_forward_hook(report_hook(name)) for name, module in model.named_children()]
try:
    with torch.no_grad():
        model(x)
finally:
    for handle in handles:   # hooks stay until removed: always remove them
        handle.remove()


# %% [markdown]
# Layer `1` (`LogCompress`) is the first whose output is not finite while its inputs were. It takes
# the log of the negative outputs of the first linear layer. Everything after it inherits the NaN.
#
# Fix the layer, not the symptom: make the operation defined everywhere.

# %%
class SafeLogCompress(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(F.relu(x))   # log(1 + max(x, 0)) is defined for every input


model[1] = SafeLogCompress()
print("output has NaN:", torch.isnan(model(x)).any().item())

# %% [markdown]
# Forward hooks have siblings:
#
# - `register_forward_pre_hook` sees the inputs before `forward`;
# - `register_full_backward_hook` sees the gradients flowing through a module.
#
# All return a handle whose `remove()` detaches the hook. Exercise 2 asks you to turn the search
# above into a function.
#
# ## 3. NaN born in the backward pass: `detect_anomaly`
#
# A finite forward pass can still produce NaN gradients. Take a hand-written Euclidean distance,
# $\sqrt{\sum (a-b)^2}$. It is fine in the forward pass. But its derivative
# $\frac{a-b}{\sqrt{\ldots}}$ is $\frac{0}{0}$ when a prediction equals its target exactly:

# %%
prediction = torch.tensor([[0.5, 1.0], [2.0, -1.0], [3.0, 3.0]], requires_grad=True, device=device)
target = torch.tensor([[0.0, 1.0], [2.0, -1.0], [1.0, 2.0]], device=device)   # row 2 is a perfect hit
distance = ((prediction - target) ** 2).sum(dim=1).sqrt()
loss = distance.mean()
loss.backward()
print("loss:", loss.item())
print("gradient:", prediction.grad)

# %% [markdown]
# The loss looks fine. Yet one NaN in a gradient becomes NaN weights after the next optimizer step.
#
# `torch.autograd.detect_anomaly()` checks the output of every backward operation, and raises at the
# first one that returns NaN. It also issues a warning holding the traceback of the *forward* line
# that created that operation. We capture the warnings here and print what matters below.
#
# Anomaly mode slows everything down: switch it on only while hunting.

# %% tags=["raises-exception"]
prediction.grad = None
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.autograd.detect_anomaly():
        distance = ((prediction - target) ** 2).sum(dim=1).sqrt()
        distance.mean().backward()

# %%
for warning in caught:
    first_line = str(warning.message).splitlines()[0]
    print(f"{warning.category.__name__}: {first_line}")
trace = str(caught[-1].message).splitlines()
culprit = [line.strip() for line, previous in zip(trace[1:], trace) if "ipykernel" in previous]
print("forward line that created it:", culprit[-1])

# %% [markdown]
# The error names `PowBackward0`, the backward of `** 2`. Two steps make the NaN:
#
# 1. the derivative of `sqrt` at 0 is infinite (anomaly mode checks for NaN, and an infinity alone
#    passes);
# 2. the backward of `** 2` multiplies it by $2(a - b) = 0$, and $\infty \cdot 0$ is NaN.
#
# Both operations sit on the forward line printed last.
#
# Fix: give the square root a margin (`(... + 1e-12).sqrt()`), or use `torch.linalg.vector_norm`,
# whose gradient at 0 is defined as 0:

# %%
prediction.grad = None
distance = torch.linalg.vector_norm(prediction - target, dim=1)
distance.mean().backward()
print("gradient:", prediction.grad)
print("all finite:", torch.isfinite(prediction.grad).all().item())


# %% [markdown]
# ## 4. Vanishing and exploding gradients: per-layer gradient norms
#
# A classic habit: print each layer's gradient magnitude after `backward()`. In a healthy network
# they stay within an order of magnitude or two of each other.
#
# - Norms that shrink by a constant factor per layer towards the input mean *vanishing* gradients:
#   the first layers never learn.
# - Norms orders of magnitude above a healthy network's mean *exploding* gradients: updates blow up,
#   then NaN.
#
# Below: three networks with 13 linear layers, one batch, and the norm of each linear layer's weight
# gradient:

# %%
def deep_net(activation: type[nn.Module], init: str, batchnorm: bool, depth: int = 12, width: int = 64) -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for i in range(depth):
        linear = nn.Linear(32 if i == 0 else width, width)
        if init == "kaiming":
            nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
            nn.init.zeros_(linear.bias)
        elif init == "too large":
            nn.init.normal_(linear.weight, std=2.5 / math.sqrt(linear.in_features))
            nn.init.zeros_(linear.bias)
        layers += [linear, *([nn.BatchNorm1d(width)] if batchnorm else []), activation()]
    return nn.Sequential(*layers, nn.Linear(width, 10)).to(device)


def layer_grad_norms(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    return [m.weight.grad.norm().item() for m in model if isinstance(m, nn.Linear)]


gen = torch.Generator().manual_seed(0)
xs = torch.randn(128, 32, generator=gen).to(device)
ys = torch.randint(0, 10, (128,), generator=gen).to(device)
nets = {
    "sigmoid, default init": deep_net(nn.Sigmoid, "default", batchnorm=False),
    "ReLU, weights too large": deep_net(nn.ReLU, "too large", batchnorm=False),
    "ReLU + Kaiming + BatchNorm": deep_net(nn.ReLU, "kaiming", batchnorm=True),
}
norms = {name: layer_grad_norms(net, xs, ys) for name, net in nets.items()}
for name, values in norms.items():
    print(f"{name:<27} layer 1: {values[0]:9.2e}   layer 13: {values[-1]:9.2e}   ratio {values[0] / values[-1]:8.1e}")
times = [big / healthy for big, healthy in zip(norms["ReLU, weights too large"], norms["ReLU + Kaiming + BatchNorm"])]
print(f"weights too large / healthy, per layer: {min(times):,.0f}x to {max(times):,.0f}x "
      f"(layer 1: {times[0]:,.0f}x, layer 13: {times[-1]:,.0f}x)")

# %%
_ = plot_grad_norms(norms, title="weight-gradient norm per layer, one batch")
plt.show()

# %% [markdown]
# * **Sigmoid** squashes its input into (0, 1) and its derivative is at most 0.25, so each layer
#   multiplies the backward signal by a small factor: the first layer's gradient is about 10 orders
#   of magnitude smaller than the last one's.
# * **Weights too large** for ReLU amplify the signal at each layer in both directions (the
#   activations forward, the gradients backward): every layer's gradient is hundreds to thousands of
#   times larger than in the healthy net (the last line printed above).
# * **ReLU with Kaiming initialisation** keeps the variance of the signal constant through the
#   layers, and **BatchNorm** re-normalises each layer's outputs, so the norms stay within one order
#   of magnitude. (Residual connections do the same job in deep networks.)
#
# Does it matter for training? Thirty SGD steps on the same batch:

# %%
for name, net in nets.items():
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = F.cross_entropy(net(xs), ys)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"{name:<27} loss {losses[0]:10.4g} -> {losses[-1]:.4g}")

# %% [markdown]
# The sigmoid net barely moves, the oversized one diverges to NaN, and the normalised ReLU net
# learns.
#
# For occasional spikes (not a systematically bad design), clip the gradient norm between
# `backward()` and `step()` (notebook 06, §7). `clip_grad_norm_` returns the norm *before* clipping,
# which is the number to log:

# %%
net = deep_net(nn.ReLU, "too large", batchnorm=False)
F.cross_entropy(net(xs), ys).backward()
total = torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in net.parameters()]))
print(f"total gradient norm before clipping: {total.item():.4g}, after: {after.item():.4g}")

# %% [markdown]
# ## 5. The training doctor
#
# The checks above are mechanical enough to automate. So is the classic "loss will not go down"
# checklist: learning rate, labels aligned with the inputs, gradients that are `None`, a forgotten
# `zero_grad`, the initialisation.
#
# `course_utils.doctor.diagnose(model, loss_fn, optimizer, batch, train_step=None)` does this, on
# copies of your objects, in three stages:
#
# 1. It inspects them: parameters missing from the optimizer, devices, the inputs' dtype, NaN and
#    scale.
# 2. It runs your `train_step(model, batch, optimizer, loss_fn)` twice on the same batch, with
#    `optimizer.step()` replaced by a recorder, hooks on every layer and a wrapper around the loss.
#    It sees:
#    - what reaches the loss, and which operation produced it (a softmax? a sigmoid?);
#    - which layer produces NaN, and which parameters get a gradient;
#    - whether `.grad` still holds the first step's gradient when the second step's `backward()`
#      starts (it must not, unless `zero_grad` is missing);
#    - which Dropout/BatchNorm layers run in eval mode;
#    - and it explains an error raised by the step (an in-place change, a graph used twice, a
#      target of the wrong shape).
# 3. It trains a copy on the batch's first 16 samples, for a fixed number of steps that depends on
#    the model's size. (A step count, never a time limit: a slow or busy machine gets the same
#    verdict.) A healthy setup can memorise a handful of samples. If the loss diverges, does not
#    move, or settles at chance level, the doctor says so, with the learning rate ×0.1 or ×10 as a
#    second opinion.
#
# Your model, optimizer, batch and random generators are exactly as before.
#
# Each finding has a stable code. Here is what each code means:

# %%
for code, meaning in CODES.items():
    print(f"{code:<23} {meaning}")

# %% [markdown]
# How the troubleshooting table maps onto the codes, and what one batch cannot show:
#
# | symptom | likely causes | doctor codes |
# |---|---|---|
# | loss is NaN or Inf | learning rate too high, exploding gradients, bad values in the data, undefined operations | `LR_TOO_HIGH`, `NAN_OR_INF`, `INPUT_NOT_NORMALIZED` |
# | loss will not go down | learning rate, broken graph (`None` gradients), forgotten `zero_grad`, wrong loss inputs, layers the optimizer never sees, argmax or round inside the loss, an RNN reading the batch as time | `CANNOT_OVERFIT_BATCH`, `NO_GRAD_FLOW`, `ZERO_GRAD_MISSING`, `SOFTMAX_BEFORE_CE`, `BROADCAST_IN_LOSS`, `PARAM_NOT_IN_OPTIMIZER`, `PARAMS_NOT_REGISTERED`, `NON_DIFFERENTIABLE`, `RNN_BATCH_FIRST` |
# | the loss does not fit the model's output | `NLLLoss` without `log_softmax`, `BCELoss` without `sigmoid`, a ReLU after a regression model's last layer | `NLL_ON_LOGITS`, `BCE_ON_LOGITS`, `RELU_ON_OUTPUT` |
# | loss stuck at ln(number of classes) | the model gives every sample the same answer: dead units, unscaled inputs | `STUCK_AT_CHANCE` |
# | errors about devices, dtypes, targets | data not moved, float64 from NumPy, labels from 1, labels shaped (N, 1), a sequence model's classes in the last dimension | `DEVICE_MISMATCH`, `DTYPE_MISMATCH`, `LABEL_OUT_OF_RANGE`, `TARGET_SHAPE` |
# | errors from `backward()` | an in-place change of a tensor autograd needs, an RNN state carried from the previous batch | `INPLACE_MODIFIED`, `GRAPH_REUSED` |
# | training behaves unlike evaluation | `model.train()` forgotten after validation | `EVAL_MODE_LEFT_ON` |
# | good training loss, bad validation | overfitting, validation preprocessed differently | not visible in one training batch: compare the pipelines (notebook 05) |
# | labels shuffled relative to inputs | a bug in the dataset | one batch can still be memorised: look at samples with their labels (notebook 05) |
#
# The programs below share one small problem: 10 features, 4 classes, a batch of 64.

# %%
gen = torch.Generator().manual_seed(1)
features = torch.randn(64, 10, generator=gen).to(device)
labels = (features[:, :4] + 0.3 * torch.randn(64, 4, generator=gen).to(device)).argmax(dim=1)
batch = (features, labels)


def make_model(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)


def train_step(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


# %% [markdown]
# ### A correct program
#
# The report lists no findings. It shows what it measured: one step's loss and gradient norm, and
# how fast the loss fell when the doctor trained a copy on the batch.

# %%
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)

# %% [markdown]
# ### Broken program 1: softmax at the end of the model
#
# The model ends in `nn.Softmax`, because "a classifier outputs probabilities". The loss is
# `CrossEntropyLoss`:

# %%
model = nn.Sequential(make_model(), nn.Softmax(dim=1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)
report

# %% [markdown]
# The fix: return logits (drop the softmax), and apply softmax only when you want probabilities to
# show. Diagnosed again:

# %%
model = model[0]   # the network without its final Softmax
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)
print(report.codes or "no findings", "| ok:", report.ok)


# %% [markdown]
# ### Broken program 2: a training step without `zero_grad`

# %%
def train_step_no_zero(model, batch, optimizer, loss_fn):
    x, y = batch
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step_no_zero)

# %% [markdown]
# The doctor ran the step twice, with identical parameters and batch. When the second `backward()`
# started, `.grad` still held the first step's gradient, so the update used their sum.
#
# The fixed step is `train_step` from above:

# %%
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 3: a regression whose shapes broadcast
#
# The model predicts a number per sample. It outputs shape `(64, 1)`; the targets have shape
# `(64,)`. `MSELoss` broadcasts them to `(64, 64)`, and only warns once, in a message that is easy to
# miss:

# %%
targets = features[:, 0] * 2.0 - features[:, 1]             # shape (64,)
regressor = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.Adam(regressor.parameters(), lr=1e-2)
diagnose(regressor, nn.MSELoss(), optimizer, (features, targets), train_step)

# %%
report = diagnose(regressor, nn.MSELoss(), optimizer, (features, targets.unsqueeze(1)), train_step)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 4: labels that start at 1
#
# The class labels came from a file that numbers classes 1 to 4. The doctor checks them *before* the
# loss runs. So on a GPU it reports the problem, instead of crashing the CUDA session with a
# device-side assert:

# %%
file_labels = labels + 1   # classes numbered 1..4
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
diagnose(model, nn.CrossEntropyLoss(), optimizer, (features, file_labels), train_step)

# %%
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, (features, file_labels - 1), train_step)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 5: a new head, an old optimizer
#
# Fine-tuning: the optimizer is built, then the last layer is replaced for a new task. The optimizer
# still holds the old layer's tensors:

# %%
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
model[2] = nn.Linear(32, 4).to(device)   # the new head, created after the optimizer
diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)

# %%
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)   # build the optimizer after the model is final
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 6: raw measurements and a large learning rate
#
# The features are raw measurements, in the hundreds. SGD runs with a learning rate that works for
# normalised data:

# %%
raw = features * 40 + 300
model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
diagnose(model, nn.CrossEntropyLoss(), optimizer, (raw, labels), train_step)

# %% [markdown]
# Normalising the inputs (with statistics of the training data) fixes both findings without
# touching the learning rate:

# %%
mean, std = raw.mean(dim=0), raw.std(dim=0)
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, ((raw - mean) / std, labels), train_step)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 7: layers kept in a Python list
#
# Real projects build a variable number of layers in a loop. Stored in a plain Python list, they are
# invisible to `nn.Module`. `model.parameters()` does not list them, so the optimizer never updates
# them (and `model.to(device)` and `state_dict()` skip them).
#
# The program runs without an error; only the loss curve is disappointing:

# %%
class DeepMLP(nn.Module):
    def __init__(self, depth: int = 3) -> None:
        super().__init__()
        self.hidden = [nn.Linear(10 if i == 0 else 32, 32) for i in range(depth)]   # a plain list
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


torch.manual_seed(0)
model = DeepMLP().to(device)
for layer in model.hidden:   # a plain list is not moved by model.to(device) either
    layer.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)

# %% [markdown]
# The fix is `nn.ModuleList` (for a dict, `nn.ModuleDict`), which registers every layer:

# %%
class DeepMLPFixed(DeepMLP):
    def __init__(self, depth: int = 3) -> None:
        super().__init__(depth)
        self.hidden = nn.ModuleList(self.hidden)


torch.manual_seed(0)
model = DeepMLPFixed().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 8: an RNN state carried from one batch to the next
#
# A language model or a time-series model often carries its hidden state across consecutive batches.
# If the state is not detached, the second batch's `backward()` tries to go back through the first
# batch's graph. The first `backward()` has already freed it:

# %%
class Forecaster(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(1, 16, batch_first=True)
        self.out = nn.Linear(16, 1)

    def forward(self, x, h):
        seq, h = self.rnn(x, h)
        return self.out(seq), h


def make_stateful_step(detach: bool):
    state = {"h": None}

    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        prediction, h = model(x, state["h"])
        state["h"] = h.detach() if detach else h   # carried to the next batch
        loss = loss_fn(prediction, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


t = torch.linspace(0, 6.28, 20, device=device).repeat(8, 1)
wave = (t.sin()[..., None], t.cos()[..., None])
torch.manual_seed(0)
forecaster = Forecaster().to(device)
optimizer = torch.optim.Adam(forecaster.parameters(), lr=1e-2)
diagnose(forecaster, nn.MSELoss(), optimizer, wave, make_stateful_step(detach=False))

# %% [markdown]
# With `h.detach()` the state still flows forward: the next batch starts where this one ended. But
# gradients stop at the batch boundary.
#
# The doctor knows that a step carrying state is not a step missing `zero_grad`:

# %%
report = diagnose(forecaster, nn.MSELoss(), optimizer, wave, make_stateful_step(detach=True))
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### Broken program 9: a sequence model's scores in the wrong layout
#
# A model that predicts one class per position (the next word, a tag per token) outputs scores of
# shape `(batch, time, classes)`. `CrossEntropyLoss` reads dimension 1 as the classes.
#
# So the call fails with an "Expected target size" error that does not say which dimension is wrong.
# (And when the number of positions equals the number of classes, it runs and mixes them up.)

# %%
class Tagger(nn.Module):
    def __init__(self, vocab: int = 20, tags: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.rnn = nn.GRU(16, 16, batch_first=True)
        self.out = nn.Linear(16, tags)

    def forward(self, tokens):
        seq, _ = self.rnn(self.embed(tokens))
        return self.out(seq)   # (batch, time, tags)


tokens = torch.randint(0, 20, (32, 12), generator=gen).to(device)
tags = tokens % 5              # one tag per token: (batch, time)
torch.manual_seed(0)
tagger = Tagger().to(device)
optimizer = torch.optim.Adam(tagger.parameters(), lr=1e-2)
diagnose(tagger, nn.CrossEntropyLoss(), optimizer, (tokens, tags), train_step)

# %% [markdown]
# The fix moves the classes to dimension 1 in the step: `permute(0, 2, 1)` gives
# `(batch, tags, time)`. Flattening both to `(batch * time, tags)` and `(batch * time,)` works too:

# %%
def train_step_sequence(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x).permute(0, 2, 1), y)
    loss.backward()
    optimizer.step()
    return loss.item()


report = diagnose(tagger, nn.CrossEntropyLoss(), optimizer, (tokens, tags), train_step_sequence)
print(report.codes or "no findings", "| ok:", report.ok)

# %% [markdown]
# ### What one batch cannot show: labels shuffled relative to the inputs
#
# The last row of the table above, reproduced. The dataset's labels were shuffled separately from its
# inputs (a sort applied to one list and not the other, a bad join), so most pairs no longer belong
# together. The program is otherwise correct:

# %%
misaligned = labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))]
print(f"pairs still correct: {(misaligned == labels).float().mean().item():.0%}")
model = make_model()
report = diagnose(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2),
                  (features, misaligned), train_step)
print(report.codes or "no findings", "| ok:", report.ok,
      f"| one-batch loss {report.measurements['overfit_losses'][0]:.3f} -> {report.measurements['overfit_losses'][-1]:.3f}")

# %% [markdown]
# No findings: a network memorises 16 samples whatever their labels are, so the one-batch test
# passes. Such a model learns nothing that carries over to new data. Only looking at samples with
# their labels (notebook 05), or a validation accuracy stuck at chance, reveals it.
#
# The doctor cannot replace thinking: it sees one batch and one step. But it runs in a second. So run
# it on every new training script before the long run, and again whenever the loss curve looks
# wrong.
#
# `Report.findings` is a list of `Finding(code, severity, message)`, and `Report.codes` a set. So a
# test can assert that a training setup stays healthy:

# %% tags=["assert-is-the-lesson"]
model = make_model()
report = diagnose(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2), batch, train_step)
assert report.ok, report
print("healthy:", report.ok, "| measured one-batch losses:", [round(v, 3) for v in report.measurements["overfit_losses"][:5]], "...")


# %% [markdown]
# ## 6. Exercises
#
# ### Exercise 1 — `seed_everything`
#
# Write `seed_everything(seed)`: seed Python's `random`, NumPy's global generator and torch with
# `seed`, and return a **new** `torch.Generator` seeded with `seed` (to pass to
# `DataLoader(generator=...)`; not torch's global generator, and not one shared object for every
# call). The checker calls your function, then draws one number from each generator and compares it
# with the first number after seeding.

# %%
def seed_everything(seed: int) -> torch.Generator:
    ### BEGIN SOLUTION
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)   # CPU and every CUDA device
    return torch.Generator().manual_seed(seed)
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("seed_everything: seed random, numpy and torch, then return a seeded torch.Generator")
    ### END STUB


# %%
check("10.seed_everything", seed_everything)


# %% [markdown]
# ### Exercise 2 — `nonfinite_layers`
#
# Write `nonfinite_layers(model, x)`: run `model(x)` once with a forward hook on every *leaf* module
# (a module without children), and return the names (as in `model.named_modules()`) of the modules
# whose output contains NaN or Inf, **in the order they ran**; a module that runs twice (a shared
# layer) is listed each time its output is non-finite. Remove your hooks before returning, even if
# the forward pass raises. The first name is where to look.

# %%
def nonfinite_layers(model: nn.Module, x: torch.Tensor) -> list[str]:
    ### BEGIN SOLUTION
    found: list[str] = []

    def make_hook(name):
        def hook(module, inputs, output):
            if not torch.isfinite(output).all():
                found.append(name)
        return hook

    handles = [module.register_forward_hook(make_hook(name))
               for name, module in model.named_modules() if not list(module.children())]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return found
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("nonfinite_layers: your code here")
    ### END STUB


# %%
check("10.nonfinite_layers", nonfinite_layers)

# %% [markdown]
# ### Exercise 3 — `fix_train_step`
#
# This training program was written by someone who had just evaluated the model (so it is in eval
# mode) and who remembered that "classifiers output probabilities". Read the report:

# %%
torch.manual_seed(3)
bn_model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4)).to(device)
bn_model.eval()   # left over from the validation pass


def broken_train_step(model, batch, optimizer, loss_fn):
    x, y = batch
    probabilities = model(x).softmax(dim=1)
    loss = loss_fn(probabilities, y)
    loss.backward()
    optimizer.step()
    return loss.item()


optimizer = torch.optim.SGD(bn_model.parameters(), lr=0.1, momentum=0.9)
diagnose(bn_model, nn.CrossEntropyLoss(), optimizer, batch, broken_train_step)


# %% [markdown]
# Write `fix_train_step(model, batch, optimizer, loss_fn)`: the training step with all three
# findings fixed, returning the loss as a Python float. The checker runs it on fresh models that
# arrive in eval mode with last step's gradients still in `.grad` (or with no gradients yet),
# compares the loss and the updated parameters with the correct step, and, when they differ, runs
# the doctor on *your* step to name what is still wrong.

# %%
def fix_train_step(model: nn.Module, batch, optimizer: torch.optim.Optimizer, loss_fn) -> float:
    ### BEGIN SOLUTION
    x, y = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("fix_train_step: your code here")
    ### END STUB


# %%
check("10.fix_train_step", fix_train_step)

# %% [markdown]
# ## Key points
#
# * Seed Python's `random`, NumPy and torch (`torch.manual_seed` covers every GPU), and give each
#   DataLoader a seeded `generator`. Workers seed `random`, NumPy and torch from the loader's base
#   seed and their worker id themselves; generators stored in your dataset are copied into every worker unchanged, so
#   re-seed them in a `worker_init_fn` from `get_worker_info().seed`.
# * `torch.use_deterministic_algorithms(True)` trades speed for bit-for-bit repeatability: it picks
#   deterministic kernels (the atomic-add sum above became repeatable), raises where none exists,
#   fills uninitialised memory with NaN (which takes time). On GPUs also keep
#   `torch.backends.cudnn.benchmark = False`; torch 2.14 no longer needs `CUBLAS_WORKSPACE_CONFIG`.
# * Floating-point addition is not associative: the order (threads, atomics, vector width)
#   changes the last digits. Compare with tolerances; report the mean of several runs.
# * Forward hooks show every layer's output without touching the model's code: the first layer with
#   non-finite output and finite inputs is the culprit. Keep the handles and remove the hooks.
# * A NaN that only shows up in gradients comes from the backward pass: `detect_anomaly()` names the
#   backward operation and the forward line; `sqrt`, `log`, division near 0 are the usual suspects.
# * Per-layer gradient norms expose vanishing (sigmoid, measured here: about 10 orders of magnitude
#   across 13 layers) and exploding gradients; ReLU with Kaiming init plus normalisation keeps them
#   level, and `clip_grad_norm_` (which returns the norm to log) tames spikes.
# * `diagnose(model, loss_fn, optimizer, batch, train_step)` runs the troubleshooting checklist on
#   copies of your objects: read each finding's observation, why it matters, and the fix, then run it
#   again until the report is clean.
#
# ## Further reading
#
# * PyTorch docs: [Reproducibility](https://docs.pytorch.org/docs/stable/notes/randomness.html) (notes),
#   [torch.use_deterministic_algorithms](https://docs.pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html),
#   [torch.manual_seed](https://docs.pytorch.org/docs/stable/generated/torch.manual_seed.html), and the
#   [Randomness in multi-process data loading](https://docs.pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
#   part of *torch.utils.data*.
# * PyTorch docs: [torch.autograd.detect_anomaly](https://docs.pytorch.org/docs/stable/autograd.html#torch.autograd.detect_anomaly)
#   in [Automatic differentiation package](https://docs.pytorch.org/docs/stable/autograd.html)
#   (section [Anomaly detection](https://docs.pytorch.org/docs/stable/autograd.html#anomaly-detection)).
# * PyTorch docs: [torch.nn.Module.register_forward_hook](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook),
#   [register_forward_pre_hook](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_pre_hook),
#   [register_full_backward_hook](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook).
# * PyTorch docs: [torch.nn.init](https://docs.pytorch.org/docs/stable/nn.init.html) (`kaiming_normal_`),
#   [BatchNorm1d](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html),
#   [torch.nn.utils.clip_grad_norm_](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html).
# * PyTorch docs: [Numerical accuracy](https://docs.pytorch.org/docs/stable/notes/numerical_accuracy.html)
#   (notes): why results differ across devices and batch sizes.
# * Next: [11 · Performance and `torch.compile`](11_performance_and_compile.ipynb).
