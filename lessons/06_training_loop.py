# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · The training loop: six lines, and everything around them
#
# Every PyTorch training run repeats the same six steps: move a batch, clear the old gradients, run
# the model, compute the loss, backpropagate, update. This holds from this notebook's small CNN to a
# large language model.
#
# This notebook trains an image classifier end to end on the offline `ShapesDataset` of notebook 05.
# Around the six lines it adds the habits that make training trustworthy:
#
# - check shapes with a dummy forward pass;
# - feed the loss what it expects;
# - overfit one batch before anything else;
# - validate in eval mode, without gradients;
# - schedule the learning rate;
# - clip and log gradient norms;
# - write a log you can plot.
#
# It ends with `course_utils.training.fit()`, the packaged version of this loop that later notebooks
# use.

# %% [markdown]
# ## You will learn (≈ 60 min)
#
# 1. The six steps of a training step, their order, and what `zero_grad()` does today.
# 2. How to build a CNN for 3×32×32 images and compute its flatten size with a dummy forward
#    pass, and how much better it does than an MLP of similar size (measured).
# 3. Why `CrossEntropyLoss` takes logits, and class indices or class probabilities as targets
#    (softmax-before-loss reproduced);
#    validation with `eval()` and `inference_mode`; overfitting one batch as a first test.
# 4. Learning-rate schedulers (cosine, step, plateau, one-cycle), where to call `step()`, gradient
#    clipping with the total norm logged, CSV logs plotted, a progress bar.
# 5. A checklist for "the loss will not go down", and `fit()` for the notebooks that follow.

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

setup()

import csv
import math
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import psutil
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchvision.transforms import v2
from tqdm.auto import tqdm

from course_utils.claims import confirm
from course_utils.data import ShapesDataset, regression_data
from course_utils.devices import pick_device
from course_utils.exercises import check
from course_utils.training import fit, lr_curve
from course_utils.viz.curves import plot_history, plot_lr_schedules
from course_utils.widgets.lr_schedule import lr_schedule_explorer

device = pick_device()
log_dir = Path(tempfile.mkdtemp(prefix="course06-"))  # CSV logs go here (a temporary folder)

# %% [markdown]
# ## 1. The data, prepared as in notebook 05
#
# The training split is for learning, the validation split for measuring. The normalisation
# statistics come from the training split only.
#
# The pipeline has no random augmentation. So we run it once on each whole split and keep the
# tensors: per-sample transforms would redo the same work every epoch.

# %%
train_set, val_set = ShapesDataset("train"), ShapesDataset("val")


def as_batch(dataset: ShapesDataset) -> torch.Tensor:
    return torch.from_numpy(dataset.data).permute(0, 3, 1, 2)  # uint8 [N, 3, 32, 32]


train_float = v2.ToDtype(torch.float32, scale=True)(as_batch(train_set))
mean, std = train_float.mean(dim=(0, 2, 3)).tolist(), train_float.std(dim=(0, 2, 3)).tolist()
pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])


def tensors(dataset: ShapesDataset) -> TensorDataset:
    return TensorDataset(pipeline(as_batch(dataset)).as_subclass(torch.Tensor), torch.tensor(dataset.targets))


train_data, val_data = tensors(train_set), tensors(val_set)
train_loader = DataLoader(train_data, batch_size=64, shuffle=True)
val_loader = DataLoader(val_data, batch_size=500)
print(f"train {len(train_data)} images in {len(train_loader)} batches, val {len(val_data)} images")
print("classes:", train_set.classes)


# %% [markdown]
# ## 2. A CNN for 3×32×32, with the flatten size checked
#
# The network has three blocks. Each block is a convolution (3×3, padding 1: the size is kept), a
# ReLU and a 2×2 max-pooling (the size is halved). A linear layer on the flattened feature maps
# follows.
#
# The one number you must get right is the linear layer's input size. By hand: 32 → 16 → 8 → 4
# pixels per side after three poolings, times 32 channels = 32·4·4 = 512.
#
# Do not trust the hand computation. Run a dummy input through the convolutional part and read the
# size off.

# %%
def make_features() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 8 x 16 x 16
        nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 8 x 8
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 4 x 4
    )


with torch.no_grad():
    feature_shape = make_features()(torch.zeros(1, 3, 32, 32)).shape
flat_size = feature_shape[1:].numel()
print("feature maps:", tuple(feature_shape), "-> flatten size", flat_size)
confirm(flat_size == 32 * 4 * 4, "the dummy forward pass gives the hand-computed flatten size 32·4·4 = 512")

# %% [markdown]
# A linear layer sized for a different network fails on the first forward pass. A common copy-paste
# has two poolings instead of three, so 32·8·8 = 2048. The message names both sizes:

# %% tags=["raises-exception"]
wrong = nn.Sequential(make_features(), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
wrong(torch.zeros(1, 3, 32, 32))


# %% [markdown]
# `nn.Flatten()` (or `torch.flatten(x, 1)` inside `forward`) keeps the batch dimension and flattens
# the rest. It also works on non-contiguous tensors, where the older `x.view(x.size(0), -1)` raises.
#
# For comparison, here is an MLP that flattens the pixels directly and has about as many parameters.
# With 3,072 inputs, a similar budget affords only 4 hidden units.

# %%
def make_cnn() -> nn.Module:
    return nn.Sequential(make_features(), nn.Flatten(), nn.Linear(flat_size, 10))


def make_mlp(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


print(f"CNN: {n_params(make_cnn()):,} parameters | MLP(4 hidden): {n_params(make_mlp(4)):,} parameters")
print("CNN output for a dummy batch:", tuple(make_cnn()(torch.zeros(2, 3, 32, 32)).shape))

# %% [markdown]
# ## 3. The loss: logits in, integer labels in
#
# `nn.CrossEntropyLoss` takes two things:
#
# - the raw scores (*logits*, any real numbers), of shape `[B, classes]`;
# - the class indices, as int64, of shape `[B]`.
#
# It applies `log_softmax` itself, in one numerically stable step. The loss of sample `i` is
# `-log_softmax(logits)[i, y_i]`, and the loss of the batch is their mean (the default
# `reduction="mean"`).

# %%
logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
labels = torch.tensor([0, 2])
print("CrossEntropyLoss:        ", nn.CrossEntropyLoss()(logits, labels))
print("-log_softmax at the label:", -F.log_softmax(logits, dim=1)[torch.arange(2), labels].mean())

# %% [markdown]
# Class-index labels of shape `[B]` must be int64 (`torch.long`; uint8 is accepted too). Labels
# that arrive as int32 (from NumPy, say) are refused with a clear message. Convert them with
# `.long()`:

# %% tags=["raises-exception"]
nn.CrossEntropyLoss()(logits, labels.to(torch.int32))

# %% [markdown]
# The loss also takes a second kind of target: **class probabilities**. They are float, shaped like
# the logits `[B, classes]`, and each row sums to 1.
#
# These are soft labels. `v2.MixUp` and `v2.CutMix` produce them when they blend two images and
# their labels; a teacher model's predictions in distillation are another example. The loss is then
# `-(target * log_softmax(logits)).sum(dim=1)`, averaged.
#
# `label_smoothing=0.1` builds such a target from class indices itself: 0.9 + 0.1/C on the label and
# 0.1/C on every other class.

# %%
soft = torch.tensor([[0.7, 0.3, 0.0], [0.0, 0.5, 0.5]])  # float [B, classes]: probabilities
print("soft targets:      ", F.cross_entropy(logits, soft),
      "=", -(soft * F.log_softmax(logits, dim=1)).sum(dim=1).mean())
smoothed = F.one_hot(labels, num_classes=3) * 0.9 + 0.1 / 3
print("label_smoothing=0.1:", F.cross_entropy(logits, labels, label_smoothing=0.1),
      "= the smoothed targets as probabilities:", F.cross_entropy(logits, smoothed))

# %% [markdown]
# ### Pitfall: softmax before `CrossEntropyLoss`
#
# Code ported from frameworks whose loss expects probabilities often ends the model with a softmax.
# With `CrossEntropyLoss` that means softmax twice, and nothing crashes. There are two measurable
# consequences.
#
# First, the loss has a floor. The best a probability vector can do for 10 classes is a one-hot
# `[1, 0, ..., 0]`, and the loss softmaxes it *again*:

# %%
best_possible = F.cross_entropy(torch.eye(10), torch.arange(10))
print(f"lowest reachable loss with softmax before the loss: {best_possible:.4f} (instead of 0)")

# %% [markdown]
# Second, the gradients shrink, so learning slows down.
#
# The honest test of a training setup is to **overfit one small batch**. A correct model, loss and
# optimizer drive the loss of a single fixed batch to almost zero within a few dozen steps.
#
# Below: the same model initialisation and the same batch, with and without the extra softmax. (The
# loop inside `overfit_one_batch` is the six steps of §4.)

# %% tags=["nbval-ignore-output"]
one_batch = next(iter(DataLoader(train_data, batch_size=32)))


def overfit_one_batch(softmax_first: bool, lr: float = 1e-2, steps: int = 40) -> list[float]:
    torch.manual_seed(2)
    model = make_cnn().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    x, y = one_batch[0].to(device), one_batch[1].to(device)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        out = model(x)
        if softmax_first:
            out = torch.softmax(out, dim=1)  # the bug
        loss = F.cross_entropy(out, y)
        loss.backward()
        if step == 0:
            first_norm = nn.utils.get_total_norm([p.grad for p in model.parameters()])
        optimizer.step()
        losses.append(loss.item())
    print(f"softmax first={softmax_first!s:5}  gradient norm at step 0: {first_norm:.4f}  "
          f"loss: step 0 {losses[0]:.4f}, step 10 {losses[10]:.4f}, step {steps - 1} {losses[-1]:.4f}")
    return losses


correct_losses = overfit_one_batch(softmax_first=False)
softmax_losses = overfit_one_batch(softmax_first=True)
confirm(correct_losses[-1] < 0.05 and softmax_losses[-1] > best_possible.item(),
        "the correct setup drives the batch loss near zero, while softmax first stays above its floor")

# %% [markdown]
# The correct setup memorises the batch (loss near zero). With softmax first, the first gradient is
# many times smaller, and the loss can never get below the floor above.
#
# **Fix:** the model returns logits. Apply `softmax` only when you need probabilities for a human,
# after the loss.
#
# ## 4. The six steps, in order
#
# ```python
# x, y = x.to(device), y.to(device)   # 1. move the batch where the model is
# optimizer.zero_grad()               # 2. clear the gradients of the previous step
# logits = model(x)                   # 3. forward
# loss = loss_fn(logits, y)           # 4. loss
# loss.backward()                     # 5. backward: fill p.grad for every parameter
# optimizer.step()                    # 6. update the parameters from p.grad
# ```
#
# Gradients *accumulate* in `p.grad` (notebook 03). So step 2 must come before step 5 of every
# iteration, and step 6 after step 5.
#
# Since PyTorch 2.0, `zero_grad()` sets gradients to `None` by default (`set_to_none=True`) instead
# of filling them with zeros. It saves memory and a write. Code that reads `p.grad` between steps
# must be ready for `None`.
#
# The optimizer's `zero_grad()` clears the `.grad` of the parameters it was given; the model's
# clears those of its own parameters. They are the same tensors when the optimizer holds all of
# them. The cell uses the model's:

# %%
probe = nn.Linear(2, 1)
probe(torch.ones(1, 2)).sum().backward()
print("after backward:                 ", probe.weight.grad)
probe.zero_grad()
print("after zero_grad():              ", probe.weight.grad)
probe(torch.ones(1, 2)).sum().backward()
probe.zero_grad(set_to_none=False)
print("after zero_grad(set_to_none=False):", probe.weight.grad)

# %% [markdown]
# The same `overfit_one_batch` test also catches a bad learning rate, before you spend an hour on a
# full run:
#
# - far too small, and the loss barely moves;
# - far too large, and it explodes (see the highest loss) and ends far above what a good learning
#   rate reaches.
#
# For reference, ln(10) ≈ 2.30 is the loss of guessing among 10 classes. Each run prints
# `overfit_one_batch`'s own line first (the correct setup, `softmax first=False`), then its
# highest loss.

# %% tags=["nbval-ignore-output"]
for lr in (1e-5, 1e-2, 1.0):
    losses = overfit_one_batch(softmax_first=False, lr=lr, steps=25)
    print(f"   lr={lr:g}: highest loss {max(losses):.4g}")
confirm(max(losses) > 10 * losses[0], "at lr=1.0 the loss explodes to more than 10 times its start")


# %% [markdown]
# ### Exercise 1 — `train_one_epoch`
#
# Write `train_one_epoch(model, loader, loss_fn, optimizer, device)`: put the model in training
# mode, run the six steps for every batch (moving it to `device` first), and return the **mean
# loss over the epoch** as a Python float (weight each batch's loss by its size: the last batch
# can be shorter). The checker hands you a model that is in eval mode (as after validation), may
# still hold gradients from an earlier step, and checks how you use it (mode, gradients, the running
# sum). The solution keeps the
# running sum a tensor and converts it once at the end (why: §8); a `.item()` per batch passes
# too, and costs little on a CPU (notebook 01 measured it). Add `loss.detach()` (or `loss.item()`),
# never `loss` itself: `total += loss * len(y)` chains every batch's autograd graph onto `total`
# and keeps them all in memory until the end of the epoch (the checker sees it).

# %%
def train_one_epoch(model: nn.Module, loader, loss_fn, optimizer, device) -> float:
    ### BEGIN SOLUTION
    model.train()
    total, count = torch.zeros((), device=device), 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach() * len(y)  # stays a tensor: no wait for the GPU at every batch
        count += len(y)
    return total.item() / count          # one conversion per epoch
    ### END SOLUTION


# %%
check("06.train_one_epoch", train_one_epoch)

# %% [markdown]
# ## 5. Validation: `eval()` and `inference_mode`
#
# Two switches, for two different things.
#
# `model.eval()` changes how some *layers* compute. Dropout stops dropping; BatchNorm normalises with
# its running statistics instead of the batch's (notebook 04 measured it).
#
# `torch.inference_mode()` and `torch.no_grad()` switch off *autograd*: no graph is recorded, which
# saves time and memory.
#
# `inference_mode` goes one step further. It marks its results as inference tensors, which autograd
# refuses to save for backward later (so a layer you train cannot take them as input). That is right
# for validation and serving, where results are only read. Use `no_grad` when a result may later
# enter a computation that is differentiated (notebook 03 reproduced the error `inference_mode`
# gives there).
#
# Neither switch implies `eval()`, nor the other way round:

# %%
torch.manual_seed(0)
with_dropout = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 3))
x = torch.randn(1, 8)
with torch.inference_mode():
    print("train mode, twice:", with_dropout(x), with_dropout(x))
    with_dropout.eval()
    print("eval mode, twice: ", with_dropout(x), with_dropout(x))
print("eval mode alone still records a graph:", with_dropout(x).requires_grad)
with torch.inference_mode():
    print("inside inference_mode:", with_dropout(x).requires_grad)


# %% [markdown]
# Remember to switch back with `model.train()` at the start of the next epoch.
#
# The predicted class is the index of the largest logit. Much code writes it
# `_, predicted = torch.max(outputs, 1)`. With a dimension, `torch.max` returns two tensors: the
# largest *values* and their *indices*. The indices are the classes, the same as `argmax`:

# %%
outputs = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.5, 0.2], [0.0, 0.1, 0.4]])
values, indices = torch.max(outputs, 1)
print("torch.max(outputs, 1):", torch.max(outputs, 1))
print("outputs.argmax(dim=1):", outputs.argmax(dim=1))
confirm(torch.equal(indices, outputs.argmax(dim=1)), "the indices torch.max returns are the argmax over dim 1")

# %% [markdown]
# ### Exercise 2 — `evaluate`
#
# Write `evaluate(model, loader, device)` returning the accuracy (a Python float in [0, 1]) over
# all samples: move each batch to `device`, eval mode, no gradient tracking (and autograd back on
# for whatever runs next), predicted class = the argmax over the class dimension. The last batch
# may be shorter, even a single sample.

# %%
def evaluate(model: nn.Module, loader, device) -> float:
    ### BEGIN SOLUTION
    model.eval()
    correct, count = torch.zeros((), device=device, dtype=torch.long), 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum()  # a tensor: no sync per batch
            count += len(y)
    return correct.item() / count
    ### END SOLUTION


# %%
check("06.evaluate", evaluate)

# %% [markdown]
# ## 6. Learning-rate schedules
#
# A constant learning rate is rarely best. Large steps help early; small steps let the model settle
# at the end.
#
# A scheduler changes `optimizer.param_groups[i]["lr"]` each time you call its `step()`. Tracing one
# by hand:

# %%
param = torch.zeros(1, requires_grad=True)
optimizer = torch.optim.SGD([param], lr=0.1)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=8)
previous = None
for epoch in range(9):
    lr = optimizer.param_groups[0]["lr"]
    drop = "" if previous is None else f"   drop since the epoch before: {previous - lr:.4f}"
    print(f"epoch {epoch}: lr {lr:.4f}{drop}")
    previous = lr
    optimizer.step()  # (the training of the epoch would be here)
    cosine.step()     # once per epoch, after the optimizer steps

# %% [markdown]
# Read the drops: a cosine schedule decays *slowest* at the start, *fastest* in the middle, and
# slowly again at the end. (It is sometimes described as dropping fast early. That describes an
# exponential or step decay, not the cosine.)
#
# The four schedulers of this notebook, traced over 10 epochs of 20 batches, each stepped where it
# belongs:
#
# - `CosineAnnealingLR(optimizer, T_max=epochs)`: a smooth half cosine down to ~0. Per epoch.
# - `StepLR(optimizer, step_size, gamma)`: multiply by `gamma` every `step_size` epochs. Per epoch.
# - `ReduceLROnPlateau(optimizer, factor, patience)`: multiply by `factor` when the metric you
#   pass, `scheduler.step(val_loss)`, stops improving for `patience` epochs. Per epoch. (Fed here
#   with a made-up validation loss that stalls after epoch 3.)
# - `OneCycleLR(optimizer, max_lr, epochs, steps_per_epoch)`: warm up to `max_lr`, then anneal far
#   below the start. **Per batch.**
#
# The explorer below lets you change the scheduler, its parameters, and where `step()` is called.
# The static picture after it shows the four side by side.

# %% tags=["nbval-ignore-output"]
explorer = lr_schedule_explorer(epochs=10, steps_per_epoch=20)
confirm(len(lr_curve("onecycle", epochs=10, steps_per_epoch=20)) == 200,
        "a one-cycle schedule stepped per batch has one learning rate per batch: 10 epochs x 20 = 200")
explorer

# %%
lr_schedule_explorer(static=True, epochs=10, steps_per_epoch=20)
plt.show()

# %% [markdown]
# ### Pitfall: `step()` in the wrong place
#
# Nothing raises; the learning rate is just wrong:
#
# - an epoch-based scheduler stepped every batch runs through its whole schedule in the first epoch
#   (a cosine then climbs back up: it is periodic);
# - one-cycle stepped once per epoch never gets past its warm-up.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
for ax, name in zip(axes, ("cosine", "onecycle")):
    plot_lr_schedules({
        f"{name}: step() at the right place": lr_curve(name, epochs=10, steps_per_epoch=20),
        f"{name}: step() every {'batch' if name == 'cosine' else 'epoch'} (wrong)":
            lr_curve(name, epochs=10, steps_per_epoch=20, step_every="batch" if name == "cosine" else "epoch"),
    }, steps_per_epoch=20, ax=ax)
plt.show()

# %% [markdown]
# The third placement bug does give a sign: calling `scheduler.step()` *before* `optimizer.step()`
# (the order of PyTorch before 1.1). PyTorch warns once, and the schedule loses its first value:

# %%
param = torch.zeros(1, requires_grad=True)
optimizer = torch.optim.SGD([param], lr=0.1)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=8)
used = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for epoch in range(3):
        cosine.step()  # wrong: before the optimizer's step
        used.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
print("warning:", str(caught[0].message).split(" See more")[0])
print("learning rates the three optimizer steps used:", [round(lr, 4) for lr in used])
confirm(len(caught) == 1 and used[0] < 0.1,
        "scheduler.step() before optimizer.step() warns once, and the first step already uses the second value")

# %% [markdown]
# The schedule starts at 0.1 (the trace above), but the first step already ran with its second
# value. One skipped value hardly matters for a long cosine; for a warm-up it means starting one step
# further on. The warning names the fix: `optimizer.step()` first.
#
# ### Does a schedule beat a constant learning rate? Measured on a small problem
#
# The comparison: a constant learning rate against a cosine decay from the same value (stepped per
# batch), at two learning rates. Everything else is the same: model, data, seed, number of steps,
# plain SGD with batches of 8.
#
# The data is a small regression set whose noise has variance 0.01. No model can get its mean
# squared error much below that.

# %% tags=["nbval-ignore-output"]
regression = regression_data(n=128, n_features=3, noise=0.1)
rx, ry = regression.tensors


def small_mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 1))


def sgd_run(lr: float, schedule: bool, epochs: int = 10, batch_size: int = 8) -> float:
    model = small_mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    steps = epochs * len(rx) // batch_size
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps) if schedule else None
    order = torch.Generator().manual_seed(0)  # the same batches for every run
    for _ in range(epochs):
        for i in torch.randperm(len(rx), generator=order).split(batch_size):
            optimizer.zero_grad()
            F.mse_loss(model(rx[i]), ry[i]).backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
    with torch.no_grad():
        return F.mse_loss(model(rx), ry).item()


final = {(lr, schedule): sgd_run(lr, schedule) for lr in (0.01, 0.1) for schedule in (False, True)}
for lr in (0.01, 0.1):
    print(f"lr {lr:<4}: final loss, constant {final[lr, False]:.4f} | cosine {final[lr, True]:.4f}   (floor ≈ 0.01)")
confirm(final[0.1, True] < final[0.1, False] and final[0.01, True] > final[0.01, False],
        "cosine beats a constant rate at lr 0.1 and ends worse than it at lr 0.01")

# %% [markdown]
# This small problem shows two things, and no more.
#
# At the larger rate, a constant step keeps the weights bouncing around the minimum: every batch of 8
# pushes them a full step in its own direction. Decaying the rate lets the run settle closer to the
# floor.
#
# At the smaller rate, the cosine run ends *worse*. When the rate is already small, decaying it
# mostly shortens the useful part of the budget.
#
# So a schedule is a way to take large steps early and still end with small ones. It pays off when
# the starting rate is large, and it is no substitute for choosing that rate (section 4's
# screening).
#
# The CNN of §8 uses one-cycle, which adds a warm-up. This notebook does not compare it with a
# constant rate: that would be another full training run.

# %% [markdown]
# ## 7. Gradient clipping, with the norm logged
#
# A single bad batch can produce a huge gradient and throw the parameters far away: the loss jumps or
# becomes NaN.
#
# `nn.utils.clip_grad_norm_(model.parameters(), max_norm)` computes the total norm of all gradients
# together. If it exceeds `max_norm`, it scales them all down by the same factor.
#
# It goes **after `backward()` and before `step()`**. It *returns the total norm before clipping*:
# log it, because its history is the best early warning of instability.

# %%
torch.manual_seed(0)
model = make_cnn().to(device)
x, y = one_batch[0].to(device), one_batch[1].to(device)
F.cross_entropy(model(x), y).backward()
before = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)
after = nn.utils.get_total_norm([p.grad for p in model.parameters()])
print(f"total norm returned: {before:.4f}, after clipping: {after:.4f}")

# %% [markdown]
# ### Clipping rescues a run (and too small a `max_norm` slows it down)
#
# The regression set of §6 again, with two of its 128 rows recorded in the wrong unit (30 times too
# large). One bad file produces this kind of spike.
#
# A small MLP is trained with SGD and momentum, with the same seed and batches each time: without
# clipping, and with `max_norm` 1 and 0.1. Each step's loss and gradient norm stay tensors and are
# converted once at the end. The score is the final loss on the 126 correct rows.

# %% tags=["nbval-ignore-output"]
spiky_x = rx.clone()
spiky_x[::64] *= 30  # rows 0 and 64 in the wrong unit
correct_rows = torch.ones(len(rx), dtype=torch.bool)
correct_rows[::64] = False


def spiky_run(max_norm: float | None, lr: float = 0.01, epochs: int = 20) -> tuple[list[float], list[float], float]:
    model = small_mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses, norms = [], []
    for _ in range(epochs):
        for i in torch.arange(len(rx)).split(32):
            optimizer.zero_grad()
            loss = F.mse_loss(model(spiky_x[i]), ry[i])
            loss.backward()
            if max_norm is None:
                norms.append(nn.utils.get_total_norm([p.grad for p in model.parameters()]))
            else:
                norms.append(nn.utils.clip_grad_norm_(model.parameters(), max_norm))
            optimizer.step()
            losses.append(loss.detach())
    with torch.no_grad():
        final = F.mse_loss(model(rx[correct_rows]), ry[correct_rows]).item()
    return torch.stack(losses).tolist(), torch.stack(norms).tolist(), final


runs = {max_norm: spiky_run(max_norm) for max_norm in (None, 1.0, 0.1)}
for max_norm, (losses, norms, final_loss) in runs.items():
    first_bad = next((i for i, loss in enumerate(losses) if not math.isfinite(loss)), None)
    clipped = "-" if max_norm is None else f"{sum(norm > max_norm for norm in norms) / len(norms):.0%}"
    print(f"max_norm={max_norm!s:4}: loss at step 0 {losses[0]:.4g}, final loss on the correct rows "
          f"{final_loss:.4g}, first non-finite loss at step {first_bad}, steps clipped {clipped}")
losses, norms, _ = runs[None]
first_bad = next(i for i, loss in enumerate(losses) if not math.isfinite(loss))
print(f"no clipping, gradient norm at steps 0-{first_bad}:", [f"{norm:.2g}" for norm in norms[:first_bad + 1]])
confirm(not math.isfinite(runs[None][2]) and runs[1.0][2] < 1.0 < runs[0.1][2],
        "without clipping the run diverges; max_norm=1 trains, and max_norm=0.1 learns more slowly")
confirm(sum(norm > 1.0 for norm in runs[1.0][1]) > len(runs[1.0][1]) / 2,
        "max_norm=1 shortens most steps of this run, not only the spikes")

# %% [markdown]
# Without clipping, the run is lost after a handful of steps (the first non-finite step is printed).
# The loss overflows to `inf`, then becomes `nan`, and nothing afterwards can bring it back.
#
# The gradient norms printed last are the early warning. They grow by orders of magnitude *before*
# the loss stops being a number. That is why the loop in §8 logs them at every step.
#
# With `max_norm=1`, no gradient that reaches the optimizer is longer than 1. A spike can no longer
# throw the weights away, and the run trains.
#
# The share of clipped steps printed above shows that here this is not a cut of the spikes alone.
# The gradients of this run are mostly longer than 1 (about 30 at step 0). So `max_norm=1` shortens
# almost every step, and the steps it leaves are still long enough to learn.
#
# With `max_norm=0.1`, every step is ten times shorter again. The run is stable but learns slowly
# (compare its final loss with the `max_norm=1` run's).
#
# In your own runs, read the typical gradient norm of a healthy run from the log. Set `max_norm`
# somewhat above it, so that mainly the spikes are cut. Far below it, clipping acts like a smaller
# learning rate.


# %% [markdown]
# ### Exercise 3 — `clipped_step`
#
# Write `clipped_step(model, loss_fn, x, y, optimizer, max_norm)`: one training step with gradient
# clipping (the model may still hold gradients from the previous step, or `.grad` may be `None`),
# returning the total gradient norm *before* clipping as a Python float.

# %%
def clipped_step(model: nn.Module, loss_fn, x, y, optimizer, max_norm: float) -> float:
    ### BEGIN SOLUTION
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    total_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm.item()
    ### END SOLUTION


# %%
check("06.clipped_step", clipped_step)

# %% [markdown]
# ## 8. The whole loop: train, validate, schedule, clip, log
#
# Everything together, written out: 4 epochs of the CNN, with
#
# - Adam and a one-cycle schedule (stepped per batch);
# - clipping at norm 5: above the typical norm here, so only spikes are cut (the plot below shows
#   which);
# - a `tqdm.auto` progress bar (a widget in Jupyter, a text bar in a terminal);
# - one CSV row per epoch, flushed as it is written, so a crashed run still leaves its log;
# - the learning rate and gradient norm of every step.
#
# Values stay tensors inside the loop and become Python numbers once per epoch. On a GPU each
# `.item()` would make the CPU wait (notebook 01).
#
# ### Detach what you accumulate
#
# A running sum of the loss must add `loss.detach()`, never `loss` itself. `loss` carries its
# autograd graph. `total += loss * len(y)` makes `total` part of that graph, and the next step's sum
# chains the next graph onto it. After an epoch, `total` holds every batch's graph in memory.
#
# In a training loop that keeps the graph's nodes. In an evaluation loop without `no_grad` or
# `inference_mode` it is worse: the graphs also keep every batch's activations.
#
# Below, five training steps on one batch, with the loss summed both ways. For each sum the output
# names its `grad_fn` and counts the autograd nodes it keeps alive:

# %%
def graph_nodes(grad_fn) -> int:
    """How many autograd nodes are reachable from grad_fn (0 for a tensor without a graph)."""
    seen, todo = set(), [grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in seen:
            seen.add(node)
            todo += [parent for parent, _ in node.next_functions]
    return len(seen)


torch.manual_seed(0)
model = make_cnn()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = one_batch
total, total_detached = torch.zeros(()), torch.zeros(())
for _ in range(5):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss * len(y)                    # wrong: chains this step's graph onto total
    total_detached += loss.detach() * len(y)  # right: a number, no graph
for name, acc in (("total += loss * len(y)", total), ("total += loss.detach() * len(y)", total_detached)):
    print(f"{name:32} grad_fn {type(acc.grad_fn).__name__ if acc.grad_fn else None}, "
          f"keeps {graph_nodes(acc.grad_fn)} autograd nodes alive")
print("same value:", torch.equal(total.detach(), total_detached))
confirm(total.grad_fn is not None and graph_nodes(total.grad_fn) > 5 * 5 and total_detached.grad_fn is None,
        "a running sum of loss (not loss.detach()) carries a graph that grows with every step it adds")

# %% [markdown]
# The value is the same; only the detached sum is free of the graphs. `loss.item()` would free them
# too, at the price of a wait for the GPU at every step.
#
# The log also records memory, where a leak or a batch that is too large shows first. On a GPU it is
# the peak memory held by tensors; on a CPU, the process's resident memory (the RAM it occupies
# at that moment).

# %%
def memory_mb() -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return psutil.Process().memory_info().rss / 2**20


# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
cnn = make_cnn().to(device)
epochs, max_norm = 4, 5.0
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(cnn.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=epochs,
                                                steps_per_epoch=len(train_loader))
step_lrs, step_norms = [], []
start = time.perf_counter()
with open(log_dir / "cnn.csv", "w", newline="") as log_file:
    log = csv.DictWriter(log_file, ["epoch", "train_loss", "val_loss", "val_acc", "lr", "grad_norm_max",
                                    "memory_mb"])
    log.writeheader()
    bar = tqdm(total=epochs * len(train_loader), desc="CNN")
    for epoch in range(1, epochs + 1):
        cnn.train()
        loss_sum, norms = torch.zeros((), device=device), []
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(cnn(x), y)
            loss.backward()
            norms.append(nn.utils.clip_grad_norm_(cnn.parameters(), max_norm))
            step_lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()  # one-cycle: every batch
            loss_sum += loss.detach() * len(y)
            bar.update()
        cnn.eval()
        val_loss, correct = torch.zeros((), device=device), torch.zeros((), device=device)
        with torch.inference_mode():
            for x, y in val_loader:
                x, y = x.to(device), y.to(device)
                logits = cnn(x)
                val_loss += loss_fn(logits, y) * len(y)
                correct += (logits.argmax(dim=1) == y).sum()
        step_norms += torch.stack(norms).tolist()  # one conversion per epoch
        row = {"epoch": epoch, "train_loss": round(loss_sum.item() / len(train_data), 4),
               "val_loss": round(val_loss.item() / len(val_data), 4),
               "val_acc": round(correct.item() / len(val_data), 4),
               "lr": f"{step_lrs[-1]:.3g}", "grad_norm_max": round(max(step_norms[-len(norms):]), 4),
               "memory_mb": round(memory_mb())}
        log.writerow(row)
        log_file.flush()
        bar.set_postfix(train_loss=row["train_loss"], val_acc=row["val_acc"])
        print(row)
    bar.close()
cnn_seconds = time.perf_counter() - start
cnn_acc = row["val_acc"]
print(f"CNN: validation accuracy {cnn_acc:.1%} after {epochs} epochs, {cnn_seconds:.1f} s")
clipped = sum(norm > max_norm for norm in step_norms)
print(f"gradient norm above {max_norm} (clipped) in {clipped} of {len(step_norms)} steps")
confirm(cnn_acc > 0.85, "the CNN reaches more than 85 % validation accuracy in 4 epochs")

# %% [markdown]
# Read the log back from the CSV file and plot it, together with the per-step learning rate and
# gradient norm.
#
# Curves tell what a final number hides. Validation may still improve (train longer), drift away from
# training (overfitting), or jump (learning rate, clipping).

# %%
with open(log_dir / "cnn.csv", newline="") as log_file:
    rows = list(csv.DictReader(log_file))
print("columns:", list(rows[0]))
plot_history(rows, title="CNN on ShapesDataset (read back from the CSV log)")
plt.show()
fig, (ax_lr, ax_norm) = plt.subplots(1, 2, figsize=(10, 2.8))
plot_lr_schedules({"OneCycleLR (as used)": step_lrs}, steps_per_epoch=len(train_loader), ax=ax_lr)
ax_norm.plot(step_norms, lw=0.8, label="total gradient norm")
ax_norm.axhline(max_norm, color="C3", ls="--", lw=1, label=f"max_norm={max_norm}")
ax_norm.set(xlabel="batch", ylabel="norm before clipping")
ax_norm.legend()
plt.show()

# %% [markdown]
# **TensorBoard** does the same logging, with an interactive viewer. `SummaryWriter.add_scalar(tag,
# value, step)` appends one point to an event file in a folder.
#
# The viewer plots every tag and refreshes while training runs. Start it with
# `tensorboard --logdir <folder>` in a terminal, or in a notebook with `%load_ext tensorboard` then
# `%tensorboard --logdir <folder>`.
#
# Here the CNN's rows and per-step values go into an event file. The file is then read back, to
# prove it holds the same numbers as the CSV log.
#
# Which to use? A CSV file needs no package, survives a crash and opens anywhere. TensorBoard is the
# better viewer when you compare many runs.

# %%
from torch.utils.tensorboard import SummaryWriter

from course_utils.training import read_tensorboard_log

with SummaryWriter(log_dir=str(log_dir / "tensorboard" / "cnn")) as board:
    for step, (lr, norm) in enumerate(zip(step_lrs, step_norms), start=1):
        board.add_scalar("step/lr", lr, step)
        board.add_scalar("step/grad_norm", norm, step)
    for row in rows:
        for key in ("train_loss", "val_loss", "val_acc"):
            board.add_scalar(f"epoch/{key}", float(row[key]), int(row["epoch"]))
scalars = read_tensorboard_log(log_dir / "tensorboard" / "cnn")
for tag, points in scalars.items():
    print(f"{tag:16s} {len(points):4d} points, last {points[-1][1]:.4g} at step {points[-1][0]}")
# event files store float32: round back to the CSV's 4 decimals before comparing
confirm([round(value, 4) for _, value in scalars["epoch/val_acc"]] == [float(row["val_acc"]) for row in rows],
        "the TensorBoard event file holds the same validation accuracies as the CSV log")

# %% [markdown]
# ## 9. `fit()`: the same loop, packaged, and the MLP comparison
#
# From now on the course does not rewrite this loop every time. `course_utils.training.fit()` runs
# exactly the steps above and returns the history:
#
# - progress bar, per-step learning rate and gradient norm, optional clipping;
# - validation every epoch;
# - the scheduler stepped per batch for one-cycle, per epoch otherwise;
# - CSV and TensorBoard logs (`log_csv=`, `log_tensorboard=<folder>`). Below, each model gets its
#   own TensorBoard folder under `log_dir / "tensorboard"`, so the viewer overlays the runs.
#
# `course_utils.training.evaluate(model, loader)` returns the validation loss and accuracy (eval mode
# and `inference_mode`, like your `evaluate`). The overhead of `fit()` over the bare six-line loop is
# measured by `benchmarks/fit_overhead.py`.
#
# Here `fit()` trains the two MLPs with the same optimizer, schedule and number of epochs as the CNN.
# They also get the CNN's learning rate (one-cycle up to 1e-2).
#
# That rate is too high for the MLPs. Their first-epoch losses come out above ln(10) ≈ 2.30, the loss
# of guessing, which section 4 taught you to read as a learning rate that is too large.
#
# So that the comparison does not rest on it, `benchmarks/training_06.py` also trains both MLPs at a
# maximum of 1e-3 and 3e-3, with the same data, seed and epochs. That sweep is not re-run in this
# notebook: four more trainings would add several seconds. Its table is in
# `benchmarks/results/training_06.md`. There the best MLP reached 22.9 % validation accuracy, and the
# 4-unit MLP stayed near chance at every rate.

# %% tags=["nbval-ignore-output"]
from course_utils import training


def train_with_fit(model: nn.Module, name: str):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=epochs,
                                                    steps_per_epoch=len(train_loader))
    return fit(model, train_loader, epochs=epochs, optimizer=optimizer, scheduler=scheduler,
               val_loader=val_loader, max_grad_norm=max_norm, log_csv=log_dir / f"{name}.csv",
               log_tensorboard=log_dir / "tensorboard" / name)


torch.manual_seed(0)
results = {"CNN": (n_params(cnn), cnn_acc)}
for hidden in (4, 64):
    mlp = make_mlp(hidden).to(device)
    history = train_with_fit(mlp, f"mlp{hidden}")
    results[f"MLP, {hidden} hidden units"] = (n_params(mlp), history.epochs[-1]["val_acc"])
for name, (params, acc) in results.items():
    print(f"{name:22} {params:8,} parameters   validation accuracy {acc:6.1%}")
print("course_utils.training.evaluate on the CNN:",
      {k: round(v, 4) for k, v in training.evaluate(cnn, val_loader).items()})
confirm(cnn_acc > results["MLP, 4 hidden units"][1] + 0.3 and cnn_acc > results["MLP, 64 hidden units"][1] + 0.3,
        "the CNN beats both MLPs by more than 30 points of validation accuracy")

# %% [markdown]
# With about the same number of parameters, the CNN is far ahead. An MLP with 16× more parameters
# does not close the gap, neither at the CNN's learning rate (above) nor at the two smaller ones of
# the benchmark's sweep.
#
# Why? The shapes can sit anywhere near the centre. A convolution applies the same small filters at
# every position, so an edge or corner learned in one place is recognised everywhere. An MLP must
# learn every pattern separately at every position, from 3,000 examples.
#
# ## 10. Checklist: the loss will not go down
#
# Go from cheap and likely to expensive and rare. Most items were reproduced in notebooks 02–06.
#
# | check | how | reproduced in |
# |---|---|---|
# | the data and labels match | draw a batch with its labels | 05 §6 |
# | the same preprocessing for train and val, stats from train | one pipeline object | 05 §2 |
# | the model can overfit one small batch | `overfit_one_batch` | 06 §3 |
# | the loss gets logits and int64 class indices (or class probabilities), no softmax before it | print shapes/dtypes | 06 §3 |
# | the learning rate is sane (not flat, not exploding) | a few values on one batch | 06 §4 |
# | `zero_grad()` every step, `model.train()` every epoch | read the loop | 03, 06 §4–5 |
# | every parameter is in the optimizer and gets a gradient | `p.grad is None` after `backward()` | 04 |
# | prediction and target shapes agree (no broadcasting in the loss) | assert shapes | 02 |
# | gradient norms are neither tiny nor huge | log them, clip | 06 §7 |
# | the scheduler's `step()` is in the right place | plot the logged learning rate | 06 §6 |
# | only then: the architecture | compare models on the same budget | 06 §9 |
#
# The first checks take well under a second on one batch. Run them in this order: data,
# preprocessing, shapes, loss, learning rate, optimizer. Change the architecture only when all of
# them pass.
#
# Here they are as one function. It runs on a good batch, then on a batch whose images skipped
# `Normalize`:

# %%
def triage(x: torch.Tensor, y: torch.Tensor) -> None:
    torch.manual_seed(0)
    model = make_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    checks = {"data: labels are class ids 0-9, no NaN in the images":
              bool(y.min() >= 0 and y.max() <= 9 and not x.isnan().any())}
    checks["preprocessing: batch mean within 0.5 of 0, std between 0.5 and 2"] = bool(
        x.mean().abs() < 0.5 and 0.5 < x.std() < 2)  # loose: one batch is not the whole split
    logits = model(x)
    checks["shapes: logits [B, 10], labels [B] int64"] = (
        logits.shape == (len(y), 10) and y.shape == (len(y),) and y.dtype == torch.int64)
    first_loss = F.cross_entropy(logits, y).item()
    checks["loss: the first loss is close to ln(10) = 2.30"] = abs(first_loss - math.log(10)) < 0.3
    for _ in range(15):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    checks["learning rate: 15 steps on this batch cut its loss at least 5-fold"] = loss.item() < first_loss / 5
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    checks["optimizer: every parameter is in it and has a gradient"] = all(
        id(p) in in_optimizer and p.grad is not None for p in model.parameters())
    for name, passed in checks.items():
        print("ok  " if passed else "FAIL", name)


print("a good batch:")
triage(*one_batch)
print("the same images without Normalize:")
triage(v2.ToDtype(torch.float32, scale=True)(as_batch(train_set)[:32]), one_batch[1])

# %% [markdown]
# The first line that says FAIL is where to look. The lines after it are not worth reading until it
# passes. The same function on your own project is a minute's work, and it catches most bugs before
# the first full run.
#
# Before that full run, also run the *whole* pipeline (train, validate, save, load) on a tiny slice
# of the data for a few steps. Then a crash in the last stage costs seconds instead of an hour. The
# capstone, notebook 14, does exactly that before its real run.
#
# Notebook 10's training doctor runs these checks automatically on a model and a batch.
#
# The logs have served their purpose (copy `log_dir` elsewhere first if you want to keep them for
# TensorBoard). Remove this notebook's log folder, so that running the notebook again and again
# leaves nothing behind:

# %%
shutil.rmtree(log_dir)
print("work folder removed:", not log_dir.exists())

# %% [markdown]
# ## Key points
#
# - The step is: move the batch, `zero_grad()`, forward, loss, `backward()`, (clip), `step()`,
#   (scheduler `step()` for per-batch schedules). `zero_grad()` sets gradients to `None` by default.
# - Compute a flatten size with a dummy forward pass; `nn.Flatten()` keeps the batch dimension.
# - `CrossEntropyLoss` wants logits, and as targets either int64 class indices `[B]` or float class
#   probabilities shaped like the logits `[B, C]` (soft labels, MixUp/CutMix, `label_smoothing=`);
#   softmax first puts a floor under the loss and shrinks the gradients.
# - Validate with `model.eval()` *and* `torch.inference_mode()` (or `torch.no_grad()` when a result
#   may later enter autograd); go back to `model.train()` after. `torch.max(outputs, 1)` returns
#   `(values, indices)`; the indices are `argmax(dim=1)`.
# - Overfit one batch before a full run; it also screens the learning rate.
# - Epoch-based schedulers step once per epoch, one-cycle once per batch, plateau with a metric,
#   always after `optimizer.step()` (the other order warns and skips the first value). Cosine
#   decays slowest at the start and fastest mid-way; a schedule paid off here at the larger rate.
# - `clip_grad_norm_` goes between `backward()` and `step()` and returns the norm to log; it turned
#   a run that went to `nan` into one that trains, and a `max_norm` far below the typical norm
#   slows training.
# - Keep values as tensors in the loop, log once per epoch (loss, learning rate, gradient norm,
#   memory) to a CSV file, plot the curves. Accumulate `loss.detach()`, never `loss`: a running
#   sum of `loss` keeps every batch's graph alive.
# - On this data a small CNN beats an MLP of the same size by a wide margin (measured above).
#
# ## Further reading
#
# - PyTorch docs: [torch.optim](https://docs.pytorch.org/docs/stable/optim.html) (section
#   [How to adjust learning rate](https://docs.pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate))
#   for *torch.optim.lr_scheduler*, and
#   [OneCycleLR](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.OneCycleLR.html).
# - PyTorch docs: [CrossEntropyLoss](https://docs.pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
#   (class indices vs class probabilities as targets).
# - PyTorch docs: [torch.nn.utils.clip_grad_norm_](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
#   and [torch.inference_mode](https://docs.pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html).
# - PyTorch docs: [torch.optim.Optimizer.zero_grad](https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
#   (`set_to_none`).
# - PyTorch docs: [Frequently Asked Questions](https://docs.pytorch.org/docs/stable/notes/faq.html),
#   "Don't accumulate history across your training loop".
# - PyTorch tutorial: [Training a Classifier](https://docs.pytorch.org/tutorials/beginner/blitz/cifar10_tutorial.html)
#   (the CIFAR-10 version of this notebook's loop).
# - Next: [07 · Generalisation](07_generalisation.ipynb).
