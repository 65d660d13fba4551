# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 14 · Capstone: from notebook to project
#
# A notebook is the right place to explore. A training run you want to repeat, compare and hand to
# someone else belongs in a **script** with a **configuration**.
#
# This notebook assembles the course's habits into a small project, `course_utils/capstone/`. It
# has a typed configuration, filled from the command line and saved next to the outputs. Its
# training script writes structured logs (CSV and TensorBoard) and checkpoints, and resumes exactly.
# The serving code of notebook 12 then runs the trained model. You run the script from here, read
# its logs back, and check each promise with a number.
#
# ## You will learn (≈ 45 min)
#
# 1. How to keep a run's settings in a typed dataclass, fill it from the command line with
#    `argparse`, and save it as JSON so a run can be repeated.
# 2. Why the whole pipeline runs on tiny data first (a smoke test in seconds).
# 3. What to log per step (loss, learning rate, gradient norm, update/weight ratio, memory) and how
#    to read it back from CSV and TensorBoard.
# 4. How to resume from a checkpoint so the run continues exactly as if never interrupted.
# 5. How to serve the trained model and ask the training doctor about your own step.


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
import argparse
import contextlib
import dataclasses
import io
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch import nn

from course_utils.capstone import config as capstone_config
from course_utils.capstone import train as project
from course_utils.capstone.config import Config, load_config, parse_bool, save_config
from course_utils.claims import confirm
from course_utils.data import CLASSES, make_shapes
from course_utils.doctor import diagnose
from course_utils.exercises import check
from course_utils.training import read_csv_log, read_tensorboard_log

workdir = Path(tempfile.mkdtemp(prefix="nb14-"))  # every file this notebook writes goes here

# %% [markdown]
# ## 1. The configuration: a dataclass, not scattered constants
#
# Everything a run depends on lives in one place, `Config`: a dataclass with a type and a default
# for every field. The code reads its settings only from there. So two runs differ exactly by their
# configurations, and a configuration saved next to the outputs tells you later how they were made.

# %%
for field in dataclasses.fields(Config):
    print(f"{field.name:12} {type(field.default).__name__:6} default {field.default!r}")

# %% [markdown]
# The command line gives strings. `argparse` converts them only when told the type. Two
# conversions look right but are not:

# %%
loose = argparse.ArgumentParser()
loose.add_argument("--epochs", default=2)            # no type: the value stays a string
loose.add_argument("--resume", type=bool, default=False)
args = loose.parse_args(["--epochs", "3", "--resume", "False"])
print("epochs:", repr(args.epochs), "  epochs * 2 =", repr(args.epochs * 2))
print("resume:", args.resume, "  because bool('False') is", bool("False"))
print("parse_bool('False') ->", parse_bool("False"))

# %% [markdown]
# A misspelt option is the third trap. `parse_known_args` returns what it did not understand
# instead of stopping. So `--learning-rate 0.1` (the field is called `lr`) would train with the
# default rate, without a word. `parse_args` stops with a message and `SystemExit`, which is how a
# script ends on a bad command line:

# %%
strict = argparse.ArgumentParser()  # the default parser exits on a bad command line
strict.add_argument("--lr", type=float, default=0.003)
known, unknown = strict.parse_known_args(["--learning-rate", "0.1"])
print("parse_known_args: lr =", known.lr, " ignored:", unknown)
message = io.StringIO()
try:
    with contextlib.redirect_stderr(message):  # argparse writes its usage and error there
        strict.parse_args(["--learning-rate", "0.1"])
except SystemExit as stop:
    print("parse_args: stopped with SystemExit", stop.code, "and the message:")
    print(message.getvalue().splitlines()[-1].split(": ", 1)[1])

# %% [markdown]
# ### Exercise 1 — `config_from_args`
#
# Write `config_from_args(argv)`: parse the list `argv` (never `sys.argv`: in a notebook that is the
# kernel's command line) into a `Config`. One option per field, named `--name` with `-` for `_`
# (`--batch-size`), whose type and default come **from the dataclass** (`dataclasses.fields(Config)`
# and `type(field.default)`; write no default twice), booleans given as `--resume true` / `false`
# and read with `parse_bool`. An unknown option must be an error. Return the dataclass.

# %%
def config_from_args(argv: list[str]) -> Config:
    ### BEGIN SOLUTION
    parser = argparse.ArgumentParser(description="Train the course's small CNN on the shapes data.")
    for field in dataclasses.fields(Config):
        kind = type(field.default)
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(argv)))
    ### END SOLUTION


# %%
check("14.config_from_args", config_from_args)

# %% [markdown]
# The project's own version is `course_utils.capstone.config.config_from_args`. The rest of this
# notebook uses it, so it runs before you solve the exercise. The script calls it with
# `sys.argv[1:]`. The configuration goes to `config.json` in the run's folder and comes back as the
# same dataclass:

# %%
cfg = capstone_config.config_from_args(["--epochs", "5", "--lr", "0.003"])
path = save_config(cfg, workdir / "demo")
print(path.read_text())
print("loaded back equal:", load_config(workdir / "demo") == cfg)

# %% [markdown]
# ## 2. The whole pipeline on tiny data first
#
# Before the real run, run **every stage** on almost nothing: 1 epoch of 2 batches and a small
# validation set, then save, load, export and predict. It takes seconds, and a bug anywhere shows up
# now. A real run that crashes after an hour in its saving code costs an hour.
#
# This is also the order in which to grow a project: small data and the simple model first. Scale
# only once every stage works (section 4 takes the next step and measures it).
#
# Here the smoke test runs in this process (`project.train` is the function the script calls):

# %%
smoke = workdir / "smoke"
summary = project.train(capstone_config.config_from_args(["--epochs", "1", "--max-batches", "2", "--train-size", "128",
                                          "--val-size", "32", "--tensorboard", "false", "--out", str(smoke)]))
print("steps:", summary["steps"], " files:", sorted(p.name for p in smoke.iterdir()))
reloaded = project.load_model(smoke)
images, labels = make_shapes(4, seed=0, split="test")
exported = torch.export.export(reloaded, (project.to_inputs(images),))
same = torch.allclose(exported.module()(project.to_inputs(images)), reloaded(project.to_inputs(images)))
print("exported program agrees with the model:", same)
print("predictions:", project.predict(reloaded, list(images))[0])
confirm(summary["seconds"] < 60, "the smoke test runs every stage in seconds, well under a minute")

# %% [markdown]
# The predictions are nonsense after 2 steps of training. The point is that nothing crashed and
# every file exists.
#
# ## 3. What to log every step
#
# A loss curve alone rarely tells you *why* training is slow or unstable. So the script logs five
# numbers per optimizer step:
#
# - the **loss**;
# - the **learning rate** the optimizer holds (a scheduler changes it);
# - the **gradient norm**: spikes precede divergence (`clip_grad_norm_` returns it);
# - the **update/weight ratio** `‖Δw‖ / ‖w‖`: how much one step changes the weights, relative to
#   their size;
# - the **memory** in use: the process's resident memory on a CPU, the peak of
#   `torch.cuda.max_memory_allocated()` on a GPU.
#
# A common rule of thumb says the update/weight ratio should be around **1e-3**. Much smaller
# (1e-5): the weights barely move, so the learning rate is probably too low. Much larger (1e-1):
# each step rewrites the weights, so training is likely unstable.
#
# The rule is a guide, not a law: Adam in its first steps, and biases that start at zero, sit far
# from it.
#
# ### Exercise 2 — `update_ratio`
#
# Write `update_ratio(before, after)`: `before` and `after` are `{name: tensor}` dicts of the weights
# before and after one step; return `{name: ‖after − before‖ / ‖before‖}` as Python floats, with the
# L2 norm of all elements (`Tensor.norm()`). For a tensor that is all zeros before the step (a bias
# that starts at zero) keep what the tensor division gives: `inf` if it moved, `nan` if it did not
# (no `+ eps`: there is no scale to compare with). Do not change the tensors.

# %%
def update_ratio(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> dict[str, float]:
    ### BEGIN SOLUTION
    return {name: ((after[name] - w).norm() / w.norm()).item() for name, w in before.items()}
    ### END SOLUTION


# %%
check("14.update_ratio", update_ratio)

# %% [markdown]
# Measure the ratio for one step of plain SGD on the project's model, at three learning rates.
# `project.update_ratio` is the project's version of your function:

# %%
x, y = project.load_split("train", 64, seed=0)
for lr in (1e-5, 3e-3, 0.3):
    torch.manual_seed(0)
    model = project.build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    ratios = project.update_ratio(before, {k: p.detach() for k, p in model.named_parameters()})
    print(f"SGD lr={lr:<6g} first conv weights {ratios['0.weight']:.0e}, last layer {ratios['10.weight']:.0e}")

# %% [markdown]
# ### Exercise 3 — `log_row`
#
# Write `log_row(step, loss, optimizer, grad_norm)`, called just **after** `optimizer.step()` (and
# before the scheduler's step), returning `{"step": int, "loss": float, "lr": float, "grad_norm":
# float}`. Plain Python numbers, never tensors (a loss tensor in a list keeps its whole graph alive,
# and a CSV would read `tensor(2.3, grad_fn=...)`); the learning rate is the one in
# `optimizer.param_groups[0]["lr"]`, the rate this step used (`optimizer.defaults` keeps only the
# rate the optimizer was built with).

# %%
def log_row(step: int, loss: torch.Tensor, optimizer: torch.optim.Optimizer,
            grad_norm: torch.Tensor) -> dict[str, float | int]:
    ### BEGIN SOLUTION
    return {"step": int(step), "loss": loss.item(), "lr": float(optimizer.param_groups[0]["lr"]),
            "grad_norm": float(grad_norm)}
    ### END SOLUTION


# %%
check("14.log_row", log_row)

# %% [markdown]
# ## 4. The real run: the script's entry point
#
# The script is an ordinary module. In a terminal, a run is one command:
# `python -m course_utils.capstone.train --epochs 3 --out runs/a`. Python then calls the module's
# `main(argv)` with the words after the module name (the last two lines of `train.py`). `main`
# parses them into a `Config` and trains.
#
# Here we call the same `main` with the same words, in this process. A second Python would import
# torch and its friends again: several seconds and several hundred MB of memory, for the same code
# path. The course's own tests start the script as a separate process, exactly as a terminal does.
#
# First, what the command line accepts, from the script's own parser:

# %%
with contextlib.suppress(SystemExit):  # --help prints the options, then ends the script with status 0
    project.main(["--help"])

# %% [markdown]
# The defaults are the real run: 3 epochs over 3,000 training images in batches of 64, validated on
# 256 images after every epoch. The optimizer is Adam with a one-cycle schedule peaking at 0.01
# (notebook 06: without the warm-up, this CNN sits at chance for its first epoch).

# %%
full = workdir / "full"
status = project.main(["--out", str(full)])
print("exit status:", status, " files:", sorted(p.name for p in full.iterdir()))

# %% [markdown]
# Read the logs back. The CSV is for you and your plots. The TensorBoard event file holds the same
# numbers, for `tensorboard --logdir <run folder>`:

# %%
steps = read_csv_log(full / "steps.csv")
board = read_tensorboard_log(full / "tensorboard")
print("CSV columns:", list(steps[0]))
print("TensorBoard tags:", list(board))
print("the two logs agree on the loss:",
      all(abs(row["loss"] - value) < 1e-4 for row, (_, value) in zip(steps, board["step/loss"])))
print("memory recorded at every step:", all(row["memory_mb"] > 0 for row in steps))
for row in read_csv_log(full / "epochs.csv"):
    print(f"epoch {row['epoch']:.0f}: val_loss {row['val_loss']:.3f}, val_acc {row['val_acc']:.3f}")

# %% [markdown]
# The path this project took, in numbers: the smoke test of section 2, then the same code on the
# real amount of data. Each run's configuration sits in its `config.json`, so the comparison needs
# nothing but the two folders:

# %%
for name, folder in [("smoke test", smoke), ("full run", full)]:
    run_cfg, last = load_config(folder), read_csv_log(folder / "epochs.csv")[-1]
    print(f"{name:10}: {run_cfg.train_size:4} training images, {last['step']:3.0f} steps, "
          f"val_acc {last['val_acc']:.3f}")
confirm(last["val_acc"] > 0.8, "the default three-epoch run learns the shapes: validation accuracy above 0.8")

# %%
fig, axes = plt.subplots(1, 4, figsize=(15, 3))
step = [row["step"] for row in steps]
for ax, key in zip(axes, ["loss", "lr", "grad_norm", "update_ratio"]):
    ax.plot(step, [row[key] for row in steps])
    ax.set_title(key)
    ax.set_xlabel("step")
axes[3].axhline(1e-3, color="grey", linestyle="--", label="1e-3")
axes[3].set_yscale("log")
axes[3].legend()
fig.tight_layout()
plt.show()
ratio = [row["update_ratio"] for row in steps]
print(f"update/weight ratio: step 1 {ratio[0]:.0e}, largest {max(ratio):.0e} (step {ratio.index(max(ratio)) + 1}), "
      f"last {ratio[-1]:.0e}")

# %% [markdown]
# The ratio follows the learning rate (the numbers above):
#
# - it is already above 1e-3 at the first step, while the one-cycle schedule warms up: Adam's first
#   steps move each weight by about `lr`, whatever the gradient's size;
# - it is largest near the schedule's peak (30 % of the run);
# - then it falls by orders of magnitude as the rate is annealed towards zero.
#
# This is a short, deliberately aggressive schedule on a tiny model. In a long run, a ratio that
# stayed that far above 1e-3 would be the sign to lower the rate.
#
# ## 5. Resume: the run continues exactly
#
# `checkpoint.pt` is written after every epoch. It holds everything the next step depends on: the
# model, the optimizer (Adam's moment estimates), the scheduler, and the epoch and step counters. It
# also holds the library versions that wrote it (notebook 09: the first question when a load fails
# or results differ).
#
# The script writes `checkpoint.pt` and `model.safetensors` with `atomic_save` (notebook 09): to a
# temporary file first, then renamed over the old one. A crash mid-save leaves the previous
# checkpoint, never half a file, so `--resume true` always finds one it can load.
#
# The shuffle of every epoch comes from its own generator, seeded with `seed + epoch`. So a resumed
# run draws the same batches.
#
# Test it on a short run, 2 epochs of 512 images (16 steps), to keep it quick. Run it once without
# interruption. Then run it stopped after epoch 1 (`--stop-after 1`, as if the machine went down)
# and resume it with `--resume true`. The two must log the same losses.

# %%
short = ["--epochs", "2", "--train-size", "512", "--tensorboard", "false"]
reference, resumed, naive = workdir / "reference", workdir / "resumed", workdir / "naive"
project.main(short + ["--out", str(reference)])
project.main(short + ["--out", str(resumed), "--stop-after", "1"])
shutil.copytree(resumed, naive)  # the same interrupted run, kept for the mistake below
project.main(short + ["--out", str(resumed), "--resume", "true"])
uninterrupted, again = read_csv_log(reference / "steps.csv"), read_csv_log(resumed / "steps.csv")
print("steps logged:", len(again), "of", len(uninterrupted))
print("largest loss difference to the uninterrupted run:",
      max(abs(a["loss"] - b["loss"]) for a, b in zip(again, uninterrupted)))

# %% [markdown]
# The resumed run logs all 16 losses of the uninterrupted one, with no difference. This short run
# only checks that the steps are identical. It is too short to learn: its validation loss stays near
# ln 10 ≈ 2.303, the loss of guessing among 10 classes.
#
# Resuming only the model's weights is the classic mistake. The optimizer restarts with empty moment
# estimates, so the curve jumps. (Without the scheduler's state, the schedule would also restart from
# its first rate.) Reproduce the optimizer part on the copy of the interrupted run:

# %%
checkpoint = torch.load(naive / "checkpoint.pt", weights_only=True)
print("the checkpoint holds:", sorted(checkpoint))
checkpoint["optimizer"]["state"] = {}  # Adam's moment estimates lost, as in a fresh optimizer
torch.save(checkpoint, naive / "checkpoint.pt")
project.main(short + ["--out", str(naive), "--resume", "true"])
broken = read_csv_log(naive / "steps.csv")
print("largest loss difference, optimizer state not restored:",
      round(max(abs(a["loss"] - b["loss"]) for a, b in zip(broken, uninterrupted)), 3))

# %% [markdown]
# The resumed run without Adam's moment estimates leaves the uninterrupted one: its losses differ
# (the largest difference is printed above). Even on this short run, the steps are no longer the
# same.
#
# ## 6. Serving the trained model
#
# `model.safetensors` holds the weights only: no code, and nothing is executed on loading. The
# serving side rebuilds the architecture and loads them. It wraps preprocessing and postprocessing
# exactly as in notebook 12: `uint8` images in, class names and probabilities out. It normalises with
# the **training** statistics, in eval mode, without gradients.

# %%
served = project.load_model(full)
test_images, test_labels = make_shapes(256, seed=0, split="test")
names, probs = project.predict(served, list(test_images))
accuracy = sum(name == CLASSES[label] for name, label in zip(names, test_labels)) / len(names)
print("first 6 predictions:", names[:6])
print("true classes:       ", [CLASSES[label] for label in test_labels[:6]])
print(f"test accuracy {accuracy:.3f} (chance {1 / len(CLASSES):.2f}); probabilities {tuple(probs.shape)}")
confirm(accuracy > 0.8, "the served model is right on more than 8 test images in 10")

# %% [markdown]
# On test images it never saw, the served model is right more than 8 times in 10 (the accuracy
# above; chance is 1 in 10). That took a three-epoch run.
#
# The next step up is one command away: `--epochs 10`, then a bigger model. It is logged, resumable
# and servable the same way.
#
# ## 7. The training doctor on your step
#
# Before a long run, ask the doctor of notebook 10 about the setup. It runs one batch through copies
# of the model and optimizer, and reports what looks wrong.

# %%
torch.manual_seed(0)
model = project.build_model()
optimizer = torch.optim.Adam(model.parameters(), lr=Config().lr)
batch = project.load_split("train", 32, seed=0)
diagnose(model, nn.CrossEntropyLoss(), optimizer, batch)

# %% [markdown]
# The run folders, checkpoints and exported model have served their purpose. Remove this
# notebook's work folder, so that running the notebook again and again leaves nothing behind:

# %%
shutil.rmtree(workdir)
print("work folder removed:", not workdir.exists())

# %% [markdown]
# ## Key points
#
# - Keep a run's settings in a typed dataclass; fill it from the command line with `argparse`
#   (types and defaults taken from the dataclass, `parse_args(argv)` so a typo is an error, booleans
#   parsed, not `bool("False")`); save it as JSON next to the outputs.
# - Run the whole pipeline on tiny data first: train, validate, save, load, export, predict, in
#   seconds.
# - Log per step: loss, learning rate, gradient norm, update/weight ratio (around 1e-3 is the usual
#   guide), memory; plain Python numbers, to CSV and TensorBoard.
# - A checkpoint for resuming holds model, optimizer, scheduler, position and library versions, and
#   is written atomically. With a reproducible data order, a resumed run equals an uninterrupted one.
# - Serve weights (safetensors) through a wrapper that repeats the training preprocessing.
#
# ## Further reading
#
# - Python docs: [argparse — Parser for command-line options](https://docs.python.org/3/library/argparse.html)
#   and [dataclasses — Data Classes](https://docs.python.org/3/library/dataclasses.html).
# - PyTorch docs: [torch.utils.tensorboard](https://docs.pytorch.org/docs/stable/tensorboard.html)
#   (`SummaryWriter`).
# - PyTorch tutorials: [Saving and Loading Models](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html)
#   (a general checkpoint for resuming).
# - PyTorch docs: [torch.export](https://docs.pytorch.org/docs/stable/export.html); safetensors docs:
#   [Torch API](https://huggingface.co/docs/safetensors/api/torch).
# - Previous: [13 · Distributed data parallel](13_distributed_data_parallel.ipynb).
