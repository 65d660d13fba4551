# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Generalisation: training accuracy is not the goal
#
# A model that scores 100 % on its training images can still be poor on images it has never seen.
# This notebook reproduces that on purpose, with a small training split of the `ShapesDataset`.
#
# Then it measures the usual remedies one by one, on the same split and the same initialisation:
#
# - weight decay, with AdamW parameter groups that leave biases and norm weights alone;
# - Dropout;
# - data augmentation with `torchvision.transforms.v2`, on the training split only;
# - early stopping that keeps the best weights;
# - a learning-rate warm-up.
#
# Every number below is computed in the notebook. Where an effect is small at this scale, the text
# says so.

# %% [markdown]
# ## You will learn (≈ 40 min)
#
# 1. To recognise overfitting in a training log: training accuracy near 100 %, validation accuracy
#    far below and no longer improving, validation loss no longer falling; and to plot the gap.
# 2. What weight decay does to each parameter, why biases and normalisation weights get none, and
#    how to say so with AdamW parameter groups.
# 3. Dropout and augmentation as regularisers, measured; why augmentation belongs to the training
#    split only (the mistake reproduced).
# 4. Early stopping that restores the best weights (and the `state_dict()` aliasing bug), and a
#    learning-rate warm-up built from `LinearLR` and `SequentialLR`.

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

import copy
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torchvision.transforms import v2

import course_utils.generalisation as gen
from course_utils.claims import confirm
from course_utils.data import ShapesDataset
from course_utils.exercises import check

# %% [markdown]
# ## 1. A small training split
#
# Notebook 06 trained its CNN on 3,000 images. Overfitting is easiest to see when data is scarce. So
# here the training split has only 300 images (30 per class on average), and the validation split
# 400.
#
# The images are kept as uint8 tensors. The normalisation statistics come from the training split
# only.
#
# Two pipelines turn them into normalised floats:
#
# - the plain (non-random) transform, which runs once on both whole splits, in this cell (as in
#   notebook 06);
# - the random training transform of section 5, which the `Images` dataset below runs on each
#   image every time a batch draws it, so at every epoch.

# %%
train_set, val_set = ShapesDataset("train", size=300), ShapesDataset("val", size=400)


def as_batch(dataset: ShapesDataset) -> torch.Tensor:
    return torch.from_numpy(dataset.data).permute(0, 3, 1, 2).contiguous()  # uint8 [N, 3, 32, 32]


train_images, val_images = as_batch(train_set), as_batch(val_set)
train_labels, val_labels = torch.tensor(train_set.targets), torch.tensor(val_set.targets)
to_float = v2.ToDtype(torch.float32, scale=True)
mean = to_float(train_images).mean(dim=(0, 2, 3)).tolist()  # statistics of the training split only
std = to_float(train_images).std(dim=(0, 2, 3)).tolist()
plain = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])
train_inputs, val_inputs = plain(train_images), plain(val_images)  # deterministic: transformed once


class Images(Dataset):
    """uint8 image tensors and labels; `transform` runs on each image when it is drawn."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, transform) -> None:
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.transform(self.images[index]), self.labels[index]


print(f"train {len(train_labels)} images, val {len(val_labels)} images; "
      f"images per class in train: {torch.bincount(train_labels, minlength=10).tolist()}")

# %% [markdown]
# The model is a small CNN with a wide linear head: about 74,000 parameters for 300 images, more than
# enough to memorise them. It has a `BatchNorm1d`, so it has norm weights (the normalisation's own
# scale and shift, section 3). It also has a
# `Dropout` layer whose probability is 0 unless a run asks for it (section 4).

# %%
def make_model(p_drop: float = 0.0) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, kernel_size=5, stride=2, padding=2), nn.ReLU(),             # 8 x 16 x 16
        nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 8 x 8
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32 x 4 x 4
        nn.Flatten(), nn.Linear(32 * 4 * 4, 128), nn.BatchNorm1d(128), nn.ReLU(),
        nn.Dropout(p_drop), nn.Linear(128, 10),
    )


print(f"{sum(p.numel() for p in make_model().parameters()):,} parameters")


# %% [markdown]
# One function, `train`, runs every experiment of this notebook. So the runs differ only in what
# they ask for. Everything else is the same:
#
# - the same 300 images;
# - the same initialisation (`torch.manual_seed(0)` before the model is built);
# - the same batch order;
# - AdamW at a learning rate of 3e-3, batches of 30, 12 epochs.
#
# After each epoch it measures loss and accuracy on the whole training split *and* the validation
# split. Both are measured in eval mode with the plain (non-random) transform, so the two numbers are
# comparable. (Its inner loop is the training step of notebook 06.)
#
# Its options switch on one remedy each, in the section that measures it: `groups` (parameter
# groups for weight decay, section 3), `p_drop` (Dropout, section 4), `train_transform`
# (augmentation, section 5), `stopper` and `epochs` (early stopping, section 6), `schedule` and `lr`
# (warm-up, section 7). Without options it trains the baseline.

# %%
EPOCHS, BATCH, LR = 12, 30, 3e-3


@torch.inference_mode()
def measure(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    model.eval()
    logits = model(inputs)
    return F.cross_entropy(logits, labels).item(), (logits.argmax(dim=1) == labels).float().mean().item()


def train(p_drop: float = 0.0, groups=None, train_transform=None, schedule=None, epochs: int = EPOCHS,
          stopper=None, lr: float = LR, quiet: bool = False):
    """Train a fresh model; return (model, history: one dict per epoch). See the text for the options."""
    torch.manual_seed(0)
    model = make_model(p_drop)
    optimizer = torch.optim.AdamW(groups(model) if groups else model.parameters(), lr=lr, weight_decay=0.0)
    scheduler = schedule(optimizer) if schedule else None
    data = (TensorDataset(train_inputs, train_labels) if train_transform is None
            else Images(train_images, train_labels, train_transform))
    loader = DataLoader(data, batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(0))
    history = []

    def train_epoch(model: nn.Module) -> None:
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()  # per batch: the warm-up is counted in steps

    def validate(model: nn.Module) -> float:
        train_loss, train_acc = measure(model, train_inputs, train_labels)
        val_loss, val_acc = measure(model, val_inputs, val_labels)
        history.append({"epoch": len(history) + 1, "train_loss": round(train_loss, 4),
                        "val_loss": round(val_loss, 4), "train_acc": round(train_acc, 4),
                        "val_acc": round(val_acc, 4)})
        return val_loss

    if stopper is None:
        for _ in range(epochs):
            train_epoch(model)
            validate(model)
    else:
        model.best_epoch = stopper(model, train_epoch, validate, epochs)
    if not quiet:
        last = history[-1]
        print(f"last epoch trained ({last['epoch']}): train acc {last['train_acc']:.1%}, val acc {last['val_acc']:.1%}, "
              f"train loss {last['train_loss']:.3f}, val loss {last['val_loss']:.3f}")
    return model, history


# %% [markdown]
# ## 2. Train good, validation bad
#
# The baseline has no regularisation at all: plain AdamW with `weight_decay=0`, no Dropout, no
# augmentation. The cell prints the log and checks the two symptoms of overfitting.

# %%
baseline_model, baseline = train()
for row in baseline:
    print(row)
best_val = min(baseline, key=lambda row: row["val_loss"])
gap = baseline[-1]["train_acc"] - baseline[-1]["val_acc"]
best_acc = max(baseline, key=lambda row: row["val_acc"])
late = [row["val_loss"] for row in baseline[len(baseline) // 2:]]  # the last six epochs
ups = sum(later > earlier for earlier, later in zip(late, late[1:]))
print(f"train-val accuracy gap at the end: {gap:.1%}; lowest validation loss {best_val['val_loss']:.3f} "
      f"at epoch {best_val['epoch']}, {baseline[-1]['val_loss']:.3f} at the end")
print(f"validation loss over the last {len(late)} epochs: between {min(late):.3f} and {max(late):.3f}, "
      f"up from one epoch to the next {ups} times out of {len(late) - 1}; best validation accuracy "
      f"{best_acc['val_acc']:.1%} at epoch {best_acc['epoch']}")
confirm(baseline[-1]["train_acc"] > 0.95 and gap > 0.3,
        "the baseline memorises the training images (over 95 %) and stays more than 30 points below on validation")
confirm(baseline[-1]["val_loss"] > best_val["val_loss"] + 0.05,
        "the last epoch's validation loss is above its lowest point")
confirm(ups >= 2 and baseline[-1]["train_loss"] < 0.1,
        "the validation loss goes up and down over the second half while the training loss nears 0")


# %% [markdown]
# Read the log from the top. In the first epochs both accuracies rise slowly together.
#
# Then training accuracy goes on to almost 100 %, and its loss towards 0. The validation numbers stop
# following:
#
# - over the second half of the run, the validation loss no longer falls steadily but goes up and
#   down (the range and the count of rises are printed above);
# - its lowest value comes before the end (the epoch is printed above), and the last epoch is
#   above it;
# - validation accuracy stays near its best value, less than half the training accuracy.
#
# The model keeps getting more confident on the training images without getting better on new ones.
# On a small validation split this shows as a noisy, no longer falling validation loss, rather than
# a clean upward curve. Plotted, with the gap shaded:

# %%
def plot_gap(runs: dict, title: str) -> None:
    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(10, 3.2))
    for index, (name, history) in enumerate(runs.items()):
        epochs = [row["epoch"] for row in history]
        train_acc, val_acc = [row["train_acc"] for row in history], [row["val_acc"] for row in history]
        ax_acc.plot(epochs, train_acc, color=f"C{index}", ls="--", label=f"{name}: train")
        ax_acc.plot(epochs, val_acc, color=f"C{index}", marker="o", ms=3, label=f"{name}: validation")
        ax_acc.fill_between(epochs, val_acc, train_acc, color=f"C{index}", alpha=0.12)
        ax_loss.plot(epochs, [row["train_loss"] for row in history], color=f"C{index}", ls="--")
        ax_loss.plot(epochs, [row["val_loss"] for row in history], color=f"C{index}", marker="o", ms=3)
    ax_acc.set(xlabel="epoch", ylabel="accuracy (shaded: the gap)", ylim=(0, 1.02))
    ax_loss.set(xlabel="epoch", ylabel="loss (dashed: train)")
    ax_acc.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    plt.show()


plot_gap({"baseline": baseline}, "300 training images, no regularisation")

# %% [markdown]
# A gap between the curves is normal. A gap that keeps *growing* while validation stalls is
# overfitting.
#
# The cures do one of three things:
#
# - give the model less freedom to memorise (weight decay, Dropout);
# - give it more varied data (augmentation);
# - stop before memorising sets in (early stopping).
#
# The most effective cure, more data, is the one a notebook cannot simulate here. (Notebook 06
# reached over 90 % validation accuracy with 10× more images. It also used a different CNN and
# training settings, so that number mixes the effect of data with that of the model.)
#
# ## 3. Weight decay, and which parameters get it
#
# Weight decay pulls every decayed parameter towards 0 at every step.
#
# AdamW applies it *decoupled* from the gradient. At each step it first shrinks the parameter,
# `p ← p − lr · weight_decay · p` (that is `p ← (1 − lr · weight_decay) · p`). Then it applies the
# Adam update computed from the gradient alone; the decay never enters that update.
#
# So a parameter that never receives a gradient (its Adam moment estimates stay 0) shrinks
# geometrically, by a factor `1 − lr · weight_decay` per step. A parameter whose gradient only
# *became* 0 keeps moving for many more steps, carried by Adam's running average of its past
# gradients.
#
# Small weights make a smoother function of the input. That is the point for convolution and linear
# weights. It makes no sense for two kinds of parameters:
#
# - a **bias** only shifts an output; a shifted function is not less smooth, so pulling biases to 0
#   buys nothing and can hurt accuracy (and there are few of them);
# - the **scale (weight) of a LayerNorm / BatchNorm** sets the size of the normalised activations.
#   Decaying it shrinks them towards 0 (the next layer must grow its weights to compensate, which
#   the decay on *those* weights resists), and the norm's whole purpose is to keep that scale
#   under the model's control.
#
# Below, what the decay alone does to a LayerNorm scale that starts at 1. It uses AdamW's default
# `weight_decay=0.01` and a gradient that is always zero (so the gradient is not what shrinks it):

# %%
norm = nn.LayerNorm(4)
optimizer = torch.optim.AdamW(norm.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(1, 1001):
    for p in norm.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    if step in (1, 100, 1000):
        print(f"after {step:4} steps: LayerNorm weight {norm.weight[0].item():.4f} "
              f"(1 - lr*wd)^steps = {(1 - 1e-2 * 0.01) ** step:.4f}")
confirm(abs(norm.weight[0].item() - (1 - 1e-4) ** 1000) < 1e-4,
        "with a gradient that is always 0, AdamW shrinks the weight by (1 - lr*wd) per step")

# %% [markdown]
# To give different parameters different settings, pass the optimizer a list of **parameter
# groups** instead of `model.parameters()`. Each group is a dict with its `"params"` and any option
# that overrides the optimizer's default for that group.
#
# Whatever a group does not set, it takes from the optimizer's arguments. Note that AdamW's default
# `weight_decay` is 0.01, not 0.
#
# ### Exercise 1 — `param_groups`
#
# Write `param_groups(model, weight_decay)` returning two groups for AdamW:
# `[{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]`.
# The rule:
#
# - no decay for every parameter registered under the name `bias`, and for every parameter of a
#   normalisation layer, that is an instance of one of `NORM_LAYERS` (below), *whatever the layer is
#   called*;
# - decay for all other parameters, whatever their shape: convolution and linear weights,
#   embedding tables, and any other `nn.Parameter` (even a 1-d one that is not in a norm layer);
# - every trainable parameter exactly once, tied (shared) weights included; **frozen parameters**
#   (`requires_grad=False`) are left out.
#
# Walk `model.modules()` and, for each module, `module.named_parameters(recurse=False)`: you then
# know both the module's type and the parameter's own name. The checker uses models with oddly
# named norm layers, no biases, tied embedding and output weights, and a frozen parameter.

# %%
NORM_LAYERS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm,
               nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d,
               nn.LayerNorm, nn.GroupNorm, nn.RMSNorm)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    ### BEGIN SOLUTION
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            if isinstance(module, NORM_LAYERS) or name == "bias":
                no_decay.append(param)
            else:
                decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]
    ### END SOLUTION
    ### BEGIN STUB
    # decay, no_decay, seen = [], [], set()  # seen: id() of the parameters already placed
    # raise NotImplementedError("param_groups: your code here")
    ### END STUB


# %%
check("07.param_groups", param_groups)

# %% [markdown]
# From here on the notebook uses `gen.param_groups`, the same function packaged in
# `course_utils.generalisation` (and likewise for the next two exercises). So the cells run whether
# or not your version passes yet.
#
# On this notebook's model, the weights of the convolutions and linear layers are decayed. The
# biases and both parameters of the `BatchNorm1d` are not.

# %%
model = make_model()
names = {id(p): n for n, p in model.named_parameters()}
for group in gen.param_groups(model, 0.1):
    print(f"weight_decay={group['weight_decay']}: {[names[id(p)] for p in group['params']]}")

# %% [markdown]
# Now the experiment: the baseline again, with decay 0.1 on the weights only.
#
# First, a back-of-the-envelope number. Over the 120 steps of this run, decay alone multiplies a
# weight by `(1 − lr · wd)^120`.

# %%
WEIGHT_DECAY, STEPS = 0.1, EPOCHS * math.ceil(len(train_labels) / BATCH)
print(f"lr {LR:g}, weight decay {WEIGHT_DECAY}: decay alone over {STEPS} steps multiplies a weight by "
      f"{(1 - LR * WEIGHT_DECAY) ** STEPS:.4f}")
decay_model, decayed = train(groups=lambda model: gen.param_groups(model, WEIGHT_DECAY))
difference = decayed[-1]["val_acc"] - baseline[-1]["val_acc"]
print(f"validation accuracy: baseline {baseline[-1]['val_acc']:.1%}, weight decay {decayed[-1]['val_acc']:.1%} "
      f"({difference:+.1%})")
confirm(abs(difference) < 0.1, "weight decay changes the validation accuracy by less than 10 points at this scale")

# %% [markdown]
# The effect is small here, and the multiplier above says why. In a run this short, decay shrinks a
# weight by a few percent at most, far less than the gradient steps move it.
#
# Weight decay is a regulariser of *long* runs (many thousands of steps), where its pull adds up.
# With 120 steps the usual values (0.01–0.1) barely act. Use it, with the groups above, but do not
# expect it to close a 50-point gap.
#
# ## 4. Dropout
#
# `nn.Dropout(p)` zeroes each activation with probability `p` in training mode, and scales the
# survivors by `1/(1−p)`. In eval mode it does nothing (notebook 04).
#
# A unit cannot rely on any particular other unit being present. That makes memorising single images
# harder. The same run with `p = 0.5` before the last layer:

# %%
dropout_model, dropped = train(p_drop=0.5)
print(f"train accuracy: baseline {baseline[-1]['train_acc']:.1%}, dropout {dropped[-1]['train_acc']:.1%}")
difference = dropped[-1]["val_acc"] - baseline[-1]["val_acc"]
print(f"validation accuracy: baseline {baseline[-1]['val_acc']:.1%}, dropout {dropped[-1]['val_acc']:.1%} "
      f"({difference:+.1%}, {'better' if difference > 0 else 'not better'} than the baseline)")
confirm(dropped[-1]["train_acc"] <= baseline[-1]["train_acc"],
        "with Dropout the training accuracy is not above the baseline's")

# %% [markdown]
# Dropout does make memorising harder: the training accuracy is not above the baseline's. But on
# validation it moves the accuracy by a few points at most, as the printed difference shows: within
# the noise of a 400-image split (the summary in section 8 puts a number on that).
#
# It cannot add what 300 images do not contain, such as a shape at a position it was never seen at.
# At this scale its main effect is a slower fit. It pays off in larger networks trained for longer.
#
# ## 5. Augmentation, on the training split only
#
# Augmentation shows the model a new variant of each training image at every epoch. Here that is a
# random shift of up to 4 pixels (`RandomCrop` of the 32×32 image padded by 4) and a random
# horizontal flip.
#
# Both keep the class. A left-right mirror keeps every one of the ten shapes what it was. (A vertical
# flip would not: it would turn the upward triangle into a shape that does not occur.) A shift moves
# the shape without changing it, *as long as the shape is away from the border*.
#
# Shapes can touch the border here: their centres move up to 7 pixels from the middle, and their
# radii reach 9 pixels. For those, a crop can cut part of the shape off. And `padding_mode="edge"`
# repeats the outermost pixels into the padding, so a shape touching the border is smeared into a
# short bar of its colour.
#
# So a few augmented images are imperfect versions of their class; the measurement below includes
# that noise. (Padding with a constant would not fix it here: each image has its own background
# colour.)
#
# The training pipeline is random. The validation pipeline stays the plain, deterministic one. Both
# use the normalisation statistics of the training split.
#
# One more trap. A `v2` transform applied to a *batch* tensor `[B, C, H, W]` draws its random
# parameters once and applies them to every image of the batch. Per-image randomness comes from
# applying it per image, in the dataset's `__getitem__` (as `Images` does):

# %%
augment = v2.Compose([v2.RandomCrop(32, padding=4, padding_mode="edge"), v2.RandomHorizontalFlip(),
                      v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])
torch.manual_seed(0)
batch = augment(train_images[:1].repeat(8, 1, 1, 1))  # one random crop for the whole batch
per_image = torch.stack([augment(train_images[0]) for _ in range(8)])
print("distinct images, whole batch at once:", len(torch.unique(batch, dim=0)),
      "| one image at a time:", len(torch.unique(per_image, dim=0)))
confirm(len(torch.unique(batch, dim=0)) == 1 and len(torch.unique(per_image, dim=0)) > 1,
        "a v2 transform on a batch tensor makes one random draw; per image it makes one each")
fig, axes = plt.subplots(1, 8, figsize=(10, 1.5))
for ax, image in zip(axes, per_image):
    ax.imshow((image * torch.tensor(std)[:, None, None] + torch.tensor(mean)[:, None, None]).clamp(0, 1)
              .permute(1, 2, 0).numpy())  # imshow gets a NumPy array, not a tensor
    ax.axis("off")
fig.suptitle(f"8 augmented versions of one training image ({train_set.classes[train_labels[0]]})")
plt.show()

# %%
augment_model, augmented = train(train_transform=augment)
difference = augmented[-1]["val_acc"] - baseline[-1]["val_acc"]
print(f"validation accuracy: baseline {baseline[-1]['val_acc']:.1%}, augmentation "
      f"{augmented[-1]['val_acc']:.1%} ({difference:+.1%})")
ahead = [row["epoch"] for row, base in zip(augmented, baseline) if row["val_acc"] > base["val_acc"]]
noise = math.sqrt(0.5 * 0.5 / len(val_labels))  # the largest standard error of an accuracy on 400 images
late_accs = [row["val_acc"] for row in baseline[len(baseline) // 2:]]
jump = max(abs(later - earlier) for earlier, later in zip(late_accs, late_accs[1:]))
print(f"epochs at which augmentation's validation accuracy is above the baseline's: {ahead}; "
      f"one standard error of an accuracy measured on {len(val_labels)} images: up to {noise:.1%}; "
      f"the baseline's own validation accuracy moves by up to {jump:.1%} from one epoch to the next "
      f"over its last {len(late_accs)} epochs")
confirm(abs(difference) < jump,
        "the final accuracy difference is smaller than the baseline's own epoch-to-epoch movement")
gaps = [run[-1]["train_acc"] - run[-1]["val_acc"] for run in (baseline, augmented)]
print(f"train-val gap: baseline {gaps[0]:.1%}, augmentation {gaps[1]:.1%}; validation loss at the end: "
      f"baseline {baseline[-1]['val_loss']:.3f}, augmentation {augmented[-1]['val_loss']:.3f}")
confirm(gaps[1] < gaps[0] - 0.2 and augmented[-1]["val_loss"] < baseline[-1]["val_loss"],
        "augmentation shrinks the train-val gap by more than 20 points and ends with a lower validation loss")
confirm(abs(difference) < 0.1 and augmented[-1]["val_loss"] < augmented[-2]["val_loss"],
        "augmentation's validation loss is still falling at the last epoch")
plot_gap({"baseline": baseline, "augmentation": augmented}, "Augmentation on the training split")

# %% [markdown]
# Of the three regularisers, augmentation is the one with a clear effect. It adds what the small
# split lacks: the same shape at other positions.
#
# The robust results (both confirmed by the cell):
#
# - the gap shrinks to less than half;
# - the validation loss ends far lower.
#
# The validation *accuracy* is another matter. The varied images are harder to fit, so the augmented
# run learns more slowly, and its validation accuracy is not clearly above the baseline's (the plot,
# and the printed list of epochs where it is ahead).
#
# At the end the two differ by less than the baseline's own validation accuracy moves from one epoch
# to the next (confirmed by the cell). That is within noise, not a result to rely on.
#
# Its validation loss is still falling at the last epoch (confirmed too). This run would profit from
# more epochs; the baseline would not.
#
# ### Pitfall: augmenting the validation data
#
# Suppose the random transforms end up in the validation pipeline as well (one pipeline for both
# splits, say). Then the validation score is random: it measures the model on images it will never
# be asked about, different ones at every measurement.
#
# Measured on the augmented model, twice with the training transform and once with the plain one:

# %%
torch.manual_seed(1)
noisy = [measure(augment_model, torch.stack([augment(image) for image in val_images]), val_labels)[1]
         for _ in range(2)]
clean = measure(augment_model, val_inputs, val_labels)[1]
print(f"validation accuracy with the random training transform: {noisy[0]:.1%}, then {noisy[1]:.1%}; "
      f"with the plain transform: {clean:.1%} (every time)")
confirm(noisy[0] != noisy[1], "validation with the random transform gives a different score each time")

# %% [markdown]
# The two random measurements of the same model disagree with each other (checked by the cell).
# Each may land above, below or, by chance, on the plain score; that varies from run to run.
# Comparing two models (or two epochs, for early stopping) on them compares noise.
#
# **Fix:** two pipelines. The random one is for the training split only; the deterministic one is
# for validation and test.
#
# ## 6. Early stopping that keeps the best weights
#
# The baseline's validation loss was lowest at some epoch and then rose. Early stopping:
#
# 1. watches the validation loss after every epoch;
# 2. remembers the best weights;
# 3. stops when `patience` epochs in a row have not improved;
# 4. puts the best weights back.
#
# The remembering has a classic trap. `model.state_dict()` returns the model's *own* tensors, not a
# copy, so training keeps changing a "saved" state:

# %%
probe = nn.Linear(2, 1)
saved = probe.state_dict()
copied = copy.deepcopy(probe.state_dict())
with torch.no_grad():
    probe.weight.add_(1.0)  # one more training step, say
print("saved without a copy changed too:", torch.equal(saved["weight"], probe.weight),
      "| the deep copy kept the old value:", not torch.equal(copied["weight"], probe.weight))
confirm(saved["weight"].data_ptr() == probe.weight.data_ptr(),
        "state_dict() returns the module's own tensors (the same memory), not copies")


# %% [markdown]
# `.detach()` and, on the CPU, `.cpu()` return the same memory too. `copy.deepcopy(...)` or
# `{k: v.clone() for k, v in state.items()}` make real copies. (So does saving it to a file with
# `torch.save`, notebook 09.)
#
# ### Exercise 2 — `early_stopping`
#
# Write `early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0)`:
# run at most `max_epochs` epochs, numbered from 1; each epoch calls `train_epoch(model)`, then
# `val_loss = validate(model)`. An epoch *improves* when `val_loss < best_loss - min_delta` (strictly:
# a tie is no improvement; the first epoch always improves). After each improvement keep a copy of
# `model.state_dict()` (parameters *and* buffers, such as BatchNorm's running statistics) that
# later training cannot change. Stop as soon as `patience` epochs in a row have not improved.
# Before returning, load the best copy into the model, and return the best epoch's number.

# %%
def early_stopping(model: nn.Module, train_epoch, validate, max_epochs: int, patience: int,
                   min_delta: float = 0.0) -> int:
    ### BEGIN SOLUTION
    best_loss, best_epoch, best_state, bad_epochs = math.inf, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
    ### END SOLUTION
    ### BEGIN STUB
    # best_loss, best_epoch, best_state, bad_epochs = math.inf, 0, None, 0
    # raise NotImplementedError("early_stopping: your code here")
    ### END STUB


# %%
check("07.early_stopping", early_stopping)

# %% [markdown]
# How much patience? `gen.early_stopping` (the packaged version of your function) can replay the
# baseline's logged validation losses. A dummy model stands in: nothing is trained. It tells where
# each patience would have stopped:

# %%
for patience in (1, 2, 3):
    replay = iter(row["val_loss"] for row in baseline)
    ran = []
    best_epoch = gen.early_stopping(nn.Linear(1, 1), lambda model: ran.append(1), lambda model: next(replay),
                                EPOCHS, patience)
    print(f"patience {patience}: stops after epoch {len(ran):2}, best epoch {best_epoch:2} "
          f"(val loss {baseline[best_epoch - 1]['val_loss']:.4f})")
    if patience == 1:
        confirm(best_epoch < best_val["epoch"], "patience 1 stops on the noise of the first epochs")

# %% [markdown]
# The validation loss of a small split is noisy. With `patience=1`, the first epoch that happens to
# be no better ends the run, long before the real minimum.
#
# Patience trades training time against the risk of stopping on noise. Values of 3 to 10 epochs are
# common in longer runs.
#
# Now a real run: the baseline again, with early stopping and `patience=2`. The replay above already
# says where that stops; the point here is to watch the stop and the restore on a real model. It may
# run up to `MAX_EPOCHS` epochs, more than the baseline's 12, so that it is the patience that ends
# the run.
#
# The first printed line is the last epoch *trained*. The second is the model handed back, which the
# cell measures again: its validation loss must be the best epoch's, not the last one's.

# %%
MAX_EPOCHS = 20
stopped_model, stopped = train(epochs=MAX_EPOCHS, stopper=lambda model, train_epoch, validate, epochs:
                               gen.early_stopping(model, train_epoch, validate, epochs, patience=2))
best = stopped[stopped_model.best_epoch - 1]
restored_loss, _ = measure(stopped_model, val_inputs, val_labels)
print(f"stopped after epoch {len(stopped)} of at most {MAX_EPOCHS}; the model handed back is the best "
      f"epoch's, {best['epoch']}: logged val loss {best['val_loss']:.4f}, val acc {best['val_acc']:.1%}; "
      f"measured again now: val loss {restored_loss:.4f}")
confirm(len(stopped) < MAX_EPOCHS, "the patience ended the run, not the epoch limit")
confirm(round(restored_loss, 4) == best["val_loss"] and best["epoch"] < len(stopped),
        "the model handed back is the best epoch's, not the last one's")
confirm([row["val_loss"] for row in stopped] == [row["val_loss"] for row in baseline[:len(stopped)]],
        "with the same initialisation and batches, the run repeats the baseline's epochs")

# %% [markdown]
# Same initialisation, same batches: this run repeats the baseline's epochs (checked by the cell).
# So it stops where the replay said patience 2 would: `patience` epochs after its best one, well
# before `MAX_EPOCHS`. The model handed back is the best epoch's, not the last one's.
#
# Whether 2 epochs of patience are enough depends on how noisy the first epochs' validation losses
# are, and that varies with the machine's float arithmetic. If the best epoch is one of the first,
# the model handed back is barely trained: the mechanism worked, the patience was too short. The
# replay above shows which patience reaches the later minimum.
#
# Early stopping picks a point on the curve; it does not move the curve. And since the validation
# split chose the epoch, its score is no longer a fair estimate for new data: report the final score
# on a third split, the test split, which took no part in the choice.
#
# ## 7. Learning-rate warm-up
#
# At the first steps the weights are random, and Adam's running averages of the gradient have seen
# only a few batches. So the first updates are the least reliable.
#
# A **warm-up** starts with a small learning rate and raises it linearly over the first steps. A
# cosine then lowers it to 0 by the end.
#
# PyTorch builds it from two schedulers joined by `SequentialLR`, which runs the first until the
# milestone and the second after it. `LinearLR` refuses `start_factor=0`, so the warm-up starts at
# `base_lr / warmup_steps`.
#
# ### Exercise 3 — `warmup_cosine`
#
# Write `warmup_cosine(optimizer, warmup_steps, total_steps)` returning a scheduler (for example a
# `SequentialLR` of the two below; any scheduler with the same learning-rate curve passes), stepped
# once per optimizer step: from step 0 to step `warmup_steps` the learning rate of every param
# group rises linearly from `base_lr / warmup_steps` to `base_lr` (`LinearLR` with
# `start_factor=1 / warmup_steps`, `total_iters=warmup_steps`); then a `CosineAnnealingLR` with
# `T_max = total_steps - warmup_steps` brings it to 0 at step `total_steps`. Do not step the
# scheduler inside the function.

# %%
def warmup_cosine(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int):
    ### BEGIN SOLUTION
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cosine = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps])
    ### END SOLUTION
    ### BEGIN STUB
    # sched = torch.optim.lr_scheduler
    # raise NotImplementedError("warmup_cosine: your code here")
    ### END STUB


# %%
check("07.warmup_cosine", warmup_cosine)

# %% [markdown]
# The learning rate per step, traced with the optimizer stepped before the scheduler. That is the
# order PyTorch expects; the other order warns, and skips the first value:

# %%
TOTAL_STEPS, WARMUP_STEPS = STEPS, 20
tracer = torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=LR)
scheduler = gen.warmup_cosine(tracer, WARMUP_STEPS, TOTAL_STEPS)
lrs = []
for step in range(TOTAL_STEPS + 1):
    lrs.append(tracer.param_groups[0]["lr"])
    tracer.step()
    scheduler.step()
print("steps 0-3:", [f"{lr:.2e}" for lr in lrs[:4]], f"| step {WARMUP_STEPS}: {lrs[WARMUP_STEPS]:.2e}",
      f"| step {TOTAL_STEPS}: {lrs[TOTAL_STEPS]:.2e}")
confirm(abs(lrs[WARMUP_STEPS] - LR) < 1e-12 and lrs[TOTAL_STEPS] < 1e-12,
        "the warm-up reaches the base rate at the milestone and the cosine ends at 0")
fig, ax = plt.subplots(figsize=(6, 2.5))
ax.plot(lrs)
ax.axvline(WARMUP_STEPS, color="C3", ls="--", lw=1, label=f"milestone = {WARMUP_STEPS}")
ax.set(xlabel="optimizer step", ylabel="learning rate", title="LinearLR warm-up, then cosine")
ax.legend()
plt.show()

# %% [markdown]
# Does the warm-up help here? A fair test is where it is supposed to matter: a learning rate ten times
# larger, 3e-2, and the first two epochs (20 steps, one every batch of 30).
#
# Both runs get the cosine schedule of a full 12-epoch run (`total_steps = STEPS`, 120 steps, of
# which only the first 20 run here). One run has no warm-up, the other 10 warm-up steps, so the
# warm-up is the only difference. Without it, the cosine alone is a `CosineAnnealingLR` with
# `T_max = STEPS`.

# %%
runs = {}
for warm in (0, 10):
    def schedule(optimizer, warm=warm):
        if warm == 0:
            return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)
        return gen.warmup_cosine(optimizer, warm, STEPS)
    _, runs[warm] = train(schedule=schedule, epochs=2, lr=3e-2, quiet=True)
    print(f"lr 3e-2, cosine over {STEPS} steps, warm-up {warm:2} steps: train loss after epoch 1 "
          f"{runs[warm][0]['train_loss']:.3f}, after epoch 2 {runs[warm][1]['train_loss']:.3f}; "
          f"val acc after epoch 2 {runs[warm][1]['val_acc']:.1%}")
for epoch in (1, 2):
    with_warmup, without = runs[10][epoch - 1]["train_loss"], runs[0][epoch - 1]["train_loss"]
    print(f"after epoch {epoch}, the warm-up run's training loss is "
          f"{'lower' if with_warmup < without else 'higher'} ({with_warmup:.3f} against {without:.3f})")
confirm(runs[10][0]["train_loss"] > runs[0][0]["train_loss"], "the warm-up run's training loss is higher after epoch 1")
confirm(runs[10][1]["train_loss"] > runs[0][1]["train_loss"] - 0.1, "the warm-up gives no clear gain after epoch 2")
confirm(all(run[1]["val_acc"] < 0.2 and run[0]["train_loss"] > math.log(10) for run in runs.values()),
        "at lr 3e-2 both runs stay at chance, with a first-epoch loss above ln 10")

# %% [markdown]
# At this rate neither run has learned anything after two epochs. Validation accuracy is at chance
# (10 classes), and the training loss after the first epoch is above ln 10 ≈ 2.30, the loss of
# guessing (checked by the cell).
#
# The warm-up does not rescue it. As printed, the warm-up run's training loss is *higher* after
# epoch 1 (the end of its warm-up), and not clearly lower after epoch 2 (both checked).
#
# One run each, both at chance level, says little either way. On this model the remedy for a rate
# that is too large is a smaller rate.
#
# Warm-up earns its place in larger models (transformers above all) and with large batches. There
# the first updates at full rate can throw training into a region it never recovers from. It is
# cheap insurance, not a regulariser.
#
# ## 8. The remedies side by side
#
# Every full run of this notebook on the same 300 images, at its last epoch (early stopping: at the
# epoch it restored):

# %%
results = {"baseline": baseline[-1], "weight decay 0.1": decayed[-1], "dropout 0.5": dropped[-1],
           "augmentation": augmented[-1], "early stopping": stopped[stopped_model.best_epoch - 1]}
for name, row in results.items():
    print(f"{name:16} epoch {row['epoch']:2}: train acc {row['train_acc']:6.1%}  val acc {row['val_acc']:6.1%}  "
          f"gap {row['train_acc'] - row['val_acc']:6.1%}  val loss {row['val_loss']:.3f}")
full_runs = [name for name in results if name != "early stopping"]  # the four runs of 12 epochs
smallest_gap = min(full_runs, key=lambda name: results[name]["train_acc"] - results[name]["val_acc"])
lowest_loss = min(results, key=lambda name: results[name]["val_loss"])
print(f"smallest gap after 12 epochs: {smallest_gap}; lowest validation loss: {lowest_loss}")
confirm(smallest_gap == lowest_loss == "augmentation",
        "augmentation has both the smallest gap of the 12-epoch runs and the lowest validation loss")
noise_of_difference = math.sqrt(2) * noise  # standard error of the difference of two accuracies on 400 images
shifts = {name: results[name]["val_acc"] - baseline[-1]["val_acc"] for name in ("weight decay 0.1", "dropout 0.5")}
print("validation accuracy minus the baseline's: "
      + ", ".join(f"{name} {shift:+.1%}" for name, shift in shifts.items())
      + f"; two standard errors of such a difference: {2 * noise_of_difference:.1%}")
confirm(all(abs(shift) < 2 * noise_of_difference for shift in shifts.values()),
        "weight decay and Dropout move the validation accuracy by less than two standard errors of the difference")

# %% [markdown]
# The honest summary at this scale (300 images, 120 steps):
#
# - augmentation is the only remedy with a large effect, on the gap of the 12-epoch runs and on the
#   validation loss (checked by the cell above);
# - its validation accuracy ends within noise of the baseline's (section 5);
# - weight decay and Dropout move the baseline's validation accuracy by a few points at most: less
#   than two standard errors of a difference between two accuracies measured on 400 images, so not
#   distinguishable from noise (checked);
# - early stopping hands back the best epoch's model instead of the last one's (its gap only says
#   where it stopped);
# - the warm-up did not help here.
#
# None of them turns 300 images into 3,000. Notebook 06 reached over 90 % validation accuracy with
# 10× more images, though with a different CNN and settings, so that gap is not all data.
#
# With more data, larger models and longer runs the ordering can change. That is why each remedy is
# measured and not assumed.
#
# ## Key points
#
# - Overfitting: training accuracy near 100 % and training loss near 0, validation accuracy
#   stalled, validation loss no longer falling (on a small split: noisy rather than a clean rise).
#   Log both splits every epoch (in eval mode) and plot the gap.
# - Weight decay in AdamW is decoupled: each step first `p ← p − lr·wd·p`, then the Adam update.
#   Use parameter groups so that biases and normalisation weights get `weight_decay=0.0`; a group
#   without the key gets AdamW's default 0.01. Find norm layers by module type (whatever they are
#   called) and biases by their registered name `bias` (a bias under another name, such as
#   `nn.MultiheadAttention`'s `in_proj_bias`, needs its own rule); skip frozen and repeated (tied)
#   parameters.
# - Dropout and weight decay make memorising harder; with little data and short runs their effect
#   is small. Augmentation adds variation the data lacks and was the strongest remedy here.
# - Random augmentation belongs to the training pipeline only; validation stays deterministic,
#   with normalisation statistics from the training split. `v2` transforms on a batch tensor use
#   one random draw for the whole batch: apply them per image.
# - Early stopping keeps a *copy* of the best `state_dict()` (it aliases the live tensors),
#   counts epochs without improvement in a row, and restores the best state at the end.
# - Warm-up: `SequentialLR([LinearLR(start_factor=1/warmup_steps, total_iters=warmup_steps),
#   CosineAnnealingLR(T_max=total_steps - warmup_steps)], milestones=[warmup_steps])`, stepped
#   per batch after `optimizer.step()`.
#
# ## Further reading
#
# - PyTorch docs: [torch.optim](https://docs.pytorch.org/docs/stable/optim.html), section
#   [Per-parameter options](https://docs.pytorch.org/docs/stable/optim.html#per-parameter-options)
#   (parameter groups), and [AdamW](https://docs.pytorch.org/docs/stable/generated/torch.optim.AdamW.html).
# - PyTorch docs: [torch.optim.lr_scheduler.LinearLR](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.LinearLR.html),
#   [SequentialLR](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.SequentialLR.html)
#   and [CosineAnnealingLR](https://docs.pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.CosineAnnealingLR.html).
# - PyTorch docs: [torch.nn.Dropout](https://docs.pytorch.org/docs/stable/generated/torch.nn.Dropout.html);
#   torchvision docs: [Getting started with transforms v2](https://docs.pytorch.org/vision/stable/auto_examples/transforms/plot_transforms_getting_started.html).
# - PyTorch docs: [torch.nn.Module.state_dict](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.state_dict)
#   (the returned tensors share memory with the module).
# - Next: [08 · AMP and GPU memory](08_amp_and_gpu_memory.ipynb).
