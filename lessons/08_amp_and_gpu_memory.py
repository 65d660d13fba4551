# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · AMP and GPU memory: where the bytes go, and how to need fewer
#
# "CUDA out of memory" surprises almost everyone once: the model file is a few dozen megabytes,
# the GPU has gigabytes, and training still does not fit. The culprit is rarely the parameters. It
# is gradients, optimizer state and above all the **activations**, the tensors autograd keeps for
# the backward pass. Here you predict each kind of training memory and measure it on a laptop CPU.
# Then you pull the levers that shrink it: mixed precision, activation checkpointing, gradient
# accumulation.
#
# ## You will learn (≈ 50 min)
#
# 1. Account for training memory: parameters, gradients, optimizer state (SGD vs momentum vs
#    Adam) and activations, predicted first and then measured to the byte.
# 2. Measure activation memory with saved-tensor hooks and watch it grow with the batch size.
# 3. Use `torch.autocast` in device-agnostic code, see which operations it runs in 16 bits, and
#    understand why float16 needs a `GradScaler` (and what it does, step by step) while bfloat16
#    usually does not.
# 4. Pull the memory levers (mixed precision, activation checkpointing, gradient accumulation,
#    input resolution, offloading to CPU memory) and measure what each one costs on this machine;
#    clip gradients correctly under a scaler, and check AMP against a float32 run.
# 5. Read a GPU's memory counters: allocated vs reserved, `del`, `empty_cache()`, and the tools to
#    reach for after an out-of-memory error.

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

# %% [markdown]
# ## 1. Where training memory goes
#
# During a training step four kinds of tensors are alive at the same time:
#
# | category | how big | lives |
# |---|---|---|
# | parameters | one copy of every weight | always |
# | gradients | one `.grad` per trainable parameter | from `backward()` until `zero_grad()` |
# | optimizer state | 0, 1 or 2 more copies, depending on the optimizer | from the first `step()` on |
# | activations | what the forward pass saves for backward: grows with batch size and depth | from forward until backward frees it |
#
# Bytes are elements × bytes per element: 4 for float32, 2 for float16/bfloat16.
#
# We use two models on CIFAR-shaped inputs (3×32×32, 10 classes): an MLP with many parameters and
# a small CNN with few. Memory does not depend on the pixel values, so random images will do.

# %%
import copy
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.claims import confirm
from course_utils.devices import describe, pick_device, skip_unless_gpu
from course_utils.exercises import check

device = pick_device()
print("device:", describe(device))


def make_mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 512), nn.ReLU(),
                         nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def make_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32x32 -> 16x16
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16x16 -> 8x8
        nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))


torch.manual_seed(0)
mlp, cnn = make_mlp(), make_cnn()
for name, model in {"MLP": mlp, "CNN": cnn}.items():
    n = sum(p.numel() for p in model.parameters())
    size = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"{name}: {n:>9,} parameters in {len(list(model.parameters()))} tensors = {size / 2**20:.2f} MiB in float32")

# %% [markdown]
# ### 1.1 Optimizer state: look inside after one step
#
# An optimizer creates its state lazily, at the first `step()`. So we take one step with each
# optimizer on a copy of the CNN. Then we read what it stores for the first convolution's weight,
# and add up every state tensor.

# %%
images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
make_optimizer = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.01),
    "momentum": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3),
}
param_bytes = sum(p.numel() * p.element_size() for p in cnn.parameters())
stepped = {}
for name, make in make_optimizer.items():
    model = copy.deepcopy(cnn)
    optimizer = make(model.parameters())
    F.cross_entropy(model(images), labels).backward()
    optimizer.step()
    stepped[name] = (model, optimizer)
    first = optimizer.state[model[0].weight]
    keys = ", ".join(f"{k}{tuple(v.shape)}" for k, v in first.items()) or "(nothing)"
    state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    state_bytes = sum(t.numel() * t.element_size() for t in state)
    print(f"{name:9s} per parameter: {keys:55s} total {state_bytes:>9,} B "
          f"= {state_bytes // param_bytes} x params + {state_bytes % param_bytes} B")


# %% [markdown]
# Plain SGD keeps nothing. Momentum keeps one buffer per parameter. Adam and AdamW keep two:
# `exp_avg`, the running mean of the gradient, and `exp_avg_sq`, the running mean of its square.
# So with Adam the optimizer alone is **twice the model**.
#
# The 32 extra bytes are Adam's `step` counters. Since PyTorch 1.12 each parameter's step count is
# a 0-dimensional float32 tensor (4 bytes × 8 parameter tensors). They are real but negligible; the
# exercise below ignores them.
#
# So the "static" part of float32 training with Adam is 4 copies of the parameters: weights,
# gradients and two moments, 16 bytes per parameter.

# %% [markdown]
# ### Exercise 1 — `training_memory`
#
# Write `training_memory(model, optimizer, dtype)` returning a dict with the bytes of
# `"params"`, `"grads"` and `"optimizer_state"` for training `model` in `dtype` with optimizer
# `"sgd"`, `"momentum"`, `"adam"` or `"adamw"`. Frozen parameters (`requires_grad=False`) take
# parameter memory but get no gradient and no optimizer state; buffers (BatchNorm's running
# statistics) are not parameters. Bytes per element: `torch.tensor([], dtype=dtype).element_size()`
# (or `dtype.itemsize`).

# %%
def training_memory(model: nn.Module, optimizer: str, dtype: torch.dtype) -> dict[str, int]:
    ### BEGIN SOLUTION
    size = torch.tensor([], dtype=dtype).element_size()
    n_all = sum(p.numel() for p in model.parameters())
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
    return {"params": n_all * size, "grads": n_trainable * size,
            "optimizer_state": copies * n_trainable * size}
    ### END SOLUTION


# %%
check("08.training_memory", training_memory)

# %% [markdown]
# ### 1.2 Predicted before, measured after: they agree to the byte
#
# `course_utils.memory` does the same accounting in two functions:
#
# - `predict_training_memory` predicts the bytes, and *does* count the `step` tensors;
# - `measure_training_memory` reads the real bytes back from a model and optimizer after a step:
#   every parameter, every `.grad`, every tensor in `optimizer.state`.
#
# Run both on the four stepped copies:

# %%
from course_utils.memory import format_bytes, measure_training_memory, predict_training_memory

for name, (model, optimizer) in stepped.items():
    predicted = predict_training_memory(model, name)
    measured = measure_training_memory(model, optimizer)
    print(f"{name:9s} params {format_bytes(measured.params)} | grads {format_bytes(measured.grads)} | "
          f"optimizer state {format_bytes(measured.optimizer_state):>9s} | predicted == measured: "
          f"{predicted == measured}")
    confirm(predicted == measured, f"{name}: the predicted bytes equal the measured bytes, category by category")

# %% [markdown]
# ## 2. Activations: what autograd keeps for backward
#
# Activation memory is the tensors autograd saves during the forward pass for the backward pass.
# Backward needs them to compute gradients: a `Linear` layer needs its input to form the weight
# gradient, and a ReLU needs to know which outputs were positive. Autograd saves them when the
# forward runs and frees them once backward has used them. Every one of them has a batch dimension.
#
# `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` lets us watch: `pack(t)` is called for
# every tensor autograd saves. It works on the CPU, no GPU needed. Watch a tiny network:

# %%
tiny = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
param_names = {p.untyped_storage().data_ptr(): f"parameter {n}" for n, p in tiny.named_parameters()}
short_names: dict[int, str] = {}  # storage address -> "buffer A", "buffer B", ... (stable output)


def pack(t: torch.Tensor) -> torch.Tensor:
    ptr = t.untyped_storage().data_ptr()
    what = param_names.get(ptr) or short_names.setdefault(ptr, f"buffer {'ABCDEFGH'[len(short_names)]}")
    print(f"saved {str(tuple(t.shape)):7s} {str(t.dtype):13s} -> {what}")
    return t.detach()  # not `t` itself: see below


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    out = tiny(torch.randn(3, 4))


# %% [markdown]
# Four saves, but only two new buffers:
#
# - **buffer A** is the input, saved by the first `Linear` for its weight gradient;
# - **buffer B** is the ReLU output, saved **twice**: by the ReLU and by the second `Linear` as its
#   input. Same storage, so it costs memory once: count *storages*, not save calls;
# - the second `Linear` also saves its weight (a transposed view), but parameters exist anyway.
#
# Why `pack` returns `t.detach()` and not `t`: a meter must not leak memory itself. When the saved
# tensor is an operation's *output* (the ReLU saves its result), handing the same tensor back makes
# it point to its own `grad_fn`, which owns it. That cycle runs through C++. If no `backward()`
# follows, not even `gc.collect()` frees the graph.

# %% [markdown]
# ### Exercise 2 — `saved_activation_bytes`
#
# Write `saved_activation_bytes(model, x)`: run `model(x)` under `saved_tensors_hooks` and return
# the bytes of the **distinct** storages autograd saves, leaving out the model's parameters. Use
# `t.untyped_storage().data_ptr()` to recognise a storage and `.nbytes()` for its size: two saved
# views of one tensor are one storage, and a saved slice keeps its whole storage alive. `pack`
# returns what autograd keeps for backward: `t.detach()`, as above, so a backward through that graph
# still works.

# %%
def saved_activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
    ### BEGIN SOLUTION
    param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    sizes: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in param_storages:
            sizes[storage.data_ptr()] = storage.nbytes()
        return t.detach()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())
    ### END SOLUTION


# %%
check("08.saved_activation_bytes", saved_activation_bytes)

# %% [markdown]
# ### 2.1 Activation memory grows with the batch
#
# `course_utils.memory.activation_bytes(model, x, loss_fn, target)` is the same meter, plus the
# loss. We measure the CNN at several batch sizes and compare with an estimate written by hand,
# layer by layer.
#
# Note the int64 tensors in the estimate: max-pooling saves *which* input won each window (8-byte
# indices), and the loss saves the labels.

# %%
from course_utils.memory import activation_bytes
from course_utils.viz.memory import plot_activation_vs_batch


def cnn_activation_estimate(batch: int) -> int:
    floats = (3 * 32 * 32      # the input, saved by conv 1
              + 32 * 32 * 32   # ReLU 1 output (also what max-pool 1 saves)
              + 32 * 16 * 16   # pooled map, saved by conv 2
              + 64 * 16 * 16   # ReLU 2 output
              + 64 * 8 * 8     # pooled map, flattened (a view), saved by the first Linear
              + 128 + 10)      # ReLU 3 output; the log-softmax inside cross_entropy
    int64 = 32 * 16 * 16 + 64 * 8 * 8 + 1  # max-pool indices; the label
    return batch * (4 * floats + 8 * int64)


batch_sizes = [1, 2, 4, 8, 16, 32]
measured = []
for b in batch_sizes:
    x, y = torch.randn(b, 3, 32, 32), torch.randint(0, 10, (b,))
    measured.append(activation_bytes(cnn, x, F.cross_entropy, y))
for b, m in zip(batch_sizes, measured):
    print(f"batch {b:2d}: measured {format_bytes(m):>10s}, by hand {format_bytes(cnn_activation_estimate(b)):>10s}")
cnn_per_sample = measured[-1] / batch_sizes[-1]
plot_activation_vs_batch(batch_sizes, measured, [cnn_activation_estimate(b) for b in batch_sizes])
plt.show()

# %% [markdown]
# A straight line: about 349 KiB per image. The estimate matches within the 4-byte scalar the loss
# also saves.
#
# Halve the batch and you halve this part of the memory. That is why lowering the batch size is the
# first thing to try after an out-of-memory error.
#
# The other axis is the size of each sample. A convolution's output map has as many pixels as its
# input, so a convolutional network's activations grow with the **number of pixels**: width ×
# height. We measure the convolutional part of the CNN at three input resolutions. (Only that part:
# its `Linear` layer expects exactly 8×8 maps, while the convolutions take any size.)

# %%
features = cnn[:6]  # conv, ReLU, pool, conv, ReLU, pool
per_image = {px: activation_bytes(features, torch.randn(4, 3, px, px)) / 4 for px in (16, 32, 64)}
for px, n in per_image.items():
    print(f"{px:2d}x{px:<2d} pixels: {format_bytes(n):>10s} per image (x{n / per_image[32]:.2f} the 32x32 figure)")

# %% [markdown]
# Doubling the side length multiplies the activation memory by four; halving it divides it by four.
# So lowering the input resolution (or cropping) is a strong lever when a model fits in parameters
# but not in activations. The price is the detail the model can see.
#
# ### 2.2 The whole picture
#
# Put the four categories side by side for both models at batch 64, with SGD and with Adam:

# %%
from course_utils.viz.memory import plot_memory_breakdown

breakdowns = {}
x64, y64 = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
for model_name, model in {"CNN": cnn, "MLP": mlp}.items():
    activations = activation_bytes(model, x64, F.cross_entropy, y64)
    for opt_name in ("sgd", "adam"):
        breakdowns[f"{model_name} + {opt_name}"] = (
            predict_training_memory(model, opt_name).with_activations(activations))
for label, b in breakdowns.items():
    print(f"{label:10s} total {format_bytes(b.total):>10s}; activations {b.activations / b.total:4.0%}, "
          f"optimizer state {b.optimizer_state / b.total:4.0%}")
plot_memory_breakdown(breakdowns, title="float32 training at batch 64")
plt.show()

# %% [markdown]
# The CNN has 3× fewer parameters than the MLP, yet needs more memory. Its activations (big
# feature maps at every layer) are the largest part of its total, about 70 % or more: see the
# percentages printed above.
#
# The MLP is the opposite: its weights, gradients and Adam moments dominate, and its activations
# are small. Which lever helps depends on which bar is long.
#
# The calculator below uses the CNN's measured activations per image. Move the sliders: the number
# of parameters scales the first three bars, the batch size the last. The precision menu is the
# subject of the next sections.

# %% tags=["nbval-ignore-output"]
from course_utils.widgets.memory_calculator import memory_calculator

cnn_params = sum(p.numel() for p in cnn.parameters())
calculator = memory_calculator(cnn_per_sample, n_params=cnn_params, batch_size=64, model_name="CNN")
confirm(len(calculator.children) == 4, "the calculator shows three rows of controls and the chart they drive")
calculator

# %%
memory_calculator(cnn_per_sample, n_params=cnn_params, batch_size=64, model_name="CNN", static=True)
plt.show()

# %% [markdown]
# ## 3. Number formats: float32, float16, bfloat16
#
# Both 16-bit formats halve the memory of whatever is stored in them, but they spend their 16 bits
# differently:
#
# - float16 keeps 10 mantissa bits (precision) and only 5 exponent bits (range);
# - bfloat16 keeps float32's 8 exponent bits (the same range) and only 7 mantissa bits.

# %%
layouts = {torch.float32: (8, 23), torch.float16: (5, 10), torch.bfloat16: (8, 7)}
print(f"{'dtype':15s} exp mant  {'largest':>10s} {'smallest normal':>16s} {'smallest subnormal':>19s} {'eps':>10s}")
for dtype, (exponent, mantissa) in layouts.items():
    fi = torch.finfo(dtype)
    print(f"{str(dtype):15s} {exponent:3d} {mantissa:4d}  {fi.max:10.4g} {fi.smallest_normal:16.4g} "
          f"{fi.smallest_normal * fi.eps:19.4g} {fi.eps:10.4g}")

# %%
examples = {"70000 (above float16's max)": 70000.0, "1e-8 (below float16's subnormals)": 1e-8,
            "1 + 2**-9 (needs 9 mantissa bits)": 1 + 2**-9, "257 (needs 9 significant bits)": 257.0,
            "0.1": 0.1}
print(f"{'value':36s} {'float16':>12s} {'bfloat16':>12s}")
for label, value in examples.items():
    v = torch.tensor(value)
    print(f"{label:36s} {v.half().item():12.6g} {v.bfloat16().item():12.6g}")

# %% [markdown]
# - float16 **overflows** above 65504: 70000 became `inf`.
# - At the small end, read two numbers in float16's row of the first table. Its smallest *normal*
#   number is 6.104e-05 (2⁻¹⁴); its smallest *subnormal* is 5.96e-08 (2⁻²⁴). Between the two,
#   float16 still stores a value, but the smaller the value, the fewer significant bits it keeps.
#   Below 5.96e-08 there is nothing smaller to store: a value rounds up to 5.96e-08 or down to 0,
#   and the cut is half of it, about 3e-8. So 1e-8 **became 0** when it was cast to float16.
# - Inside its normal range float16 is the more precise format (its eps, 0.0009766, is smaller).
# - bfloat16 has the range of float32, so neither problem occurs. But it keeps only about 3
#   significant digits: 257 becomes 256 and 1 + 2⁻⁹ becomes 1.
#
# That is why mixed precision is *mixed*. The weights and the optimizer's update stay in float32,
# because a small update added to a large weight would be rounded away in 16 bits. Only the bulk
# arithmetic of the forward and backward passes runs in 16 bits.

# %% [markdown]
# ## 4. `torch.autocast`: which operations run in 16 bits
#
# Inside `with torch.autocast(device_type, dtype):` PyTorch decides op by op:
#
# - operations that are safe and fast in 16 bits (matrix multiplications, convolutions) get their
#   inputs cast to the 16-bit type;
# - operations that need range or accuracy (losses, some reductions) stay in, or are promoted to,
#   float32.
#
# The model's parameters are not converted: autocast makes 16-bit copies on the fly.
#
# **What changed.** Older code (including many tutorials) writes `torch.cuda.amp.autocast()` and
# `torch.cuda.amp.GradScaler()`. Both are deprecated. Here is what they say today:

# %% tags=["deprecated-on-purpose"]
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    old_scaler = torch.cuda.amp.GradScaler()  # the old spelling, on purpose
    with torch.cuda.amp.autocast():
        pass
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")
print("old scaler enabled:", old_scaler.is_enabled())

# %% [markdown]
# On a machine without CUDA, the old objects quietly **switch themselves off**: that is what the
# `UserWarning`s say, besides the `FutureWarning`s. Old AMP code on a CPU runs in plain float32,
# and nothing tells you unless you read the warnings.
#
# Write `torch.autocast(device_type=..., dtype=...)` and `torch.amp.GradScaler(device_type)`
# instead; the same code then runs on CPU and GPU. `torch.amp.GradScaler` documents `"cuda"` and
# `"cpu"`. Recent releases also accept `"mps"` (Apple GPUs), where the support is newer, so without
# a CUDA GPU this notebook runs its mixed-precision cells on the CPU.
#
# Which 16-bit type, device by device:
#
# - **CPU**: bfloat16, the type CPU autocast supports best.
# - **CUDA**: float16 is the universal choice: every NVIDIA GPU with tensor cores runs it fast.
#   (Tensor cores are the GPU's units for fast 16-bit matrix multiplication.)
# - **CUDA, Ampere and newer** (compute capability 8.0+): bfloat16 runs at the same tensor-core
#   speed (section 6 measures both formats on a GPU) and needs no scaler, so prefer it there.
#   This notebook uses float16 on CUDA anyway, so that the scaler has something to do.
#
# Test for Ampere with `torch.cuda.get_device_capability() >= (8, 0)` or
# `torch.cuda.is_bf16_supported(including_emulation=False)`. A plain
# `torch.cuda.is_bf16_supported()` is not that test. It also returns `True` on older GPUs such as
# the T4 or the V100, which can store bfloat16 but only emulate its arithmetic: slowly, without
# tensor cores. Those are exactly the GPUs where float16 with a `GradScaler` is the right choice.

# %%
amp_device = device if device.type == "cuda" else torch.device("cpu")
amp_dtype = torch.float16 if amp_device.type == "cuda" else torch.bfloat16
print(f"mixed precision in this notebook: torch.autocast(device_type={amp_device.type!r}, dtype={amp_dtype})")


def autocast_dtypes(device_type: str, dtype: torch.dtype) -> dict[str, torch.dtype]:
    """Run a few common operations under autocast and report the dtype of each result."""
    dev = torch.device(device_type)
    a, w = torch.randn(8, 16, device=dev), torch.randn(16, 16, device=dev)
    img, kernel = torch.randn(2, 3, 8, 8, device=dev), torch.randn(4, 3, 3, 3, device=dev)
    target = torch.randint(0, 16, (8,), device=dev)
    with torch.autocast(device_type=device_type, dtype=dtype):
        h = a @ w
        return {"a @ w": h.dtype, "F.linear(a, w)": F.linear(a, w).dtype,
                "F.conv2d(img, kernel)": F.conv2d(img, kernel).dtype, "h.relu()": h.relu().dtype,
                "h.softmax(1)": h.softmax(1).dtype, "F.layer_norm(h)": F.layer_norm(h, (16,)).dtype,
                "h.exp()": h.exp().dtype, "h.sum()": h.sum().dtype,
                "h + a   (a is float32)": (h + a).dtype,
                "F.cross_entropy(h, t)": F.cross_entropy(h, target).dtype,
                "F.mse_loss(h, a)": F.mse_loss(h, a).dtype}


for op, dtype in autocast_dtypes("cpu", torch.bfloat16).items():
    print(f"cpu  bfloat16: {op:24s} -> {dtype}")

# %% [markdown]
# On the CPU:
#
# - matmul, linear and convolution run in bfloat16;
# - ReLU, softmax, layer norm, `exp` and `sum` simply follow their (bfloat16) input;
# - adding a float32 tensor promotes the result to float32, by the usual type-promotion rules;
# - both losses are computed in float32.
#
# The lists are **not the same on every device**: CUDA's autocast runs softmax, log-softmax,
# layer norm, `exp` and `sum` in float32. Inspect, do not assume; the next cell shows CUDA's
# answers on a GPU.

# %%
if skip_unless_gpu("the same table for CUDA float16 autocast",
                   expect="a @ w, F.linear, F.conv2d and h.relu() give float16; softmax, layer_norm, "
                          "exp, sum, h + a and both losses give float32"):
    for op, dtype in autocast_dtypes("cuda", torch.float16).items():
        print(f"cuda float16: {op:24s} -> {dtype}")

# %% [markdown]
# And a whole training step: the weights and their gradients stay float32; only the work in
# between is 16-bit.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(amp_device)
xb, yb = torch.randn(8, 16, device=amp_device), torch.randint(0, 4, (8,), device=amp_device)
with torch.autocast(device_type=amp_device.type, dtype=amp_dtype):
    logits = net(xb)
    loss = F.cross_entropy(logits, yb)
loss.backward()
print(f"weight {net[0].weight.dtype} | logits {logits.dtype} | loss {loss.dtype} | "
      f"weight.grad {net[0].weight.grad.dtype}")

# %% [markdown]
# ## 5. float16 underflow, and what `GradScaler` does about it
#
# ### 5.1 Reproduce the underflow
#
# First the numbers alone: convert a few small values to each 16-bit format. 3e-8 and 2.9e-8 sit on
# either side of float16's rounding-to-zero threshold, 2.98e-8 (half the smallest subnormal).

# %%
small = torch.tensor([1e-3, 1e-5, 1e-7, 3e-8, 2.9e-8, 1e-8])
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    print(f"{str(dtype):15s}", [f"{v:.3g}" for v in small.to(dtype).float().tolist()])

# %% [markdown]
# In float16:
#
# - 1e-7 (subnormal) comes back as 1.19e-7, with 2 significant bits left;
# - 3e-8 rounds *up* to the smallest subnormal;
# - 2.9e-8 and 1e-8 round to zero.
#
# bfloat16 keeps all of them (roughly).
#
# Now inside backpropagation. Deep networks routinely produce activation gradients this small. Our
# tiny regression network would not, so we multiply its loss by `1e-5` to put its gradients in that
# range. We compare the first layer's weight gradient in three runs:
#
# - in float32;
# - under float16 autocast;
# - under float16 autocast with the loss multiplied by 2¹⁶ before backward, and the gradient
#   divided by 2¹⁶ afterwards, in float32.
#
# Autocast with float16 works on the CPU too (slowly), so this runs everywhere.

# %%
torch.manual_seed(0)
reg = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(amp_device)
xr, yr = torch.randn(256, 32, device=amp_device), torch.randn(256, 1, device=amp_device)
LOSS_WEIGHT = 1e-5


def first_layer_grad(use_fp16: bool, scale: float = 1.0) -> torch.Tensor:
    reg.zero_grad()
    with torch.autocast(device_type=amp_device.type, dtype=torch.float16, enabled=use_fp16):
        loss = LOSS_WEIGHT * F.mse_loss(reg(xr), yr)
    (loss * scale).backward()
    return reg[0].weight.grad / scale


def rel_error(g: torch.Tensor, ref: torch.Tensor) -> float:
    return float((g - ref).norm() / ref.norm())


g32 = first_layer_grad(False)
results = {"float32": g32, "float16": first_layer_grad(True),
           "float16, loss x 2**16": first_layer_grad(True, scale=2.0**16)}
print(f"typical float32 gradient entry: {g32.abs().median():.2g}")
for name, g in results.items():
    print(f"{name:22s} exact zeros {(g == 0).float().mean():6.1%}   relative error {rel_error(g, g32):.0e}")

# %% [markdown]
# Follow the numbers, one step at a time:
#
# 1. In float32 a typical gradient entry of the first layer is 2.9e-08 (the first line).
# 2. That is below float16's smallest subnormal, 5.96e-08, and even below half of it, about 3e-8.
#    The gradients flowing backward through the network are this small or smaller.
# 3. Under float16 autocast the backward pass carries them as float16 tensors. Cast to float16,
#    such a value becomes 0. So under float16 every gradient entry of the first layer is
#    **exactly zero** (100.0%), and the relative error is 1e+00: nothing of the gradient is left.
#    The optimizer would see zero gradients and the layer would never learn, with no error message.
#
# **Loss scaling** fixes this in two moves:
#
# 1. Multiply the loss by a factor S before `backward()`. The chain rule is linear, so every
#    gradient comes out S times larger. Here S = 2¹⁶ = 65536, and the typical entry becomes
#    2.9e-08 × 65536 ≈ 0.0019: far above float16's smallest normal number (6.104e-05), so it
#    survives the cast with all its bits.
# 2. Divide every gradient by S again, in float32, before the optimizer's step. That restores the
#    true size.
#
# The third row shows the result: no exact zeros, and a relative error of 6e-04, within float16's
# precision (its eps is 0.0009766).
#
# ### 5.2 `GradScaler` step by step
#
# `torch.amp.GradScaler` automates loss scaling and picks the factor dynamically. Here is one step,
# taken apart. We use Adam, so that a step visibly moves the weights.

# %%
scaler = torch.amp.GradScaler(amp_device.type, init_scale=2.0**16, growth_interval=2)
optimizer = torch.optim.Adam(reg.parameters(), lr=1e-3)
optimizer.zero_grad()
with torch.autocast(device_type=amp_device.type, dtype=torch.float16):
    loss = LOSS_WEIGHT * F.mse_loss(reg(xr), yr)

scaled = scaler.scale(loss)
print(f"1. scale:     loss {loss.item():.4g} x {scaler.get_scale():g} = {scaled.item():.4g}")
scaled.backward()
grad = reg[0].weight.grad
print(f"2. backward:  first-layer grads {grad.abs().median():.2g} (scaled), exact zeros {(grad == 0).float().mean():.1%}")
scaler.unscale_(optimizer)  # one fused op per device: divide every grad AND check it for inf/NaN
print(f"3. unscale_:  grads divided by the scale in float32; relative error vs float32 {rel_error(grad, g32):.0e}")
finite = all(bool(torch.isfinite(p.grad).all()) for p in reg.parameters())
print(f"4. (same op)  unscale_ also noted whether any grad is inf/NaN; the same test by hand: all finite = {finite}")
before = [p.detach().clone() for p in reg.parameters()]
scaler.step(optimizer)  # uses what unscale_ noted (and calls unscale_ first only if you did not)
moved = any(not torch.equal(b, p) for b, p in zip(before, reg.parameters()))
print(f"5. step:      no inf/NaN was noted, so step called optimizer.step(); weights changed = {moved}")
confirm(finite and moved, "with no inf/NaN in the gradients, scaler.step takes the optimizer's step and the weights move")
scaler.update()
print(f"6. update:    scale {scaler.get_scale():g} (it grows only after growth_interval=2 good steps in a row)")

# %% [markdown]
# In everyday code you write only three of these calls: `scaler.scale(loss).backward()`,
# `scaler.step(optimizer)` and `scaler.update()`. `scaler.step` calls `unscale_` itself (division
# and inf/NaN check) unless you already did. Call `scaler.unscale_(optimizer)` yourself only when
# you need the true gradients before the step: for gradient clipping, section 5.3.
#
# The scaler keeps its inf/NaN flag to itself: there is no public getter for it, so step 4 repeats
# the test by hand. `step` reads the flag, and `update()` makes it visible, since the scale halves
# after a step with inf/NaN.
#
# **The dynamic part.** Too large a scale overflows instead: a gradient above 65504 becomes `inf`.
# Then `scaler.step` **skips** the update (the weights stay as they were) and `update()` halves the
# scale. After `growth_interval` good steps in a row, `update()` doubles it again. Start far too
# high and watch it settle:

# %%
scaler = torch.amp.GradScaler(amp_device.type, init_scale=2.0**37, growth_interval=3)
for step in range(12):
    optimizer.zero_grad()
    with torch.autocast(device_type=amp_device.type, dtype=torch.float16):
        loss = LOSS_WEIGHT * F.mse_loss(reg(xr), yr)
    scaler.scale(loss).backward()
    scale_before = scaler.get_scale()
    weight_before = reg[0].weight.detach().clone()
    scaler.step(optimizer)
    scaler.update()
    skipped = torch.equal(weight_before, reg[0].weight)
    print(f"step {step:2d}: scale 2^{math.log2(scale_before):.0f} -> "
          + ("inf/NaN in the gradients: step SKIPPED, scale halved" if skipped else "step applied"))
    confirm(skipped == (scaler.get_scale() < scale_before),
            "the scaler skips a step exactly when it halves its scale")


# %% [markdown]
# A few skipped steps at the start are normal and cheap. The scaler then hovers just below the
# largest factor that does not overflow: it grows to test for more room and backs off when it
# overflows. Frequent skips later in training are a signal worth logging.
#
# With **bfloat16** the range is float32's, so gradients do not underflow and you can leave the
# scaler out. Or create it with `enabled=False`, which turns all its methods into pass-throughs:
# writing the scaler in anyway keeps one code path for float16 GPUs and bfloat16 CPUs.
#
# ### 5.3 Gradient clipping with a scaler: unscale first
#
# After `scaler.scale(loss).backward()` every `.grad` is multiplied by the scale. Clipping those
# gradients to `max_norm` would compare a norm thousands of times too large with your threshold,
# and shrink every step far too much. Unscale first, then clip, then step:

# %%
scaler = torch.amp.GradScaler(amp_device.type, init_scale=2.0**16)
optimizer.zero_grad()
with torch.autocast(device_type=amp_device.type, dtype=torch.float16):
    loss = F.mse_loss(reg(xr), yr)  # an ordinary loss this time, no tiny weight
scaler.scale(loss).backward()
grads = [p.grad for p in reg.parameters()]
print(f"gradient norm after scale().backward(): {torch.nn.utils.get_total_norm(grads):10.4g}  (scaled)")
scaler.unscale_(optimizer)
norm = torch.nn.utils.clip_grad_norm_(reg.parameters(), max_norm=0.1)  # returns the norm before clipping
print(f"gradient norm after unscale_:           {norm:10.4g}  (the true one)")
print(f"gradient norm after clip_grad_norm_:    {torch.nn.utils.get_total_norm(grads):10.4g}  (max_norm=0.1)")
scaler.step(optimizer)  # does not unscale again
scaler.update()

# %% [markdown]
# The five lines, in this order, are the AMP version of the clipped training step of notebook 06:
# `scaler.scale(loss).backward()` → `scaler.unscale_(optimizer)` → `clip_grad_norm_` →
# `scaler.step(optimizer)` → `scaler.update()`.
#
# If a step's gradients contain inf, the norm is inf too. The clipping still does no harm:
# `unscale_` noted the inf before it, so `scaler.step` skips that step anyway.
#
# ### 5.4 Float32 first, then switch mixed precision on
#
# When a mixed-precision run trains badly, is it the model, the data, the loop, or the 16-bit
# arithmetic? You can only tell with a float32 run of the same code to compare against. So get the
# run working in float32 and keep its loss curve. Then switch autocast on and compare the numbers.
#
# Here are three 30-step runs of the regression network from the same initial weights: float32,
# this notebook's mixed precision, and float16 with the scaler forgotten. The loss is still weighted
# by `1e-5` (the small-gradient case of 5.1); the printed losses are divided by it.

# %%
def loss_curve(dtype: torch.dtype | None, use_scaler: bool, steps: int = 30) -> torch.Tensor:
    """Train a fresh copy of the regression network; dtype None means plain float32."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(amp_device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    run_scaler = torch.amp.GradScaler(amp_device.type, enabled=use_scaler)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(amp_device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = LOSS_WEIGHT * F.mse_loss(model(xr), yr)
        run_scaler.scale(loss).backward()
        run_scaler.step(opt)
        run_scaler.update()
        losses.append(loss.detach().float() / LOSS_WEIGHT)  # tensors: no sync per step
    return torch.stack(losses)


reference = loss_curve(None, use_scaler=False)
runs = {f"autocast {amp_dtype}": loss_curve(amp_dtype, use_scaler=amp_dtype == torch.float16),
        "float16, no GradScaler": loss_curve(torch.float16, use_scaler=False)}
print(f"{'float32 (reference)':24s} final loss {reference[-1]:.4f}")
for name, curve in runs.items():
    gap = ((curve - reference).abs() / reference).max()
    print(f"{name:24s} final loss {curve[-1]:.4f}; largest gap to the float32 curve {gap:.1%}")

# %% [markdown]
# The correct mixed-precision run follows the float32 curve within a few percent (16-bit rounding).
# That is what "AMP works" looks like.
#
# The run without the scaler lags far behind. Its first layer's gradients underflow to zero
# (section 5.1), so only the last layer learns. On its own that curve would look like a
# learning-rate or model problem; next to the float32 reference it is clearly a precision problem.
#
# The same order catches the other mixed-precision bugs, such as a custom layer that overflows
# float16 or an operation that needs float32's precision.

# %% [markdown]
# ### Exercise 3 — `amp_train_step`
#
# Write `amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type)`: one mixed-precision
# training step that first clears the old gradients (the model may arrive with the previous step's,
# even the inf ones of an overflowed step), runs the forward pass and the loss under
# `torch.autocast(device_type=device_type, dtype=...)` (bfloat16 on `"cpu"`, float16 on
# `"cuda"`), backpropagates the **scaled** loss, steps through the scaler, updates the scale, and
# returns the unscaled loss as a Python float. The checker runs it on the CPU with a real
# `GradScaler("cpu")` that records its calls, including a step whose gradients overflow, and once
# with `device_type="cuda"` to see which dtype you pick there.

# %%
def amp_train_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn, optimizer,
                   scaler: torch.amp.GradScaler, device_type: str) -> float:
    ### BEGIN SOLUTION
    optimizer.zero_grad(set_to_none=True)
    amp_dtype = torch.bfloat16 if device_type == "cpu" else torch.float16
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
    ### END SOLUTION


# %%
check("08.amp_train_step", amp_train_step)

# %% [markdown]
# ## 6. Speed and memory, measured on this machine
#
# Mixed precision is sold as "faster and smaller". Smaller is arithmetic. Faster depends entirely
# on the hardware having fast 16-bit units. Time a training step of a small MLP here, in float32
# and under autocast:

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
speed_net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(amp_device)
speed_opt = torch.optim.SGD(speed_net.parameters(), lr=0.01)
xs, ys = torch.randn(128, 256, device=amp_device), torch.randint(0, 10, (128,), device=amp_device)


def sync() -> None:
    if amp_device.type == "cuda":
        torch.cuda.synchronize()


def seconds_per_step(use_amp: bool, repeats: int = 3) -> float:
    def step() -> None:
        speed_opt.zero_grad()
        with torch.autocast(device_type=amp_device.type, dtype=amp_dtype, enabled=use_amp):
            loss = F.cross_entropy(speed_net(xs), ys)
        loss.backward()
        speed_opt.step()
    step()  # warm-up
    sync()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    sync()
    return (time.perf_counter() - start) / repeats


t32, t16 = seconds_per_step(False), seconds_per_step(True)
print(f"{amp_device.type} capability: {torch.backends.cpu.get_cpu_capability() if amp_device.type == 'cpu' else describe(amp_device)}")
print(f"float32: {t32 * 1e3:.2f} ms/step | autocast {amp_dtype}: {t16 * 1e3:.2f} ms/step | "
      f"float32 time / autocast time = {t32 / t16:.2f}")
confirm(t32 > 0 and t16 > 0, "both training steps, float32 and autocast, were timed")

# %% [markdown]
# Read the ratio your machine printed; it depends on the CPU's instructions. (The capability line
# above says `AVX512` on every AVX-512 machine; whether yours also has the bfloat16 instructions
# shows in its CPU flags, `avx512_bf16` or `amx_bf16` in `lscpu` on Linux.)
#
# - **AVX2 only**, no bfloat16 instructions: the autocast step is **several times slower** than
#   float32, a ratio well below 1 (about 0.25 measured on such a machine). Every bfloat16 operation
#   converts back and forth, and the converted weights are extra work.
# - **AVX-512 BF16 / AMX** (bfloat16 instructions): no reliable gain for a model this small. Four
#   runs on such a machine, busy with other work, measured ratios from 0.44 to 1.40: sometimes
#   slower, sometimes a little faster.
#
# The textbook speed-up needs 16-bit hardware and enough work per operation: tensor cores on NVIDIA
# GPUs (float16 since the Volta generation, bfloat16 since Ampere, according to NVIDIA's
# specifications), or those CPU instructions. So on a laptop CPU, use autocast to *learn* it, not to
# go faster.
#
# On a GPU, the next cell measures the raw matrix-multiplication speed of each format; the cell at
# the end of this section measures a whole training step.

# %%
if skip_unless_gpu("matrix-multiplication throughput in float32, float16 and bfloat16",
                   expect="float16 and bfloat16 typically run several times faster than float32 "
                          "(about 2-4x on GeForce cards, 5-20x on A100/H100-class GPUs; on GPUs older "
                          "than Ampere only float16 is accelerated)"):
    n = 4096
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        a, b = (torch.randn(n, n, device="cuda", dtype=dtype) for _ in range(2))
        a @ b  # warm-up
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / 20
        print(f"{str(dtype):15s} {2 * n**3 / seconds / 1e12:7.1f} TFLOP/s")
    del a, b

# %% [markdown]
# A note on that cell: its float32 is true float32. PyTorch does not use TF32, the faster, less
# precise tensor-core format, for float32 matrix multiplications unless you allow it. Convolutions
# are another matter: cuDNN may use TF32 for float32 convolutions by default. So a float32 CNN on an
# Ampere or newer GPU already gets part of the tensor-core speed.
#
# Memory is a different story: it is arithmetic, so it shows up on any machine. Measure what the
# CNN saves for backward at batch 16, in float32 and under CPU autocast:

# %%
from course_utils.memory import SavedTensorsMeter

x16, y16 = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
with SavedTensorsMeter(exclude=cnn) as fp32_meter:
    F.cross_entropy(cnn(x16), y16)
with SavedTensorsMeter(exclude=cnn) as bf16_meter, torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    F.cross_entropy(cnn(x16), y16)
for name, meter in {"float32": fp32_meter, "bfloat16 autocast": bf16_meter}.items():
    parts = ", ".join(f"{dtype} {format_bytes(n)}" for dtype, n in meter.by_dtype().items())
    print(f"{name:18s} {format_bytes(meter.bytes):>10s}  ({parts})")
print(f"ratio: {bf16_meter.bytes / fp32_meter.bytes:.3f}; bfloat16 copies of the weights among them: "
      f"{format_bytes(2 * cnn_params)}")

# %% [markdown]
# The float activations are halved, but two things keep the total well above one half:
#
# - max-pooling's int64 indices do not shrink;
# - autocast **adds** bfloat16 copies of the weights (2 bytes per parameter). The backward pass
#   needs them, so they count as saved tensors too.
#
# Parameters, gradients and Adam's moments stay float32. So for a parameter-heavy model like the
# MLP, the saving from autocast alone is small.
#
# The calculator's "AMP" setting uses a simple rule: half the float32 activations + 2 bytes per
# parameter. For this CNN it is optimistic, because of the int64 indices. Measure when it matters.
#
# On a GPU, the next cell measures the peak allocated memory and the speed of a full training step
# of the CNN (Adam), in float32 and with float16 autocast + `GradScaler`.

# %%
if skip_unless_gpu("peak CUDA memory and time of a training step, float32 vs float16 autocast",
                   expect="peak allocated memory typically x0.6-0.8 of float32 and a step typically "
                          "1-3x faster on a GPU with tensor cores (this small CNN is partly "
                          "launch-bound; larger models gain more)"):
    from course_utils.memory import cuda_memory, cuda_peak

    gpu = torch.device("cuda")
    xg, yg = torch.randn(512, 3, 32, 32, device=gpu), torch.randint(0, 10, (512,), device=gpu)
    measurements = {}
    for label, use_amp in (("float32", False), ("float16 autocast", True)):
        torch.manual_seed(0)
        model = make_cnn().to(gpu)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        gpu_scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

        def gpu_step() -> None:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
                loss = F.cross_entropy(model(xg), yg)
            gpu_scaler.scale(loss).backward()
            gpu_scaler.step(opt)
            gpu_scaler.update()

        gpu_step()  # creates Adam's state: measure the steady state after it
        _, extra = cuda_peak(gpu_step, gpu)
        peak = cuda_memory(gpu)["peak_allocated"]
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(20):
            gpu_step()
        torch.cuda.synchronize()
        measurements[label] = (peak, (time.perf_counter() - start) / 20)
        print(f"{label:17s} peak allocated {format_bytes(peak):>10s} (step adds {format_bytes(extra)}), "
              f"{measurements[label][1] * 1e3:.2f} ms/step")
        del model, opt
    (p32, s32), (p16, s16) = measurements["float32"], measurements["float16 autocast"]
    print(f"autocast: peak memory x{p16 / p32:.2f}, speed-up x{s32 / s16:.2f} "
          f"(a model this small is partly launch-bound; larger models gain more)")
    confirm(p32 > 0 and p16 > 0 and s32 > 0 and s16 > 0, "both runs, float32 and autocast, were measured")

# %% [markdown]
# ## 7. Two more memory levers, and what they cost
#
# ### 7.1 Activation checkpointing: trade compute for memory
#
# `torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)` runs `block` without saving
# its internal activations. It keeps only the block's input, and during backward it re-runs the
# block's forward to get them back.
#
# `use_reentrant=False` is the recommended implementation. The older reentrant one has more
# restrictions, and leaving the argument out prints a warning asking you to choose.
#
# We compare a deep MLP with and without checkpointing each block: the bytes saved for backward,
# and the gradients.

# %%
from torch.utils.checkpoint import checkpoint


class DeepMLP(nn.Module):
    def __init__(self, width: int = 256, n_blocks: int = 4, layers_per_block: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(*[m for _ in range(layers_per_block) for m in (nn.Linear(width, width), nn.ReLU())])
            for _ in range(n_blocks))
        self.head = nn.Linear(width, 10)
        self.use_checkpoint = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return self.head(x)


torch.manual_seed(0)
plain = DeepMLP()
checkpointed = copy.deepcopy(plain)
checkpointed.use_checkpoint = True
xd, yd = torch.randn(128, 256), torch.randint(0, 10, (128,))
saved = {}
for name, model in {"plain": plain, "checkpointed": checkpointed}.items():
    with SavedTensorsMeter(exclude=model) as meter:
        loss = F.cross_entropy(model(xd), yd)
    loss.backward()
    saved[name] = meter.bytes
    print(f"{name:13s} saved for backward: {format_bytes(meter.bytes)}")
print(f"checkpointing keeps {saved['checkpointed'] / saved['plain']:.0%} of the activations")
print("identical gradients:", all(torch.equal(a.grad, b.grad)
                                  for a, b in zip(plain.parameters(), checkpointed.parameters())))


# %% [markdown]
# Without checkpointing, every ReLU output of every block stays alive (12 of them, plus the input).
# With it, only the 4 block inputs stay, plus what the head and the loss save. During backward one
# block at a time is recomputed, so the real peak adds one block's activations back.
#
# The gradients are bit-for-bit the same: the recomputation is the same arithmetic. The price is
# time:

# %% tags=["nbval-ignore-output"]
def seconds_per_forward_backward(model: nn.Module, repeats: int = 3) -> float:
    def run() -> None:
        model.zero_grad()
        F.cross_entropy(model(xd), yd).backward()
    run()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) / repeats


t_plain, t_ckpt = seconds_per_forward_backward(plain), seconds_per_forward_backward(checkpointed)
print(f"plain {t_plain * 1e3:.1f} ms, checkpointed {t_ckpt * 1e3:.1f} ms per forward+backward "
      f"(x{t_ckpt / t_plain:.2f})")
confirm(t_plain > 0 and t_ckpt > 0, "both models, plain and checkpointed, were timed")

# %% [markdown]
# In theory the price is one extra forward pass. If backward costs about twice the forward, that
# is (1 + 2 + 1) / (1 + 2) ≈ ×1.33.
#
# Read the ratio printed above (a busy shared CPU makes single timings jump around; run the cell
# again). With layers this small on a CPU, the checkpointing bookkeeping usually adds more. The
# ×1.33 is the figure to expect when large matrix multiplications dominate the time. It is theory,
# not measured here: layers that large take seconds per step on a CPU.
#
# Checkpoint the blocks whose activations are large and cheap to recompute.
#
# ### 7.2 Gradient accumulation: a big batch in small pieces
#
# Activations scale with the batch you run at once. So split a batch into micro-batches, call
# `backward()` on each (which frees its activations), and step once. Divide each micro-batch loss
# by the number of micro-batches: the summed gradients then equal the big batch's (notebook 03 has
# the details).

# %%
xa, ya = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
whole, pieces = copy.deepcopy(cnn), copy.deepcopy(cnn)
with SavedTensorsMeter(exclude=whole) as big_batch:
    loss = F.cross_entropy(whole(xa), ya)
loss.backward()

micro_batches = 4
per_micro = []
for x_part, y_part in zip(xa.chunk(micro_batches), ya.chunk(micro_batches)):
    # chunk() returns views of xa's storage and the meter counts whole storages: clone, as a
    # DataLoader would hand over separate micro-batches
    x_part, y_part = x_part.clone(), y_part.clone()
    with SavedTensorsMeter(exclude=pieces) as meter:
        loss = F.cross_entropy(pieces(x_part), y_part) / micro_batches
    loss.backward()  # frees this micro-batch's activations before the next one
    per_micro.append(meter.bytes)
print(f"batch of 32 at once: {format_bytes(big_batch.bytes)} of activations")
print(f"4 micro-batches of 8: {format_bytes(max(per_micro))} at a time")
print("same gradients (to float32 rounding):", all(torch.allclose(a.grad, b.grad, atol=1e-6)
                                                   for a, b in zip(whole.parameters(), pieces.parameters())))


# %% [markdown]
# A quarter of the activation memory, for the same gradients. Two things do not change:
#
# - parameters, gradients and optimizer state do not shrink;
# - BatchNorm would see micro-batches, not the whole batch.
#
# The cost is time: four smaller forward and backward passes instead of one, which use the
# hardware less efficiently. Measured here:

# %% tags=["nbval-ignore-output"]
def accumulation_seconds(n_micro: int, repeats: int = 3) -> tuple[float, nn.Module]:
    model = copy.deepcopy(cnn)
    parts = [(x.clone(), y.clone()) for x, y in zip(xa.chunk(n_micro), ya.chunk(n_micro))]

    def run() -> None:
        model.zero_grad()
        for x_part, y_part in parts:
            (F.cross_entropy(model(x_part), y_part) / n_micro).backward()
    run()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) / repeats, model


t_whole, model_whole = accumulation_seconds(1)
t_accum, model_accum = accumulation_seconds(micro_batches)
print(f"1 x 32: {t_whole * 1e3:.1f} ms, {micro_batches} x 8: {t_accum * 1e3:.1f} ms per forward+backward "
      f"(x{t_accum / t_whole:.2f})")
confirm(t_whole > 0 and t_accum > 0, "both ways, one batch and micro-batches, were timed")
confirm(all(torch.allclose(a.grad, b.grad, atol=1e-6)
            for a, b in zip(model_whole.parameters(), model_accum.parameters())),
        "micro-batches give the same gradients as the whole batch (to float32 rounding)")

# %% [markdown]
# Read the ratio printed above (a busy shared CPU makes it jump around; run the cell again). On
# this course's CPU, with one torch thread, the four micro-batches take somewhat longer than one
# batch of 32. Every micro-batch pays the per-layer overheads again, and smaller operations run
# less efficiently. On a GPU, small batches can leave much of the chip idle, and the slowdown can
# be larger. Accumulation buys memory, not speed.
#
# ### 7.3 Keep the saved activations in CPU memory
#
# A GPU has far less memory than the computer around it. `torch.autograd.graph.save_on_cpu()` is a
# ready-made pair of saved-tensor hooks (the mechanism of section 2):
#
# - `pack` copies every tensor autograd saves to CPU memory;
# - `unpack` copies it back to the GPU when backward needs it.
#
# The activations then take no GPU memory between forward and backward. The price: every saved
# byte crosses the PCIe bus twice.
#
# On a CPU-only machine there is nothing to move (the tensors are already in CPU memory), so what
# we can measure here is the traffic. It is more than the unique activation bytes of section 2,
# because `pack` runs once per *saved* tensor:
#
# - a ReLU output saved twice (by the ReLU and by the next layer) is copied twice;
# - the weights each layer saves are copied too.
#
# Count both for one training step at batch 64:

# %%
from torch.autograd.graph import save_on_cpu

with SavedTensorsMeter(exclude=cnn) as offload_meter:
    F.cross_entropy(cnn(x64), y64)
copied = sum(record.nbytes for record in offload_meter.records)  # every pack call, weights included
print(f"unique activations {format_bytes(offload_meter.bytes)}; with save_on_cpu, one step at batch 64 copies "
      f"{format_bytes(copied)} to CPU memory during forward, and the same back during backward")
confirm(copied > offload_meter.bytes, "save_on_cpu copies more bytes than the unique activations")
with save_on_cpu():  # runs here too, moving nothing
    F.cross_entropy(cnn(x64), y64).backward()
cnn.zero_grad(set_to_none=True)

# %% [markdown]
# At a PCIe bandwidth of some 10 to 50 GB/s (PCIe generations 3 to 5), each direction costs
# roughly that many bytes divided by the bandwidth. That is milliseconds per step, often more than
# the GPU's own work for a small model.
#
# `save_on_cpu(pin_memory=True)` uses page-locked CPU memory, which copies faster (notebook 05). On
# a GPU, the next cell measures the peak memory and the time of a step with and without it.

# %%
if skip_unless_gpu("peak memory and time of a CNN step with saved activations on the GPU vs in CPU memory",
                   expect="with save_on_cpu the step's extra peak memory is typically lower, but by much "
                          "less than the saved activations (a layer's output still exists on the GPU while "
                          "it is computed, and backward copies each saved tensor back), and the step "
                          "typically takes several times longer, anywhere from 2x to 30x for this small CNN "
                          "depending on the PCIe link (every saved tensor crosses it twice)"):
    import contextlib

    from course_utils.memory import cuda_peak

    gpu = torch.device("cuda")
    torch.manual_seed(0)
    model = make_cnn().to(gpu)
    xg, yg = torch.randn(512, 3, 32, 32, device=gpu), torch.randint(0, 10, (512,), device=gpu)

    def offload_step(offload: bool) -> None:
        model.zero_grad(set_to_none=True)
        with save_on_cpu(pin_memory=True) if offload else contextlib.nullcontext():
            loss = F.cross_entropy(model(xg), yg)
        loss.backward()

    for offload in (False, True):
        offload_step(offload)  # warm-up
        _, extra = cuda_peak(lambda: offload_step(offload), gpu)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(10):
            offload_step(offload)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - start) / 10 * 1e3
        print(f"save_on_cpu={offload!s:5s}: a step adds {format_bytes(extra):>10s} at its peak, {ms:.2f} ms/step")
    del model

# %% [markdown]
# ## 8. Freeing memory: `del`, allocated vs reserved, `empty_cache()`
#
# PyTorch frees a tensor as soon as its last reference disappears. That is Python reference
# counting: there is no waiting for the garbage collector. So "leaks" are almost always references
# you keep without meaning to.
#
# The classic one: summing losses as tensors in an evaluation loop that forgot `no_grad()`. Each
# loss drags its whole graph, with all saved activations, along. The meter can tell how much of
# what it saw is still held:

# %%
with SavedTensorsMeter(exclude=mlp) as leaky:
    total = 0.0
    for _ in range(5):
        xv, yv = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
        total = total + F.cross_entropy(mlp(xv), yv)  # a tensor: keeps this batch's graph alive
print(f"summing loss tensors: {format_bytes(leaky.alive_bytes())} still held by 5 graphs")
del total
print(f"after `del total`:    {format_bytes(leaky.alive_bytes())}")

with SavedTensorsMeter(exclude=mlp) as fixed, torch.no_grad():
    total = 0.0
    for _ in range(5):
        xv, yv = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
        total += F.cross_entropy(mlp(xv), yv).item()
print(f"no_grad() + .item():  {format_bytes(fixed.bytes)} ever saved")

# %% [markdown]
# On a GPU there is one more layer: PyTorch's **caching allocator**. It asks the driver for large
# blocks and hands out pieces of them. A freed tensor's memory goes back to the cache, not to the
# driver, so the next tensor of a similar size is served instantly.
#
# - `torch.cuda.memory_allocated()`: bytes in live tensors.
# - `torch.cuda.memory_reserved()`: bytes the cache holds from the driver (≥ allocated).
#   `nvidia-smi` shows more than this for your process. It also counts the CUDA context, with the
#   kernels of CUDA, cuBLAS and cuDNN loaded into it, which PyTorch's counters never see. On a GPU,
#   the cell below estimates it from the driver's own count, `torch.cuda.mem_get_info()`.
# - `del t` lowers *allocated* only.
# - `torch.cuda.empty_cache()` returns unused cached blocks to the driver, lowering *reserved*. It
#   does not give your own program more memory (the cache would have reused those blocks), and it
#   costs time: calling it in the training loop only slows you down. Use it between phases, or when
#   another process needs the GPU.
# - `torch.cuda.max_memory_allocated()` / `reset_peak_memory_stats()`: the peak, the number that
#   decides whether a step fits.
# - `torch.cuda.memory_summary(abbreviated=True)`: all of these counters in one table (the cell
#   below prints it at the end).

# %%
if skip_unless_gpu("allocated vs reserved memory, del and empty_cache()",
                   expect="allocated rises by 256 MiB and falls back after del, reserved stays up until "
                          "empty_cache(); the driver typically counts a few hundred MB (300 MB to 1 GB) "
                          "more than PyTorch reserves, mostly the CUDA context; then memory_summary's "
                          "table of the allocator's counters"):
    from course_utils.memory import cuda_memory

    gpu = torch.device("cuda")
    torch.cuda.empty_cache()

    def show(when: str) -> dict[str, int]:
        stats = cuda_memory(gpu)
        print(f"{when:32s} allocated {format_bytes(stats['allocated']):>10s}   reserved {format_bytes(stats['reserved']):>10s}")
        return stats

    start = show("start")
    big = torch.empty(64 * 2**20, device=gpu)  # 64 Mi float32 = 256 MiB
    with_big = show("after allocating 256 MiB")
    del big
    after_del = show("after del")
    again = torch.empty(64 * 2**20, device=gpu)
    show("allocate 256 MiB again (cache hit)")
    del again
    torch.cuda.empty_cache()
    after_empty = show("after del + empty_cache()")
    confirm(with_big["allocated"] - start["allocated"] >= 256 * 2**20, "allocated rises by 256 MiB")
    confirm(after_del["allocated"] == start["allocated"], "del brings allocated back down")
    confirm(after_del["reserved"] >= with_big["allocated"] - start["allocated"],
            "after del, reserved still holds the freed block for the cache")
    confirm(after_empty["reserved"] < after_del["reserved"], "empty_cache() lowers reserved")
    free, total = torch.cuda.mem_get_info(gpu)
    print(f"the driver counts {format_bytes(total - free)} in use on this GPU, PyTorch reserves "
          f"{format_bytes(after_empty['reserved'])}: the rest is mostly the CUDA context "
          f"(plus other processes on the same GPU, if any)")
    print(torch.cuda.memory_summary(gpu, abbreviated=True))  # the allocator's counters as one table

# %% [markdown]
# `empty_cache()` in a loop hands the blocks back to the driver at every iteration. The next
# allocation then cannot come from the cache and asks the driver again. On a GPU, the next cell
# times a loop that allocates and fills 256 MiB, without and with `empty_cache()` in it.

# %%
if skip_unless_gpu("the time of an allocate-and-fill loop without and with empty_cache() in it",
                   expect="with empty_cache() each iteration typically takes from tens of microseconds "
                          "to a few milliseconds longer than with allocations served by the cache, "
                          "because every allocation goes back to the driver"):
    gpu = torch.device("cuda")

    def ms_per_iteration(call_empty_cache: bool, repeats: int = 20) -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeats):
            t = torch.empty(64 * 2**20, device=gpu)
            t.zero_()
            del t
            if call_empty_cache:
                torch.cuda.empty_cache()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / repeats * 1e3

    ms_per_iteration(False)  # warm-up: the first allocation fills the cache
    cached, emptied = ms_per_iteration(False), ms_per_iteration(True)
    print(f"allocate + fill 256 MiB: {cached:.3f} ms from the cache, {emptied:.3f} ms with empty_cache() "
          f"in the loop (x{emptied / cached:.1f})")

# %% [markdown]
# ### 8.1 After an out-of-memory error on a GPU
#
# Two tools help once the batch size, mixed precision and the levers above are not enough.
#
# **Fragmentation.** The error message itself states how much memory PyTorch has reserved but not
# allocated. When that amount is large, the free memory is split into pieces too small for the
# tensor you asked for. The message suggests the fix: start the program with the environment
# variable `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`. The allocator then grows its blocks
# in place instead of reserving new fixed-size ones, which leaves fewer unusable gaps. Set it before
# the process first uses CUDA (in the shell, or in `os.environ` before `import torch`).
#
# **What holds the memory.** `torch.cuda.memory_summary()` prints the allocator's counters as a
# table. For the full story, record a memory snapshot: call
# `torch.cuda.memory._record_memory_history()` before the steps you suspect, then
# `torch.cuda.memory._dump_snapshot("snapshot.pickle")` after them. Drag the file onto
# [pytorch.org/memory_viz](https://pytorch.org/memory_viz): it shows every allocation over time,
# with the line of Python that made it. (The leading underscore marks these functions as less
# stable than the rest of the API; the docs page below describes them.)

# %% [markdown]
# ## Key points
#
# - Training memory = parameters + gradients + optimizer state + activations. With Adam in float32
#   the first three are 16 bytes per parameter (Adam alone is 2 copies); activations grow linearly
#   with batch size and often dominate for convolutional networks.
# - Predict it (`elements × bytes per element`), then measure it: optimizer state in
#   `optimizer.state`, activations with `saved_tensors_hooks` (count storages once, skip
#   parameters, pack `t.detach()`), peaks with `torch.cuda.max_memory_allocated` on a GPU.
# - Write `torch.autocast(device_type=..., dtype=...)` and `torch.amp.GradScaler(device_type)`, not
#   the deprecated `torch.cuda.amp` versions. Weights and their gradients stay float32; inspect
#   which ops run in 16 bits, the lists differ between CPU and CUDA.
# - float16 rounds gradients below about 3e-8 to zero. `GradScaler` scales the loss, unscales the
#   gradients and checks them for inf/NaN (one fused op), skips steps with inf/NaN and adapts the
#   scale. bfloat16 has float32's range and does not need it.
# - Prefer bfloat16 on GPUs that run it fast: Ampere and newer, tested with
#   `torch.cuda.get_device_capability() >= (8, 0)` or
#   `torch.cuda.is_bf16_supported(including_emulation=False)`, not the plain call (it is also
#   `True` where bfloat16 is only emulated, as on a T4 or V100).
# - To clip: `scale(loss).backward()` → `unscale_` → `clip_grad_norm_` → `step` → `update`.
# - Get the run right in float32 first and keep its loss curve; then switch mixed precision on and
#   compare the numbers. A gap of a few percent is rounding; a curve that falls behind is a
#   precision bug.
# - Speed-ups need 16-bit hardware; memory savings show everywhere. Measure on your machine.
# - More levers: activation checkpointing (`use_reentrant=False`, ~one extra forward), gradient
#   accumulation (activations of a micro-batch), a smaller batch or a lower input resolution
#   (activations grow with the pixel count), `save_on_cpu` (activations in CPU memory, paid for in
#   PCIe traffic).
# - `del` what you no longer need, log `.item()` values, and keep `empty_cache()` out of the loop.
#   After an out-of-memory error: `expandable_segments:True` against fragmentation, a memory
#   snapshot to see what holds the memory.
#
# ## Further reading
#
# - PyTorch docs: [Automatic Mixed Precision package - torch.amp](https://docs.pytorch.org/docs/stable/amp.html)
#   (autocast op lists per device, `GradScaler`) and the
#   [CUDA Automatic Mixed Precision examples](https://docs.pytorch.org/docs/stable/notes/amp_examples.html).
# - PyTorch docs: [Autograd mechanics](https://docs.pytorch.org/docs/stable/notes/autograd.html),
#   sections [Saved tensors](https://docs.pytorch.org/docs/stable/notes/autograd.html#saved-tensors)
#   and [Hooks for saved tensors](https://docs.pytorch.org/docs/stable/notes/autograd.html#hooks-for-saved-tensors).
# - PyTorch docs: [torch.utils.checkpoint](https://docs.pytorch.org/docs/stable/checkpoint.html).
# - PyTorch docs: [CUDA semantics](https://docs.pytorch.org/docs/stable/notes/cuda.html), section
#   [Memory management](https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management)
#   (caching allocator, `empty_cache`, `max_memory_allocated`, `PYTORCH_CUDA_ALLOC_CONF`), and
#   [Understanding CUDA Memory Usage](https://docs.pytorch.org/docs/stable/torch_cuda_memory.html)
#   (memory snapshots).
# - PyTorch docs: [torch.cuda.is_bf16_supported](https://docs.pytorch.org/docs/stable/generated/torch.cuda.is_bf16_supported.html).
# - Micikevicius et al., [*Mixed Precision Training*](https://arxiv.org/abs/1710.03740) (ICLR 2018):
#   the loss-scaling idea.
# - Next: [09 · Checkpointing](09_checkpointing.ipynb).
