# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · The data pipeline: from samples to batches
#
# A model only ever sees what the data pipeline hands it. This notebook builds that pipeline
# piece by piece, on an offline image set shaped like CIFAR-10:
#
# - a `Dataset` that returns one sample;
# - a `torchvision.transforms.v2` pipeline that turns a PIL image into a normalised tensor;
# - a `DataLoader` that shuffles, batches and (optionally) loads in parallel.
#
# Along the way it reproduces pipeline bugs that cost real projects days: validation data
# preprocessed differently from training data, a last batch of one sample that crashes BatchNorm,
# sequences of different lengths that refuse to stack, and worker processes that cannot find a
# class defined in a notebook.

# %% [markdown]
# ## You will learn (≈ 45 min)
#
# 1. The `Dataset` / `DataLoader` contract, and how to write your own `Dataset`.
# 2. A `transforms.v2` pipeline (`ToImage` + `ToDtype` replaces the old `ToTensor`), with
#    per-channel normalisation statistics computed on the **training split only** — and what
#    a mismatched validation pipeline costs, measured.
# 3. The `DataLoader` knobs: `batch_size`, `shuffle` (train only), `drop_last` (BatchNorm and
#    the batch of one), `num_workers` (measured, with the notebook/spawn caveat), `pin_memory`.
# 4. Batching variable-length sequences with a `collate_fn` and `pad_sequence`, and packing them
#    for an RNN.
# 5. Looking at a batch with its labels before trusting it (misaligned labels reproduced).

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

import os
import pickle
import subprocess
import sys
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torchvision.transforms import v2

from course_utils.claims import confirm
from course_utils.data import ShapesDataset, toy_sequences
from course_utils.devices import pick_device, skip_unless_gpu
from course_utils.exercises import check
from course_utils.viz.images import show_images
from course_utils.workers import SlowDataset, time_one_epoch

device = pick_device()

# %% [markdown]
# ## 1. A `Dataset` answers two questions: how many, and which one
#
# A map-style `Dataset`, one you index like a list (the other kind, `IterableDataset`, is a stream
# you can only iterate over), is any object with `__len__` and `__getitem__(i)`. Everything else
# (batching, shuffling, parallel loading) is the `DataLoader`'s job.
#
# The course's image set, `ShapesDataset`, is generated on the fly from a seed (no download). It has
# 10 classes of shapes at a random place, size and colour on a noisy background, 32×32 RGB. Like
# `torchvision.datasets.CIFAR10`, it returns PIL images.

# %%
train_set = ShapesDataset("train")
val_set = ShapesDataset("val")
print(train_set)
image, label = train_set[0]
print(type(image).__name__, image.size, image.mode, "| label", label, "=", train_set.classes[label])
print("raw storage:", train_set.data.shape, train_set.data.dtype, "| classes:", train_set.classes)


# %% [markdown]
# Writing your own takes a few lines. Here is the whole idea behind `ShapesDataset` (and
# `CIFAR10`): images kept as a uint8 array, turned into a PIL image on access, then passed
# through an optional `transform`. Loading a file from disk would go in the same place.

# %%
class ArrayImageDataset(Dataset):
    """Images in a uint8 array [N, H, W, C] (as if decoded from files) with integer labels."""

    def __init__(self, images: np.ndarray, labels: list[int], transform=None) -> None:
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        image = Image.fromarray(self.images[index])
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[index]


mine = ArrayImageDataset(train_set.data[:100], train_set.targets[:100])
print(len(mine), mine[5][1], np.array_equal(np.asarray(mine[5][0]), np.asarray(train_set[5][0])))


# %% [markdown]
# ## 2. Transforms: from PIL image to a normalised tensor
#
# `torchvision.transforms.v2` is the current transforms API. The old `transforms.ToTensor()`
# did two things at once: convert, and rescale to [0, 1]. v2 splits them:
#
# - `ToImage()` converts to a uint8 tensor `[C, H, W]`;
# - `ToDtype(torch.float32, scale=True)` converts to float and divides by 255. Forget `scale=True`
#   and you get floats between 0 and 255.
#
# The type printed first is `Image`, not `Tensor`. `ToImage()` returns a `torchvision.tv_tensors.Image`:
# a subclass of `torch.Tensor` with the same data. Its only job is to tell later v2 transforms
# "this is an image".
#
# That tag matters when a sample holds several things. A flip or a crop must move bounding boxes
# (`tv_tensors.BoundingBoxes`) and masks (`tv_tensors.Mask`) along with the image, and must not
# rescale a mask's class ids.
#
# `Resize` gives every image the size the model expects. Real datasets mix sizes; these images are
# all 32×32 already, so the last line enlarges one to 64×64 only to show it.

# %%
def describe(t: torch.Tensor) -> str:
    return f"{type(t).__name__:6} {str(t.dtype):13} shape {tuple(t.shape)} range [{t.min():.4g}, {t.max():.4g}]"


print("ToImage()               :", describe(v2.ToImage()(image)))
print("+ ToDtype(scale=True)   :", describe(v2.ToDtype(torch.float32, scale=True)(v2.ToImage()(image))))
print("+ ToDtype(scale=False)  :", describe(v2.ToDtype(torch.float32)(v2.ToImage()(image))))
print("+ Resize((64, 64))      :", describe(v2.Resize((64, 64))(v2.ToImage()(image))))

# %% [markdown]
# ### Normalisation statistics come from the training split
#
# `Normalize(mean, std)` subtracts a per-channel mean and divides by a per-channel std. Every input
# channel is then centred with unit spread, which keeps the first layer's activations and gradients
# in a good range.
#
# The statistics are *fitted*, like model weights. Compute them on the training images only, then
# use the same numbers for validation, test and deployment. (Computing them on all data leaks
# information about the evaluation set into training.)
#
# For the statistics we need all training images as one float tensor. The pipeline is
# deterministic, so we run it once on the whole split as a batch: v2 transforms accept a
# `[N, C, H, W]` tensor as well as a single image.

# %%
to_float = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])


def as_batch(dataset: ShapesDataset) -> torch.Tensor:
    """All images of a split as a uint8 tensor [N, C, H, W]."""
    return torch.from_numpy(dataset.data).permute(0, 3, 1, 2)


train_float = to_float(as_batch(train_set))
per_channel = train_float.transpose(0, 1).flatten(start_dim=1)  # [C, N*H*W]
mean, std = per_channel.mean(dim=1), per_channel.std(dim=1)
print("train mean per channel:", mean)
print("train std  per channel:", std)

# %% [markdown]
# The three channels have similar statistics here because the colours are drawn uniformly. The
# same happens on CIFAR-10: about 0.49/0.48/0.45. On medical, satellite or depth images they
# differ a lot, which is why the statistics are per channel.
#
# Now the pipeline, shared by every split:

# %%
pipeline = v2.Compose([
    v2.ToImage(),
    v2.ToDtype(torch.float32, scale=True),
    v2.Normalize(mean=mean.tolist(), std=std.tolist()),
])
x0, y0 = ShapesDataset("val", transform=pipeline)[0]
print(describe(x0), "| label", y0)
normalised = pipeline(as_batch(train_set))
print("normalised training set: per-channel mean ≈ 0:", bool(normalised.mean(dim=(0, 2, 3)).abs().max() < 1e-4),
      "| per-channel std:", normalised.std(dim=(0, 2, 3)))

# %% [markdown]
# A shortcut seen in many tutorials is `Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))`, described as
# giving mean 0 and std 1. It does not. It computes `(x - 0.5) / 0.5`, which maps the range [0, 1]
# to [−1, 1] whatever the images are. The mean becomes 0 and the std 1 only if the images happen
# to have mean 0.5 and std 0.5. On these images:

# %%
half = v2.Normalize((0.5,) * 3, (0.5,) * 3)(train_float)
print("Normalize(0.5, 0.5): per-channel mean", half.mean(dim=(0, 2, 3)), "std", half.std(dim=(0, 2, 3)))
print("training statistics: per-channel mean", normalised.mean(dim=(0, 2, 3)), "std", normalised.std(dim=(0, 2, 3)))

# %% [markdown]
# The shortcut's std is twice the pixels' std, not 1. Its means come out near 0 here only because
# these images' pixel means are close to 0.5 (printed earlier in this section). On darker or
# low-contrast images (X-rays, night scenes) the mean is off as well.
#
# A network copes with a constant shift and scale, so this is rarely a disaster. But it is not what
# the shortcut claims: statistics fitted on the training split give what `Normalize` is for.
#
# ### Pitfall: validation preprocessed differently from training
#
# A classic: training goes through `Normalize`, but the evaluation script forgets it, or uses other
# statistics. (It was written later, by someone else, or copied from another project.) Nothing
# crashes; the accuracy is just wrong.
#
# To measure it we need a trained model: a small CNN, two epochs on the normalised training
# tensors, with Adam and a one-cycle learning-rate schedule. What these lines of the training loop
# do: notebooks 03 and 06.
#
# One more step in the cell: `.as_subclass(torch.Tensor)` strips the `tv_tensors.Image` tag once
# preprocessing is done. Nothing after this point needs it. On an `Image`, `.to(device)`, `clone()`
# and `detach()` return an `Image` again, and every operation first goes through the subclass's
# extra Python dispatch; a plain tensor stays plain.

# %%
train_tensors = TensorDataset(pipeline(as_batch(train_set)).as_subclass(torch.Tensor),
                              torch.tensor(train_set.targets))
val_labels = torch.tensor(val_set.targets)
val_tensors = TensorDataset(pipeline(as_batch(val_set)).as_subclass(torch.Tensor), val_labels)


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


cnn = small_cnn().to(device)
loader = DataLoader(train_tensors, batch_size=64, shuffle=True)
optimizer = torch.optim.Adam(cnn.parameters(), lr=1e-2)
schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=2 * len(loader))
for epoch in range(2):
    cnn.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        F.cross_entropy(cnn(x), y).backward()
        optimizer.step()
        schedule.step()


def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    with torch.inference_mode():
        return (model(images.to(device)).argmax(dim=1).cpu() == labels).float().mean().item()


# %% tags=["nbval-ignore-output"]
val_raw = to_float(as_batch(val_set))
val_stats = val_raw.mean(dim=(0, 2, 3)), val_raw.std(dim=(0, 2, 3))
variants = {
    "same pipeline as training": val_tensors.tensors[0],
    "val: Normalize forgotten": val_raw,
    "val: normalised with its own stats": v2.Normalize(val_stats[0].tolist(), val_stats[1].tolist())(val_raw),
    "val: ToDtype without scale=True": v2.Normalize(mean.tolist(), std.tolist())(as_batch(val_set).float()),
}
results = {name: accuracy(cnn, images.as_subclass(torch.Tensor), val_labels) for name, images in variants.items()}
for name, acc in results.items():
    print(f"{name:36} val accuracy {acc:6.1%}")
confirm(results["same pipeline as training"] > results["val: Normalize forgotten"] + 0.25,
        "forgetting Normalize at evaluation costs more than 25 points of accuracy")
confirm(results["same pipeline as training"] > results["val: ToDtype without scale=True"] + 0.25,
        "forgetting scale=True at evaluation costs more than 25 points of accuracy")


# %% [markdown]
# Same model, same images: forgetting `Normalize` at evaluation time, or the `scale=True` of
# `ToDtype`, costs more than 25 points of accuracy each (checked by the cell). Without `Normalize`
# most of the accuracy is gone. Guessing would give 10 %.
#
# Using the validation set's own statistics changes little here, but only because both splits come
# from the same distribution. In deployment there is no "validation batch" to compute statistics from.
#
# **Fix:** build one preprocessing pipeline object, fit its statistics on the training split,
# and use that same object for every split. Save the numbers with the model.

# %% [markdown]
# ### Exercise 1 — `normalization_stats`
#
# Write `normalization_stats(images)` for a float tensor `[N, C, H, W]`: return `(mean, std)`,
# each of shape `[C]` and in the images' dtype, computed per channel over all images and all pixels.
# Either std is accepted: the default `.std()` used above, or the biased `.std(correction=0)`.

# %%
def normalization_stats(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    ### BEGIN SOLUTION
    return images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3))
    ### END SOLUTION


# %%
check("05.normalization_stats", normalization_stats)

# %% [markdown]
# ## 3. The DataLoader: batches, shuffling and the last batch
#
# `DataLoader(dataset, batch_size, shuffle)` draws indices (from a sampler), fetches the
# samples, and *collates* them: a list of `(image, label)` pairs becomes one image tensor
# `[B, C, H, W]` and one label tensor `[B]`.
#
# Shuffle the training set, so each epoch sees the samples in a new order. SGD assumes batches
# are random draws; a sorted set gives batches of one class at a time.
#
# Do **not** shuffle validation or test data. The metric does not change, but a fixed order lets
# you compare per-sample predictions between runs.

# %%
train_loader = DataLoader(train_tensors, batch_size=64, shuffle=True)
val_loader = DataLoader(val_tensors, batch_size=256, shuffle=False)
images, labels = next(iter(train_loader))
print("one batch:", tuple(images.shape), images.dtype, "|", tuple(labels.shape), labels.dtype)
print("first labels, epoch 1:", next(iter(train_loader))[1][:8].tolist())
print("first labels, epoch 2:", next(iter(train_loader))[1][:8].tolist())
print("val, twice:           ", next(iter(val_loader))[1][:8].tolist(), next(iter(val_loader))[1][:8].tolist())
print(f"batches per epoch: train {len(train_loader)}, val {len(val_loader)}")

# %% [markdown]
# `batch_size` trades memory for gradient noise. Bigger batches need more memory (activations
# scale with it, see notebook 08) and give smoother gradients. Start with 32–128, and halve it when
# memory runs out.
#
# ### Pitfall: a last batch of one sample and BatchNorm
#
# With 129 training samples and `batch_size=64`, the loader yields 64, 64 and then **1**.
#
# A `BatchNorm1d` layer in training mode normalises each feature with the batch's mean and
# variance. One value breaks both uses. Normalising it gives $(x - x)/\sqrt{0 + \varepsilon} = 0$
# for every feature. And the running variance, an unbiased estimate, would divide by
# $N - 1 = 0$. So PyTorch refuses a batch of one in training mode (the cell prints the error's type
# and message):

# %%
torch.manual_seed(0)
with_bn = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 32), nn.BatchNorm1d(32), nn.ReLU(),
                        nn.Linear(32, 10)).to(device)
subset = TensorDataset(*train_tensors[:129])
keeps_last = DataLoader(subset, batch_size=64, shuffle=True)
print("batch sizes:", [len(y) for _, y in keeps_last])

# %%
with_bn.train()
try:
    for x, y in keeps_last:
        loss = F.cross_entropy(with_bn(x.to(device)), y.to(device))
except ValueError as error:        # the error's type and message; the traceback is PyTorch's internals
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# **Fix:** `drop_last=True` on the *training* loader drops the incomplete batch. Those samples
# come back in another position next epoch, since the order is shuffled. Never use it on the
# validation loader: there it would silently skip samples.
#
# Note: `BatchNorm2d` does not raise on one image, because it averages over the pixels too. But its
# statistics from a single image are noisy, so the same fix applies.

# %%
drops_last = DataLoader(subset, batch_size=64, shuffle=True, drop_last=True)
print("batch sizes:", [len(y) for _, y in drops_last])
for x, y in drops_last:
    loss = F.cross_entropy(with_bn(x.to(device)), y.to(device))
print("the forward pass works on every batch; last loss", round(loss.item(), 4))


# %% [markdown]
# ### Exercise 2 — `make_loaders`
#
# Write `make_loaders(train_ds, val_ds, batch_size)` returning `(train_loader, val_loader)`: the
# training loader shuffles and drops the last incomplete batch (the model uses BatchNorm); the
# validation loader keeps the order and every sample. `batch_size` is the training loader's; the
# validation loader may use the same one.

# %%
def make_loaders(train_ds, val_ds, batch_size: int) -> tuple[DataLoader, DataLoader]:
    ### BEGIN SOLUTION
    train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=batch_size, shuffle=False)
    return train_loader, val_loader
    ### END SOLUTION


# %%
check("05.make_loaders", make_loaders)

# %% [markdown]
# ## 4. `num_workers`: loading in parallel, measured
#
# With `num_workers=0` the training process itself fetches every sample, so the model waits
# while images are read and transformed. With `num_workers=k` the loader starts `k` worker
# processes that prepare batches in the background.
#
# Whether that helps depends on *what* makes `__getitem__` slow. `SlowDataset` (from
# `course_utils.workers`) wraps a dataset and adds 8 ms per sample, in one of two ways:
#
# - **wait**: sleep, like a slow disk or network read;
# - **compute**: 8 ms of CPU work, like heavy decoding or augmentation. It needs a free CPU core.
#
# The cell times 0, 2 and 4 workers. Starting workers costs time too, so the loaders keep them
# alive between epochs (`persistent_workers=True`), and we time two epochs.
#
# On macOS and Windows workers start with *spawn* (see the caveat at the end of this section):
# each one is a fresh Python that imports torch again, so there "epoch 1" includes a few seconds
# of start-up per loader and only "epoch 2" measures loading.

# %% tags=["nbval-ignore-output"]
few_val = TensorDataset(*val_tensors[:64])
delay_s = 0.008
floor = len(few_val) * delay_s  # the sleeps/CPU work alone, one after the other
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
print(f"floor with num_workers=0: {len(few_val)} samples x {delay_s * 1e3:.0f} ms = {floor:.2f} s; "
      f"k workers can at best divide it by k")
timings, torch_warned = {}, set()
for mode in ("wait", "compute"):
    for workers in (0, 2, 4):
        with warnings.catch_warnings(record=True) as caught:   # torch warns when workers > cores
            warnings.simplefilter("always")
            loader = DataLoader(SlowDataset(few_val, delay_s=delay_s, mode=mode), batch_size=16,
                                num_workers=workers, persistent_workers=workers > 0)
            first, count = time_one_epoch(loader)   # includes starting the worker processes
        torch_warned.update(str(w.message).split(". ")[1] for w in caught if "worker processes" in str(w.message))
        second, _ = time_one_epoch(loader)      # workers already running
        timings[mode, workers] = second
        print(f"{mode:7}  num_workers={workers}: epoch 1 {first:.2f} s, epoch 2 {second:.2f} s "
              f"({second / count * 1e3:.1f} ms per sample, {count} samples)")
        del loader  # stops the persistent workers
method = torch.multiprocessing.get_start_method()
print(f"this machine: {os.cpu_count()} CPU cores; workers started with {method!r}"
      + ("" if method == "fork" else " (a fresh Python per worker: epoch 1 includes its start-up)"))
for message in sorted(torch_warned):
    print("torch warned:", message)
confirm(count == len(few_val), "an epoch yields every one of the 64 samples")
confirm(timings["wait", 4] < timings["wait", 2] < timings["wait", 0],
        "waiting keeps scaling: 2 workers beat none, and 4 beat 2")
confirm(min(timings["wait", 0], timings["compute", 0]) >= 0.95 * floor,
        "with num_workers=0 each sample really takes at least 8 ms")
confirm(all(timings["compute", k] >= 0.9 * floor / min(k, cores) for k in (2, 4)),
        "computing cannot beat the cores: k workers on c free cores need at least floor / min(k, c)")

# %% [markdown]
# **Waiting scales with the workers; computing stops at the free cores.** Read "epoch 2":
#
# - "wait": 2 workers take about half the time of none, 4 workers about a quarter. Workers that
#   sleep do not need a core, so they all wait at the same time.
# - "compute": each worker needs a core of its own. This course's reference machine has
#   **2 cores**, so 2 workers are at best 2× faster, and 4 workers are no faster than 2. On a
#   laptop with 8 cores it scales further. When other programs keep the cores busy, even 2 workers
#   gain little or nothing: there is no free core to compute on.
#
# More workers than free cores only adds process switching and memory: each worker holds its own
# copy of the dataset object. PyTorch itself warns when you ask for more workers than the machine
# suggests (printed above, if it did). Try `num_workers` = number of physical cores minus one, and
# measure, as above.
#
# Read your numbers against the floor printed first: with `num_workers=0` an epoch cannot be
# faster than 64 × 8 ms. Time above the floor is the loader's own work (indexing, collating). On a
# busy machine it is also waiting for a free core: the process is not always scheduled again right
# away, and "compute" gets only part of a core, so its times can be well above the floor. That is
# the machine, not a bug in the loader.
#
# The first epoch also pays for starting the worker processes. Without `persistent_workers`,
# every epoch pays it.
#
# **The notebook caveat: define datasets for workers in a `.py` module.** Worker processes need
# the dataset object. On Windows and macOS they are started with *spawn*: a fresh Python imports
# the dataset's class by module name and unpickles the object.
#
# A class defined in a notebook cell lives in `__main__`, which the new process cannot import. The
# workers die with `AttributeError: Can't get attribute 'MyDataset' on <module '__main__'>`.
#
# On Linux the default has been *fork*: the worker is a copy of the kernel process. So the same
# notebook works there, and the bug appears only on a colleague's Mac. Python 3.14 changed Linux's
# default to *forkserver*, which also starts workers from a fresh process that unpickles the
# dataset. There the same bug appears on Linux too.
#
# `DataLoader(..., multiprocessing_context="spawn")` would show it on any machine. But a spawned
# worker is a new Python that imports torch again before it unpickles anything. That takes several
# seconds per worker on a small machine: too slow to run here.
#
# So the next cell runs only the step that fails. It pickles the dataset, as the loader does for
# every worker, and unpickles it in a fresh Python process, as a spawned worker does.

# %% tags=["nbval-ignore-output"]
method = torch.multiprocessing.get_start_method()
print("start method here:", method)  # fork on Linux (up to Python 3.13), spawn on macOS and Windows
confirm(method in ("fork", "spawn", "forkserver"), "workers start with fork, spawn or forkserver")

# %%
payload = pickle.dumps(mine)  # the object, with its class recorded as module + name
fresh = subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                       input=payload, capture_output=True)
print("a fresh Python unpickling the dataset:", fresh.stderr.decode().strip().splitlines()[-1])
confirm(fresh.returncode != 0, "a fresh Python cannot unpickle a dataset whose class lives in the notebook")

# %% [markdown]
# The fresh process has its own, empty `__main__`: the class the pickle names is not there.
#
# The fix: put datasets used with workers in a `.py` module and import them, as `SlowDataset`
# is. A fresh process can import a module by name.

# %%
print("SlowDataset is defined in:", SlowDataset.__module__)
print("ArrayImageDataset is defined in:", ArrayImageDataset.__module__, "(unreachable for spawned workers)")

# %% [markdown]
# ### `pin_memory`: only for copies to a GPU
#
# `pin_memory=True` makes the loader put each batch in page-locked ("pinned") host memory: RAM that
# the operating system may not move or swap out while the copy runs. The GPU can copy
# from it directly and asynchronously, with `x.to(device, non_blocking=True)`.
#
# It only matters when batches go to a CUDA device. On a CPU-only machine there is nothing to copy
# to, so set it from the device instead of hard-coding `True`. The cell below measures the copy
# speed when a GPU is present.

# %% tags=["nbval-ignore-output"]
loader = DataLoader(train_tensors, batch_size=64, shuffle=True, pin_memory=device.type == "cuda")
print("pin_memory:", loader.pin_memory)
if skip_unless_gpu("pageable vs pinned host-to-GPU copy speed", expect=(
        "for this 6 MB batch a pinned copy is typically faster than a pageable one, often 1.5 to 5 "
        "times, roughly 0.1-0.5 ms against 0.3-1.5 ms per copy on a recent desktop or data-centre "
        "NVIDIA GPU over PCIe 4 or 5 (and only pinned copies can overlap with computation).")):
    pageable = torch.randn(128, 3, 64, 64)  # 128 x 3 x 64 x 64 float32 = 6.3 MB
    pinned = pageable.pin_memory()

    def copy_ms(tensor: torch.Tensor, repeats: int = 20) -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeats):
            tensor.to(device, non_blocking=True)
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / repeats * 1e3

    copy_ms(pageable), copy_ms(pinned)  # warm-up (CUDA context, allocator)
    pageable_ms, pinned_ms = copy_ms(pageable), copy_ms(pinned)
    print(f"pageable: {pageable_ms:.3f} ms per copy, pinned: {pinned_ms:.3f} ms per copy "
          f"({pageable_ms / pinned_ms:.1f}x)")
confirm(loader.pin_memory == (device.type == "cuda"), "pin_memory is on exactly when batches go to a CUDA GPU")

# %% [markdown]
# ## 5. Sequences of different lengths: padding in `collate_fn`
#
# The default collate function stacks the samples of a batch, which needs equal shapes. Text,
# audio and time series come in different lengths, so stacking fails (the second cell below prints
# the error's type and message):

# %%
sequences = toy_sequences(n=64, seed=0)
print("lengths:", [len(tokens) for tokens, _ in sequences[:8]])
print("first sample:", sequences[0])

# %%
try:
    next(iter(DataLoader(sequences, batch_size=4)))
except RuntimeError as error:      # the error's type and message; the traceback is PyTorch's internals
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# **Fix:** pass a `collate_fn` that pads every sequence of the batch to the batch's longest one.
# `pad_sequence` does the padding (token 0 is reserved for it here).
#
# Keep the true lengths. The model needs them to ignore the padded positions: a mask, or
# `pack_padded_sequence` for RNNs. Padding to the longest of *each batch*, rather than of the whole
# dataset, avoids computing on zeros.

# %%
batch = sequences[:4]
padded = pad_sequence([tokens for tokens, _ in batch], batch_first=True, padding_value=0)
print(padded)
print("mask of real tokens:\n", padded != 0)


# %% [markdown]
# ### Exercise 3 — `pad_collate`
#
# Write `pad_collate(batch)` for a list of `(tokens: LongTensor[T_i], label: int)` pairs. Return
# `(padded, lengths, labels)`: `padded` is `[B, T_max]` padded with 0 (`T_max` = the longest
# sequence of *this* batch), `lengths` a LongTensor `[B]` of the lengths before padding,
# `labels` a LongTensor `[B]`. Then the loader after the check uses it.

# %%
def pad_collate(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    ### BEGIN SOLUTION
    sequences = [tokens for tokens, _ in batch]
    padded = pad_sequence(sequences, batch_first=True, padding_value=0)
    lengths = torch.tensor([len(tokens) for tokens in sequences])
    labels = torch.tensor([label for _, label in batch])
    return padded, lengths, labels
    ### END SOLUTION


# %%
check("05.pad_collate", pad_collate)

# %% [markdown]
# A `DataLoader` with `collate_fn=pad_collate` yields `(padded, lengths, labels)` batches whose
# width is the longest sequence of *each* batch, so it changes from batch to batch. The cell runs
# once your `pad_collate` passes the check above.

# %%
from itertools import islice

if check("05.pad_collate", pad_collate).passed:
    seq_loader = DataLoader(sequences, batch_size=8, collate_fn=pad_collate)
    for padded, lengths, labels in islice(seq_loader, 2):
        print(f"padded {tuple(padded.shape)}  lengths {lengths.tolist()}  labels {labels.tolist()}")
        confirm(padded.shape == (len(lengths), int(lengths.max())), "each batch is as wide as its longest sequence")
else:
    print("Finish Exercise 3 first: this cell then runs a DataLoader with your pad_collate.")

# %% [markdown]
# ### Padding and a recurrent network: `pack_padded_sequence`
#
# A mask is enough for layers that look at all positions at once (pooling, attention). A recurrent
# network is different: it reads a sequence one step at a time. After a short sequence it goes on
# reading the padding zeros, and its final hidden state describes "the sequence followed by zeros".
#
# `pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)` tells the RNN where each
# sequence ends, and it stops there. Four sequences through a small GRU, compared with each
# sequence run alone:

# %%
torch.manual_seed(0)
embed, gru = nn.Embedding(20, 8, padding_idx=0), nn.GRU(8, 16, batch_first=True)
tokens = [t for t, _ in sequences[:4]]
lengths = torch.tensor([len(t) for t in tokens])
padded = pad_sequence(tokens, batch_first=True, padding_value=0)
with torch.inference_mode():
    alone = torch.cat([gru(embed(t[None]))[1][0] for t in tokens])  # final state, one sequence at a time
    from_padded = gru(embed(padded))[1][0]
    packed = pack_padded_sequence(embed(padded), lengths, batch_first=True, enforce_sorted=False)
    from_packed = gru(packed)[1][0]
print("lengths:                          ", lengths.tolist())
print("final state vs alone, padded batch:", [f"{d:.3f}" for d in (from_padded - alone).abs().amax(dim=1)])
print("final state vs alone, packed batch:", [f"{d:.3f}" for d in (from_packed - alone).abs().amax(dim=1)])
confirm(torch.allclose(from_packed, alone, atol=1e-5) and not torch.allclose(from_padded, alone, atol=1e-3),
        "packed sequences give the GRU the same final states as running each alone; padded ones do not")

# %% [markdown]
# Only the longest sequence, which has no padding, gets its own final state from the padded batch;
# every shorter one is off (the largest difference per sequence is printed). Packed, all four
# match. With packing the RNN also skips the padded steps instead of computing on them.

# %% [markdown]
# ## 6. Look at a batch before you train on it
#
# The cheapest bug detector in deep learning: draw a batch *as the model receives it*, with
# its labels. These are visible at a glance: mislabelled data, a label order that does not match
# the images after shuffling, a wrong colour order, a broken normalisation.
#
# `show_images` undoes the normalisation for display when given the same `mean` and `std`.

# %%
images, labels = next(iter(DataLoader(train_tensors, batch_size=16, shuffle=True)))
show_images(images, labels, classes=train_set.classes, mean=mean.tolist(), std=std.tolist(),
            title="a training batch as the model sees it (normalisation undone for display)")
plt.show()

# %% [markdown]
# The same grid with the trained CNN's predictions on validation images (green: right,
# red: wrong, written as "prediction (label)") shows what the remaining errors look like.

# %%
val_images = val_tensors.tensors[0][:16]
cnn.eval()
with torch.inference_mode():
    predictions = cnn(val_images.to(device)).argmax(dim=1).cpu()
show_images(val_images, val_labels[:16], classes=val_set.classes, predictions=predictions,
            mean=mean.tolist(), std=std.tolist(),
            title="validation images, titled prediction (label): green right, red wrong")
plt.show()

# %% [markdown]
# ### Pitfall: labels that belong to other images
#
# Images and labels often live in two places (a folder of files and a CSV, two arrays) and are
# paired by position. Drop one corrupt file from the image list but not from the label list, or
# sort one of the two, and every label is paired with another sample's image. Nothing crashes.
#
# Here the validation labels are shifted by one position, and the trained CNN is scored against
# them:

# %% tags=["nbval-ignore-output"]
shifted_labels = val_labels.roll(1)  # label i now belongs to image i - 1
all_val_images = val_tensors.tensors[0]
aligned_acc, shifted_acc = accuracy(cnn, all_val_images, val_labels), accuracy(cnn, all_val_images, shifted_labels)
print(f"same model, same images: labels aligned {aligned_acc:.1%}, labels shifted by one {shifted_acc:.1%}")
confirm(shifted_acc < 0.3 < aligned_acc, "labels shifted by one drop the accuracy to near chance")

# %% [markdown]
# The model did not change. The score fell to about chance (10 %) because the labels no longer
# describe the images; a model *trained* on such labels would have nothing to learn.
#
# The accuracy alone does not tell you why. One look at a batch with its labels does:

# %%
show_images(all_val_images[:16], shifted_labels[:16], classes=val_set.classes, mean=mean.tolist(),
            std=std.tolist(), title="labels shifted by one: most titles do not match their image")
plt.show()

# %% [markdown]
# ## Key points
#
# - A `Dataset` returns one sample (`__len__`, `__getitem__`); the `DataLoader` samples indices,
#   collates samples into batches and can load them in worker processes.
# - `transforms.v2`: `ToImage()` + `ToDtype(torch.float32, scale=True)` replaces `ToTensor()`;
#   v2 transforms work on a single image and on a batch tensor.
# - Normalisation statistics are fitted on the training split, per channel, and reused unchanged
#   for every other split; a different validation pipeline silently destroys the accuracy.
#   `Normalize((0.5,) * 3, (0.5,) * 3)` maps [0, 1] to [−1, 1]; it does not give mean 0 and std 1.
# - Shuffle the training loader only; `drop_last=True` on the training loader when the model has
#   BatchNorm (a batch of one fails), never on validation.
# - `num_workers` helps as far as there is waiting to overlap or idle cores to compute on:
#   measure it. Datasets used with workers belong in an importable module (spawn).
# - `pin_memory` only matters for copies to a GPU; pad variable-length sequences per batch in
#   a `collate_fn`, and keep the lengths (an RNN needs them: `pack_padded_sequence`).
# - Look at a batch with its labels before training: labels paired with the wrong images bring
#   the accuracy down to chance without any error, and are obvious in the grid.
#
# ## Further reading
#
# - PyTorch docs: [*torch.utils.data*](https://docs.pytorch.org/docs/stable/data.html) (Dataset types, samplers, `collate_fn`,
#   multi-process data loading and its platform-specific behaviours, memory pinning).
# - torchvision docs: [*Transforming and augmenting images*](https://docs.pytorch.org/vision/stable/transforms.html)
#   (transforms v2, ["Getting started with transforms v2"](https://docs.pytorch.org/vision/stable/auto_examples/transforms/plot_transforms_getting_started.html)).
# - PyTorch docs: [*torch.nn.utils.rnn.pad_sequence*](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.rnn.pad_sequence.html)
#   and [*pack_padded_sequence*](https://docs.pytorch.org/docs/stable/generated/torch.nn.utils.rnn.pack_padded_sequence.html).
# - PyTorch docs: [*BatchNorm1d*](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html) /
#   [*BatchNorm2d*](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html).
# - Next: [06 · The training loop](06_training_loop.ipynb).
