# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · nn.Module: how a model keeps track of itself
#
# Every PyTorch model is an `nn.Module`. Most of what a module does for you depends on one
# bookkeeping trick: attributes assigned to a module are *registered*. That is how it lists
# parameters for the optimizer, moves to a device or dtype, saves and loads, and switches between
# training and evaluation behaviour.
#
# This notebook opens that bookkeeping up. It reproduces the bugs that happen when a layer escapes
# it, measures what `train()` and `eval()` really change, and shows how the choice of
# initialisation decides whether a signal survives a 24-layer network.

# %% [markdown]
# ## You will learn (≈ 60 min)
#
# 1. How `nn.Module.__setattr__` registers parameters, submodules and buffers — and the three
#    ways a layer silently escapes registration (created in `forward`, kept in a Python list,
#    stored as a plain tensor attribute).
# 2. What ends up in `parameters()`, `buffers()` and `state_dict()`, including frozen and shared
#    (tied) weights, and the memory that freezing saves.
# 3. What `train()` and `eval()` change in Dropout and BatchNorm, measured; `nn.ReLU` vs `F.relu`.
# 4. How default, Kaiming, Xavier, small-normal and zero initialisation shape the activations of a
#    deep net with ReLU, tanh, sigmoid or no activation, using `model.apply` and forward hooks to
#    set and inspect them.

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

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.devices import pick_device
from course_utils.claims import confirm
from course_utils.exercises import check
from course_utils.viz.activations import plot_activation_stds
from course_utils.widgets.init_explorer import activation_stds, init_explorer

device = pick_device()


# %% [markdown]
# ## 1. A module is a registry
#
# A model is a class: `__init__` creates the layers and stores them as attributes, `forward`
# says how data flows through them. Calling `model(x)` runs `forward` (plus any hooks, see
# section 9). The part that is easy to miss is what happens on `self.fc1 = nn.Linear(...)`.

# %%
class MLP(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


model = MLP(4, 8, 2)
print(model)
for name, p in model.named_parameters():
    print(f"{name:11} shape {tuple(p.shape)}")

# %% [markdown]
# `nn.Module` overrides `__setattr__`, and sorts each value by its type:
#
# - an `nn.Parameter` goes into the module's `_parameters` dict;
# - an `nn.Module` goes into `_modules`;
# - an `nn.Buffer` (since PyTorch 2.5), or a tensor assigned to a name already registered as a
#   buffer, goes into `_buffers`. A *buffer* is a tensor the model keeps and saves but does not
#   train, such as BatchNorm's running mean (section 5);
# - anything else becomes an ordinary Python attribute.
#
# `parameters()`, `.to()`, `state_dict()`, `train()` and friends walk only those three dicts,
# recursively through `_modules`. The layers are *not* in the instance `__dict__`: `__getattr__`
# finds them in the registry when you write `model.fc1`.

# %%
print("model._modules   :", list(model._modules))
print("model._parameters:", list(model._parameters), "(the container owns no parameter itself)")
print("fc1._parameters  :", list(model.fc1._parameters))
print("'fc1' in model.__dict__:", "fc1" in model.__dict__)

# %% [markdown]
# The same rules on an empty module: a `Parameter`, a `Module` and an `nn.Buffer` are registered
# by plain assignment. A plain tensor and a string are ordinary attributes (so is the `training`
# flag that `train()`/`eval()` flip).

# %%
box = nn.Module()
box.w = nn.Parameter(torch.zeros(3))
box.inner = nn.Linear(3, 1)
box.b = nn.Buffer(torch.zeros(2))
box.t = torch.zeros(3)
box.note = "just a string"
print("named_parameters:", [n for n, _ in box.named_parameters()])
print("_parameters:", list(box._parameters), "| _modules:", list(box._modules), "| _buffers:", list(box._buffers))
print("state_dict:", list(box.state_dict()))
print("ordinary attributes:", [k for k in vars(box) if not k.startswith("_")])


# %% [markdown]
# ### Pitfall: forgetting `super().__init__()`
#
# The registry dicts are created by `nn.Module.__init__`. Assign a layer before calling it and
# `__setattr__` has nowhere to put it:

# %% tags=["raises-exception"]
class NoSuper(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(2, 2)


NoSuper()

# %% [markdown]
# **Fix:** make `super().__init__()` the first line of every `__init__`, as `MLP` does.

# %% [markdown]
# ## 2. Pitfall: a layer created inside `forward`
#
# The optimizer receives `model.parameters()` once, when you build it. A layer that does not
# exist at that moment, or that is created anew on every call, is never trained. Two versions of
# the bug, on a tiny regression problem:

# %%
torch.manual_seed(0)
X = torch.randn(128, 4, device=device)
true_w = torch.tensor([[1.5], [-2.0], [0.5], [1.0]], device=device)
y = X @ true_w + 0.3


def train(model: nn.Module, steps: int = 150, lr: float = 0.05) -> float:
    """Plain full-batch SGD; returns the last loss."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = F.mse_loss(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


# %% [markdown]
# **Version A: a local layer.** Every call builds a brand-new random `nn.Linear`, so it is not
# among the parameters and the same input gives a different output each time.

# %%
class FreshHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        head = nn.Linear(16, 1).to(x.device)  # BUG: a new random layer on every call
        return head(torch.relu(self.body(x)))


fresh = FreshHead().to(device)
print("parameters:", [n for n, _ in fresh.named_parameters()])
with torch.no_grad():
    print(f"same input, two calls: {fresh(X[:1]).item():.4f} vs {fresh(X[:1]).item():.4f}")


# %% [markdown]
# **Version B: created lazily on the first call.** `self.head = ...` inside `forward` *does*
# register the layer — but only after the optimizer was built from the old parameter list. The
# head gets gradients on every step and nobody applies them:

# %%
class LateHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not hasattr(self, "head"):  # BUG: created on the first call, after the optimizer
            self.head = nn.Linear(16, 1).to(x.device)
        return self.head(torch.relu(self.body(x)))


late = LateHead().to(device)
optimizer = torch.optim.SGD(late.parameters(), lr=0.05)
late(X)  # first call creates the head
head_before = late.head.weight.detach().clone()
body_before = late.body.weight.detach().clone()
for _ in range(50):
    loss = F.mse_loss(late(X), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("tensors in the optimizer:", sum(len(g["params"]) for g in optimizer.param_groups),
      "| tensors in late.parameters():", len(list(late.parameters())))
print("head has a gradient:", late.head.weight.grad is not None)
print(f"largest change of head.weight after 50 steps: {(late.head.weight - head_before).abs().max().item():.4g}")
print(f"largest change of body.weight after 50 steps: {(late.body.weight - body_before).abs().max().item():.4g}")


# %% [markdown]
# **Fix:** create every layer in `__init__`. Then the optimizer sees all of it and the loss goes
# down. (If a layer's input size is only known at the first call, use `nn.LazyLinear` and run one
# dummy batch through the model *before* building the optimizer.)

# %%
class FixedHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 16)
        self.head = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


torch.manual_seed(1)
loss_fresh = train(FreshHead().to(device))
torch.manual_seed(1)
loss_fixed = train(FixedHead().to(device))
print(f"loss after 150 steps: fresh head each call {loss_fresh:.4g} | head built in __init__ {loss_fixed:.4g}")


# %% [markdown]
# ## 3. Pitfall: a plain Python list hides its layers
#
# `__setattr__` looks at the value being assigned. A `list` of layers is neither a `Parameter` nor
# a `Module`, so it is stored as an ordinary attribute and its contents are invisible to the
# registry. The forward pass still works, which is what makes this bug quiet.

# %%
class ListMLP(nn.Module):
    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]  # BUG: plain list

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(torch.relu(x) if i > 0 else x)
        return x


torch.manual_seed(0)
listy = ListMLP([4, 8, 8, 1])
print("forward works, output shape:", tuple(listy(X[:3].cpu()).shape))
print("tensors in parameters():", len(list(listy.parameters())))
print("state_dict keys:", list(listy.state_dict()))

# %% [markdown]
# The optimizer is the first to notice:

# %% tags=["raises-exception"]
torch.optim.SGD(listy.parameters(), lr=0.1)

# %% [markdown]
# `.to()` skips the hidden layers too. So that this runs everywhere, with or without a GPU, we
# move the model to another dtype — `.to(torch.float64)` walks the same registry as `.to("cuda")` —
# and feed it float64 data:

# %% tags=["raises-exception"]
listy = listy.to(torch.float64)
print("first layer's dtype after .to(torch.float64):", listy.layers[0].weight.dtype)
listy(X[:3].cpu().double())

# %% [markdown]
# Devices behave the same way. The `meta` device (tensors with a shape but no data) stands in for
# a GPU here: after `.to("meta")` the hidden layers are still on the CPU. On a real GPU the next
# forward pass fails with a device-mismatch error (quoted in section 5).

# %%
listy = ListMLP([4, 8, 8, 1]).to("meta")
print("first layer's device after .to('meta'):", listy.layers[0].weight.device)


# %% [markdown]
# **Fix:** `nn.ModuleList` is a list that registers what you put in it (names `layers.0`,
# `layers.1`, ...). `nn.ModuleDict` does the same for a dict, `nn.ParameterList` /
# `nn.ParameterDict` for raw parameters, and `nn.Sequential` when the forward pass is simply one
# layer after the other.

# %%
class ModuleListMLP(ListMLP):
    def __init__(self, sizes: list[int]) -> None:
        super().__init__(sizes)
        self.layers = nn.ModuleList(self.layers)  # the fix: registered


good = ModuleListMLP([4, 8, 8, 1])
print("tensors in parameters():", len(list(good.parameters())))
print("state_dict keys:", list(good.state_dict()))
good = good.to(torch.float64)
print("output dtype on float64 input:", good(X[:3].cpu().double()).dtype)
print("device after .to('meta'):", good.to("meta").layers[0].weight.device)


# %% [markdown]
# ### Exercise 1 — `make_mlp`
#
# Write `make_mlp(sizes)` returning a module with `nn.Linear(sizes[i], sizes[i+1])` layers, an
# `nn.ReLU()` between consecutive layers and nothing after the last one (it produces scores that
# may be negative). Every layer must be registered. `make_mlp([4, 8, 3])` is
# `Linear(4, 8) → ReLU → Linear(8, 3)`.

# %%
def make_mlp(sizes: list[int]) -> nn.Module:
    ### BEGIN SOLUTION
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)
    ### END SOLUTION


# %%
check("04.make_mlp", make_mlp)


# %% [markdown]
# ## 4. Frozen and shared parameters
#
# Two things change what "the parameters to train" means:
#
# * **Freezing**: `p.requires_grad_(False)` keeps a parameter in `parameters()` and in
#   `state_dict()`, but autograd no longer computes its gradient, so the optimizer leaves it alone.
#   Typical for a pretrained backbone.
# * **Sharing (tying)**: assigning one module's `Parameter` to another
#   (`head.weight = embed.weight`) makes both names point at *one* tensor. `parameters()` yields it
#   once; `named_parameters(remove_duplicate=False)` and `state_dict()` list it under every name.

# %%
class TiedLM(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.head.weight = self.embed.weight  # tie: one (vocab, dim) matrix used twice

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.mix(self.embed(tokens))))


lm = TiedLM()
print("same tensor:", lm.head.weight is lm.embed.weight)
print("names from named_parameters():", [n for n, _ in lm.named_parameters()])
print("names with remove_duplicate=False:", [n for n, _ in lm.named_parameters(remove_duplicate=False)])
print("state_dict keys:", list(lm.state_dict()))

# %%
lm.embed.weight.requires_grad_(False)  # freeze the shared matrix: it is frozen under both names
print("head.weight frozen too:", not lm.head.weight.requires_grad)
print("trainable tensors:", [n for n, p in lm.named_parameters() if p.requires_grad])

# %% [markdown]
# Freezing saves memory twice. First, a frozen parameter gets no `.grad` tensor. Second, when
# *everything* before a layer is frozen, autograd has no reason to keep that part's activations for
# the backward pass: nothing upstream needs a gradient.
#
# Measured on a backbone of two `Linear(·, 256)` layers (each followed by a ReLU) and a trainable
# head, with a batch of 128. Two numbers: the activations saved for backward (the saved-tensors
# meter of notebook 03: each counted once, weights left out), and the bytes of every `.grad` after
# `backward()`:

# %%
from course_utils.memory import SavedTensorsMeter


def training_memory(frozen: str) -> tuple[int, int]:
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
    clf = nn.Sequential(backbone, nn.Linear(256, 10))
    if frozen == "backbone":
        backbone.requires_grad_(False)
    elif frozen == "middle Linear":
        backbone[2].requires_grad_(False)
    with SavedTensorsMeter(exclude=clf) as meter:
        loss = F.cross_entropy(clf(torch.randn(128, 64)), torch.randint(0, 10, (128,)))
    loss.backward()
    return meter.bytes, sum(p.grad.nbytes for p in clf.parameters() if p.grad is not None)


for frozen in ("nothing", "backbone", "middle Linear"):
    saved, grads = training_memory(frozen)
    print(f"frozen: {frozen:<13} activations saved {saved / 1024:4.0f} KiB | gradients {grads / 1024:4.0f} KiB")

# %% [markdown]
# With the backbone frozen, two things are left: the head's input (the last ReLU output, needed for
# the head's weight gradient) and the loss's own small tensors. Gradients exist only for the
# head's 2,570 numbers.
#
# The saving in activations comes from freezing the *first* layers. Freezing only the middle
# `Linear` saves its gradients and no activations. Backward must still pass through it to reach the
# first layer, so the ReLU before it keeps its output.


# %% [markdown]
# ### Exercise 2 — `count_trainable`
#
# Write `count_trainable(model) -> int`: the number of scalars the optimizer can change — only
# parameters with `requires_grad=True`, a shared parameter counted once. The checker's models
# include a frozen backbone with BatchNorm buffers and a tied embedding/output weight.

# %%
def count_trainable(model: nn.Module) -> int:
    ### BEGIN SOLUTION
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
    ### END SOLUTION


# %%
check("04.count_trainable", count_trainable)


# %% [markdown]
# ## 5. Buffers and `state_dict`
#
# Some tensors belong to the model's state without being trained: BatchNorm's running mean, a
# normalisation constant, a step counter. Register them as **buffers**, with
# `register_buffer(name, tensor)` or by assigning `self.name = nn.Buffer(tensor)`. The two are
# equivalent; `Standardize` below uses both.
#
# Buffers move with `.to()` and are saved in `state_dict()`. They are not in `parameters()`, so no
# optimizer touches them. `persistent=False` keeps a buffer out of `state_dict()`; it still moves
# with the model. A tensor stored as a plain attribute gets none of this.

# %%
class Standardize(nn.Module):
    def __init__(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.calls = nn.Buffer(torch.zeros((), dtype=torch.long), persistent=False)
        self.plain = torch.ones(len(mean))  # ordinary attribute: not moved, not saved

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return (x - self.mean) / self.std * self.plain


norm = Standardize(X.mean(0).cpu(), X.std(0).cpu())
print("parameters:", [n for n, _ in norm.named_parameters()])
print("buffers:   ", [n for n, _ in norm.named_buffers()])
print("state_dict:", list(norm.state_dict()))
norm = norm.to(torch.float64)
print("after .to(float64): mean", norm.mean.dtype, "| calls", norm.calls.dtype, "| plain", norm.plain.dtype)

# %% [markdown]
# Integer buffers such as `calls` keep their dtype: `.to(torch.float64)` only converts floating
# point tensors.
#
# The plain attribute stayed behind in float32. For dtypes that goes unnoticed: the forward pass
# would mix float32 and float64, and PyTorch promotes the product to float64 (notebook 01, §5).
# A device mismatch is not fixed for you. Move the module (to `meta`, our stand-in for a GPU) and
# the plain tensor is left on the CPU. On a GPU the next forward pass stops with
# `RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
# cuda:0 and cpu!`.

# %%
norm = Standardize(torch.zeros(4), torch.ones(4)).to("meta")
print("after .to('meta'): mean on", norm.mean.device, "| plain on", norm.plain.device)

# %% [markdown]
# **Fix:** every tensor the module owns is a parameter (trained) or a buffer (not trained).
# For reference, here is what a model with a BatchNorm layer saves — parameters and buffers,
# with dotted paths through the registry:

# %%
with_bn = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
for key, value in with_bn.state_dict().items():
    kind = "parameter" if key in dict(with_bn.named_parameters()) else "buffer"
    print(f"{key:22} {kind:9} shape {tuple(value.shape)}")

# %% [markdown]
# ## 6. `train()` and `eval()`, measured
#
# `model.train()` / `model.eval()` set the `training` flag on the module and every submodule. Most
# layers ignore it; Dropout and BatchNorm do not.
#
# **Dropout** in training mode zeroes each element with probability `p` and scales the survivors
# by `1/(1-p)`, so the expected value is unchanged; in eval mode it is the identity.

# %%
drop = nn.Dropout(p=0.5)
ones = torch.ones(1, 8)
drop.train()
print("train, call 1:", drop(ones))
print("train, call 2:", drop(ones))
drop.eval()
print("eval          :", drop(ones))

# %%
drop.train()
big = drop(torch.ones(100_000))
print(f"train mode: fraction zeroed {(big == 0).float().mean().item():.3f}, "
      f"survivors equal {big.max().item():.1f}, mean {big.mean().item():.3f}")
drop.eval()
print("eval mode: output equals input:", torch.equal(drop(torch.ones(100_000)), torch.ones(100_000)))

# %% [markdown]
# ### Pitfall: predicting in training mode
#
# A freshly built model is in training mode. Predict without `eval()` and the same input gives a
# different answer on every call:

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 1))
sample = X[:1].cpu()
print("net.training:", net.training)
with torch.no_grad():
    print("three predictions:", [round(net(sample).item(), 4) for _ in range(3)])

# %% [markdown]
# **Fix:** `net.eval()` before evaluating or predicting (and `net.train()` before training again).
# Note that `eval()` does not switch off autograd: wrap inference in `torch.no_grad()` or
# `torch.inference_mode()` as well (notebook 03).

# %%
net.eval()
print("every submodule in eval mode:", not any(m.training for m in net.modules()))
with torch.no_grad():
    print("three predictions:", [round(net(sample).item(), 4) for _ in range(3)])
print("eval() alone still tracks gradients:", net(sample).requires_grad)

# %% [markdown]
# **BatchNorm** in training mode normalises with the *current batch's* mean and variance and
# updates its running estimates (by default 10 % of the way towards the batch statistics:
# `momentum=0.1`). In eval mode it normalises with the running estimates and leaves them alone.

# %%
torch.manual_seed(0)
bn = nn.BatchNorm1d(3)
batch = torch.randn(64, 3) * 2 + 5
bn.train()
out_train = bn(batch)
print("batch mean        :", batch.mean(0))
print("running_mean now  :", bn.running_mean, "(0 → 10 % of the way)")
print("train output: per-feature mean ≈ 0:", out_train.mean(0).abs().max().item() < 1e-5)
print("per-feature std, .std(0)               :", out_train.std(0).detach())
print("per-feature std, .std(0, unbiased=False):", out_train.std(0, unbiased=False).detach())
print(f"sqrt(64 / 63) = {(64 / 63) ** 0.5:.4f}")

# %% [markdown]
# The first std is not 1, and that is not a bug. BatchNorm normalises with the *biased* variance
# of the batch: the mean of the squared deviations, divided by $N = 64$. `.std()` by default
# computes the *unbiased* estimate, divided by $N - 1 = 63$.
#
# The two differ by exactly $\sqrt{64/63}$. With `unbiased=False` (the same as `correction=0`) the
# std is 1, up to the `eps` that BatchNorm adds to the variance.

# %%
before = bn.running_mean.clone()
bn.eval()
out_eval = bn(batch)
print("running_mean unchanged in eval:", torch.equal(before, bn.running_mean))
print("eval output mean  :", out_eval.mean(0).detach(), "(running stats are still far from this batch)")

# %% [markdown]
# In training mode a sample's output depends on the other samples in its batch; in eval mode it
# does not:

# %%
one = batch[:1]
others_a, others_b = torch.randn(15, 3), torch.randn(15, 3) * 3 + 10
for mode in ("train", "eval"):
    getattr(bn, mode)()
    with torch.no_grad():
        a = bn(torch.cat([one, others_a]))[0]
        b = bn(torch.cat([one, others_b]))[0]
    print(f"{mode:5}: same sample, two different batches → identical output: {torch.allclose(a, b)}")

# %% [markdown]
# ## 7. `nn.ReLU` or `F.relu`?
#
# They compute the same thing; neither has parameters. The module form is an object in the
# registry: it shows up in `print(model)` and `named_modules()`, can go into `nn.Sequential`, and
# can carry a forward hook. The functional form is shorter inside a custom `forward`.

# %%
z = torch.randn(6)
print("same values:", torch.equal(nn.ReLU()(z), F.relu(z)))
print("visible modules:", [type(m).__name__ for m in MLP(4, 8, 2).modules()])


# %% [markdown]
# The difference that bites is with layers that *do* depend on the mode. `F.dropout` has its own
# `training` argument, which defaults to `True` and knows nothing about `model.eval()`:

# %%
class FunctionalDropout(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, p=0.5)  # BUG: training=True regardless of eval()


print("after eval():", FunctionalDropout().eval()(torch.ones(1, 8)))


# %% [markdown]
# **Fix:** pass `training=self.training`, or use the `nn.Dropout` module, which does that for you.

# %%
class FixedFunctionalDropout(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, p=0.5, training=self.training)


print("after eval():", FixedFunctionalDropout().eval()(torch.ones(1, 8)))

# %% [markdown]
# ## 8. Initialisation and `model.apply`
#
# Every layer initialises itself in its constructor. `nn.Linear` uses
# `kaiming_uniform_(weight, a=sqrt(5))`, a uniform distribution with standard deviation
# `1/sqrt(3·fan_in)`, and a uniform bias in `±1/sqrt(fan_in)`. Measured on a wide layer:

# %%
lin = nn.Linear(512, 256)
print(f"weight std {lin.weight.std().item():.4f}  vs 1/sqrt(3*512) = {(3 * 512) ** -0.5:.4f}")
print(f"bias range [{lin.bias.min().item():.4f}, {lin.bias.max().item():.4f}]  vs ±1/sqrt(512) = ±{512 ** -0.5:.4f}")

# %% [markdown]
# To choose something else, write a function that initialises *one* module and hand it to
# `model.apply(fn)`. It calls `fn` on every submodule, children first, the model itself last. So
# the function must check what it was given.
#
# The `nn.init` functions work in place (trailing underscore). The old names without it, such as
# `nn.init.kaiming_normal`, are deprecated and emit a FutureWarning.

# %%
visited = []
MLP(4, 8, 2).apply(lambda m: visited.append(type(m).__name__))
print("apply visits:", visited)


# %% [markdown]
# ### Exercise 3 — `kaiming_init`
#
# Write `kaiming_init(module)` for `model.apply`: if the module is an `nn.Linear` (a subclass of
# `nn.Linear` included, such as the `out_proj` of `nn.MultiheadAttention`), draw its weight from
# Kaiming normal for ReLU (`std = sqrt(2/fan_in)`) and set its bias, if it has one, to zero; leave
# every other module (Conv, LayerNorm, Embedding, ...) untouched. Change the module's own parameters
# in place (do not assign a new `nn.Parameter` or a new `.data`: an optimizer built earlier holds
# these very tensors); like the `nn.init` functions, it need not return anything (`model.apply` ignores return
# values).
# *Normal* matters: `kaiming_uniform_` has the same std but a different distribution.

# %%
def kaiming_init(module: nn.Module) -> None:
    ### BEGIN SOLUTION
    if isinstance(module, nn.Linear):
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    ### END SOLUTION


# %%
check("04.kaiming_init", kaiming_init)

# %% [markdown]
# ## 9. Forward hooks: look inside without editing `forward`
#
# `module.register_forward_hook(hook)` makes the module call `hook(module, inputs, output)` after
# every forward pass (`inputs` is a tuple). It returns a handle; `handle.remove()` unregisters it.
# This is how you inspect activations of a model you did not write.

# %%
probe = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
seen: dict[str, tuple[int, ...]] = {}


def remember_shape(name: str):
    def hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        seen[name] = tuple(output.shape)
    return hook


handles = [m.register_forward_hook(remember_shape(n)) for n, m in probe.named_children()]
probe(X[:5].cpu())
print(seen)
for handle in handles:
    handle.remove()
print("hooks left:", sum(len(m._forward_hooks) for m in probe.modules()))

# %% [markdown]
# ### Pitfall: hooks that are never removed
#
# A hook stays until removed: re-running a registration cell stacks another copy, each firing on
# every forward pass (and keeping alive whatever its closure holds).

# %%
calls = []
stacked = []
for _ in range(3):  # like re-running a registration cell three times
    stacked.append(probe[0].register_forward_hook(lambda m, i, o: calls.append(1)))
probe(X[:5].cpu())
print("hook calls for ONE forward pass:", len(calls))

# %% [markdown]
# **Fix:** keep the handles and remove them (in a `finally:` block if the forward pass might
# raise). For gradients use `register_full_backward_hook`; the older `register_backward_hook` is
# deprecated.

# %%
for handle in stacked:  # clean up the demo
    handle.remove()
calls.clear()
handle = probe[0].register_forward_hook(lambda m, i, o: calls.append(1))
try:
    probe(X[:5].cpu())
finally:
    handle.remove()
probe(X[:5].cpu())
print("hook calls over two forward passes:", len(calls))


# %% [markdown]
# ### Exercise 4 — `layer_output_stds`
#
# Write `layer_output_stds(model, x)`: run `model(x)` once with forward hooks and return
# `{name: std of that module's output}` (Python floats) for every *leaf* submodule — one without
# children — named as in `model.named_modules()`. The std is `output.std()` (the biased
# `output.std(correction=0)` is accepted too). Remove your hooks before returning, and only yours,
# and leave the model in the mode it came in. Careful with lambdas in a loop: they see the loop
# variable's *last* value unless you bind it.

# %%
def layer_output_stds(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    ### BEGIN SOLUTION
    stds: dict[str, float] = {}

    def record(name: str):
        def hook(module, inputs, output):
            stds[name] = output.detach().std().item()
        return hook

    handles = [module.register_forward_hook(record(name))
               for name, module in model.named_modules() if name and not list(module.children())]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return stds
    ### END SOLUTION


# %%
check("04.layer_output_stds", layer_output_stds)


# %% [markdown]
# ## 10. Activations through a deep network
#
# Why does the init matter? Each `Linear` layer multiplies the variance of its input by about
# `fan_in · Var(w)`, and ReLU halves the second moment by zeroing the negative half. So:
#
# | init | Var(w) | per ReLU layer, variance × | so the signal |
# |---|---|---|---|
# | default | 1/(3·fan_in) | 1/6 | shrinks (until the random biases dominate) |
# | Xavier (square layers) | 2/(fan_in+fan_out) = 1/fan_in | 1/2 | shrinks more slowly |
# | Kaiming (ReLU) | 2/fan_in | 1 | keeps its scale |
# | zero | 0 | 0 | is 0: nothing gets through |
#
# Let us measure it: 24 blocks of `Linear(256, 256)` + activation, a standard-normal batch of 256,
# and the std of every activation's output.

# %%
def deep_net(activation: type[nn.Module], depth: int = 24, width: int = 256) -> nn.Sequential:
    blocks: list[nn.Module] = []
    for _ in range(depth):
        blocks += [nn.Linear(width, width), activation()]
    return nn.Sequential(*blocks)


def init_with(scheme: str, value: float = 1.0):
    """`value`: the gain of "xavier_uniform", the std of "normal"."""
    def init(module: nn.Module) -> None:
        if not isinstance(module, nn.Linear) or scheme == "default":
            return
        if scheme == "kaiming":
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        elif scheme == "xavier":
            nn.init.xavier_normal_(module.weight)
        elif scheme == "xavier_uniform":
            nn.init.xavier_uniform_(module.weight, gain=value)
        elif scheme == "normal":
            nn.init.normal_(module.weight, std=value)
        else:
            nn.init.zeros_(module.weight)
        nn.init.zeros_(module.bias)
    return init


def activation_stds_of(scheme: str, activation: type[nn.Module], value: float = 1.0) -> list[float]:
    torch.manual_seed(0)
    net = deep_net(activation)
    net.apply(init_with(scheme, value))
    h = torch.randn(256, 256)
    stds = []
    with torch.no_grad():
        for layer in net:
            h = layer(h)
            if isinstance(layer, activation):
                stds.append(h.std().item())
    return stds


schemes = ["default", "kaiming", "xavier", "zero"]
relu_stds = {s: activation_stds_of(s, nn.ReLU) for s in schemes}
tanh_stds = {s: activation_stds_of(s, nn.Tanh) for s in schemes}
for name, table in (("ReLU", relu_stds), ("tanh", tanh_stds)):
    for s in schemes:
        v = table[s]
        print(f"{name:4} {s:8} std after layer 1: {v[0]:.3g}   12: {v[11]:.3g}   24: {v[23]:.3g}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
plot_activation_stds(relu_stds, ax=axes[0], title="ReLU, 24 layers")
plot_activation_stds(tanh_stds, ax=axes[1], title="tanh, 24 layers")
fig.tight_layout()
plt.show()

# %% [markdown]
# What the measurements say:
#
# * **Kaiming + ReLU** keeps the signal at the same order of magnitude through all 24 layers. It
#   wanders a little because every layer is a different random matrix of finite width.
# * **Xavier + ReLU** loses a constant factor per layer — a straight line on the log axis:

# %%
per_layer = (relu_stds["xavier"][-1] / relu_stds["xavier"][0]) ** (1 / 23)
print(f"Xavier + ReLU: std × {per_layer:.3f} per layer (theory: sqrt(1/2) = {0.5 ** 0.5:.3f})")

# %% [markdown]
# * **Default + ReLU** collapses within a few layers, then flattens at about 0.02: what is left is
#   mostly the random biases (std `1/sqrt(3·256)` ≈ 0.036 before the ReLU), not the input.
# * With **tanh**, Xavier decays slowly and Kaiming stays flat; tanh squashes large values, so
#   neither explodes. tanh shrinks what passes through it, which is why `nn.init.calculate_gain("tanh")`
#   (5/3) exists: it scales Xavier up to compensate.
# * **Zero** init passes nothing: every activation is exactly 0 (drawn dashed at the floor).
#
# ### Xavier uniform, tanh and sigmoid
#
# The usual recommendation for tanh and sigmoid is `xavier_uniform_`. It draws from
# $U(-a, a)$ with $a = \text{gain}\cdot\sqrt{6/(\text{fan\_in} + \text{fan\_out})}$, which has
# the same variance as `xavier_normal_` (a uniform on $\pm a$ has variance $a^2/3$). Measured on the
# same 24-layer net, next to `xavier_normal_`, with the default gain 1 and, for tanh, with the gain
# that `nn.init.calculate_gain` recommends (for sigmoid it recommends 1, the default):

# %%
print(f"recommended gains: tanh {nn.init.calculate_gain('tanh'):.4g} | sigmoid {nn.init.calculate_gain('sigmoid'):.4g}")
xavier_runs = {("tanh", "xavier_normal_"): tanh_stds["xavier"],
               ("tanh", "xavier_uniform_"): activation_stds_of("xavier_uniform", nn.Tanh),
               ("tanh", "xavier_uniform_, gain 5/3"): activation_stds_of("xavier_uniform", nn.Tanh, 5 / 3),
               ("sigmoid", "xavier_normal_"): activation_stds_of("xavier", nn.Sigmoid),
               ("sigmoid", "xavier_uniform_"): activation_stds_of("xavier_uniform", nn.Sigmoid),
               ("sigmoid", "default"): activation_stds_of("default", nn.Sigmoid)}
for (act_name, label), v in xavier_runs.items():
    print(f"{act_name:7} {label:<25} std after layer 1: {v[0]:.3g}   12: {v[11]:.3g}   24: {v[23]:.3g}")

# %% [markdown]
# The uniform and normal rows agree closely; the small differences come from the random matrices.
# The signal sees the variance of the weights, not the shape of their distribution.
#
# With tanh and gain 1 the std still decays over the 24 layers, because tanh's slope is below 1
# away from 0. The gain 5/3 keeps it flat.
#
# Sigmoid is different. Its outputs lie in (0, 1) around 0.5, so their std is small from the first
# layer on and decays slowly. Xavier keeps it above the default init. Sigmoid's slope is at most
# 1/4 (at 0), so each sigmoid layer also shrinks the gradients passing back through it; that is
# the usual reason hidden layers use tanh or ReLU instead.
#
# ### No activation: a normal whose std fits the layer
#
# For layers with no activation after them (a linear projection, a stack of linear maps), the
# common advice is a normal init with a small standard deviation.
#
# *How* small depends on the width. Each such layer multiplies the std of the signal by about
# $\sqrt{\text{fan\_in}}\cdot\sigma$, so $\sigma = 1/\sqrt{\text{fan\_in}}$ (0.0625 at width
# 256) keeps it. The same 24 layers of `Linear(256, 256)`, now with `nn.Identity` instead of an
# activation:

# %%
fan_in = 256
for sigma in (None, 0.02, fan_in ** -0.5, 0.1):                 # None: the default init
    v = activation_stds_of("default", nn.Identity) if sigma is None else activation_stds_of("normal", nn.Identity, sigma)
    per_layer = (fan_in * (sigma ** 2 if sigma else 1 / (3 * fan_in))) ** 0.5   # sqrt(fan_in · Var(w))
    label = "default" if sigma is None else f"normal, std {sigma:.3g}"
    print(f"{label:<18} std after layer 1: {v[0]:.3g}   12: {v[11]:.3g}   24: {v[23]:.3g}   (theory: x{per_layer:.2f} per layer)")

# %% [markdown]
# Only $\sigma = 1/\sqrt{\text{fan\_in}}$ keeps the signal at the same scale.
#
# - A fixed "small" value such as 0.02, popular in large language models, shrinks it here at every
#   layer. It keeps the scale only where $\text{fan\_in} \approx 1/0.02^2 = 2500$ (and those models
#   rely on their normalisation layers as well).
# - Slightly too large, 0.1, and the std grows geometrically.
# - The default init shrinks it by $1/\sqrt 3$ per layer until its random biases set the floor.
#
# Switch the scheme, the activation and the depth yourself. Below the explorer, its static
# rendering (for readers without a live kernel) repeats the measurement on a deeper, narrower
# net: 48 layers of width 128.

# %% tags=["nbval-ignore-output"]
explorer = init_explorer()
display(explorer)
confirm(all(abs(a - b) < 1e-5 for a, b in zip(activation_stds("kaiming", "relu"), relu_stds["kaiming"])),
        "the explorer measures the same Kaiming + ReLU stds as the table above")

# %%
fig = init_explorer(static=True, depth=48, width=128)
plt.show()

# %% [markdown]
# ### Zero init: every unit the same, forever
#
# With all weights equal (zero or any other constant), every hidden unit computes the same
# function, receives the same gradient and takes the same step. The units stay clones, and the
# layer behaves like a single unit. A random init breaks that symmetry.
#
# Measured on a small classifier (label: do the two coordinates have the same sign?):

# %%
torch.manual_seed(1)
points = torch.rand(256, 2) * 2 - 1
labels = (points[:, :1] * points[:, 1:] > 0).float()


def fit_and_inspect(init) -> tuple[float, float, int]:
    torch.manual_seed(2)
    clf = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    clf.apply(init)
    optimizer = torch.optim.Adam(clf.parameters(), lr=0.05)
    for _ in range(150):
        loss = F.binary_cross_entropy_with_logits(clf(points), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    accuracy = ((clf(points) > 0).float() == labels).float().mean().item()
    distinct_units = torch.unique(clf[0].weight.detach(), dim=0).shape[0]
    return loss.item(), accuracy, distinct_units


def constant_init(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.constant_(module.weight, 0.1)
        nn.init.zeros_(module.bias)


for name, init in (("zero", init_with("zero")), ("constant 0.1", constant_init), ("kaiming", init_with("kaiming"))):
    loss, accuracy, distinct = fit_and_inspect(init)
    print(f"{name:12}  loss {loss:.4f}  accuracy {accuracy:.3f}  distinct hidden units {distinct} of 16")

# %% [markdown]
# With zero init nothing but the output bias can move, so the model predicts the majority class.
# The hidden activations are relu(0) = 0, so the output weights get no gradient. And with the
# output weights at 0, nothing flows back to the first layer.
#
# With a constant the units do learn, but in lockstep: 16 copies of one unit. Only the random init
# uses all 16.

# %% [markdown]
# ## Key points
#
# * `nn.Module.__setattr__` registers `Parameter`s, submodules and `nn.Buffer`s; `parameters()`,
#   `.to()`, `state_dict()` and `train()`/`eval()` only see what is registered.
# * Create layers in `__init__`, never in `forward`; keep lists of layers in `nn.ModuleList`
#   (or `nn.Sequential`/`nn.ModuleDict`); call `super().__init__()` first.
# * Non-trained state goes in buffers (`register_buffer(name, t)` or `self.name = nn.Buffer(t)`,
#   `persistent=False` to keep it out of `state_dict`), never in plain tensor attributes.
# * Frozen parameters (`requires_grad=False`) are still parameters; tied weights are one tensor
#   under two names.
# * `eval()` makes Dropout the identity and BatchNorm use (and keep) its running stats; it does not
#   switch off autograd. `F.dropout` ignores `eval()` unless you pass `training=self.training`.
# * Match the init to the activation (Kaiming for ReLU): measured through 24 layers, the wrong
#   scale shrinks the signal by orders of magnitude; constant init never breaks symmetry.
# * `model.apply(fn)` visits every submodule; forward hooks inspect activations — keep the handles
#   and remove them.
#
# ## Further reading
#
# * PyTorch docs: [*torch.nn.Module*](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html) (`register_buffer`, `apply`,
#   `register_forward_hook`, `state_dict`, `train`/`eval`) and
#   [*torch.nn.parameter.Buffer*](https://docs.pytorch.org/docs/stable/generated/torch.nn.parameter.Buffer.html).
# * PyTorch docs: [*torch.nn.init*](https://docs.pytorch.org/docs/stable/nn.init.html) (`kaiming_normal_`, `xavier_normal_`, `calculate_gain`).
# * PyTorch docs: [*ModuleList*](https://docs.pytorch.org/docs/stable/generated/torch.nn.ModuleList.html),
#   [*ModuleDict*](https://docs.pytorch.org/docs/stable/generated/torch.nn.ModuleDict.html),
#   [*ParameterList*](https://docs.pytorch.org/docs/stable/generated/torch.nn.ParameterList.html),
#   [*LazyLinear*](https://docs.pytorch.org/docs/stable/generated/torch.nn.LazyLinear.html).
# * PyTorch docs: [*Dropout*](https://docs.pytorch.org/docs/stable/generated/torch.nn.Dropout.html) and
#   [*BatchNorm1d*](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html) (the `momentum` and `track_running_stats` arguments).
# * PyTorch tutorials: [*Build the Neural Network*](https://docs.pytorch.org/tutorials/beginner/basics/buildmodel_tutorial.html)
#   and [*Saving and Loading Models*](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html).
