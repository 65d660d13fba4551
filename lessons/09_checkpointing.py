# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · Checkpointing: save, crash, resume — exactly
#
# Long training runs get interrupted: a preempted cloud machine, an out-of-memory kill, a power cut,
# a Ctrl-C. A good checkpoint lets you continue as if nothing had happened, and that can be
# *tested*: the resumed run must end with parameters bit-for-bit equal to an uninterrupted run.
# This notebook builds such checkpoints, proves the claim and measures what a missing piece costs.
# It also covers the file habits that save you on a bad day: atomic writes, keep-last-k,
# `map_location`, key mismatches.
#
# ## You will learn (≈ 50 min)
#
# 1. Why you save `state_dict`s, not pickled models — and why `torch.load(weights_only=True)` (the
#    default since PyTorch 2.6) protects you from files that run code.
# 2. What a **full** checkpoint holds: model, optimizer, scheduler, scaler, epoch/step, best metric
#    and every random-number generator, including the DataLoader's.
# 3. How to prove a resume is exact (in this kernel, and with one command in a fresh Python
#    process), and what a resume without optimizer, scheduler or RNG state costs (measured and
#    plotted).
# 4. How to write checkpoints atomically, keep the last *k* plus the best, and find the latest one.
# 5. How to load onto another device (`map_location`, and `assign=True` for models built on
#    `meta`) and read `load_state_dict`'s missing and unexpected keys.
# 6. Why library versions belong in a checkpoint.

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
import importlib
import inspect
import io
import os
import platform
import random
import re
import sys
import shutil
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import course_utils.checkpoint as ckpt
from course_utils.claims import confirm
from course_utils.devices import pick_device
from course_utils.exercises import check

device = pick_device()
workdir = Path(tempfile.mkdtemp(prefix="nb09-"))  # every file this notebook writes goes here
print("device:", device)

# %% [markdown]
# ## 1. A `state_dict` is named tensors — nothing else
#
# `model.state_dict()` maps each parameter **and buffer** to a tensor. (A buffer is state that the
# optimizer does not train, such as BatchNorm's running statistics.) There is no code and no class
# name in it: just names and numbers. That is why it is the thing to save.

# %%
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 2))
for name, tensor in model.state_dict().items():
    print(f"{name:22s} {str(tuple(tensor.shape)):8s} {tensor.dtype}")

# %% [markdown]
# Saving and loading is two lines. To load, you build the model **in code** (your class, your
# arguments), then pour the saved numbers into it.
#
# `load_state_dict` returns a report of which keys matched; section 10 reads it when they don't.

# %%
torch.save(model.state_dict(), workdir / "weights.pt")

rebuilt = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 2))
report = rebuilt.load_state_dict(torch.load(workdir / "weights.pt", weights_only=True))
print(report)
print("identical:", all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                          rebuilt.state_dict().values())))

# %% [markdown]
# ## 2. Pitfall: pickling the whole model
#
# `torch.save(model, path)` also works: it pickles the *object*. But a pickle does not contain your
# class's code. It contains a **reference** to it ("class `TinyNet` in module `zoo_v1`") plus the
# object's attributes. Loading re-imports that module and looks the class up by name.
#
# So rename the file, move the class, or open the checkpoint in another project, and the file is
# unusable. Let's reproduce it with a real module file, the way your project would have one.

# %%
(workdir / "zoo_v1.py").write_text(
    "from torch import nn\n\n\n"
    "class TinyNet(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n\n"
    "    def forward(self, x):\n"
    "        return self.body(x)\n")
sys.path.insert(0, str(workdir))
zoo_v1 = importlib.import_module("zoo_v1")

net = zoo_v1.TinyNet()
torch.save(net, workdir / "whole_model.pt")  # the old habit: pickle the object
torch.save(net.state_dict(), workdir / "tiny_weights.pt")  # the habit to keep
print(sorted(torch.serialization.get_unsafe_globals_in_checkpoint(workdir / "whole_model.pt")))

# %% [markdown]
# The whole-model file needs those classes at load time.
#
# **What changed in PyTorch 2.6:** `torch.load` now defaults to `weights_only=True`. That refuses
# anything but tensors, numbers, strings and containers, so the old one-liner
# `model = torch.load("model.pth")` fails right away:

# %% tags=["raises-exception"]
torch.load(workdir / "whole_model.pt")  # weights_only=True is the default now

# %% [markdown]
# Suppose we trust the file and opt out with `weights_only=False`, the pre-2.6 behaviour. It would
# work today. But then the project is refactored: `zoo_v1.py` becomes `zoo_v2.py`, and a new Python
# session has never imported `zoo_v1`:

# %%
(workdir / "zoo_v1.py").rename(workdir / "zoo_v2.py")  # the refactor
del sys.modules["zoo_v1"]  # what a new session looks like
importlib.invalidate_caches()

# %% tags=["raises-exception", "deprecated-on-purpose"]
torch.load(workdir / "whole_model.pt", weights_only=False)  # trusting our own file, still fails

# %% [markdown]
# The `state_dict` does not care where the class lives. Build the model from the new module, load
# the numbers, and the outputs are the same:

# %%
zoo_v2 = importlib.import_module("zoo_v2")
net2 = zoo_v2.TinyNet()
print(net2.load_state_dict(torch.load(workdir / "tiny_weights.pt", weights_only=True)))
x = torch.randn(3, 4)
print("same outputs:", torch.equal(net(x), net2(x)))
for name in ("whole_model.pt", "tiny_weights.pt"):
    print(f"{name:16s} {(workdir / name).stat().st_size:6d} bytes")


# %% [markdown]
# The sizes are measured: here the pickled object costs about 1.2 KB more than its weights (the
# module tree and its attributes). For a real model with megabytes of weights that is negligible.
# So size is not the real argument against pickling the model; the coupling to your code is, and so
# is the safety problem below.
#
# ## 3. Why `weights_only=True` matters: a pickle can run code
#
# A pickle is a small program for a stack machine. One of its instructions is "call this function
# with these arguments": that is how objects describe their reconstruction (`__reduce__`).
#
# Loading a pickle with the full machinery runs those calls, whatever they are. So a checkpoint
# downloaded from the internet can run `os.system(...)` on your machine the moment you load it.
#
# Here is a harmless stand-in: an object whose reconstruction calls `print`.

# %%
class Surprise:
    """Harmless stand-in for a malicious payload: unpickling it calls print(...)."""

    def __reduce__(self):
        return (print, ("!!! this ran while loading; it could have been os.system(...) !!!",))


torch.save({"weights": torch.ones(2), "payload": Surprise()}, workdir / "downloaded.pt")
print(sorted(torch.serialization.get_unsafe_globals_in_checkpoint(workdir / "downloaded.pt")))

# %% [markdown]
# `weights_only=True` uses a restricted unpickler. It only rebuilds tensors and plain containers,
# and refuses every other global *before* calling it:

# %% tags=["raises-exception"]
torch.load(workdir / "downloaded.pt", weights_only=True)

# %% [markdown]
# Only to *see* the danger, here is the pre-2.6 default. Never do this with a file you did not
# write:

# %% tags=["deprecated-on-purpose"]
loaded = torch.load(workdir / "downloaded.pt", weights_only=False)
print("payload after loading:", loaded["payload"])  # None: print(...) was called during loading

# %% [markdown]
# Habits:
#
# - save only `state_dict`s, numbers, strings, lists/dicts and tensors; then `weights_only=True` just works;
# - to inspect a file without running it: `torch.serialization.get_unsafe_globals_in_checkpoint(path)`;
# - if your checkpoint really must hold one of your own classes, allow exactly that class:
#   `with torch.serialization.safe_globals([MyClass]): torch.load(path, weights_only=True)`.
#
# ## 4. What a full checkpoint holds
#
# Weights are not enough to *continue* training. Everything that influences the next step must be
# saved:
#
# | entry | why |
# |---|---|
# | `model.state_dict()` | parameters and buffers |
# | `optimizer.state_dict()` | Adam's per-parameter moments `exp_avg`, `exp_avg_sq`, its `step` count, and the current learning rate (it lives in `param_groups`) |
# | `scheduler.state_dict()` | where the LR schedule is (`last_epoch` counts scheduler steps) |
# | `scaler.state_dict()` | with fp16 AMP: `GradScaler`'s current loss scale (notebook 08) |
# | epoch, step, best metric | loop counters, and what "best" means so far |
# | RNG states | torch (CPU and each GPU), NumPy, Python `random`, and the DataLoader's `torch.Generator` |
# | library versions | which Python, PyTorch and NumPy wrote the file (section 11 shows why) |
#
# Our run, in `course_utils.resume_demo`, has all of these:
#
# - Adam, and a `OneCycleLR` schedule stepped after every batch;
# - Dropout, which draws from torch's global RNG;
# - a DataLoader that shuffles with its own generator;
# - a dataset whose augmentation uses NumPy and Python `random`.

# %%
from course_utils.resume_demo import ToyData, build, full_loss, train

print(inspect.getsource(ToyData.__getitem__))

# %%
run = build(seed=0, epochs=6)  # model, Adam, OneCycleLR, DataLoader(shuffle=True, generator=...)
print(run.model)
print(f"{type(run.optimizer).__name__}, {type(run.scheduler).__name__}, {len(run.loader)} batches per epoch")
losses = train(run, epochs=3)
print(f"after epoch {run.epoch} (step {run.step}): last batch loss {losses[-1]:.4f}")

# %% [markdown]
# Look inside the optimizer's state: two tensors per parameter, each as large as the parameter, and
# a step count. The learning rate the scheduler has set is stored there too.

# %%
opt_state = run.optimizer.state_dict()
first = opt_state["state"][0]
print({k: tuple(v.shape) if v.dim() else v.item() for k, v in first.items()})
group = opt_state["param_groups"][0]
print(f"lr now {group['lr']:.4g} (schedule starts at {group['initial_lr']:.4g}, peaks at {group['max_lr']:.4g})")
print("scheduler steps taken:", run.scheduler.state_dict()["last_epoch"])

# %% [markdown]
# With fp16 mixed precision on a GPU (notebook 08), the `GradScaler`'s state belongs in the
# checkpoint too: its current loss scale took many steps to find.
#
# Here is everything together. `course_utils.checkpoint.make_checkpoint` builds the training state;
# the library versions are one more plain dict on top:

# %%
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")  # fp16 AMP runs on GPUs
full = ckpt.make_checkpoint(run.model, run.optimizer, run.scheduler,
                            scaler if scaler.is_enabled() else None,
                            epoch=run.epoch, step=run.step, best_metric=None, generator=run.generator)
full["versions"] = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__}
print("GradScaler enabled:", scaler.is_enabled())
print(sorted(full))

# %% [markdown]
# Without a GPU, fp16 AMP is off, so there is no `scaler` entry: 8 keys. With it, there are 9.
#
# ### RNG state: five entries, one weights_only-friendly dict
#
# NumPy's own `np.random.get_state()` returns a tuple holding an `ndarray`, which `weights_only=True`
# refuses to unpickle:

# %% tags=["raises-exception"]
torch.save({"numpy_rng": np.random.get_state()}, workdir / "np_state.pt")
torch.load(workdir / "np_state.pt", weights_only=True)

# %% [markdown]
# `course_utils.checkpoint.capture_rng_state(generator)` stores every generator as tensors and plain
# numbers; `restore_rng_state` puts them back.
#
# Proof that it captures them all: draw from each, restore, draw again.
#
# The first line of output lists the five entries of the captured state:
#
# - `torch`: torch's global CPU generator (Dropout draws from it);
# - `cuda`: one state per GPU, an empty list on a machine without one;
# - `numpy`: NumPy's global generator;
# - `python`: Python's `random`;
# - `generator`: the DataLoader's own `torch.Generator` (the shuffle order).
#
# So four generators are drawn from below (torch, NumPy, `random` and the DataLoader's), plus the
# GPU entry, which is empty here.

# %%
from course_utils.checkpoint import capture_rng_state, restore_rng_state

state = capture_rng_state(run.generator)
print({k: type(v).__name__ for k, v in state.items()})


def draw():
    return (round(torch.rand(1).item(), 4), round(np.random.rand(), 4), round(random.random(), 4),
            torch.randint(0, 100, (3,), generator=run.generator).tolist())


before = draw()
restore_rng_state(state, run.generator)
after = draw()
print(before)
print(after)
print("same draws after restoring:", before == after)

# %% [markdown]
# ## 5. Atomic writes: a crash must never cost you the last good checkpoint
#
# `torch.save(obj, "last.pt")` first **truncates** `last.pt`, then writes the new bytes. If the
# process dies in between, `last.pt` holds half a file: the new checkpoint is incomplete *and* the
# old one is gone. Here is exactly what such a crash leaves behind:

# %%
path = workdir / "last.pt"
torch.save({"step": 100, "w": torch.randn(1000)}, path)  # yesterday's good checkpoint
new = io.BytesIO()
torch.save({"step": 200, "w": torch.randn(1000)}, new)
with open(path, "wb") as f:  # what torch.save(obj, path) does: truncate, then write ...
    f.write(new.getvalue()[: len(new.getvalue()) // 2])  # ... and the process is killed here
print(f"{path.name}: {path.stat().st_size} bytes of {len(new.getvalue())}")

# %% tags=["raises-exception"]
torch.load(path, weights_only=True)


# %% [markdown]
# The fix is a classic from databases and editors: **write somewhere else, then rename.**
#
# 1. write to a temp file *in the same folder* (`path.with_name(path.name + ".tmp")`): `open(tmp, "wb")`,
#    `torch.save(obj, f)`;
# 2. `f.flush()` and `os.fsync(f.fileno())`, so the bytes are on disk, not just in a buffer;
# 3. `os.replace(tmp, path)`: a rename within one filesystem is **atomic** — anyone opening `path`
#    sees the complete old file or the complete new one, never a mix (this is why the temp file
#    must be in the same folder: across filesystems a "rename" is a copy, or fails);
# 4. for durability across a power cut, also fsync the folder (`course_utils.checkpoint.atomic_save`
#    does this).
#
# If the process dies during step 1 or 2, only a stray `.tmp` file is left, and the previous
# checkpoint is untouched.
#
# This notebook does not kill a process, but the course's unit test
# `test_sigkill_in_the_middle_of_a_save_keeps_the_previous_checkpoint` (in
# `tests/test_checkpoint.py`) does. It SIGKILLs a process in the middle of writing a 64 MB
# checkpoint with `atomic_save`. Afterwards it finds a stray temp file, and the previous checkpoint
# intact and loadable.
#
# ### Exercise 1 — `save_checkpoint`
#
# Write the full checkpoint of section 4 (a dict with the seven keys below) and write it atomically
# to `path`, which may be a `str` or a `Path`; the function returns nothing. The checker loads your
# file with `weights_only=True`, resumes a real run from it and compares with an uninterrupted run,
# and watches whether the file arrives by `os.replace` after the temp file was flushed and `os.fsync`-ed.
#
# The seven keys leave out `versions` (and `scaler`, as there is no fp16 AMP here): a resume does
# not read them, so a resume cannot test them. In your own training code, add the `versions` entry
# as section 4 does.

# %%
def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    """Write {'model', 'optimizer', 'scheduler' (state_dicts), 'epoch', 'step', 'best_metric',
    'rng': capture_rng_state(generator)} atomically to `path` (a str or a Path)."""
    ### BEGIN SOLUTION
    path = Path(path)
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": epoch,
        "step": step,
        "best_metric": best_metric,
        "rng": capture_rng_state(generator),
    }
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    ### END SOLUTION
    ### BEGIN STUB
    # # 1. checkpoint = {...}  with the seven keys
    # # 2. write it to a temp file next to `path`, flush, os.fsync, then os.replace onto `path`
    # raise NotImplementedError("build the dict, then write it atomically")
    ### END STUB


# %%
check("09.save_checkpoint", save_checkpoint)


# %% [markdown]
# ### Exercise 2 — `load_checkpoint`
#
# The other half: load with `weights_only=True` and the `map_location` you are given (a device, a
# mapping or a function; section 9 shows why a checkpoint from a GPU machine needs it), restore the
# model, optimizer,
# scheduler and all RNG states (`restore_rng_state(checkpoint["rng"], generator)`), and return the
# checkpoint dict (the caller reads `epoch`, `step` and `best_metric` from it). `path` may be a `str`
# or a `Path`. The checker runs your loader on freshly built objects in a scrambled random state,
# inspects everything, then trains on.

# %%
def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
    """Restore everything save_checkpoint wrote; return the checkpoint dict."""
    ### BEGIN SOLUTION
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    restore_rng_state(checkpoint["rng"], generator)
    return checkpoint
    ### END SOLUTION


# %%
check("09.load_checkpoint", load_checkpoint)

# %% [markdown]
# ## 6. The proof: interrupt, resume from nothing but the file, compare
#
# The claim "resuming is exact" is cheap to test, so test it:
#
# 1. train 6 epochs straight through;
# 2. separately, train 3 epochs, save a checkpoint, and throw that run away (the "crash");
# 3. start from scratch — a new model with other initial weights, a new optimizer, scheduler and
#    DataLoader, every random generator seeded differently — load the checkpoint, train the
#    remaining 3 epochs;
# 4. compare the final parameters with `torch.equal` (bit for bit, not "close").
#
# From here on the notebook uses `course_utils.checkpoint`: the same logic as your two functions.

# %%
N_EPOCHS, K = 6, 3

straight = build(seed=0, epochs=N_EPOCHS)
straight_log = {}
_ = train(straight, N_EPOCHS, log=straight_log)

interrupted = build(seed=0, epochs=N_EPOCHS)
_ = train(interrupted, K)
ckpt_path = ckpt.save_checkpoint(workdir / f"epoch-{K}.pt", interrupted.model, interrupted.optimizer,
                                 interrupted.scheduler, epoch=interrupted.epoch, step=interrupted.step,
                                 generator=interrupted.generator)
del interrupted  # the crash
print("saved", ckpt_path.name)


# %% [markdown]
# Step 3 is a function, because section 7 reuses it with pieces left out. `build(seed=12345)` gives
# other initial weights and seeds every generator differently. Nothing of the interrupted run
# survives except the file.

# %%
def resume(load_optimizer=True, load_scheduler=True, restore_rng=True):
    """A fresh run (other weights, other random state) continued from the checkpoint."""
    run = build(seed=12345, epochs=N_EPOCHS)
    meta = ckpt.load_checkpoint(ckpt_path, run.model,
                                optimizer=run.optimizer if load_optimizer else None,
                                scheduler=run.scheduler if load_scheduler else None,
                                generator=run.generator if restore_rng else None,
                                restore_rng=restore_rng)
    run.epoch, run.step = meta["epoch"], meta["step"]
    log = {}
    train(run, N_EPOCHS - K, log=log)
    return run, log


exact_run, exact_log = resume()
print(f"resumed at epoch {K}, trained on to epoch {exact_run.epoch} (step {exact_run.step})")
identical = all(torch.equal(a, b) for a, b in zip(straight.model.parameters(), exact_run.model.parameters()))
print("parameters identical to the uninterrupted run (torch.equal):", identical)

# %% [markdown]
# **In a separate process.** The strictest version runs step 3 in a new Python process, so that no
# state hidden anywhere in this kernel can help. `course_utils.resume_demo` is that process. To run
# it, paste this into a new cell right below the one above (the checkpoint lives in this notebook's
# temporary work folder, which the last section removes):
#
# ```python
# import subprocess
# import course_utils
#
# child = subprocess.run(
#     [sys.executable, "-m", "course_utils.resume_demo", "--resume", str(ckpt_path),
#      "--epochs", "3", "--total-epochs", "6", "--out", str(workdir / "final.pt")],
#     cwd=Path(course_utils.__file__).parents[1],  # the folder that holds course_utils
#     capture_output=True, text=True)
# print(child.stdout + child.stderr)
# final = torch.load(workdir / "final.pt", weights_only=True)
# print("identical:", all(torch.equal(a, b) for a, b in
#                         zip(straight.model.state_dict().values(), final["model"].values())))
# ```
#
# `sys.executable` is this kernel's Python, `ckpt_path` the file the cell above saved, and `cwd`
# lets the new process import `course_utils`. It prints `fresh process: resumed at epoch 3, step 24`,
# then `fresh process: trained to epoch 6, step 48; wrote final.pt`, then `identical: True`. It takes
# a few seconds: the new process imports PyTorch first.
#
# The course's unit test `test_resume_in_a_fresh_process_is_bit_exact` (in
# `tests/test_checkpoint.py`) runs the same command on a shorter schedule: a checkpoint after
# epoch 2 of 4 (`--epochs 2 --total-epochs 4`). It finds the final parameters `torch.equal` to an
# uninterrupted run in the test process.
#
# The notebook does not run this cell itself. A second Python process that imports PyTorch costs
# about as much memory as this kernel's own `import torch` (about 650 MB resident for the CUDA
# build), which is more than the notebook's memory budget allows.
#
# Two details make the proof work (and break it when forgotten):
#
# - the checkpoint is taken at an **epoch boundary**. The DataLoader draws the whole epoch's shuffle
#   order from its generator when the epoch starts. To resume mid-epoch you would also save the
#   batch index, the loader's generator as it was at the epoch start, and the global RNG states at
#   the interruption. Skipping the finished batches by iterating the *loader* is not exact on its
#   own: it runs `__getitem__`, whose augmentation draws from the global RNGs. Either skip at the
#   sampler level (iterate the batch sampler, which loads nothing), or restore the global RNG states
#   saved at the interruption *after* skipping;
# - the resumed run uses the same number of threads (1 here and in `resume_demo`): sums split over
#   several threads can round differently (notebook 10), which is "equal to 1e-7", not bit-equal.
#
# ## 7. What a partial resume costs
#
# Now resume from the same checkpoint with one piece missing at a time. Compare the loss curves
# (full training-set loss after every step) and the learning rates with the uninterrupted run.

# %%
resumed = {
    "exact resume": (exact_run, exact_log),
    "no optimizer state": resume(load_optimizer=False),
    "no scheduler state": resume(load_scheduler=False),
    "no RNG state": resume(restore_rng=False),
}

# %%
at = K * len(straight.loader)  # step at which training resumed
print(f"{'run':20s} {'peak loss, 10 steps after resume':>33s} {'final loss':>11s}  identical")
print(f"{'uninterrupted':20s} {max(straight_log['loss'][at:at + 10]):33.4f} {straight_log['loss'][-1]:11.4f}")
for name, (run, log) in resumed.items():
    same = all(torch.equal(a, b) for a, b in zip(straight.model.parameters(), run.model.parameters()))
    print(f"{name:20s} {max(log['loss'][:10]):33.4f} {log['loss'][-1]:11.4f}  {same}")

# %%
fig, (ax_loss, ax_lr) = plt.subplots(1, 2, figsize=(10, 3.4))
steps = range(1, len(straight_log["loss"]) + 1)
ax_loss.plot(steps, straight_log["loss"], color="black", lw=2.5, label="uninterrupted")
ax_lr.plot(steps, straight_log["lr"], color="black", lw=2.5)
for name, (run, log) in resumed.items():
    after = range(at + 1, at + len(log["loss"]) + 1)
    style = dict(ls="--", lw=1.5) if name == "exact resume" else dict(lw=1.2)
    ax_loss.plot(after, log["loss"], label=name, **style)
    ax_lr.plot(after, log["lr"], **style)
for ax in (ax_loss, ax_lr):
    ax.axvline(at, color="gray", ls=":")
    ax.set_xlabel("step")
ax_loss.set(yscale="log", ylabel="training-set loss", title="loss after each step")
ax_lr.set(ylabel="learning rate", title="learning rate used")
ax_loss.legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# What the numbers and curves show on this run:
#
# - **exact resume** lies on top of the uninterrupted curve, and the parameters are identical.
# - **no optimizer state** gives the biggest jump, about 3× the uninterrupted loss. Adam restarts
#   with zero moments, and the normalised update of a fresh Adam is about ±`lr` in *every*
#   coordinate, instead of the small steps its accumulated statistics had settled on. This is the
#   jump practitioners warn about, measured. (The fresh optimizer also uses its initial LR for one
#   step, until the restored scheduler's next `step()` writes the right one: the dip in the right
#   panel.)
# - **no scheduler state**: the LR is right for one step, then the fresh `OneCycleLR` starts its
#   warm-up again. The LR climbs back to its peak in what should have been the cool-down, and the
#   loss leaves the uninterrupted curve.
# - **no RNG state**: other batches, other dropout masks, other augmentation noise. At this learning
#   rate that alone moves the model visibly (a smaller bump here). Above all, it is no longer the
#   same run: not reproducible, and not comparable with the uninterrupted one.
#
# How large each effect is depends on the model, the optimizer and where you resume; on this small
# problem all runs end at similar losses. The point is that only the full checkpoint gives you the
# *same* run.
#
# ## 8. Keep the last k, plus the best
#
# Saving every epoch fills a disk; keeping only one file risks losing everything to one bad save or
# one bad epoch. The usual policy: keep the newest *k* checkpoints and, separately, the best one so
# far.
#
# `CheckpointManager` does that:
#
# - it writes `ckpt-<step>.pt` atomically;
# - it updates `best.pt` when the metric improves;
# - it deletes the oldest files beyond `keep_last`.
#
# We use the training-set loss as the metric here; in a real run, use your validation metric.

# %%
manager = ckpt.CheckpointManager(workdir / "run1", keep_last=3, mode="min")
run = build(seed=0, epochs=N_EPOCHS)
for _ in range(N_EPOCHS):
    train(run, 1)
    metric = full_loss(run)
    best = metric if manager.best_metric is None else min(metric, manager.best_metric)
    state = ckpt.make_checkpoint(run.model, run.optimizer, run.scheduler, epoch=run.epoch,
                                 step=run.step, best_metric=best, generator=run.generator)
    manager.save(state, step=run.step, metric=metric)
    print(f"epoch {run.epoch}: loss {metric:.4f} ->", sorted(p.name for p in manager.folder.iterdir()))

# %% [markdown]
# A save that was killed leaves a temp file behind. So the "latest checkpoint" lookup must only
# accept names it wrote completely: the temp file is ignored.

# %%
(manager.folder / ".ckpt-00000056.pt.k3x9.tmp").write_bytes(b"PK\x03\x04 half a checkpoint")
print(sorted(p.name for p in manager.folder.iterdir()))
print("latest:", manager.latest().name, "| best:", manager.best().name)
print("best metric stored:", round(torch.load(manager.best(), weights_only=True)["best_metric"], 4))


# %% [markdown]
# ### Exercise 3 — `latest_checkpoint`
#
# Another training script saved `epoch-1.pt`, `epoch-2.pt`, ..., `epoch-12.pt` (no zero padding),
# plus `best.pt`, notes, and temp files from interrupted saves. Return the full `Path` (folder
# included) of the finished checkpoint with the highest epoch, or `None` when there is none yet (a
# new run's folder is empty); `folder` may be a `str` or a `Path`. Careful: as text,
# `"epoch-9.pt" > "epoch-10.pt"`, and file modification times change when files are copied.

# %%
def latest_checkpoint(folder):
    """Path of the epoch-<n>.pt in `folder` with the highest n; None if there is none."""
    ### BEGIN SOLUTION
    found = []
    for p in Path(folder).iterdir():
        match = re.fullmatch(r"epoch-(\d+)\.pt", p.name)
        if match:
            found.append((int(match.group(1)), p))
    return max(found)[1] if found else None
    ### END SOLUTION


# %%
check("09.latest_checkpoint", latest_checkpoint)

# %% [markdown]
# ## 9. `map_location`: loading on another device
#
# A saved tensor remembers the device it lived on. A checkpoint written on a GPU machine says
# `cuda:0`, and loading it on a laptop without CUDA fails.
#
# To show this on any machine, `ckpt.saved_as_if_on("cuda:0")` makes `torch.save` label the tensors
# exactly as a GPU machine would (only that label in the file changes). On a machine with a GPU the
# load below succeeds and the cell shows no error. The `RuntimeError` is what a colleague without
# CUDA sees:

# %%
with ckpt.saved_as_if_on("cuda:0"):
    torch.save(model.state_dict(), workdir / "from_gpu_machine.pt")

# %% tags=["raises-exception"]
torch.load(workdir / "from_gpu_machine.pt", weights_only=True)  # on a machine without CUDA

# %% [markdown]
# `map_location` says where to put the tensors while loading. It takes a device (`"cpu"`, your
# `device` variable), or a mapping such as `{"cuda:0": "cuda:1"}`. A mapping is handy when each
# process of a multi-GPU job loads onto its own GPU.

# %%
state = torch.load(workdir / "from_gpu_machine.pt", map_location="cpu", weights_only=True)
print({name: str(t.device) for name, t in list(state.items())[:2]})
state = torch.load(workdir / "from_gpu_machine.pt", map_location=device, weights_only=True)
print(model.load_state_dict(state))


# %% [markdown]
# Good to know: `load_state_dict` *copies* into the model's existing tensors, so the model stays on
# its own device whatever `map_location` was. `optimizer.load_state_dict` moves its state to its
# parameters' device.
#
# So `map_location` mostly decides **where the loaded copy takes memory**. Loading a big checkpoint
# straight onto one GPU can run that GPU out of memory: load to `"cpu"` when in doubt.
#
# **Large models: build on `meta`, load with `assign=True`.** Building a model allocates and
# initialises every weight, only for the checkpoint to overwrite them. On the `meta` device a model
# has shapes and dtypes but no data at all. Copying into such tensors is a no-op (PyTorch warns and
# points to the fix):

# %%
with torch.device("meta"):
    skeleton = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 2))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    skeleton.load_state_dict(state)  # copies into tensors without data: nothing happens
print(f"{len(caught)} warnings, the first: {caught[0].message}")
print("after a copying load:", skeleton[0].weight.device)

# %% [markdown]
# `load_state_dict(state, assign=True)` does not copy: the loaded tensors *become* the model's
# parameters and buffers. (The parameters stay `nn.Parameter`s that require gradients.) So here,
# unlike above, `map_location` decides where the model lives, and there is only one copy of the
# weights:

# %%
state = torch.load(workdir / "from_gpu_machine.pt", map_location=device, weights_only=True)
skeleton.load_state_dict(state, assign=True)
print("after assign=True:", skeleton[0].weight.device, "| a Parameter:",
      isinstance(skeleton[0].weight, nn.Parameter), "| requires_grad:", skeleton[0].weight.requires_grad)
print("shares the loaded tensor's memory:", skeleton[0].weight.data_ptr() == state["0.weight"].data_ptr())

# %% [markdown]
# Two things `assign=True` changes for the code around the load.
#
# **Build the optimizer after the load.** The load *replaces* the model's `Parameter` objects. An
# optimizer created before it still holds the old ones: the data-less `meta` tensors. Its steps
# then update nothing, and nothing tells you. So with `assign=True`, create the optimizer after
# `load_state_dict`, and only then call `optimizer.load_state_dict(...)`. (The `load_checkpoint` of
# section 5 receives an optimizer built before the load; that is right for its copying load, not
# for this one.)

# %%
with torch.device("meta"):
    early = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 2))
optimizer_before = torch.optim.SGD(early.parameters(), lr=0.1)  # the wrong order
early.load_state_dict(state, assign=True)
optimizer_after = torch.optim.SGD(early.parameters(), lr=0.1)  # the right order
for name, opt in {"built before the load": optimizer_before, "built after the load": optimizer_after}.items():
    held = opt.param_groups[0]["params"][0]
    print(f"optimizer {name}: holds the model's weight: {held is early[0].weight} (its tensor is on {held.device})")

# %% [markdown]
# **Buffers that are not in the file.** A buffer registered with `persistent=False` is not part of
# the state dict, so no load fills it: after an `assign=True` load it is still on `meta`. For a
# model with such buffers, call `model.to_empty(device=device)` first (real, but uninitialised,
# memory for every tensor). Then load with an ordinary copying `load_state_dict`, and re-create the
# non-persistent buffers yourself, as the module's `__init__` did.

# %% [markdown]
# ## 10. Reading `load_state_dict`'s missing and unexpected keys
#
# After a refactor, keys stop matching. Version 1 of a classifier had a `head`. Version 2 renamed it
# `classifier` and added an auxiliary output `aux`.

# %%
class ClassifierV1(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 2)


class ClassifierV2(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, hidden), nn.ReLU())
        self.classifier = nn.Linear(hidden, 2)  # renamed from head
        self.aux = nn.Linear(hidden, 1)  # new


old_state = ClassifierV1().state_dict()
v2 = ClassifierV2()

# %% [markdown]
# `strict=True` (the default) refuses, and its message is the diagnosis:
#
# - **missing** keys are in the model but not in the file: they would stay randomly initialised;
# - **unexpected** keys are in the file but not in the model: they would be dropped.

# %% tags=["raises-exception"]
v2.load_state_dict(old_state)

# %% [markdown]
# `strict=False` loads what matches and *returns* the same lists. Read them; never ignore them.

# %%
result = v2.load_state_dict(old_state, strict=False)
print("missing:   ", result.missing_keys)
print("unexpected:", result.unexpected_keys)

# %% [markdown]
# Here the report says the trained head was **not** loaded: `classifier` is still random. Map the
# renamed keys, and only the genuinely new layer remains missing, which is what we want:

# %%
renamed = {("classifier." + k.removeprefix("head.")) if k.startswith("head.") else k: v
           for k, v in old_state.items()}
result = v2.load_state_dict(renamed, strict=False)
print("missing:   ", result.missing_keys)
print("unexpected:", result.unexpected_keys)
print("head loaded:", torch.equal(v2.classifier.weight, old_state["head.weight"]))

# %% [markdown]
# `strict=False` does not help when a tensor's **shape** changed (say the hidden size went from 8 to
# 16). That is always an error: there is no sensible way to pour 8 rows into 16.

# %% tags=["raises-exception"]
ClassifierV2(hidden=16).load_state_dict(renamed, strict=False)

# %% [markdown]
# A very common mismatch: wrappers add a prefix to every key.
#
# - `nn.DataParallel` and `DistributedDataParallel` (notebook 13) keep your model as `.module`, so
#   their keys start with `module.`;
# - a model returned by `torch.compile` keeps it as `._orig_mod`, so its keys start with
#   `_orig_mod.`.
#
# Load such a file into the bare model and *every* key is missing and unexpected.

# %%
wrapped = nn.DataParallel(ClassifierV1())  # on a CPU it simply wraps the model
print(list(wrapped.state_dict())[:3])
result = ClassifierV1().load_state_dict(wrapped.state_dict(), strict=False)
print(len(result.missing_keys), "missing,", len(result.unexpected_keys), "unexpected")

# %% [markdown]
# The two ways to compile a model differ here:
#
# - `compiled = torch.compile(model)` returns a new object that wraps your model as
#   `compiled._orig_mod`: its keys are `_orig_mod.features.0.weight` and so on;
# - `model.compile()` (PyTorch 2.2 and later) compiles the model's forward in place. It leaves the
#   model, and its keys (`features.0.weight`, ...), as they are: the simplest way to keep the prefix
#   out of your checkpoints.
#
# With the wrapper, save `compiled._orig_mod.state_dict()`, or clean the keys when loading.
#
# Not run here: even though compilation waits for the first call, the first `torch.compile` in a
# process loads the compiler's Python modules, which takes several seconds. Notebook 11, which loads
# them anyway, prints both sets of keys.


# %% [markdown]
# ### Exercise 4 — `clean_state_dict`
#
# Return a **new** dict with the prefixes `module.` and `_orig_mod.` removed from the *start* of every
# key (both may be stacked, in either order), values and order unchanged. Do not edit the caller's
# dict. (PyTorch has `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present` for one prefix;
# note that it edits the dict in place.)

# %%
def clean_state_dict(state_dict):
    """A new dict whose keys have no leading 'module.' / '_orig_mod.' prefixes."""
    ### BEGIN SOLUTION
    cleaned = {}
    for key, value in state_dict.items():
        while key.startswith(("module.", "_orig_mod.")):
            key = key.removeprefix("module.").removeprefix("_orig_mod.")
        cleaned[key] = value
    return cleaned
    ### END SOLUTION


# %%
check("09.clean_state_dict", clean_state_dict)

# %% [markdown]
# ## 11. When the libraries change
#
# A checkpoint is read by code, and that code includes the libraries: the same file can stop
# loading after an upgrade.
#
# A common case: a metric computed with NumPy (`np.mean(...)`) is a `np.float64`, not a Python
# `float`. A checkpoint that stores it stores a NumPy object:

# %%
best = np.float64(0.25)  # what np.mean(...) returns: a NumPy scalar
torch.save({"model": model.state_dict(), "best_metric": best}, workdir / "numpy_metric.pt")
print(sorted(torch.serialization.get_unsafe_globals_in_checkpoint(workdir / "numpy_metric.pt")))

# %% [markdown]
# Two library versions now decide whether this file loads. The first is PyTorch's. Before
# PyTorch 2.6, `torch.load(path)` read it; with today's default, `weights_only=True`, the same line
# refuses it:

# %% tags=["raises-exception"]
torch.load(workdir / "numpy_metric.pt")  # worked before PyTorch 2.6

# %% [markdown]
# And the NumPy version is in the file too. `numpy._core` is that module's name since NumPy 2.0
# (before, it was `numpy.core`). So a machine with NumPy older than 1.26 cannot load this file, even
# with `weights_only=False`. It fails with `ModuleNotFoundError: No module named 'numpy._core'`, a
# well-known error from the NumPy 2.0 transition.
#
# NumPy 1.26 ships a partial `numpy._core` for this transition. It reads common pickles but not all:
# some fail with `No module named 'numpy._core.numeric'`. (Not run here: one kernel has one NumPy.)
#
# Two habits:
#
# - store plain Python values (`float(best)`, `int(epoch)`);
# - write the library versions into the checkpoint. When a load fails or results differ, the first
#   question ("which versions wrote this?") then has an answer.
#
# Here a checkpoint written on an older machine is read on this one:

# %%
def library_versions() -> dict[str, str]:
    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__}


def report_version_differences(saved: dict[str, str]) -> list[str]:
    """Print and return one line per library whose version differs from this machine's."""
    now = library_versions()
    differ = [f"{name}: written with {saved[name]}, loading with {now.get(name)}"
              for name in saved if saved[name] != now.get(name)]
    for line in differ:
        print("version differs ->", line)
    return differ


older_machine = {**library_versions(), "torch": "2.5.1", "numpy": "1.26.4"}  # as that machine wrote it
torch.save({"model": model.state_dict(), "best_metric": float(best), "versions": older_machine},
           workdir / "with_versions.pt")
loaded = torch.load(workdir / "with_versions.pt", weights_only=True)  # plain values: loads fine
differences = report_version_differences(loaded["versions"])
confirm(len(differences) == 2 and loaded["best_metric"] == 0.25,
        "the two changed libraries are reported, and the plain float best_metric loads with weights_only=True")

# %% [markdown]
# The checkpoints have served their purpose. Remove this notebook's work folder, so that running
# the notebook again and again leaves nothing behind:

# %%
shutil.rmtree(workdir)
print("work folder removed:", not workdir.exists())

# %% [markdown]
# ## Key points
#
# - Save `state_dict`s (named tensors), not pickled objects: a pickle references your classes by
#   module and name and breaks when code moves. Build the model in code, then `load_state_dict`.
# - `torch.load(..., weights_only=True)` (the default since 2.6) refuses anything that could run code.
#   Keep checkpoints to tensors, numbers, strings and containers, and it always works.
# - A full checkpoint = model + optimizer + scheduler (+ scaler) + epoch/step + best metric + every RNG
#   (torch, CUDA, NumPy, Python, the DataLoader's generator). Prove resumes with `torch.equal`
#   against an uninterrupted run.
# - Missing optimizer state makes Adam restart (loss jump); a missing scheduler restarts the LR
#   schedule; missing RNG state gives a different, unreproducible run.
# - Write atomically: temp file in the same folder, flush + fsync, `os.replace`. Keep the last *k*
#   plus the best; look up the latest by parsed step number, ignoring temp files.
# - `map_location` decides where loaded tensors go; with a model built on `meta` and
#   `load_state_dict(..., assign=True)` it decides where the model lives. After such a load, build
#   the optimizer (then load its state); re-create non-persistent buffers.
# - Read `load_state_dict`'s missing/unexpected keys, and strip `module.` / `_orig_mod.` prefixes
#   from wrapped models (`model.compile()` adds none).
# - Libraries are part of what reads a checkpoint: store plain Python values, and record the
#   library versions in the checkpoint.
#
# ## Further reading
#
# - PyTorch tutorial: [Saving and Loading Models](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html),
#   and the recipe [Saving and loading a general checkpoint in PyTorch](https://docs.pytorch.org/tutorials/recipes/recipes/saving_and_loading_a_general_checkpoint.html).
# - PyTorch docs: [Serialization semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html)
#   (`weights_only`, `safe_globals`, `mmap=True` for large files),
#   [torch.load](https://docs.pytorch.org/docs/stable/generated/torch.load.html),
#   [torch.save](https://docs.pytorch.org/docs/stable/generated/torch.save.html).
# - PyTorch docs: [torch.nn.Module.load_state_dict](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.load_state_dict),
#   [torch.optim.Optimizer.state_dict](https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.state_dict.html),
#   [torch.optim.lr_scheduler.OneCycleLR](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.OneCycleLR.html).
# - PyTorch docs: [Reproducibility](https://docs.pytorch.org/docs/stable/notes/randomness.html)
#   notes, and [torch.utils.data.DataLoader](https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
#   (`generator`).
# - PyTorch docs: [Meta device](https://docs.pytorch.org/docs/stable/meta.html) (building a model
#   without data, `to_empty`).
# - PyTorch docs: [Distributed Checkpoint](https://docs.pytorch.org/docs/stable/distributed.checkpoint.html)
#   (`torch.distributed.checkpoint`), for sharded checkpoints of models too large for one process.
# - Python docs: [os.replace](https://docs.python.org/3/library/os.html#os.replace),
#   [os.fsync](https://docs.python.org/3/library/os.html#os.fsync), and the
#   [pickle module's security warning](https://docs.python.org/3/library/pickle.html).
