# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 12 · Export and deployment
#
# A trained model is a Python object, plus a training script that knows how to feed it. Deployment
# takes it out of that context: into a file that runs without your Python code (an exported graph,
# ONNX), behind a function that accepts what users really send (raw images), with its weights in a
# format that is safe to load.
#
# Each step has a classic way to fail *silently*: a graph that froze one branch, an export compared
# in training mode, an image normalised differently from training. This notebook reproduces each
# one, and its fix.
#
# ## You will learn (≈ 40 min)
#
# 1. That `torch.jit.trace` is deprecated (with TorchScript as a whole), and how it silently freezes
#    a data-dependent branch; how `torch.export` refuses to guess, and how `torch.cond` captures
#    both branches.
# 2. Export a model to ONNX with a dynamic batch dimension and check its parity with ONNX Runtime
#    at a stated tolerance.
# 3. Write an inference wrapper: raw images in, labels and probabilities out, with the training
#    normalisation, eval mode and `torch.inference_mode`; recognise the four classic deployment bugs.
# 4. Store weights with `safetensors` and with `torch.save` + `torch.load(weights_only=True)`, and
#    know what each one refuses.

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
import copy
import json
import math
import pickle
import shutil
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime
import safetensors.torch
import torch
from PIL import Image
from torch import nn

from course_utils.claims import confirm
from course_utils.data import ShapesDataset
from course_utils.deploy import max_abs_diff, reuse_onnx_registry
from course_utils.exercises import check
from course_utils.profiling import capture_messages

workdir = Path(tempfile.mkdtemp(prefix="nb12-"))  # every file this notebook writes goes here
reuse_onnx_registry()  # a course-only speed-up for the many exports below (see the next cell)
print("onnxruntime", onnxruntime.__version__, "| safetensors", safetensors.__version__)

# %% [markdown]
# `reuse_onnx_registry()` is a course-only speed-up, not something for your own code: it patches a
# private part of torch.
#
# On every call, `torch.onnx.export` first builds its table of translations: which ONNX operators
# implement each of the several hundred ATen operators a graph may contain. The patch builds that
# table once per session and hands each export a copy. It only saves time (this notebook and its
# checkers export many times); the exported files are the same without it.
#
# ## 1. A model to deploy
#
# A classifier ships three things:
#
# - its **weights**;
# - the **normalisation statistics** of its training data (notebook 05 computes them; without them
#   nobody can feed the model correctly);
# - the **class names**.
#
# Here is a small CNN for the course's 32×32 shape images. It has BatchNorm and Dropout, the two
# layers that behave differently in training and eval mode.
#
# We do not train it. Training is not this notebook's subject, and a deployment bug shows just as
# clearly on an untrained model: we compare each pipeline with the correct one. We only let its
# BatchNorm layers measure the statistics of the training images, as training would.

# %%
def make_cnn() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Dropout(0.3), nn.Linear(32, 10),
    )


train_set, val_set = ShapesDataset("train", size=256), ShapesDataset("val", size=64)
train_x = torch.from_numpy(train_set.data).permute(0, 3, 1, 2).float() / 255   # uint8 NHWC -> float NCHW
mean, std = train_x.mean(dim=(0, 2, 3)), train_x.std(dim=(0, 2, 3))           # per channel, as in 05


def normalise(x: torch.Tensor) -> torch.Tensor:
    return (x - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)


model = make_cnn()
for layer in model.modules():
    if isinstance(layer, nn.BatchNorm2d):
        layer.momentum = None            # running statistics = the plain average over what it sees
with torch.no_grad():
    model.train()(normalise(train_x))    # BatchNorm records the training data's statistics
for layer in model.modules():
    if isinstance(layer, nn.BatchNorm2d):
        layer.momentum = 0.1             # back to the default
model.eval()
bundle = {"state_dict": model.state_dict(), "mean": mean.tolist(), "std": std.tolist(),
          "classes": list(train_set.classes)}
print("mean", [round(m, 4) for m in bundle["mean"]], "std", [round(s, 4) for s in bundle["std"]])
print("classes:", bundle["classes"])

# %% [markdown]
# ## 2. From Python to a graph: `jit.trace`, `torch.export`, `torch.cond`
#
# For deployment you want the model *without* Python: a file with the graph and the weights, which a
# server, a C++ runtime or a phone can run. Older tutorials do this with `torch.jit.trace`.
#
# Here is a model with a **data-dependent branch**: inputs with a positive mean take a bigger
# sub-network.

# %%
class Gated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.small = nn.Linear(4, 2)
        self.big = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:                 # decided by the VALUES in x
            return self.big(x)
        return self.small(x)


torch.manual_seed(0)
gated = Gated().eval()
positive = torch.rand(3, 4) + 0.5
negative = -torch.rand(5, 4) - 0.5

# %% [markdown]
# ### `torch.jit.trace`: deprecated, and silently wrong here
#
# Tracing runs the model once on an example input, and records the operations that happened. The
# `if` is evaluated in Python during that run, so only the branch taken *for the example* is
# recorded.
#
# In torch 2.14, `torch.jit.trace` (and `torch.jit.script`) also emit a `FutureWarning`: they are
# deprecated, use `torch.compile` and `torch.export`. We capture the warnings to show them.

# %% tags=["deprecated-on-purpose"]
with capture_messages() as captured:
    traced = torch.jit.trace(gated, positive)
for message in captured.warnings:
    print(textwrap.shorten(message, 160))

# %%
with torch.no_grad():
    print("eager  on a negative input:", gated(negative)[0])
    print("traced on a negative input:", traced(negative)[0])
    print("same answer:", torch.allclose(gated(negative), traced(negative)))

# %% [markdown]
# No error, just a wrong answer for every input whose mean is not positive: the traced model always
# runs `self.big`. The `TracerWarning` above was the only hint.
#
# Older code then writes the traced module to a file with `torch.jit.save`, and loads it with
# `torch.jit.load`, which needs no Python class. Both are deprecated in torch 2.14 as well (their
# `FutureWarning`s are printed below), and the file keeps the frozen branch. What replaces them is
# `torch.export.save` / `torch.export.load` of an `ExportedProgram`, a few cells down.

# %% tags=["deprecated-on-purpose"]
with capture_messages() as captured:
    torch.jit.save(traced, workdir / "traced.pt")
    traced_loaded = torch.jit.load(workdir / "traced.pt")
for message in captured.warnings:
    print(textwrap.shorten(message, 160))
with torch.no_grad():
    print("loaded trace == eager on a negative input:", torch.allclose(traced_loaded(negative), gated(negative)))

# %% [markdown]
# ### `torch.export`: the current path, and it refuses to guess
#
# `torch.export.export(model, example_args)` traces the model into an `ExportedProgram`: a graph of
# ATen operators plus the weights, with explicit input shapes.
#
# Unlike tracing, it does **not** silently pick a branch that depends on tensor **values**: a Python
# `if` on a tensor value is an error.
#
# A branch on a *shape* is another matter. With a static shape, export specialises it silently, as
# tracing does (the shape is fixed anyway). With a dynamic `Dim`, it refuses, and suggests the range
# of sizes for which the branch holds.

# %%
with capture_messages() as captured:               # export also prints its partial graph
    try:
        torch.export.export(gated, (positive,))
        export_error = None
    except Exception as error:
        export_error = error
print(type(export_error).__name__)
print(str(export_error).splitlines()[0])
print("at:", [line.split("code:")[1] for line in captured.stderr.splitlines() if "code:" in line][0])
confirm(export_error is not None, "torch.export refuses the Python if on a tensor value")


# %% [markdown]
# "Could not guard on data-dependent expression": to decide the `if`, export would need the value of
# `x.mean() > 0`. That value does not exist during export: it traces with *fake* tensors, which
# carry shapes and dtypes but no data.
#
# The fix is to make the branch part of the graph with
# **`torch.cond(pred, true_fn, false_fn, operands)`**. Both branches are captured, and the choice
# happens when the exported program runs. (For element-wise choices, `torch.where` does the same
# job.) We also let the batch size vary with `torch.export.Dim`.

# %%
class GatedCond(Gated):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The one value-dependent choice of this model, made explicit: both branches are in the graph.
        return torch.cond(x.mean() > 0, self.big, self.small, (x,))


gated_cond = GatedCond().eval()
gated_cond.load_state_dict(gated.state_dict())          # the same weights as `gated`
batch = torch.export.Dim("batch")
exported = torch.export.export(gated_cond, (positive,), dynamic_shapes={"x": {0: batch}})
print(exported.graph_module.code.strip())

# %% [markdown]
# The graph holds `torch.ops.higher_order.cond` with both sub-graphs (`true_graph_0` is `big`,
# `false_graph_0` is `small`). Save it, and load it back (no Python class needed). Then compare it
# with the eager model, on both kinds of input and several batch sizes:

# %%
path = workdir / "gated.pt2"
torch.export.save(exported, path)
loaded = torch.export.load(path).module()
with torch.no_grad():
    for name, inputs in [("positive, batch 3", positive), ("negative, batch 5", negative),
                         ("random, batch 7", torch.randn(7, 4))]:
        print(f"{name}: exported == eager: {torch.allclose(loaded(inputs), gated(inputs))}")

# %% [markdown]
# The habit behind this section: keep the structure of `forward` **predictable**. Python's freedom
# (an `if` on a value, a loop whose length depends on the data) costs nothing in eager mode. But
# every such choice is a place where a trace goes silently wrong, where export stops, and where
# `torch.compile` breaks its graph (notebook 11).
#
# Make the few choices the model really needs explicit (`torch.cond`, `torch.where`, a `Dim` with a
# range), and say why in a comment, as `GatedCond` does.
#
# Where an `ExportedProgram` can go next (pointers for further reading; only the last one runs in
# this notebook):
#
# - AOTInductor (`torch._inductor.aoti_compile_and_package`) compiles it into a library that C++
#   code can load without Python. It needs a C++ compiler and a long compile, more than this
#   notebook should cost.
# - ExecuTorch, a separate package not installed for the course, targets phones and
#   microcontrollers.
# - `torch.onnx.export(..., dynamo=True)`, which uses `torch.export` inside, converts it to ONNX,
#   the format many inference engines read. The next section runs and checks it.
#
# ## 3. ONNX export and a parity check with ONNX Runtime
#
# `torch.onnx.export(model, args, f, dynamo=True)` captures the model with `torch.export`, and
# translates the graph to ONNX operators. (`dynamo=True` is the default in torch 2.14; we write it
# out because older versions defaulted to the TorchScript exporter.)
#
# One argument matters every time: `dynamic_shapes`. By default every dimension of the example is
# fixed, so a model exported on a batch of 4 accepts *only* batches of 4. Name the batch dimension
# dynamic, with one entry per argument of `forward`, each a dict `{dim_index: Dim}`. Give them
# either:
#
# - as a tuple in argument order (as below; this form avoids names);
# - or as a dict keyed by the names of `forward`'s arguments (`{"x": {0: batch}}` above; for an
#   `nn.Sequential` the argument is called `input`).
#
# `verbose=False` is cosmetic: it only silences the exporter's progress lines.
#
# Export **in eval mode**: the exporter warns otherwise, and what you compare must be the model
# you deploy.

# %%
onnx_path = workdir / "cnn.onnx"
example = normalise(torch.from_numpy(val_set.data[:4]).permute(0, 3, 1, 2).float() / 255)
torch.onnx.export(model, (example,), onnx_path, dynamo=True, verbose=False,
                  dynamic_shapes=({0: torch.export.Dim("batch")},))
print("files:", sorted(p.name for p in workdir.iterdir() if p.name.startswith("cnn")))

session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
for node in session.get_inputs() + session.get_outputs():
    print(f"{node.name}: {node.type} {node.shape}")

# %% [markdown]
# The graph is in `cnn.onnx`. The weights went to the side file `cnn.onnx.data`: ONNX files have a
# 2 GB limit, so large weights live outside (`external_data=False` keeps one file for small models).
# Ship both: `cnn.onnx.data` must sit next to `cnn.onnx` under that name, or loading the session
# fails because the weights are missing.
#
# The input is named `input`, with shape `['batch', 3, 32, 32]`: the batch dimension is symbolic.
#
# ONNX Runtime takes a dict `{input name: numpy array}`, and returns a list of numpy arrays, one per
# output.
#
# The **parity check**: run the same inputs through both, take the largest absolute difference, and
# compare it with a tolerance you state in advance. Exact equality is the wrong test: ONNX Runtime
# fuses and reorders float32 operations, so results differ in the last bits. A tolerance of `1e-4`
# on outputs of order 1 catches every real bug below, and passes rounding.

# %%
TOLERANCE = 1e-4
name = session.get_inputs()[0].name
for batch_size in (4, 9):                       # the exported size and another one
    x = normalise(torch.from_numpy(val_set.data[:batch_size]).permute(0, 3, 1, 2).float() / 255)
    onnx_out = session.run(None, {name: x.numpy()})[0]
    with torch.inference_mode():
        torch_out = model(x)
    diff = max_abs_diff(torch_out, onnx_out)
    # rounding noise differs between machines and versions: print the power of ten it stays below
    below = f"<= {10.0 ** math.ceil(math.log10(diff)):.0e}" if diff > 0 else "= 0"
    print(f"batch {batch_size}: max |onnx - torch| {below} (tolerance {TOLERANCE:g})")
    confirm(diff < TOLERANCE, f"ONNX Runtime agrees with PyTorch within {TOLERANCE:g} at batch size {batch_size}")

# %% [markdown]
# Three ways to get this check wrong, live:

# %%
x = example
in_training = copy.deepcopy(model).train()          # mistake 1: forgot eval() (on a copy: a forward
with torch.no_grad():                               # in train mode also updates BatchNorm's statistics)
    train_out = in_training(x)
print(f"torch in train mode vs onnx: {max_abs_diff(train_out, session.run(None, {name: x.numpy()})[0]):.2f}")

for label, feed in [("float64 input", x.double().numpy()),
                    ("NHWC input", x.permute(0, 2, 3, 1).numpy())]:
    try:
        session.run(None, {name: feed})
    except Exception as error:                       # onnxruntime checks dtype and shape strictly
        text = " ".join(str(error).split()).split("INVALID_ARGUMENT : ")[-1].split(" Please")[0]
        print(f"{label}: {text.replace('for input: input for the following indices ', '')}")

static_path = workdir / "static.onnx"
torch.onnx.export(model, (x,), static_path, dynamo=True, verbose=False)   # no dynamic_shapes
static = onnxruntime.InferenceSession(static_path, providers=["CPUExecutionProvider"])
try:
    static.run(None, {name: torch.cat([x, x]).numpy()})
except Exception as error:
    text = " ".join(str(error).split()).split("INVALID_ARGUMENT : ")[-1].split(" Please")[0]
    print("static batch, batch 8:", text.replace("for input: input for the following indices ", ""))

# %% [markdown]
# - In **train mode** Dropout zeroes random activations and BatchNorm uses the batch's own
#   statistics, so PyTorch's output no longer matches the exported graph (which uses the running
#   statistics because the model was exported in eval mode). The difference is large. `torch.onnx.export` given a model in training
#   mode only warns ("Exporting a model while it is in training mode...") and exports it anyway;
#   its old `training=` argument is deprecated: the model's own mode is what counts.
# - ONNX Runtime refuses **float64** (the graph is float32) and the **NHWC** layout with clear
#   errors: a PyTorch model expects NCHW. Check the layout before blaming the export.
# - Without `dynamic_shapes` the batch size is fixed: the file works on the example's size and
#   fails on every other one — found in production, on the first request with a different size.
#
# ### Exercise 1 — `onnx_parity`
#
# Write `onnx_parity(model, batches, path)`: put `model` in eval mode (it stays so), export it to
# ONNX at `path` with `torch.onnx.export` using `batches[0]` as the example and a **dynamic batch
# dimension** (the model is an `nn.Sequential`: in the dict form its argument is `input`; the tuple
# form avoids names), open the file with an `onnxruntime.InferenceSession`, run every batch in
# `batches` (float32 NCHW tensors of different batch sizes) through ONNX Runtime and through the
# model, and return the largest absolute difference over all batches as a Python `float`. Do not
# change the batches. (The checker hands your function a small CNN in training mode and three
# batches; then it opens the file you wrote and runs it itself, on those batches and on a third
# batch size, against the model in eval mode. Your function exports once, so a check takes seconds.)

# %%
def onnx_parity(model: nn.Module, batches: list[torch.Tensor], path: str | Path) -> float:
    ### BEGIN SOLUTION
    model.eval()
    torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim("batch")},))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    worst = 0.0
    for x in batches:
        onnx_out = session.run(None, {name: x.numpy()})[0]
        with torch.inference_mode():
            torch_out = model(x)
        worst = max(worst, float(np.abs(torch_out.numpy() - onnx_out).max()))
    return worst
    ### END SOLUTION
    ### BEGIN STUB
    # model.eval()
    # raise NotImplementedError("onnx_parity: your code here")
    ### END STUB


# %%
check("12.onnx_parity", onnx_parity)

# %% [markdown]
# ## 4. An inference wrapper: raw images in, labels out
#
# Users do not send normalised float tensors. They send images: `uint8` arrays in height × width ×
# channels (HWC) order, straight from a decoder, or PIL images. The wrapper must apply *exactly* the
# preprocessing the model was trained with. Then it returns something a human can use:
#
# 1. HWC `uint8` → CHW (`permute(2, 0, 1)`), stacked into a batch `[N, 3, H, W]` (one image too);
# 2. `uint8` 0–255 → `float32` 0–1 (divide by 255);
# 3. normalise with the **training** mean and std (saved with the model);
# 4. `model.eval()` and `torch.inference_mode()` (no Dropout, running BatchNorm statistics, no
#    autograd bookkeeping);
# 5. softmax over the class dimension (`dim=1`), argmax → class names.
#
# Below are the correct pipeline and four classic bugs, each differing from it in one line, on the
# 64 validation images. "Agree" counts the labels that match the correct pipeline's.

# %%
images = [Image.fromarray(array) for array in val_set.data]       # what a user sends: PIL images
as_uint8 = torch.from_numpy(np.stack([np.array(image) for image in images]))   # [64, 32, 32, 3]
print("raw batch:", tuple(as_uint8.shape), as_uint8.dtype)


def run(x: torch.Tensor, train_mode: bool = False) -> torch.Tensor:
    net = copy.deepcopy(model).train() if train_mode else model   # a copy: see section 3
    torch.manual_seed(0)                                          # Dropout's random mask, reproducible
    with torch.inference_mode():
        return net(x).softmax(dim=1)


chw = as_uint8.permute(0, 3, 1, 2)
right = run(normalise(chw.float() / 255))
variants = {
    "model left in train mode": run(normalise(chw.float() / 255), train_mode=True),
    "Normalize(0.5, 0.5), not the training stats": run((chw.float() / 255 - 0.5) / 0.5),
    "uint8 not scaled to [0, 1]": run(normalise(chw.float())),
    "HWC reshaped, not permuted": run(normalise(as_uint8.reshape(64, 3, 32, 32).float() / 255)),
}
for label, probs in variants.items():
    agree = (probs.argmax(dim=1) == right.argmax(dim=1)).sum().item()
    print(f"{label:45s} agree {agree:2d}/64, max prob change {max_abs_diff(probs, right):.2f}")
    confirm(agree < 64, f"the bug '{label}' changes at least one label")

# %% [markdown]
# Each bug runs without an error and returns plausible-looking probabilities. Only a comparison with
# the training pipeline reveals it.
#
# What we measured is agreement with the correct pipeline, on an untrained model. On your trained
# model, measure the same agreement, or the accuracy, before you deploy.
#
# A fifth bug does raise: HWC fed as is, with the channel axis in the wrong place:

# %%
try:
    model(as_uint8.float() / 255)
except RuntimeError as error:
    print(textwrap.shorten(str(error), 120))

# %% [markdown]
# ### Exercise 2 — `predict`
#
# Write `predict(model, images, mean, std, classes)`. `images` is one image or a list of images;
# an image is a `uint8` numpy array `[H, W, 3]` or an RGB PIL image. Apply the steps above
# (`mean` and `std` are the training statistics, tensors of 3 values), run the model in eval mode
# (it stays so) under `torch.inference_mode()`, and return `(labels, probs)`: `labels` a list of
# class names, one per image (a list of one for a single image), `probs` a float32 tensor
# `[N, len(classes)]` whose rows sum to 1. Do not change the images.

# %%
def predict(model: nn.Module, images, mean: torch.Tensor, std: torch.Tensor,
            classes: list[str]) -> tuple[list[str], torch.Tensor]:
    ### BEGIN SOLUTION
    if not isinstance(images, (list, tuple)):
        images = [images]
    batch = torch.stack([torch.from_numpy(np.array(image)).permute(2, 0, 1) for image in images])
    x = (batch.float() / 255 - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)
    model.eval()
    with torch.inference_mode():
        probs = model(x).softmax(dim=1)
    labels = [classes[i] for i in probs.argmax(dim=1).tolist()]
    return labels, probs
    ### END SOLUTION
    ### BEGIN STUB
    # if not isinstance(images, (list, tuple)):
    #     images = [images]
    # raise NotImplementedError("predict: your code here")
    ### END STUB


# %%
check("12.predict", predict)

# %% [markdown]
# ## 5. Saving the weights: `torch.save` vs `safetensors`
#
# A checkpoint made with `torch.save` is a **pickle**: loading it with the full unpickler can run any
# code the file contains. That is why `torch.load` has `weights_only=True` by default (notebook 09).
# It only rebuilds tensors, containers and numbers, and refuses everything else.

# %%
class Innocent:
    def __reduce__(self):                   # what unpickling this object calls
        return (print, ("this ran while loading the file",))


pickled = workdir / "pickled.pt"
torch.save({"state_dict": model.state_dict(), "extra": Innocent()}, pickled)
try:
    torch.load(pickled, weights_only=True)
except pickle.UnpicklingError as error:
    reason = next(line for line in str(error).splitlines() if "Unsupported global" in line)
    print("weights_only=True refused it:", reason.strip().split(" by default.")[0])

plain = workdir / "bundle.pt"
torch.save(bundle, plain)                  # tensors, lists, strings: fine for weights_only
restored = torch.load(plain, weights_only=True)
print("loaded back with weights_only=True:", sorted(restored), "| classes:", len(restored["classes"]))

# %% [markdown]
# **safetensors** is a different format: a JSON header (names, dtypes, shapes, plus string metadata),
# followed by the raw bytes of each tensor. There is no code in it to run, and loading can map the
# file into memory without copying.
#
# `safetensors.torch.save_file(dict_of_tensors, path, metadata=...)` writes one; `load_file(path)`
# returns the dict. Metadata values must be strings: store the normalisation statistics and class
# names as JSON.

# %%
weights_path = workdir / "cnn.safetensors"
metadata = {"mean": json.dumps(bundle["mean"]), "std": json.dumps(bundle["std"]),
            "classes": json.dumps(bundle["classes"])}
safetensors.torch.save_file(model.state_dict(), weights_path, metadata=metadata)

fresh = make_cnn().eval()
missing, unexpected = fresh.load_state_dict(safetensors.torch.load_file(weights_path))
with safetensors.safe_open(weights_path, framework="pt") as f:
    stored = f.metadata()
print("keys:", len(safetensors.torch.load_file(weights_path)), "| missing", missing, "unexpected", unexpected)
print("metadata:", sorted(stored), "| mean", json.loads(stored["mean"]) == bundle["mean"])
with torch.inference_mode():
    print("same outputs:", torch.equal(fresh(example), model(example)))

# %% [markdown]
# What safetensors refuses, first: a dict whose tensors **share memory**. Tied weights (a decoder
# that reuses the embedding matrix, common in language models) are one parameter under two names.
# The format stores each name's bytes separately, so `save_file` stops rather than silently untying
# them.
#
# `safetensors.torch.save_model(model, path)` stores the tensor once, under one name. It drops the
# duplicate names (and records them in the metadata). `load_model(model, path)` fills the kept name;
# the duplicate follows because the model's *constructor* tied the two (`load_model` does not re-tie
# anything).
#
# `save_file` also refuses a **non-contiguous** tensor (a transposed view, say, as some conversions
# leave parameters): it stores plain row-major bytes. Call `.contiguous()` on it; `save_model` does
# that for every tensor (its `force_contiguous=True` default). Note that `clone()` keeps the
# strides, so a clone of a transposed tensor is still non-contiguous.

# %%
class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight        # one tensor, two names


tied = Tied()
try:
    safetensors.torch.save_file(tied.state_dict(), workdir / "tied.safetensors")
except RuntimeError as error:
    print("save_file refused it:", " ".join(str(error).split()).split(":")[0])
safetensors.torch.save_model(tied, workdir / "tied.safetensors")
tied_again = Tied()
missing, unexpected = safetensors.torch.load_model(tied_again, workdir / "tied.safetensors")
print("save_model + load_model:", missing, unexpected,
      "| still tied:", tied_again.out.weight is tied_again.embed.weight,
      "| equal:", torch.equal(tied_again.embed.weight, tied.embed.weight))

transposed = torch.randn(3, 5).t()                 # a view with swapped strides
for label, tensor in [("clone()", transposed.clone()), (".contiguous()", transposed.contiguous())]:
    try:
        safetensors.torch.save_file({"w": tensor}, workdir / "w.safetensors")
        print(f"save_file with {label}: saved")
    except ValueError as error:
        print(f"save_file with {label}: refused:", str(error).split(" which")[0])

# %% [markdown]
# `torch.save` keeps sharing (a pickle stores each storage once); safetensors is stricter, and
# safer to load from a stranger. Use safetensors (or `weights_only=True`) for anything you
# download.
#
# ### Exercise 3 — `save_for_serving`
#
# Write `save_for_serving(model, path, mean, std, classes)`: write a safetensors file at `path`
# holding the model's whole `state_dict` (parameters **and** buffers such as BatchNorm's running
# statistics), in their own dtype, with the metadata `"mean"`, `"std"` and `"classes"`, each a JSON
# string of a list (`mean`/`std` are tensors of floats). Models with tied weights must work (a tied
# weight may be stored once, under one of its names, as `save_model` does), and so must models
# with a non-contiguous parameter. Return nothing, and do not change the model.

# %%
def save_for_serving(model: nn.Module, path: str | Path, mean: torch.Tensor, std: torch.Tensor,
                     classes: list[str]) -> None:
    ### BEGIN SOLUTION
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()),
                "classes": json.dumps(list(classes))}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
    ### END SOLUTION
    ### BEGIN STUB
    # metadata = {"mean": json.dumps(mean.tolist()), "std": ..., "classes": ...}
    # raise NotImplementedError("save_for_serving: your code here")
    ### END STUB


# %%
check("12.save_for_serving", save_for_serving)

# %% [markdown]
# The exported files have served their purpose. Remove this notebook's work folder, so that
# running the notebook again and again leaves nothing behind:

# %%
shutil.rmtree(workdir)
print("work folder removed:", not workdir.exists())

# %% [markdown]
# ## Key points
#
# - `torch.jit.trace` is deprecated and freezes data-dependent branches silently. `torch.export`
#   refuses to guess; `torch.cond` puts both branches in the graph, `Dim` makes sizes dynamic.
# - `torch.onnx.export(model, args, f, dynamo=True, dynamic_shapes=..., verbose=False)` in eval
#   mode; then a parity check with `onnxruntime.InferenceSession` on at least two batch sizes,
#   max absolute difference against a tolerance stated in advance (here 1e-4; the differences
#   printed in section 3 are far below it). Ship `model.onnx.data` with `model.onnx`.
# - ONNX Runtime wants float32 NCHW numpy arrays under the graph's input name.
# - The inference wrapper owns the preprocessing: HWC → CHW, `/255`, the training mean/std,
#   `eval()` + `inference_mode()`, softmax over `dim=1`, a batch even for one image. Each missing
#   step gives plausible, wrong outputs.
# - `torch.load(weights_only=True)` refuses arbitrary pickles; safetensors holds only tensors and
#   string metadata, and refuses shared tensors and non-contiguous ones: `save_model` stores a tied
#   weight once and calls `.contiguous()` (`force_contiguous=True`); after `load_model` the ties
#   come from the model's constructor.
#
# ## Further reading
#
# - PyTorch docs: [torch.export](https://docs.pytorch.org/docs/stable/export.html) (the
#   ExportedProgram, dynamic shapes with `Dim`, control flow).
# - PyTorch docs: [torch.cond](https://docs.pytorch.org/docs/stable/generated/torch.cond.html)
#   (control flow operators).
# - PyTorch docs: [torch.onnx](https://docs.pytorch.org/docs/stable/onnx.html) (the `dynamo=True`
#   exporter, `dynamic_shapes`).
# - ONNX Runtime docs: [Python API](https://onnxruntime.ai/docs/api/python/api_summary.html)
#   (`InferenceSession`, providers, inputs and outputs).
# - PyTorch docs: [AOTInductor](https://docs.pytorch.org/docs/stable/torch.compiler_aot_inductor.html)
#   and [ExecuTorch](https://docs.pytorch.org/executorch/stable/index.html) for deployment without
#   Python.
# - safetensors docs: [Torch API](https://huggingface.co/docs/safetensors/api/torch) and
#   [Torch shared tensors](https://huggingface.co/docs/safetensors/torch_shared_tensors).
# - PyTorch docs: [Serialization semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html)
#   (`torch.load` with `weights_only`).
# - Next: [13 · Distributed data parallel](13_distributed_data_parallel.ipynb).
