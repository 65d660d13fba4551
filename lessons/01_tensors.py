# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Tensors: shape, dtype, device — and the memory behind them
#
# A tensor is more than a NumPy array with a GPU option. It carries a **shape**, a **dtype** and a
# **device**. It may share memory with other tensors or with a NumPy array. And it can record the
# operations that produced it.
#
# Most day-one PyTorch bugs come from one of these properties being different from what you
# assumed. This notebook makes each of them visible.
#
# ## You will learn (≈ 35 min)
#
# 1. Create tensors with the common routines and read their shape/dtype/device triad.
# 2. Predict when memory is shared (`from_numpy`, `view`, `transpose`) and when it is copied.
# 3. Avoid dtype surprises: promotion rules, float64 data into a float32 model (and what float64
#    costs), int64 labels and embedding indices.
# 4. Write device-agnostic code, and recognise the hard-coded-GPU crash and a device-mismatch error.
# 5. Measure what `.item()` and host↔device copies inside a loop cost: little on a CPU, a wait per
#    step on a GPU.

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

from course_utils.claims import confirm
from course_utils.setup import setup

info = setup(seed=0)

# %% [markdown]
# ## 1. Creating tensors
#
# `torch.tensor(data)` copies Python or NumPy data. The factory functions (`zeros`, `arange`,
# `randn`, ...) create tensors of a given shape directly.
#
# The `*_like` versions copy shape, dtype and device from another tensor. They are the easy way to
# keep new tensors on the same device as your data.

# %%
import numpy as np
import torch

examples = {
    "torch.tensor([[1, 2], [3, 4]])": torch.tensor([[1, 2], [3, 4]]),
    "torch.zeros(2, 3)": torch.zeros(2, 3),
    "torch.arange(0, 10, 3)": torch.arange(0, 10, 3),
    "torch.linspace(0, 1, 5)": torch.linspace(0, 1, 5),
    "torch.full((2,), 7.5)": torch.full((2,), 7.5),
    "torch.randn(2, 2)  (seeded)": torch.randn(2, 2),
}
for code, t in examples.items():
    print(f"{code:30s} shape={tuple(t.shape)!s:8s} dtype={t.dtype}")
print("zeros_like keeps dtype:", torch.zeros_like(torch.arange(3)).dtype)


# %% [markdown]
# ## 2. The triad: shape, dtype, device
#
# When something goes wrong, print these three first. Almost every error message in this notebook
# is one of them disagreeing between two tensors.

# %%
def triad(t: torch.Tensor) -> str:
    return f"shape={tuple(t.shape)}, dtype={t.dtype}, device={t.device}"


images = torch.rand(8, 3, 32, 32)          # a batch of 8 RGB images
labels = torch.randint(0, 10, (8,))        # class indices: int64 by default
print("images:", triad(images))
print("labels:", triad(labels))

# %% [markdown]
# Two more things set a tensor apart from a NumPy array:
#
# - it can **record the operations** that produce results from it, so autograd can differentiate
#   them (notebook 03 is about this);
# - it can **move** to another device with `.to(...)`.
#
# Below, `meta`, a device every PyTorch has, stands in for a GPU (section 6 says more about it):

# %%
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)   # ask PyTorch to record what is done with w
loss = (w * w).sum()
print("loss was made by:", type(loss.grad_fn).__name__, "<-", type(loss.grad_fn.next_functions[0][0]).__name__)
loss.backward()
print("d loss / d w:", w.grad, "(= 2 * w)")
print("moved:", triad(w.detach().to("meta")))
print("the NumPy array of w records nothing:", type(w.detach().numpy()).__name__,
      "| has .grad:", hasattr(w.detach().numpy(), "grad"))

# %% [markdown]
# ## 3. The NumPy bridge shares memory
#
# `torch.from_numpy(arr)` does **not** copy: the tensor is a view of the array's memory. That is
# fast, and it is a trap. Change the array later (a data-augmentation step, a buffer reused for the
# next batch) and the tensor you thought you had saved changes too.

# %%
arr = np.array([1.0, 2.0, 3.0])
shared = torch.from_numpy(arr)
arr[0] = 100.0                      # modify the array AFTER making the tensor ...
print("tensor from from_numpy:", shared)   # ... and the tensor changed as well
print("same memory:", np.shares_memory(arr, shared.numpy()))

# %% [markdown]
# The fix is an explicit copy. `torch.tensor(arr)` always copies; `torch.from_numpy(arr).clone()`
# copies after wrapping. (`tensor.numpy()` shares memory in the other direction, too.)

# %%
arr = np.array([1.0, 2.0, 3.0])
copied = torch.tensor(arr)
arr[0] = 100.0
print("tensor from torch.tensor:", copied, "| dtype kept:", copied.dtype)


# %% [markdown]
# ### Exercise 1 — `independent_copy`
#
# Write `independent_copy(arr)` returning a tensor with the same values **and dtype** as the array
# that does not share memory with it.

# %%
def independent_copy(arr: np.ndarray) -> torch.Tensor:
    ### BEGIN SOLUTION
    return torch.tensor(arr)
    ### END SOLUTION


# %%
from course_utils.exercises import check

check("01.independent_copy", independent_copy)

# %% [markdown]
# ## 4. Views and copies
#
# A tensor is a block of memory (its *storage*) plus a recipe for reading it. The recipe is a shape
# and **strides**: how many elements to skip to move one step along each dimension.
#
# `view`, `transpose`, slicing and `t()` only change the recipe, so they share memory. `transpose`
# makes the tensor **non-contiguous**: walking it row by row no longer walks memory in order.

# %%
x = torch.arange(12).reshape(3, 4)
v = x.view(4, 3)
xt = x.t()
print("x  strides", x.stride(), "contiguous", x.is_contiguous())
print("xt strides", xt.stride(), "contiguous", xt.is_contiguous())
v[0, 0] = -1
print("x[0, 0] after writing through the view:", x[0, 0].item())
print("all three share storage:", x.data_ptr() == v.data_ptr() == xt.data_ptr())

# %% [markdown]
# That holds for **basic** indexing only: integers and slices. Indexing with a list, an index tensor
# or a boolean mask (*advanced* indexing) always builds a new tensor, so writing into it never
# reaches `x`.
#
# To change `x` through an index, put the index on the left of `=`. That calls `index_put_`, which
# writes into `x`:

# %%
def same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


x = torch.arange(12).reshape(3, 4)
print("x[:, 1:3]  (slice) shares storage:", same_storage(x[:, 1:3], x))
print("x[[0, 2]]  (list)  shares storage:", same_storage(x[[0, 2]], x))
print("x[x > 5]   (mask)  shares storage:", same_storage(x[x > 5], x))
picked = x[[0, 2]]
picked[:, 0] = -1                      # writes into the copy only
print("after writing into x[[0, 2]]'s result: x[:, 0] =", x[:, 0].tolist())
x[[0, 2], 0] = -1                      # index on the left: writes into x
print("after x[[0, 2], 0] = -1:           x[:, 0] =", x[:, 0].tolist())

# %% [markdown]
# `view` never copies, so it refuses when the strides make the requested shape impossible. This is
# the error behind the common idiom `x.view(x.size(0), -1)` after a `transpose` or `permute`. The
# full traceback below is what an error looks like in Jupyter: read its last line first.

# %% tags=["raises-exception"]
batch = torch.randn(4, 3, 5).transpose(1, 2)   # e.g. (batch, time, features) from (batch, features, time)
batch.view(batch.size(0), -1)

# %% [markdown]
# The fixes:
#
# - `torch.flatten(batch, 1)` or `reshape`: they return a view when the strides allow it and copy
#   only when they must. `nn.Flatten` does the same inside a model.
# - `.contiguous().view(...)`, if you want the copy to be explicit. `contiguous()` copies a
#   non-contiguous tensor into fresh row-major memory (and returns a contiguous tensor as it is).

# %%
flat = torch.flatten(batch, start_dim=1)
print("flatten:", tuple(flat.shape), "| copied:", flat.data_ptr() != batch.data_ptr())
dense = batch.contiguous()
print("contiguous():", tuple(dense.shape), "strides", dense.stride(), "| copied:", dense.data_ptr() != batch.data_ptr(),
      "| then view works:", tuple(dense.view(batch.size(0), -1).shape))
print("reshape equals flatten:", torch.equal(batch.reshape(4, -1), flat))

# %% [markdown]
# So does `reshape` copy or not? It depends on the input. That is why you should never rely on
# writing through its result:

# %%
x = torch.arange(12).reshape(3, 4)
print("reshape of a contiguous tensor shares memory:", x.reshape(4, 3).data_ptr() == x.data_ptr())
print("reshape of a transposed tensor shares memory:", x.t().reshape(12).data_ptr() == x.data_ptr())


# %% [markdown]
# ### Exercise 2 — `flatten_batch`
#
# Write `flatten_batch(x)` that keeps dimension 0 and flattens the rest, and works for
# non-contiguous inputs.

# %%
def flatten_batch(x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    return torch.flatten(x, start_dim=1)
    ### END SOLUTION


# %%
check("01.flatten_batch", flatten_batch)

# %% [markdown]
# ## 5. dtypes: promotion, precision and the two classic mismatches
#
# Mixed-dtype arithmetic is *promoted* to a common dtype: int with float gives float, float32 with
# float64 gives float64. The categories rank bool < integer < float.
#
# A Python number counts for less than a tensor. It never raises the precision *within* the
# tensor's category: float32 `* 0.5` stays float32, int32 `* 5` stays int32. But it can change the
# category: an integer tensor times a Python float becomes the default float dtype, float32.
#
# A **0-dimensional** tensor is a scalar tensor, such as `torch.tensor(np.float64(0.5))` used as a
# loss weight. Within a category it ranks like a Python number: a float64 scalar tensor leaves
# float32 as it is, while a float64 tensor of shape `(1,)` raises it to float64.
#
# When a 0-dim tensor brings a *higher category*, it does not act like a Python number. A float64
# 0-dim tensor with an int64 tensor gives float64, its own dtype, not the default float32 that a
# Python float gives.
#
# `torch.result_type` answers all these questions without computing anything.

# %%
i64, f32, f64 = torch.tensor([1]), torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64)
print("int64 + float32   ->", (i64 + f32).dtype)
print("float32 + float64 ->", (f32 + f64).dtype, "(both of shape (1,))")
print("float32 + float64 of shape () ->", (f32 + torch.tensor(1.0, dtype=torch.float64)).dtype,
      "(a 0-dim tensor ranks like a Python number)")
print("int64 + float64 of shape () ->", (i64 + torch.tensor(0.5, dtype=torch.float64)).dtype,
      "| int64 + 0.5 ->", (i64 + 0.5).dtype, "(a higher category: the 0-dim tensor's own dtype)")
print("float32 * 0.5     ->", (f32 * 0.5).dtype, "| result_type:", torch.result_type(f32, 0.5))
print("int32 * 5         ->", torch.result_type(torch.tensor([1], dtype=torch.int32), 5))
print("int64 * 0.5       ->", torch.result_type(i64, 0.5), "(an int tensor and a Python float: the default float dtype)")
print("int64 / 2         ->", (i64 / 2).dtype, "| int64 // 2 ->", (i64 // 2).dtype)
print("float32 keeps ~7 digits:", f"{torch.tensor(0.1).item():.17f}", "vs float64",
      f"{torch.tensor(0.1, dtype=torch.float64).item():.17f}")

# %% [markdown]
# Mismatch 1: NumPy arrays default to float64, layers are float32. Feeding one into the other fails:

# %% tags=["raises-exception"]
from torch import nn

layer = nn.Linear(3, 2)
features = torch.from_numpy(np.random.default_rng(0).normal(size=(4, 3)))   # float64
layer(features)

# %% [markdown]
# Fix it once, where the data enters PyTorch: `.float()` (or `torch.tensor(arr, dtype=torch.float32)`).
#
# float32 is the default for training. It needs half the memory of float64 (printed below), and
# GPUs are built for float32 and lower precisions (notebook 08 measures the low-precision side).

# %%
print("output dtype:", layer(features.float()).dtype)
print("bytes per element: float32", torch.float32.itemsize, "| float64", torch.float64.itemsize)

# %% [markdown]
# Memory is half the story; float64 arithmetic is also slower. Time the same 512 × 512 matrix
# product in both dtypes (best of 15 runs each, one thread):

# %% tags=["nbval-ignore-output"]
import time

a64, b64 = torch.randn(512, 512, dtype=torch.float64), torch.randn(512, 512, dtype=torch.float64)
a32, b32 = a64.float(), b64.float()


def best_ms(a: torch.Tensor, b: torch.Tensor, repeats: int = 15) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


ms32, ms64 = best_ms(a32, b32), best_ms(a64, b64)
print(f"matmul 512x512: float32 {ms32:.2f} ms | float64 {ms64:.2f} ms | float64 / float32 = {ms64 / ms32:.1f}")
confirm(torch.allclose((a32 @ b32).double(), a64 @ b64, rtol=1e-3, atol=1e-3),
        "float32 computes the same product as float64, to about 3 digits")

# %% [markdown]
# On most CPUs a float64 matrix product takes two to three times as long as float32. The ratio
# printed above is what this machine measured; it varies from run to run, more so on a busy machine.
#
# Why: a CPU's vector registers hold half as many float64 numbers as float32 ones, and float64
# matrices need twice the cache and memory traffic.
#
# On GPUs the gap is usually larger, and it depends on the model. Consumer (GeForce) cards and
# inference cards such as the L4 run float64 at 1/32 to 1/64 of their float32 rate. Data-centre cards
# built for scientific computing (A100, H100) run it at about half. That GPU part is not measured
# here.
#
# Mismatch 2: with one label per sample, shape `(N,)`, `CrossEntropyLoss` wants integer class
# indices. int64 (`torch.long`) is the standard dtype for them. (The error below shows that uint8,
# `Byte`, is accepted too, but it only counts to 255.) Class indices that arrive as float (read from
# a CSV) or as int32 are refused:

# %% tags=["raises-exception"]
logits = torch.randn(4, 3)
float_labels = torch.tensor([0.0, 2.0, 1.0, 2.0])
nn.CrossEntropyLoss()(logits, float_labels)

# %%
print("loss with int64 labels:", round(nn.CrossEntropyLoss()(logits, float_labels.long()).item(), 4))

# %% [markdown]
# Float targets *are* accepted in one other form: class **probabilities** with the logits' shape
# `(N, C)`, each row summing to 1. These are "soft labels", as MixUp, CutMix or distillation produce
# them. One-hot rows are the special case that gives the same loss as the int64 labels:

# %%
one_hot = nn.functional.one_hot(float_labels.long(), num_classes=3).float()   # shape (4, 3), float32
print("target shape", tuple(one_hot.shape), "| loss with one-hot probabilities:",
      round(nn.CrossEntropyLoss()(logits, one_hot).item(), 4), "(the same as above)")

# %% [markdown]
# Embedding layers have the same rule for their indices. An `nn.Embedding` looks up rows by integer
# index, and token ids that arrive as float are refused:

# %% tags=["raises-exception"]
embedding = nn.Embedding(10, 4)              # 10 tokens, a vector of 4 numbers each
token_ids = torch.tensor([3.0, 1.0, 7.0])    # ids read as floats
embedding(token_ids)

# %% [markdown]
# As the message says, int64 (`Long`) and int32 (`Int`) are both accepted. int64 is what
# `torch.tensor` makes from Python integers, and the usual choice:

# %%
print("int64 ids:", tuple(embedding(token_ids.long()).shape), "| int32 ids:", tuple(embedding(token_ids.int()).shape))

# %% [markdown]
# ## 6. Devices: write the code once
#
# A tensor lives on exactly one device, and an operation needs all its inputs on the same device.
#
# Code copied from a GPU machine often hard-codes the GPU, with `.cuda()` or `.to("cuda")` (the same
# move). On a machine without an NVIDIA GPU that line crashes. (A CPU-only build of PyTorch words it
# differently: `Torch not compiled with CUDA enabled`.)

# %% tags=["raises-exception"]
images.cuda()                      # hard-coded GPU: crashes on a machine without one

# %% [markdown]
# The portable pattern is a `device` variable chosen once and used everywhere: `model.to(device)`,
# `x = x.to(device)`.
#
# The generic `torch.accelerator` API gives the same choice for any accelerator (CUDA, Apple's MPS,
# Intel's XPU). Pass `check_available=True`; without it, it names the accelerator PyTorch was built
# for, even when the machine has none:

# %%
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("this notebook computes on:", device)
print("generic form:", torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu"))
print("images moved:", triad(images.to(device)))

# %% [markdown]
# This laptop may have no GPU, but PyTorch has a second device everywhere: `meta`. A meta tensor has
# a shape and a dtype but no data.
#
# The most common device bug: `x.to(device)` returns a **new** tensor and leaves `x` where it was, so
# it must be reassigned. `model.to(device)` moves the module's parameters **in place**:

# %%
x = torch.ones(2)
x.to("meta")                                      # a moved copy, thrown away
print("x.to('meta') alone:   x is on", x.device)
x = x.to("meta")                                  # reassigned
print("x = x.to('meta'):     x is on", x.device)
model_moved = nn.Linear(3, 2)
model_moved.to("meta")                            # no reassignment needed for a module
print("model.to('meta') alone: the weight is on", model_moved.weight.device)

# %% [markdown]
# Mixing a meta tensor with CPU tensors reproduces the device-mismatch error you get when a model is
# on the GPU and the batch is still on the CPU. Either way the fix is to move one of them.
#
# Only the wording differs. Below is the meta device's message. With the model on a CUDA GPU, the
# same line says
# `Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!`
# (the two devices may come in either order, sometimes followed by the argument and operation
# being checked).
#
# The cell below prints only the error's type and message: its full traceback runs through 150
# lines of PyTorch's own code. The first run can take a few seconds, because PyTorch loads its meta
# implementations on first use.

# %%
model_elsewhere = nn.Linear(3, 2).to("meta")     # stands in for "the model is on the GPU"
try:
    model_elsewhere(torch.ones(1, 3))             # the batch is still on the CPU
except RuntimeError as error:
    print(f"{type(error).__name__}: {error}")

# %%
batch_there = torch.ones(1, 3).to("meta")         # move the batch to the model's device
print("after moving the batch:", triad(model_elsewhere(batch_there)))


# %% [markdown]
# Real batches are rarely one tensor: a DataLoader gives tuples, lists or dicts (images, labels,
# masks, metadata). Moving them needs a function that walks the structure. (A DataLoader is the
# object that hands out a dataset in batches; notebook 05 builds one.)
#
# ### Exercise 3 — `to_device`
#
# Write `to_device(batch, device)`: return the same structure (a tensor, or nested
# tuples/lists/dicts) with every tensor moved to `device` and everything else (strings, numbers)
# returned exactly as it was. Tuples include **namedtuples**, which a DataLoader keeps as they are
# when a dataset returns them: a namedtuple must come back as the same namedtuple type, and its
# constructor takes one argument per field (`type(batch)(*items)`, not a generator). Build new
# containers and leave the batch you were given unchanged. The checker uses the `meta` device, so it
# works without a GPU.

# %%
def to_device(batch, device):
    ### BEGIN SOLUTION
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):   # a namedtuple: one argument per field
        return type(batch)(*(to_device(value, device) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(value, device) for value in batch)
    return batch
    ### END SOLUTION


# %%
check("01.to_device", to_device)

# %% [markdown]
# ## 7. `.item()` in a loop: cheap on a CPU, a wait on a GPU
#
# `.item()` turns a one-element tensor into a Python number. On a GPU, that means *waiting*. The CPU
# must stop queueing work until the GPU has finished everything before it, then copy the value back:
# a host↔device *synchronization*. `.cpu()` on a GPU tensor does the same.
#
# Called every step, a sync removes the overlap between Python and the GPU. On a CPU there is no
# device to wait for, but each call still crosses from PyTorch to Python.
#
# Measure the CPU cost here. One loop accumulates a running loss with `.item()` every step; the
# other accumulates a tensor and converts once.

# %% tags=["nbval-ignore-output"]
import time

losses = torch.rand(20_000)


def with_item() -> float:
    total = 0.0
    for value in losses:
        total += value.item()          # one conversion (a sync on GPU) per step
    return total


def once_at_the_end() -> float:
    total = torch.zeros(())
    for value in losses:
        total += value                 # stays a tensor
    return total.item()                # one conversion


def vectorised() -> float:
    return losses.sum().item()         # no Python loop at all


timings = {}
for fn in (with_item, once_at_the_end, vectorised):
    start = time.perf_counter()
    result = fn()
    timings[fn.__name__] = time.perf_counter() - start
    print(f"{fn.__name__:16s} {timings[fn.__name__] * 1e3:9.3f} ms  total={result:.2f}")
print(f".item() loop / tensor loop time ratio on this machine: "
      f"{timings['with_item'] / timings['once_at_the_end']:.2f}")
confirm(abs(with_item() - once_at_the_end()) < 1.0, "both loops compute the same total")
confirm(timings["vectorised"] < min(timings["with_item"], timings["once_at_the_end"]) / 2,
        "the vectorised sum is much faster than either Python loop (usually about 100 times)")

# %% [markdown]
# Read your numbers. The clear winner is the vectorised `sum()`, by orders of magnitude, because it
# removes the Python loop.
#
# On a CPU there is no device to wait for, so `.item()` is cheap. The tensor-accumulating loop is
# often *no faster, or even slower*: each `+=` on a tensor dispatches a PyTorch operation, which costs
# more than converting a number. The ratio printed above is what your machine measured.
#
# On a GPU the picture changes. Every `.item()` or `.cpu()` stalls the CPU until the GPU queue
# drains, so the per-step conversion is the one that can hurt.
#
# The next cell measures that on a CUDA GPU (on a machine without one it only says why it skips). A
# loop of small matrix products converts its loss every step, with `.item()` or `.cpu()`. The same
# loop then keeps the running loss on the GPU and converts once at the end. Each timing ends with
# `torch.cuda.synchronize()`, so every version is timed until its GPU work is done.

# %% tags=["nbval-ignore-output"]
from course_utils.devices import skip_unless_gpu

on_gpu = skip_unless_gpu(
    "a GPU loop converting its loss every step (.item(), .cpu()) vs once at the end",
    expect="on a recent NVIDIA desktop or data-centre GPU, converting every step typically makes "
           "this loop of small steps about 1.1 to 3 times slower than converting once at the end.")
if on_gpu:
    gpu = torch.device("cuda")
    gen_gpu = torch.Generator(device=gpu).manual_seed(0)
    weight = torch.randn(512, 512, device=gpu, generator=gen_gpu) / 512 ** 0.5
    inputs = torch.randn(256, 512, device=gpu, generator=gen_gpu)

    def gpu_loop(convert: str, steps: int = 300) -> tuple[float, float]:
        torch.cuda.synchronize()
        start = time.perf_counter()
        running = torch.zeros((), device=gpu)
        total = 0.0
        for _ in range(steps):
            loss = (inputs @ weight).relu().mean()     # stands in for one training step's loss
            if convert == ".item() every step":
                total += loss.item()                   # waits for the GPU, copies 4 bytes back
            elif convert == ".cpu() every step":
                total += float(loss.cpu())             # the same wait, as a host tensor
            else:
                running += loss                        # queued on the GPU, no waiting
        if convert == "once at the end":
            total = running.item()                     # one wait, one copy
        torch.cuda.synchronize()
        return time.perf_counter() - start, total

    gpu_loop("once at the end")                        # warm-up (kernel launch, allocator)
    gpu_times = {}
    for convert in (".item() every step", ".cpu() every step", "once at the end"):
        seconds, total = gpu_loop(convert)
        gpu_times[convert] = seconds
        print(f"{convert:20s} {seconds * 1e3:8.2f} ms  running loss={total:.4f}")
    print(f".item() every step / once at the end on this GPU: "
          f"{gpu_times['.item() every step'] / gpu_times['once at the end']:.2f}")
    confirm(abs(gpu_loop(".item() every step")[1] - gpu_loop("once at the end")[1]) < 1e-2,
            "converting every step and converting once give the same running loss")
confirm(on_gpu == torch.cuda.is_available(), "the GPU part runs exactly when a CUDA GPU is available")

# %% [markdown]
# The habit that is right on both: keep values as tensors inside the training loop, and convert
# once per logging step. Notebook 11 profiles this on a real training step.
#
# One caution when the values are losses that autograd recorded: accumulate them with `.detach()`
# (`total += loss.detach()`), or the running total drags every step's graph along and keeps it in
# memory. Notebook 06 shows it.

# %% [markdown]
# ## Key points
#
# - Print `shape`, `dtype`, `device` first when something breaks.
# - `torch.from_numpy` and `.numpy()` share memory; `torch.tensor(arr)` or `.clone()` copies.
# - A tensor records the operations done with it (for autograd) and moves with `.to(device)`.
# - `view`/`transpose`/basic slicing share storage; indexing with a list, tensor or mask copies.
#   `view` fails on non-contiguous tensors, so prefer
#   `torch.flatten(x, 1)`, `reshape` or `nn.Flatten` (a view when possible, a copy otherwise:
#   never rely on which) or make the copy explicit with `.contiguous()`.
# - Convert data to float32 where it enters PyTorch: float64 doubles the memory and is slower.
# - A 0-dim tensor, like a Python number, never raises precision within a category (float32 stays
#   float32). If it brings a higher category (a float64 0-dim tensor with an int tensor), the result
#   takes its own dtype (float64), not the default float32.
# - Class-index labels and embedding indices are integers (int64 as a rule); `CrossEntropyLoss`
#   takes float targets only as `(N, C)` class probabilities.
# - Never hard-code `.cuda()`: one `device` variable, `.to(device)` for models and batches
#   (recursively for nested batches). Reassign tensors (`x = x.to(device)`); a module moves in place.
# - Keep numbers as tensors inside loops; `.item()` and `.cpu()` (each a GPU sync) once per log step.
#   On a CPU the per-step `.item()` costs little; on a GPU it makes the CPU wait every step.
#   Accumulate losses with `.detach()`, or the total keeps every step's graph.
#
# ## Further reading
#
# - PyTorch docs: [*Tensor Attributes*](https://docs.pytorch.org/docs/stable/tensor_attributes.html)
#   (dtype, device, layout; type promotion).
# - PyTorch docs: [*Tensor Views*](https://docs.pytorch.org/docs/stable/tensor_view.html).
# - PyTorch docs: [*torch.from_numpy*](https://docs.pytorch.org/docs/stable/generated/torch.from_numpy.html)
#   and [*torch.result_type*](https://docs.pytorch.org/docs/stable/generated/torch.result_type.html).
# - PyTorch docs: [*CUDA semantics*](https://docs.pytorch.org/docs/stable/notes/cuda.html)
#   (asynchronous execution and synchronization).
# - Previous: [00 · Welcome](00_welcome.ipynb). Next: [02 · Broadcasting pitfalls](02_broadcasting_pitfalls.ipynb).
