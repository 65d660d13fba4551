# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Autograd
#
# PyTorch computes gradients in two phases. While your code runs, it records every operation on
# tensors that require grad. When you call `backward()`, it walks that record backwards with the
# chain rule.
#
# Three questions explain a whole family of training bugs: what gets recorded, where the gradients
# land, and when they are *added* rather than replaced. The bugs: a forgotten `zero_grad`,
# parameters that never learn, accumulation that is off by a factor, inference tensors that refuse
# to train. Each one is reproduced below, then fixed.
#
# ## You will learn (≈ 45 min)
#
# 1. Tell leaf from non-leaf tensors, read the graph behind a tensor from `grad_fn`, and check
#    autograd's results against derivatives worked out by hand.
# 2. Explain why gradients accumulate, where `zero_grad` belongs in a loop, and what its default
#    `set_to_none=True` changes.
# 3. Accumulate gradients over micro-batches so they equal the big-batch gradient, and name what
#    breaks that equality.
# 4. Choose between `torch.no_grad`, `torch.inference_mode` and `detach`, knowing what each saves.
# 5. Change a gradient on its way back with a tensor hook.
# 6. Verify gradients with finite differences and `torch.autograd.gradcheck`.

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
import warnings

import matplotlib.pyplot as plt
import torch
from torch import nn
import torch.nn.functional as F

from course_utils.claims import confirm
from course_utils.exercises import check
from course_utils.viz.graph import describe_graph, draw_graph
from course_utils.widgets.accumulation import accumulation_stepper

device = torch.device("cpu")  # autograd works the same on every device; these tensors are tiny

# %% [markdown]
# ## 1. `requires_grad` switches recording on
#
# A tensor created with `requires_grad=True` asks autograd to record every operation that uses it.
# Each result remembers the operation that produced it in `grad_fn`. Take $z = x_1^2 + x_2^2$ at
# $x = (2, 3)$; by hand $\partial z / \partial x_i = 2x_i = (4, 6)$.

# %%
x = torch.tensor([2.0, 3.0], requires_grad=True, device=device)
y = x ** 2
z = y.sum()
for name, t in [("x", x), ("y", y), ("z", z)]:
    print(f"{name}: requires_grad={t.requires_grad}, is_leaf={t.is_leaf}, grad_fn={type(t.grad_fn).__name__ if t.grad_fn else None}")

# %%
z.backward()
by_hand = 2 * x.detach()
print("autograd:", x.grad, "| by hand 2x:", by_hand, "| equal:", torch.equal(x.grad, by_hand))

# %% [markdown]
# A second worked example: $y = (x + 2)\cdot 3$ at $x = 4$. The chain rule gives
# $dy/dx = 1 \cdot 3 = 3$, whatever $x$ is. And a less trivial one,
# $f(x) = \sin(x)\,x^2$, with $f'(x) = \cos(x)\,x^2 + 2x\sin(x)$:

# %%
x = torch.tensor(4.0, requires_grad=True, device=device)
y = (x + 2) * 3
y.backward()
print("d/dx (x + 2) * 3 at x = 4:", x.grad.item(), "| by hand: 3")

x = torch.tensor(1.3, requires_grad=True, device=device)
f = torch.sin(x) * x ** 2
f.backward()
with torch.no_grad():
    f_prime = torch.cos(x) * x ** 2 + 2 * x * torch.sin(x)
print(f"d/dx sin(x)·x² at 1.3: autograd {x.grad.item():.4f} | by hand {f_prime.item():.4f}")

# %% [markdown]
# Tensors are created with `requires_grad=False`, and operations on them record nothing (no
# graph, no memory spent on it). One input that requires grad is enough for the result to require it:

# %%
c = torch.tensor([1.0, 2.0], device=device)
w = torch.tensor([0.5, -1.0], requires_grad=True, device=device)
print("c * 2:", (c * 2).requires_grad, (c * 2).grad_fn)
print("c * w:", (c * w).requires_grad, type((c * w).grad_fn).__name__)

# %% [markdown]
# ### Leaf vs non-leaf
#
# **Leaves** are tensors you created yourself (not results of recorded operations). `backward()`
# stores gradients in the `.grad` of leaves that require grad; intermediate (non-leaf) results pass
# gradients on without keeping them. Asking a non-leaf for `.grad` gives `None` and a warning
# (captured and printed here):

# %%
x = torch.tensor([2.0, 3.0], requires_grad=True, device=device)
y = x ** 2
y.sum().backward()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("y.grad:", y.grad)
print("warning:", str(caught[0].message).split(". ")[0])

# %% [markdown]
# If you do want an intermediate gradient (for debugging), ask for it before `backward()` with
# `retain_grad()`:

# %%
x = torch.tensor([2.0, 3.0], requires_grad=True, device=device)
y = x ** 2
y.retain_grad()
y.sum().backward()
print("y.grad:", y.grad, "(d sum / d y = 1 for every element)")

# %% [markdown]
# ### Pitfall: a "parameter" that is not a leaf
#
# Scaling a random initialisation *after* `requires_grad=True` makes the parameter the result of a
# multiplication, i.e. a non-leaf. Its `.grad` stays `None`:

# %%
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True, device=device) * 0.01   # leaf is the randn; w is its product
loss = (w * torch.ones(3, device=device)).sum()
loss.backward()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the same non-leaf warning as above
    print(f"w.is_leaf={w.is_leaf}, w.grad={w.grad}")

# %% [markdown]
# An optimizer refuses such a tensor outright (and a hand-written update `w -= lr * w.grad` would
# fail on the `None`):

# %% tags=["raises-exception"]
opt = torch.optim.SGD([w], lr=0.1)

# %% [markdown]
# Fix: finish computing the initial value first, then switch on `requires_grad` (inside `nn.Module`s,
# `nn.Parameter` does this for you):

# %%
torch.manual_seed(0)
w = (torch.randn(3, device=device) * 0.01).requires_grad_()
(w * torch.ones(3, device=device)).sum().backward()
print(f"w.is_leaf={w.is_leaf}, w.grad={w.grad}")

# %% [markdown]
# ## 2. The graph behind a tensor
#
# `grad_fn` is a node of the backward graph; `grad_fn.next_functions` points to the nodes of its
# inputs; leaves appear as `AccumulateGrad` nodes, which add the incoming gradient to the leaf's
# `.grad`. Here is that chain for a small linear regression loss:

# %%
gen = torch.Generator().manual_seed(0)
xs = torch.randn(8, 3, generator=gen).to(device)
ys = torch.randn(8, generator=gen).to(device)
w = torch.zeros(3, requires_grad=True, device=device)
b = torch.zeros(1, requires_grad=True, device=device)
pred = xs @ w + b
loss = ((pred - ys) ** 2).mean()
def node_names(fn):  # the type of each backward node (a printed node shows a memory address)
    return [type(child).__name__ if child else None for child, _ in fn.next_functions]


print("loss.grad_fn:        ", type(loss.grad_fn).__name__)
print("its next_functions:  ", node_names(loss.grad_fn))
print("and theirs (first one):", node_names(loss.grad_fn.next_functions[0][0]))

# %% [markdown]
# Following `next_functions` all the way down gives the whole graph. `course_utils.viz.graph` does
# exactly that walk and prints or draws it (matplotlib only, no graphviz needed):

# %%
names = {"w": w, "b": b, "pred": pred, "loss": loss}
print(describe_graph(loss, names))

# %%
_ = draw_graph(loss, names)
plt.show()

# %% [markdown]
# ### Why not derive the gradients by hand?
#
# For a network with one hidden layer you can. Take $h = \tanh(XW_1)$, $\hat y = hW_2$ and the
# mean squared error $L$. The chain rule gives, layer by layer from the loss down:
# $\partial L/\partial \hat y = 2(\hat y - y)/N$, $\partial L/\partial W_2 = h^\top\,\partial L/\partial \hat y$,
# $\partial L/\partial W_1 = X^\top\big[(\partial L/\partial \hat y\; W_2^\top) \odot (1 - h^2)\big]$.
# Three lines of code, checked against autograd:

# %%
gen = torch.Generator().manual_seed(0)
X_in, y_true = torch.randn(32, 4, generator=gen), torch.randn(32, 1, generator=gen)
W1 = torch.randn(4, 16, generator=gen).requires_grad_()
W2 = torch.randn(16, 1, generator=gen).requires_grad_()
h = torch.tanh(X_in @ W1)
y_hat = h @ W2
mse = ((y_hat - y_true) ** 2).mean()
mse.backward()
with torch.no_grad():                         # the derivation above, line by line
    d_y_hat = 2 * (y_hat - y_true) / len(X_in)
    d_W2 = h.T @ d_y_hat
    d_W1 = X_in.T @ ((d_y_hat @ W2.T) * (1 - h ** 2))
print("hand-derived = autograd:  W1", torch.allclose(d_W1, W1.grad), "| W2", torch.allclose(d_W2, W2.grad))

# %% [markdown]
# Each of those lines applies the chain rule to one or two operations of the forward pass.
# Autograd holds one backward node per operation, each with its derivative rule built in. Count them with
# `graph_nodes` (the walk behind `describe_graph`), here and in a single, small transformer
# encoder layer:

# %%
from course_utils.viz.graph import graph_nodes


def count_ops(output):
    return sum(node.kind != "leaf" for node in graph_nodes(output).values())


torch.manual_seed(0)
encoder = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
encoder_out = encoder(torch.randn(2, 10, 64)).pow(2).mean()
print("backward nodes, one-hidden-layer net:", count_ops(mse))
print("backward nodes, one transformer layer:", count_ops(encoder_out),
      f"for {len(list(encoder.parameters()))} parameter tensors")

# %% [markdown]
# A real model stacks dozens of such layers, and the forward code changes as you experiment. A
# hand derivation would have to be redone and re-checked after every change; autograd derives
# the backward pass from whatever forward code ran (section 8 shows how to check it).
#
# The graph is built *while the forward code runs* ("define by run"), so Python `if`s and loops
# simply produce a different graph next time. `backward()` then frees the tensors the graph saved
# for the backward pass, so a second `backward()` through the same graph fails:

# %% tags=["raises-exception"]
loss.backward()
loss.backward()

# %% [markdown]
# Usually the fix is to run the forward pass again (each training step builds a fresh graph). Pass
# `retain_graph=True` to the first `backward()` only if you really need two backward passes through
# one graph, because it keeps all those saved tensors in memory.
#
# ## 3. Gradients accumulate
#
# `backward()` **adds** to `.grad`; it never overwrites it. Two backward calls in a row on
# $y_1 = 2x$ and then $y_2 = 3x$ leave $2 + 3 = 5$ in `x.grad`, not 3:

# %%
x = torch.tensor([1.0], requires_grad=True, device=device)
(x * 2).backward()
print("after y1 = 2x:", x.grad)
(x * 3).backward()
print("after y2 = 3x:", x.grad, "<- 2 + 3, not 3")

# %% [markdown]
# The stepper makes this visible: each bar is `x.grad` after one call, each colour one backward
# call's contribution. Static rendering first (2x, 3x, a reset, then 3x again), then the live widget:
# pick an expression, press `y.backward()` a few times, then `zero_grad()`.

# %%
_ = accumulation_stepper(["y = 2 * x", "y = 3 * x", "zero_grad", "y = 3 * x"], static=True)
plt.show()

# %% tags=["nbval-ignore-output"]
stepper = accumulation_stepper()
display(stepper)
confirm(stepper.accumulator.grad is None and "x.grad now: None" in stepper.text,
        "the stepper starts with x.grad = None, before any backward() call")

# %% [markdown]
# Two different sums are at work in autograd. Keep them apart.
#
# **Within one `backward()`**, a tensor used in several places gets the sum of the gradients of
# all its uses. The engine adds them up first and writes the total to `.grad` once; `.grad`
# accumulation plays no part in it. A post-accumulate hook runs each time `.grad` is written, so
# it counts the writes. Here `x` is used twice:

# %%
x = torch.tensor([1.0], requires_grad=True, device=device)
writes = []
x.register_post_accumulate_grad_hook(lambda leaf: writes.append(leaf.grad.clone()))
(x * 2 + x * 3).sum().backward()
print("writes to x.grad during one backward():", len(writes), "| value written:", writes[0])
confirm(len(writes) == 1 and writes[0].item() == 5.0,
        "one backward() writes x.grad once, with the sum 2 + 3 of both uses of x")

# %% [markdown]
# One write, with $2 + 3 = 5$. This happens even if you clear `.grad` before every step.
#
# **Across `backward()` calls**, adding into `.grad` is a separate design choice. It is what makes
# micro-batch gradient accumulation (section 5) work, and separate `backward()` calls on several
# losses. The price: before each new gradient computation, you must clear the old one.
#
# ## 4. `zero_grad`: where it goes, and what `set_to_none` changes
#
# One training step is: clear the gradients, forward, loss, `backward()`, `optimizer.step()`. The
# clearing can go anywhere between the previous `step()` and this `backward()`; the top of the step
# is the conventional place. Three versions of the same loop on a small regression problem:

# %%
gen = torch.Generator().manual_seed(0)
X = torch.randn(64, 3, generator=gen).to(device)
Y = X @ torch.tensor([[1.5], [-2.0], [0.5]], device=device) + 0.1 * torch.randn(64, 1, generator=gen).to(device)


def fit(where_zero_grad: str, steps: int = 60, lr: float = 0.05) -> list[float]:
    torch.manual_seed(1)
    model = nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        if where_zero_grad == "before forward":
            opt.zero_grad()
        loss = F.mse_loss(model(X), Y)
        loss.backward()
        if where_zero_grad == "between backward and step":
            opt.zero_grad()
        opt.step()
        losses.append(loss.item())
    return losses


runs = {place: fit(place) for place in ["before forward", "missing", "between backward and step"]}
for place, losses in runs.items():
    print(f"zero_grad {place:<26} loss: start {losses[0]:.3f}, after 10 steps {losses[10]:.3f}, end {losses[-1]:.3f}")

# %%
fig, ax = plt.subplots()
for place, losses in runs.items():
    ax.semilogy(losses, label=f"zero_grad {place}")
ax.set_xlabel("step")
ax.set_ylabel("training loss")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# Without `zero_grad` every step uses the sum of all gradients so far: the updates keep growing in
# the old directions, and the loss oscillates instead of converging. Zeroing between `backward()`
# and `step()` hands the optimizer an empty gradient: the parameters never move at all.
#
# ### `set_to_none=True` is the default
#
# Older code and tutorials describe `zero_grad()` as filling the gradients with zeros. Since
# PyTorch 2.0 it sets `.grad` to `None` instead (`set_to_none=True`), and 2.14 keeps that default:

# %%
torch.manual_seed(0)
model = nn.Linear(3, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
F.mse_loss(model(X), Y).backward()
opt.zero_grad()
print("zero_grad():                    weight.grad =", model.weight.grad)
F.mse_loss(model(X), Y).backward()
opt.zero_grad(set_to_none=False)
print("zero_grad(set_to_none=False):   weight.grad =", model.weight.grad)

# %% [markdown]
# What `None` changes:
#
# 1. **Memory**: the gradient tensors are released until the next `backward()` allocates them again.
# 2. **Code that reads `.grad`** (logging gradient norms, clipping by hand) must expect `None`:

# %% tags=["raises-exception"]
opt.zero_grad()
grad_norms = [p.grad.norm() for p in model.parameters()]

# %%
grad_norms = [p.grad.norm().item() for p in model.parameters() if p.grad is not None]
print("gradient norms to log right after zero_grad():", grad_norms, "(nothing: every .grad is None)")

# %% [markdown]
# 3. **Optimizers skip parameters whose `.grad` is `None`**, but they do step parameters whose
#    gradient is a tensor of zeros. With momentum (or weight decay) a zero gradient still moves the
#    parameter. Picture a layer that got no gradient this step, e.g. a branch of the model that was
#    not used: with `None` it stays put, with zeros momentum keeps pushing it.

# %%
for set_to_none in (True, False):
    torch.manual_seed(0)
    layer = nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    F.mse_loss(layer(X), Y).backward()
    opt.step()                                  # a normal step: momentum buffers are now non-zero
    opt.zero_grad(set_to_none=set_to_none)
    before = layer.weight.detach().clone()
    opt.step()                                  # this step had no backward for the layer
    moved = (layer.weight.detach() - before).abs().max().item()
    print(f"set_to_none={set_to_none!s:<5}: the layer moved by {moved:.4f} on a step without gradient")

# %% [markdown]
# ## 5. Gradient accumulation over micro-batches
#
# When a batch of 32 does not fit in memory, split it into $k$ micro-batches. Call `backward()`
# on each, and step once. Because `backward()` adds, the gradients sum up.
#
# One detail makes it exact. The loss of each micro-batch is a **mean over that micro-batch**. So
# divide each one by $k$, and the sum equals the mean over the whole batch:
# $\frac{1}{32}\sum_{i=1}^{32} \ell_i = \frac{1}{4}\sum_{j=1}^{4}\Big(\frac{1}{8}\sum_{i \in \text{chunk } j} \ell_i\Big)$.

# %%
gen = torch.Generator().manual_seed(1)
X32 = torch.randn(32, 4, generator=gen).to(device)
Y32 = torch.randn(32, 1, generator=gen).to(device)


def make_model(norm: str = "none") -> nn.Module:
    torch.manual_seed(0)
    layers = {"none": nn.Identity(), "batchnorm": nn.BatchNorm1d(16), "layernorm": nn.LayerNorm(16)}
    return nn.Sequential(nn.Linear(4, 16), layers[norm], nn.Tanh(), nn.Linear(16, 1)).to(device)


def full_batch_grads(model, x, y):
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


def micro_batch_grads(model, x, y, k, divide=True, by_size=False):
    model.zero_grad()                                     # once, before the loop
    for xb, yb in zip(x.chunk(k), y.chunk(k)):
        loss = F.mse_loss(model(xb), yb)
        if by_size:
            loss = loss * len(xb) / len(x)               # weight = this chunk's share of the samples
        elif divide:
            loss = loss / k
        loss.backward()                                   # adds to .grad
    return [p.grad.clone() for p in model.parameters()]


def max_diff(grads_a, grads_b):
    return max((a - b).abs().max().item() for a, b in zip(grads_a, grads_b))


model = make_model()
full = full_batch_grads(model, X32, Y32)
acc = micro_batch_grads(model, X32, Y32, k=4)
print(f"4 micro-batches of 8 vs one batch of 32: max |difference| < 1e-6: {max_diff(acc, full) < 1e-6}")

# %% [markdown]
# The two agree to float32 rounding (the sums happen in a different order). Now what breaks it.
#
# **Forgetting to divide by $k$** gives exactly $k$ times the gradient, the same as multiplying the
# learning rate by $k$:

# %%
no_div = micro_batch_grads(model, X32, Y32, k=4, divide=False)
ratios = [(n.norm() / f.norm()).item() for n, f in zip(no_div, full)]
print("gradient norm ratio (no division / full batch), per parameter:", [round(r, 4) for r in ratios])

# %% [markdown]
# **Unequal micro-batches.** `chunk` on 30 samples gives sizes 8, 8, 8, 6. Dividing by $k$ then
# over-weights the samples of the small chunk; weight each chunk by its share of the samples instead:

# %%
X30, Y30 = X32[:30], Y32[:30]
print("chunk sizes:", [len(c) for c in X30.chunk(4)])
full30 = full_batch_grads(model, X30, Y30)
print("divide by k:          equal to the full batch?", max_diff(micro_batch_grads(model, X30, Y30, 4), full30) < 1e-6)
print("weight by chunk size: equal to the full batch?",
      max_diff(micro_batch_grads(model, X30, Y30, 4, by_size=True), full30) < 1e-6)

# %% [markdown]
# **BatchNorm.** In training mode BatchNorm normalises with the mean and variance *of the batch it
# sees*. Micro-batches of 8 have different statistics than the batch of 32. So the forward pass
# itself differs, and no scaling can make the gradients equal. Its running statistics are also
# updated once per micro-batch.
#
# Normalisations that work per sample, such as LayerNorm or GroupNorm, do not have this problem:

# %%
for norm in ["batchnorm", "layernorm"]:
    model = make_model(norm)
    full = full_batch_grads(model, X32, Y32)
    acc = micro_batch_grads(model, X32, Y32, k=4)
    scale = max(g.abs().max().item() for g in full)
    print(f"{norm:<9}: max |difference| / largest gradient = {max_diff(acc, full) / scale:.2f}")

# %%
model = make_model("batchnorm")
bn = model[1]
full_batch_grads(model, X32, Y32)
print("running-stat updates after one full batch:  ", int(bn.num_batches_tracked))
micro_batch_grads(model, X32, Y32, k=4)
print("running-stat updates after 4 micro-batches: ", int(bn.num_batches_tracked) - 1, "more")

# %% [markdown]
# ## 6. `no_grad`, `inference_mode` and `detach`
#
# Recording costs memory: every operation saves the tensors its backward will need.
#
# `course_utils.memory.SavedTensorsMeter` measures it. It lists what one forward pass saves and adds
# up the **activations**. Each storage counts once: a ReLU output is saved by the ReLU *and* by the
# next `Linear`, but it is one buffer. The weights are left out: the `Linear`s save them too, but
# they exist whether or not you record. (The meter is a `torch.autograd.graph.saved_tensors_hooks`
# context; notebook 08 uses it too.)
#
# With and without `torch.no_grad()`:

# %%
from course_utils.memory import SavedTensorsMeter

mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
batch = torch.randn(128, 64, device=device)
with SavedTensorsMeter(exclude=mlp) as meter:
    out = mlp(batch)
for record in meter.records:
    print(f"  saved {str(record.shape):<11} {record.nbytes / 1024:5.0f} KiB  {record.counted}")
print(f"with grad:  {meter.bytes / 1024:.0f} KiB of activations saved for backward | out.requires_grad={out.requires_grad}")
confirm(meter.bytes == (128 * 64 + 2 * 128 * 256) * 4,   # the input and the two ReLU outputs, float32
        "recording saves the input and the two ReLU outputs of the MLP, in float32")
with torch.no_grad(), SavedTensorsMeter(exclude=mlp) as meter:
    out = mlp(batch)
print(f"no_grad:    {meter.bytes / 1024:.0f} KiB saved for backward | out.requires_grad={out.requires_grad}, grad_fn={out.grad_fn}")

# %% [markdown]
# `torch.inference_mode()` goes one step further. It also skips the bookkeeping that autograd relies
# on to check saved tensors (version counters, view tracking).
#
# The tensors it creates are **inference tensors**. Outside inference mode they have two
# restrictions: autograd refuses to *save* them for backward, and they cannot be modified in place.
# (An operation that saves nothing, such as `feats + w` with `w` requiring grad, still records fine.)
#
# A common trap: compute features with a frozen backbone under `inference_mode`, then train a small
# head on them:

# %%
backbone = nn.Sequential(nn.Linear(64, 32), nn.ReLU()).to(device)
head = nn.Linear(32, 10).to(device)
targets = torch.randint(0, 10, (128,), generator=torch.Generator().manual_seed(0)).to(device)
with torch.inference_mode():
    feats = backbone(batch)
print("feats.is_inference():", feats.is_inference(), "| requires_grad:", feats.requires_grad)

# %% tags=["raises-exception"]
loss = F.cross_entropy(head(feats), targets)   # head's Linear must save feats for its weight gradient

# %% [markdown]
# Two fixes: compute features under `torch.no_grad()` (normal tensors, just not recorded), or clone
# the inference tensor outside inference mode. Keep `inference_mode` for pure inference: serving,
# evaluation, anything whose outputs never feed training.

# %%
with torch.no_grad():
    feats = backbone(batch)
F.cross_entropy(head(feats), targets).backward()
print("no_grad features: head trained, head.weight.grad exists:", head.weight.grad is not None,
      "| backbone untouched:", backbone[0].weight.grad is None)

# %% [markdown]
# ### And the time they save?
#
# Memory is the saving you can count exactly. Time is harder to pin down.
#
# Recording costs a little work *per operation*: a graph node, references to the saved tensors.
# `inference_mode` also skips the version-counter and view bookkeeping. None of it depends on how big
# the tensors are.
#
# Timed on this machine, the best of 15 interleaved runs, for two workloads: the MLP above on its
# batch of 128, and a chain of 1000 operations on a tensor of 16 numbers:

# %% tags=["nbval-ignore-output"]
import contextlib
import time


def tiny_chain(t):
    for _ in range(500):
        t = t * 1.0001 + 0.001                # 2 operations, each on only 16 numbers
    return t


tiny = torch.randn(16, requires_grad=True, device=device)
confirm(count_ops(tiny_chain(tiny)) == 1000, "recording builds one backward node per operation: 1000 for the chain")
modes = {"recording": contextlib.nullcontext, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}
for label, work in [("MLP, batch of 128", lambda: mlp(batch)), ("1000 tiny operations", lambda: tiny_chain(tiny))]:
    best = dict.fromkeys(modes, float("inf"))
    for _ in range(15):
        for mode, context in modes.items():
            start = time.perf_counter()
            with context():
                work()
            best[mode] = min(best[mode], time.perf_counter() - start)
    print(f"{label:<21}", " | ".join(f"{m} {best[m] * 1e3:.2f} ms" for m in modes),
          f"| recording / no_grad = {best['recording'] / best['no_grad']:.2f}",
          f"| inference_mode / no_grad = {best['inference_mode'] / best['no_grad']:.2f}")

# %% [markdown]
# Rely on the memory saving; the time saving depends on the workload. The ratios above are
# measurements on this machine, not a promise.
#
# The gap grows with the number of operations and shrinks with their size. That is why the tiny
# chain shows it best. When each operation does real arithmetic on a CPU (the MLP's matrix
# products), the bookkeeping is a small part of the time. The three modes are then often within
# measurement noise of each other.
#
# The extra saving of `inference_mode` over `no_grad` is smaller still. The PyTorch documentation
# says it removes overhead, gives no figure, and advises timing your own code with and without it.
#
# Note: on a shared or busy machine, rerun the cell. When the differences are small, the ordering can
# flip from run to run.

# %% [markdown]
# `detach()` is the per-tensor version: the same data (no copy), cut out of the graph. Gradients do
# not flow through a detached tensor. With $y = x^2$ and $z = \text{detach}(y)\cdot x$, autograd
# treats the detached factor as a constant: $dz/dx = y = x^2$, not the $3x^2$ of $x^3$.

# %%
x = torch.tensor(2.0, requires_grad=True, device=device)
y = x ** 2
(y * x).backward()
print("d(x²·x)/dx at 2:", x.grad.item(), "| by hand 3x² =", 3 * 2.0 ** 2)
x.grad = None
(y.detach() * x).backward()
print("d(detach(x²)·x)/dx at 2:", x.grad.item(), "| by hand x² =", 2.0 ** 2)

# %% [markdown]
# The everyday use: leaving the graph to log, plot or convert. NumPy knows nothing about autograd,
# so torch refuses to hand over a tensor that requires grad:

# %% tags=["raises-exception"]
weights = mlp[0].weight.numpy()                    # the first layer of the MLP measured above

# %%
weights = mlp[0].weight.detach().cpu().numpy()     # .cpu() too: NumPy lives in host memory
print(type(weights).__name__, weights.shape)

# %% [markdown]
# Because `detach()` shares memory, changing the detached tensor in place changes the original,
# and autograd notices when a value it saved for backward was overwritten:

# %% tags=["raises-exception"]
w = torch.randn(3, requires_grad=True, device=device)
s = w.sigmoid()            # sigmoid saves its output for the backward pass
s.detach().zero_()         # in place on shared memory: s changes too
s.sum().backward()


# %% [markdown]
# If you need an independent copy to modify, use `.detach().clone()`.
#
# ## 7. Tensor hooks: changing a gradient on its way back
#
# `t.register_hook(fn)` asks autograd to call `fn(grad)` during `backward()`, once the gradient with
# respect to `t` is computed.
#
# If `fn` returns a tensor, that tensor *replaces* the gradient. For a leaf it is what lands in
# `.grad`. For an intermediate tensor it is what flows on to everything that produced it. The call
# returns a handle; `handle.remove()` takes the hook off again.
#
# Clipping each element of one tensor's gradient to $[-1, 1]$, with $d(\sum w^2)/dw = 2w$:

# %%
w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True, device=device)
handle = w.register_hook(lambda grad: grad.clamp(-1.0, 1.0))
(w ** 2).sum().backward()
print("with the hook:   w.grad =", w.grad, "| by hand 2w =", 2 * w.detach())
handle.remove()
w.grad = None
(w ** 2).sum().backward()
print("hook removed:    w.grad =", w.grad)

# %% [markdown]
# On an intermediate tensor a hook changes what reaches *earlier* layers, and nothing else.
#
# A use in multi-stage training: scale down the gradient that flows from the features back into a
# pretrained layer. With plain SGD, that layer then learns ten times more slowly than the new head
# on top. The hook lives on `feats`, which every forward pass builds anew. So it is gone with that
# graph and needs no removal:

# %%
torch.manual_seed(0)
pretrained = nn.Linear(8, 8).to(device)
new_head = nn.Linear(8, 1).to(device)
inputs8, targets8 = torch.randn(16, 8, device=device), torch.randn(16, 1, device=device)


def grad_norms(backbone_scale=None):
    pretrained.zero_grad()
    new_head.zero_grad()
    feats = torch.relu(pretrained(inputs8))
    if backbone_scale is not None:
        feats.register_hook(lambda grad: grad * backbone_scale)
    F.mse_loss(new_head(feats), targets8).backward()
    return pretrained.weight.grad.norm().item(), new_head.weight.grad.norm().item()


(b_plain, h_plain), (b_hook, h_hook) = grad_norms(), grad_norms(backbone_scale=0.1)
print(f"pretrained layer's gradient norm: {b_plain:.4f} -> {b_hook:.4f} (ratio {b_hook / b_plain:.3f})")
print(f"new head's gradient norm:         {h_plain:.4f} -> {h_hook:.4f} (ratio {h_hook / h_plain:.3f})")

# %% [markdown]
# Only the pretrained layer's gradient shrinks, by the factor 0.1; the head's is unchanged. Note:
# this works for plain SGD. Adam divides each gradient by its own running scale, so there the same
# effect needs a parameter group with a smaller learning rate.
#
# The same mechanism can add noise to a gradient (gradient-noise regularisation) or record it for
# logging. With a seeded generator, so the noise is the same on every run:

# %%
noise = torch.Generator().manual_seed(0)
w = torch.zeros(4, requires_grad=True, device=device)
handle = w.register_hook(lambda grad: grad + 0.01 * torch.randn(grad.shape, generator=noise).to(grad.device))
(w * torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)).sum().backward()
handle.remove()
print("exact gradient [1, 2, 3, 4], with noise:", w.grad)

# %% [markdown]
# Module-level hooks (`register_forward_hook`, `register_full_backward_hook`) come in [notebook 04](04_nn_module.ipynb).
# A hook on a parameter stays until you remove it, and every backward pass runs it: keep the handle.
#
# ## 8. Checking gradients: finite differences and `gradcheck`
#
# The derivative can be estimated without calculus. Nudge one input by $h$ and watch the output:
# $\frac{f(x + h) - f(x - h)}{2h}$ (a central difference).
#
# Gradient checks need float64. The estimate's error has two parts: the truncation error shrinks
# like $h^2$, the rounding error grows like $\varepsilon_{\text{machine}} / h$. In float32
# ($\varepsilon \approx 10^{-7}$) the best achievable error is poor; in float64
# ($\varepsilon \approx 10^{-16}$) it is small.
#
# Measured on $f(x) = \sin(x)\,e^x$ at $x = 0.7$, whose exact derivative is $(\cos x + \sin x)\,e^x$:

# %% tags=["nbval-ignore-output"]
def f_scalar(t):
    return torch.sin(t) * torch.exp(t)


steps = [10.0 ** -p for p in range(1, 13)]
errors = {}
for dtype in (torch.float32, torch.float64):
    x0 = torch.tensor(0.7, dtype=dtype)
    exact = ((torch.cos(x0) + torch.sin(x0)) * torch.exp(x0)).double()
    errors[dtype] = [(((f_scalar(x0 + h) - f_scalar(x0 - h)) / (2 * h)).double() - exact).abs().item() + 1e-17
                     for h in steps]
    best = min(range(len(steps)), key=lambda i: errors[dtype][i])
    print(f"{str(dtype):<14} smallest error {errors[dtype][best]:.0e} at h = {steps[best]:.0e}")
confirm(min(errors[torch.float64]) < 1e-8 < 1e-7 < min(errors[torch.float32]),
        "float64 central differences get below 1e-8, float32 never below 1e-7")

# %%
fig, ax = plt.subplots()
for dtype, errs in errors.items():
    ax.loglog(steps, errs, marker="o", label=str(dtype))
ax.set_xlabel("step h")
ax.set_ylabel("|finite difference - exact|")
ax.invert_xaxis()
ax.set_title("central difference error vs step size (f = sin·exp at 0.7)", fontsize=9)
ax.legend()
plt.show()

# %% [markdown]
# The float32 curve ends in a flat top for the smallest steps. float32 numbers near 0.7 are
# about $6 \times 10^{-8}$ apart. Once $h$ is below half that spacing, $x_0 + h$ and $x_0 - h$
# both round back to $x_0$. The difference quotient is then exactly 0, and its error is the whole
# derivative, $|0 - f'(0.7)| \approx 2.84$:

# %%
x0 = torch.tensor(0.7)                       # float32
print(f"spacing of float32 numbers in [0.5, 1): eps / 2 = {torch.finfo(torch.float32).eps / 2:.1e}")
for h in (1e-6, 1e-8):
    print(f"h = {h:.0e}: x0 + h == x0: {bool(x0 + h == x0)!s:<5} | x0 - h == x0: {bool(x0 - h == x0)!s:<5}"
          f" | difference quotient {((f_scalar(x0 + h) - f_scalar(x0 - h)) / (2 * h)).item():.4f}")
print(f"exact derivative: {((torch.cos(x0) + torch.sin(x0)) * torch.exp(x0)).item():.4f}")

# %% [markdown]
# `torch.autograd.gradcheck` automates this. It compares autograd's Jacobian with finite
# differences for every input element, and raises if they disagree.
#
# Pass it float64 inputs: it converts nothing, and computes the finite differences in the dtype of
# the inputs you pass. Given float32 inputs it warns, and here it fails on rounding error alone (the
# function is correct):

# %%
x64 = torch.randn(5, dtype=torch.float64, requires_grad=True, device=device)
print("gradcheck, float64:", torch.autograd.gradcheck(lambda t: (torch.sin(t) * torch.exp(t)).sum(), (x64,)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok32 = torch.autograd.gradcheck(lambda t: (torch.sin(t) * torch.exp(t)).sum(),
                                    (x64.detach().float().requires_grad_(),), raise_exception=False)
print("gradcheck, float32:", ok32, "| warning:", str(caught[0].message).split(". ")[0])


# %% [markdown]
# Where it earns its keep: a hand-written backward, for example in a custom `torch.autograd.Function`.
# This one forgets the factor 2 in $d(x^2)/dx$, and gradcheck shows both Jacobians:

# %%
class BuggySquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t ** 2

    @staticmethod
    def backward(ctx, grad_out):
        (t,) = ctx.saved_tensors
        return grad_out * t           # bug: d(t²)/dt is 2t


# %% tags=["raises-exception"]
torch.autograd.gradcheck(BuggySquare.apply, (torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True),))


# %%
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t ** 2

    @staticmethod
    def backward(ctx, grad_out):
        (t,) = ctx.saved_tensors
        return grad_out * 2 * t


print("fixed backward passes gradcheck:",
      torch.autograd.gradcheck(Square.apply, (torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True),)))


# %% [markdown]
# ## 9. Exercises
#
# ### Exercise 1: micro-batch gradient accumulation
#
# Write `accumulated_grads(model, loss_fn, x, y, micro_batches)`: split `x` and `y` into
# `micro_batches` equal chunks along dim 0, run forward and `backward()` on each, and return
# `[p.grad for p in model.parameters()]`, equal to the full-batch gradient of `loss_fn(model(x), y)`
# (`loss_fn` averages over its batch). Careful: when your function is called, the model's `.grad` may
# still hold gradients from an earlier step, or be `None` (after `zero_grad()`, as section 4 showed).
# Some parameters may be frozen (`requires_grad=False`): they get no gradient, so their entry in the
# list is `None`, as their `p.grad` is.

# %%
def accumulated_grads(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor,
                      micro_batches: int) -> list[torch.Tensor]:
    ### BEGIN SOLUTION
    model.zero_grad()
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        (loss_fn(model(xb), yb) / micro_batches).backward()
    return [p.grad for p in model.parameters()]
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("accumulated_grads: your code here")
    ### END STUB


# %%
check("03.accumulated_grads", accumulated_grads)


# %% [markdown]
# ### Exercise 2: a gradient without side effects
#
# Write `gradient_at(f, x)`: return $df/dx$ at `x` (same shape as `x`) for a function `f` that
# returns a scalar tensor. `x` may or may not require grad and may already have a `.grad`; leave it
# exactly as it was. The gradient has `x`'s dtype. Hint: work on your own leaf and use `torch.autograd.grad`, which returns
# gradients instead of adding them to `.grad`.

# %%
def gradient_at(f, x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    leaf = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(f(leaf), leaf)
    return grad
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("gradient_at: your code here")
    ### END STUB


# %%
check("03.gradient_at", gradient_at)


# %% [markdown]
# ### Exercise 3: your own gradient check
#
# Write `finite_difference_grad(f, x, eps=1e-6)`: estimate $df/dx$ for a scalar function `f` by central
# differences, one element at a time, $\frac{f(x + \varepsilon e_i) - f(x - \varepsilon e_i)}{2\varepsilon}$
# where $e_i$ is 1 at element $i$ and 0 elsewhere. `x` is float64; return a float64 tensor shaped
# like `x`, and leave `x` unchanged.

# %%
def finite_difference_grad(f, x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    ### BEGIN SOLUTION
    grad = torch.zeros_like(x)
    for i in range(x.numel()):
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("finite_difference_grad: your code here")
    ### END STUB


# %%
check("03.finite_difference_grad", finite_difference_grad)

# %% [markdown]
# ## Key points
#
# - `requires_grad=True` starts recording; results carry a `grad_fn`, and `grad_fn.next_functions`
#   is the backward graph. Only leaves keep `.grad` (use `retain_grad()` for others); make parameters
#   leaves by setting `requires_grad` *after* computing their initial value.
# - Within one `backward()`, a tensor used in several places gets the sum of its uses, written to
#   `.grad` once. Across calls, `backward()` adds to `.grad`. Clear gradients once per step, before `backward()` (conventionally
#   first in the step); clearing between `backward()` and `step()` freezes training, never clearing
#   makes it oscillate. `zero_grad()` sets `.grad` to `None` by default: code must expect `None`, and
#   optimizers then skip the parameter (zeros would still be stepped by momentum/weight decay).
# - Micro-batch accumulation equals the big batch when each micro-batch mean is divided by the number
#   of micro-batches (or weighted by chunk size when chunks differ). BatchNorm breaks the equality.
# - `no_grad` records nothing (measured: zero bytes saved for backward); `inference_mode` also makes
#   inference tensors, which autograd refuses to save for backward (so a layer you train cannot take
#   them as input) and which cannot be changed in place outside inference mode; `detach()` cuts one
#   tensor out of the graph but shares its memory (`.detach().clone()` for an independent copy).
#   Their time saving is per operation: measurable on many tiny operations, often lost in the noise
#   when each operation does real work; rely on the memory saving.
# - `t.register_hook(fn)` lets `fn` replace the gradient with respect to `t` (clip, scale, add
#   noise); on an intermediate tensor it changes what earlier layers receive. Keep the handle and
#   `remove()` hooks on parameters.
# - Check gradients with central differences or `torch.autograd.gradcheck`, always on float64 inputs
#   (gradcheck computes in the dtype you give it).
#
# ## Further reading
#
# PyTorch documentation pages:
# - [*Autograd mechanics*](https://docs.pytorch.org/docs/stable/notes/autograd.html) (Notes section), including "Locally disabling gradient computation" and inference mode
# - [`torch.autograd.backward`](https://docs.pytorch.org/docs/stable/generated/torch.autograd.backward.html), [`torch.autograd.grad`](https://docs.pytorch.org/docs/stable/generated/torch.autograd.grad.html), [`torch.Tensor.retain_grad`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.retain_grad.html)
# - [`torch.optim.Optimizer.zero_grad`](https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html) (the `set_to_none` argument)
# - [`torch.no_grad`](https://docs.pytorch.org/docs/stable/generated/torch.no_grad.html), [`torch.inference_mode`](https://docs.pytorch.org/docs/stable/generated/torch.inference_mode.html), [`torch.Tensor.detach`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
# - [`torch.Tensor.register_hook`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.register_hook.html), [`torch.Tensor.register_post_accumulate_grad_hook`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.register_post_accumulate_grad_hook.html) (and *Backward Hooks execution* in the Autograd mechanics notes)
# - [*Gradcheck mechanics*](https://docs.pytorch.org/docs/stable/notes/gradcheck.html) (Notes section) and [`torch.autograd.gradcheck`](https://docs.pytorch.org/docs/stable/generated/torch.autograd.gradcheck.gradcheck.html)
# - [*Extending PyTorch*](https://docs.pytorch.org/docs/stable/notes/extending.html) (custom `torch.autograd.Function`) and [`torch.autograd.graph.saved_tensors_hooks`](https://docs.pytorch.org/docs/stable/autograd.html#torch.autograd.graph.saved_tensors_hooks)
