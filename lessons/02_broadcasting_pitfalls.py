# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Broadcasting pitfalls
#
# Broadcasting lets you combine tensors of different shapes without writing loops or copying
# data. You can subtract a mean from a whole batch, scale every channel of an image, or compare
# every point with every other point.
#
# The same convenience produces some of the nastiest bugs in PyTorch code. A shape mistake often
# does **not** raise: it silently computes something else.
#
# This notebook shows the rules, reproduces the classic silent loss bug end to end, and builds the
# habits that catch it.
#
# ## You will learn (≈ 35 min)
#
# 1. Predict the result shape of any elementwise op from the two broadcasting rules, and read
#    the error torch gives when they fail.
# 2. Recognise the `(N, 1)` vs `(N,)` loss bug: a plausible loss value, a wrong gradient and a
#    model that cannot fit, and fix it.
# 3. Use `keepdim=True`, `squeeze(dim)` / `unsqueeze(dim)` and `einsum` to keep dims lined up on purpose.
# 4. Make shape assertions a habit, so the next shape bug raises at the line that causes it.

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

_ = setup()

# %%
import warnings

import matplotlib.pyplot as plt
import torch
from torch import nn
import torch.nn.functional as F

from course_utils.exercises import check
from course_utils.viz.shapes import draw_broadcasts, explain_broadcast
from course_utils.widgets.broadcasting import broadcast_explorer

device = torch.device("cpu")  # shapes behave the same on every device; the data here is tiny

# %% [markdown]
# ## 1. The two rules
#
# For an elementwise op such as `a - b`, torch compares the shapes **from the right**:
#
# 1. **Align the trailing dims.** Write the shapes right-aligned; a tensor with fewer dims is
#    treated as if it had extra size-1 dims on the left.
# 2. **Each pair of sizes must be equal, or one of them must be 1.** A size-1 dim is stretched
#    to the other size; the result takes the larger size in every position.
#
# The most common use: subtract the per-feature mean from a batch. `scores` holds 6 samples with
# 4 features each. Its column means have shape `(4,)`, which lines up with the last dim.

# %%
scores = torch.randn(6, 4, device=device)  # 6 samples x 4 features
col_mean = scores.mean(dim=0)              # (4,): one mean per feature
centered = scores - col_mean               # (6, 4) - (4,) -> (6, 4)
print("scores", tuple(scores.shape), "| col_mean", tuple(col_mean.shape), "| centered", tuple(centered.shape))
print("every column of `centered` has mean 0:", torch.allclose(centered.mean(dim=0), torch.zeros(4), atol=1e-6))

# %% [markdown]
# "Stretched" does not mean copied. Broadcasting behaves like `expand`, which returns a view with
# **stride 0** along the stretched dim: the same 4 numbers are read 6 times.

# %%
stretched = col_mean.expand(6, 4)
print("shape", tuple(stretched.shape), "| strides", stretched.stride(),
      "| same memory as col_mean:", stretched.data_ptr() == col_mean.data_ptr())

# %% [markdown]
# `course_utils.viz.shapes.explain_broadcast` applies the two rules step by step. It agrees with
# `torch.broadcast_shapes`, which you can call yourself to predict a shape without computing
# anything.

# %%
for a, b in [((6, 4), (4,)), ((5, 1, 3), (4, 1)), ((6, 4), (6,))]:
    print(explain_broadcast(a, b).message)
print()
print(explain_broadcast((5, 1, 3), (4, 1)).steps())
print("torch.broadcast_shapes:", torch.broadcast_shapes((5, 1, 3), (4, 1)))

# %% [markdown]
# ### Pitfall: subtracting the row means
#
# Now centre each **sample** (row) instead of each feature. `scores.mean(dim=1)` has shape `(6,)`.
# Aligned from the right, that `6` meets the `4` features, not the 6 rows, so torch refuses:

# %% tags=["raises-exception"]
row_mean = scores.mean(dim=1)  # (6,)
scores - row_mean              # (6, 4) - (6,): 4 vs 6 in the last dim

# %% [markdown]
# The error names *dimension 1* of the result: the last dim, where 4 met 6.
#
# The fix is to keep the reduced dim as size 1, so the means line up with the rows (`(6, 1)` against
# `(6, 4)`):

# %%
row_mean = scores.mean(dim=1, keepdim=True)  # (6, 1)
rows_centered = scores - row_mean            # (6, 4) - (6, 1) -> (6, 4)
print(tuple(row_mean.shape), "->", tuple(rows_centered.shape),
      "| every row has mean 0:", torch.allclose(rows_centered.mean(dim=1), torch.zeros(6), atol=1e-6))

# %% [markdown]
# Here torch raised, which is the lucky case. With a square `(4, 4)` input the same line would
# have run and subtracted the wrong numbers (section 4 shows it).
#
# ## 2. See it: the broadcasting diagram and explorer
#
# Each row of boxes is one shape, right-aligned. How to read the boxes:
#
# - blue boxes match;
# - yellow `1→n` is a size-1 dim being stretched;
# - a dashed `·→n` box is a missing dim (treated as 1, then stretched);
# - red marks the dim where the rules fail.

# %%
_ = draw_broadcasts([((6, 4), (4,)), ((5, 1, 3), (4, 1)), ((8, 3, 32, 32), (3,)), ((64, 1), (64,))])
plt.show()

# %% [markdown]
# The explorer below does the same for any two shapes you type (e.g. `8, 3, 32, 32` and `3, 1, 1`)
# or pick from the examples. Type sizes separated by commas; text it cannot read as a shape (such as
# `8, x, 3`) is named, not guessed.
#
# The explorer also asks torch itself, with shape-only tensors on the `meta` device (a device with
# shapes and dtypes but no data). So you see torch's verdict, or its error, next to the diagram.
#
# That error is the meta device's wording, which differs from what CPU and CUDA tensors say. For
# the two shapes below, CPU tensors raise `The size of tensor a (32) must match the size of tensor b
# (3) at non-singleton dimension 3` (the message of section 1). Same rule, same verdict, different
# words.
#
# Its static rendering, for readers without a running kernel:

# %%
_ = broadcast_explorer("8, 3, 32, 32", "3", static=True)
plt.show()

# %% tags=["nbval-ignore-output"]
explorer = broadcast_explorer("64, 1", "64")
display(explorer)
confirm(explorer.explanation is not None and explorer.explanation.result == (64, 64),
        "shapes (64, 1) and (64,) broadcast to (64, 64)")

# %% [markdown]
# ## 3. The silent `(N, 1)` vs `(N,)` loss bug
#
# A regression model made of `nn.Linear(1, 1)` returns predictions of shape `(N, 1)`: one row per
# sample, one output column. Targets loaded from a dataset usually come as a plain vector, shape
# `(N,)`.
#
# Subtract them and the rules from section 1 apply: `(N, 1)` and `(N,)` broadcast to `(N, N)`, a
# table of every prediction minus every target. Nothing raises.
#
# Data: 64 points on the line `y = 3x - 1` plus noise.

# %%
N = 64
gen = torch.Generator().manual_seed(0)
x = (torch.rand(N, 1, generator=gen) * 4 - 2).to(device)                    # (N, 1): one feature
y = (3 * x.squeeze(1) - 1 + 0.3 * torch.randn(N, generator=gen).to(device))  # (N,): one target each
print("x", tuple(x.shape), "| y", tuple(y.shape))


def mse(pred, target):
    """Mean squared error, written by hand: the way this bug usually enters a code base."""
    return ((pred - target) ** 2).mean()


# %%
torch.manual_seed(1)
model = nn.Linear(1, 1).to(device)
pred = model(x)
print("pred", tuple(pred.shape), "| pred - y", tuple((pred - y).shape))
print(f"buggy loss:   {mse(pred, y).item():.4g}")
print(f"correct loss: {mse(pred.squeeze(1), y).item():.4g}")


# %% [markdown]
# Both numbers look like reasonable losses for an untrained model: nothing on the screen says
# "bug".
#
# The gradient tells the truth. For the correct loss $L = \frac1N\sum_i (p_i - y_i)^2$ with
# $p_i = w x_i + b$, calculus gives
#
# $$\frac{\partial L}{\partial w} = \frac{2}{N}\sum_i (p_i - y_i)\,x_i, \qquad
#   \frac{\partial L}{\partial b} = \frac{2}{N}\sum_i (p_i - y_i).$$
#
# Compare that hand-computed gradient with what `backward()` gives for each loss. (`backward()`
# computes the gradient of a loss with respect to every parameter; notebook 03 explains it.)

# %%
def grads_of(loss):
    model.zero_grad()
    loss.backward()
    return torch.cat([model.weight.grad.flatten(), model.bias.grad.flatten()])


g_bug = grads_of(mse(model(x), y))
g_ok = grads_of(mse(model(x).squeeze(1), y))
with torch.no_grad():
    residual = model(x).squeeze(1) - y
    g_hand = torch.stack([2 / N * (residual * x.squeeze(1)).sum(), 2 / N * residual.sum()])

print("                 dL/dw     dL/db")
for name, g in [("by hand", g_hand), ("correct loss", g_ok), ("buggy loss", g_bug)]:
    print(f"{name:<14} {g[0].item():8.3f}  {g[1].item():8.3f}")
print("correct loss matches the hand gradient:", torch.allclose(g_ok, g_hand, atol=1e-5))
print("buggy loss matches the hand gradient:  ", torch.allclose(g_bug, g_hand, atol=1e-5))


# %% [markdown]
# The buggy loss is the mean over all $N^2$ pairs $(p_i - y_j)^2$. That average splits into
# $\operatorname{var}(p) + (\bar p - \bar y)^2 + \operatorname{var}(y)$.
#
# It is smallest when every prediction equals the **mean target**: the best model under this loss
# ignores `x` completely.
#
# Train both versions the same way and measure the *correct* MSE as we go. The training loop below
# uses an optimizer, `zero_grad()`, `backward()` and `step()`. What these four lines do: notebooks 03
# and 06. Here only the loss matters.

# %%
def train(buggy: bool, steps: int = 150, lr: float = 0.1):
    torch.manual_seed(1)
    net = nn.Linear(1, 1).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    true_mse = []
    for _ in range(steps):
        out = net(x)
        loss = mse(out, y) if buggy else mse(out.squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        true_mse.append(mse(out.detach().squeeze(1), y).item())
    return net, true_mse


def r(param):
    return round(param.item(), 3) + 0.0  # 3 decimals; "+ 0.0" turns -0.0 into 0.0


net_bug, curve_bug = train(buggy=True)
net_ok, curve_ok = train(buggy=False)
for name, net, curve in [("buggy", net_bug, curve_bug), ("fixed", net_ok, curve_ok)]:
    print(f"{name}: y ≈ {r(net.weight):.3f}·x {r(net.bias):+.3f} | true MSE: start {curve[0]:.3g}, end {curve[-1]:.3g}")
print(f"mean of y: {y.mean().item():.3f} | variance of y (the MSE of always predicting the mean): "
      f"{y.var(correction=0).item():.3g}")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
order = x.squeeze(1).argsort()
ax1.scatter(x.squeeze(1), y, s=10, color="gray", label="data")
with torch.no_grad():
    ax1.plot(x[order, 0], net_bug(x)[order, 0], color="tab:red", label="trained with (N,1)-(N,)")
    ax1.plot(x[order, 0], net_ok(x)[order, 0], color="tab:green", label="trained with matching shapes")
ax1.set_xlabel("x")
ax1.set_ylabel("y")
ax1.legend(fontsize=7)
ax2.semilogy(curve_bug, color="tab:red", label="buggy loss")
ax2.semilogy(curve_ok, color="tab:green", label="fixed loss")
ax2.set_xlabel("SGD step")
ax2.set_ylabel("true MSE")
ax2.legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# The buggy model settles on a flat line at the mean of `y`. Training made its true MSE *worse*
# than at initialisation, ending exactly at the variance of the targets.
#
# The fixed model recovers slope 3 and intercept -1, and reaches the noise level (0.3² ≈ 0.09).
#
# **The fix** is to give prediction and target the same shape before subtracting:
# `pred.squeeze(1)` (or `target.unsqueeze(1)`, or `pred.view(-1)`).
#
# The built-in losses help here: `F.mse_loss` computes the same broadcast values but **warns** about
# the mismatch. Warnings are easy to miss in a long training log, so here it is captured and
# printed:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    _ = F.mse_loss(model(x), y)
print(caught[0].category.__name__, ":", caught[0].message)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fixed_loss = F.mse_loss(model(x).squeeze(1), y)
print(f"with matching shapes: {len(caught)} warnings, loss {fixed_loss.item():.4g}")

# %% [markdown]
# ## 4. `keepdim`: reductions that stay lined up
#
# Reductions (`sum`, `mean`, `amax`, `std`, ...) remove the reduced dim unless you pass
# `keepdim=True`. Combining the reduced tensor with the original then lines it up with the **last**
# dim.
#
# On a square matrix that silently does the wrong thing. We want each row of `m` to sum to 1:

# %%
m = torch.tensor([[1.0, 1.0, 2.0],
                  [0.0, 3.0, 1.0],
                  [2.0, 2.0, 4.0]])
wrong = m / m.sum(dim=1)                 # (3, 3) / (3,): divides COLUMN j by the sum of ROW j
right = m / m.sum(dim=1, keepdim=True)   # (3, 3) / (3, 1): divides row i by the sum of row i
print("row sums (want all 1):", wrong.sum(dim=1), "without keepdim")
print("row sums (want all 1):", right.sum(dim=1), "with keepdim")

# %% [markdown]
# Rule of thumb: when a reduced tensor goes back into an expression with the tensor it came
# from, reduce with `keepdim=True`.
#
# ## 5. `squeeze` and `unsqueeze`: say which dim
#
# `squeeze()` without an argument removes **every** size-1 dim. That fixes `(N, 1)` for most
# batches. It breaks on the one batch that has a single sample: `(1, 1)` becomes a 0-d scalar.
#
# Here predictions for 9 samples come in batches of 4, 4 and 1:

# %%
batches = [torch.randn(4, 1), torch.randn(4, 1), torch.randn(1, 1)]  # model outputs, (B, 1)
print([tuple(b.squeeze().shape) for b in batches])

# %% tags=["raises-exception"]
all_preds = torch.cat([b.squeeze() for b in batches])

# %% [markdown]
# Name the dim you mean. `squeeze(1)` removes only dim 1 (and only if it has size 1), so the batch
# dim survives even when it is 1:

# %%
all_preds = torch.cat([b.squeeze(1) for b in batches])
print(tuple(all_preds.shape))

# %% [markdown]
# `unsqueeze(dim)` (or indexing with `None`) inserts a size-1 dim on purpose. That is how you ask
# broadcasting for "every pair": a column `(3, 1)` against a row `(1, 4)` gives a `(3, 4)` table.

# %%
u = torch.tensor([1.0, 2.0, 3.0])
v = torch.tensor([10.0, 20.0, 30.0, 40.0])
table = u.unsqueeze(1) * v.unsqueeze(0)   # same as u[:, None] * v[None, :]
print(tuple(table.shape), "| equals torch.outer:", torch.equal(table, torch.outer(u, v)))

# %% [markdown]
# ## 6. `einsum`: name every dim
#
# `torch.einsum` makes the alignment explicit:
#
# - each operand's dims get letters;
# - the same letter in two operands means "these dims belong together";
# - letters missing from the output are summed.
#
# Below, the per-sample dot product and a batched matrix product:

# %%
a = torch.randn(5, 3)
b = torch.randn(5, 3)
dots = torch.einsum("nd,nd->n", a, b)                   # one dot product per row
print(tuple(dots.shape), torch.allclose(dots, (a * b).sum(dim=-1)))
A, B = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
print(tuple(torch.einsum("bij,bjk->bik", A, B).shape), torch.allclose(torch.einsum("bij,bjk->bik", A, B), A @ B, atol=1e-6))

# %% [markdown]
# Written with einsum, the loss bug cannot hide. The equation says the prediction has **one** dim
# `n`, and an `(N, 1)` prediction has two, so torch raises instead of building an `(N, N)` table.

# %% tags=["raises-exception"]
pred_dot_y = torch.einsum("n,n->", model(x), y)  # sum_i pred_i * y_i

# %% [markdown]
# einsum catches a missing or extra dim, not every shape bug. It still broadcasts a size-1 dim
# against a letter's size: `"nd,nd->n"` accepts `(5, 3)` with `(5, 1)`. So keep the assertions of
# the next section too.

# %%
print(tuple(torch.einsum("nd,nd->n", a, b[:, :1]).shape), "<- (5, 3) with (5, 1) ran without complaint")


# %% [markdown]
# ## 7. Shape assertions as a habit
#
# One line at the top of a function turns a silent wrong answer into an error at the line that
# caused it, with a message that says what to do.
#
# Put them where shapes change meaning: before a loss, after a `view`/`reshape`/`squeeze`, after a
# reduction.

# %%
def mse_checked(pred, target):
    assert pred.shape == target.shape, (
        f"pred {tuple(pred.shape)} and target {tuple(target.shape)} differ: "
        f"squeeze/unsqueeze one of them so they match")
    return ((pred - target) ** 2).mean()


# %% tags=["raises-exception"]
mse_checked(model(x), y)

# %%
print(f"loss with matching shapes: {mse_checked(model(x).squeeze(1), y).item():.4g}")


# %% [markdown]
# While developing, print shapes around every operation that adds or removes dims (`sum`, `mean`,
# `squeeze`, `unsqueeze`, `view`). Or write the expected shape in a comment (`# (N, D)`) and assert
# it. Asserts cost next to nothing compared with a training step.
#
# ## 8. Exercises
#
# ### Exercise 1: per-sample MSE
#
# Write `per_sample_mse(pred, target)` returning one loss value per sample, shape `(N,)`. Either
# `pred` and `target` both have shape `(N, D)`, or each of them has shape `(N,)` or `(N, 1)`; a 1-D
# tensor is one value per sample, so `(N,)` and `(N, 1)` hold the same numbers. Average the squared
# error over the features only. `N` may be 1 (section 5's batch of one), the result keeps the inputs'
# dtype (float64 in, float64 out), and the inputs stay unchanged.

# %%
def per_sample_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    n = pred.shape[0]
    pred, target = pred.reshape(n, -1), target.reshape(n, -1)  # (N,) and (N, 1) -> (N, 1)
    assert pred.shape == target.shape, (tuple(pred.shape), tuple(target.shape))
    return ((pred - target) ** 2).mean(dim=1)
    ### END SOLUTION
    ### BEGIN STUB
    # # give pred and target the same (N, D) shape, assert it, then average over the features
    # raise NotImplementedError("per_sample_mse: your code here")
    ### END STUB


# %%
check("02.per_sample_mse", per_sample_mse)


# %% [markdown]
# ### Exercise 2: centre the columns
#
# Write `center_columns(x)` for `x` of shape `(N, D)` (N samples, D features): subtract each
# column's mean so every feature of the result has mean 0. Return a new tensor of `x`'s shape and
# dtype; leave `x` alone.

# %%
def center_columns(x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    return x - x.mean(dim=0, keepdim=True)
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("center_columns: your code here")
    ### END STUB


# %%
check("02.center_columns", center_columns)


# %% [markdown]
# ### Exercise 3: all pairwise squared distances
#
# Write `pairwise_sq_dists(a, b)` for `a` of shape `(N, D)` and `b` of shape `(M, D)`: return the
# `(N, M)` table whose entry `[i, j]` is the squared Euclidean distance between `a[i]` and `b[j]`.
# Use broadcasting (section 5's "every pair" trick), no Python loop (nor comprehension) and no
# `torch.cdist`; keep the inputs' dtype.

# %%
def pairwise_sq_dists(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    diff = a[:, None, :] - b[None, :, :]   # (N, 1, D) - (1, M, D) -> (N, M, D)
    return (diff ** 2).sum(dim=-1)
    ### END SOLUTION
    ### BEGIN STUB
    # raise NotImplementedError("pairwise_sq_dists: your code here")
    ### END STUB


# %%
check("02.pairwise_sq_dists", pairwise_sq_dists)

# %% [markdown]
# ## Key points
#
# - Shapes are compared from the right; each pair of sizes must be equal or contain a 1 (a missing
#   dim counts as 1). Size-1 dims are stretched as stride-0 views, not copies.
# - The dangerous failures are the silent ones: `(N, 1) - (N,)` is an `(N, N)` table, and a
#   reduction without `keepdim` lines up with the last dim. The loss looks normal; the gradient and
#   the trained model are wrong.
# - Reduce with `keepdim=True` when the result meets the original tensor again; `squeeze(dim)` and
#   `unsqueeze(dim)` with an explicit dim; `einsum` when you want every dim named.
# - Assert shapes where they change meaning (before a loss, after reshapes and reductions). The
#   built-in losses warn about mismatched shapes: read the warnings.
#
# ## Further reading
#
# PyTorch documentation pages:
#
# - [*Broadcasting semantics*](https://docs.pytorch.org/docs/stable/notes/broadcasting.html) (Notes section)
# - [`torch.broadcast_shapes`](https://docs.pytorch.org/docs/stable/generated/torch.broadcast_shapes.html),
#   [`torch.Tensor.expand`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.expand.html)
# - [`torch.squeeze`](https://docs.pytorch.org/docs/stable/generated/torch.squeeze.html),
#   [`torch.unsqueeze`](https://docs.pytorch.org/docs/stable/generated/torch.unsqueeze.html)
# - [`torch.einsum`](https://docs.pytorch.org/docs/stable/generated/torch.einsum.html)
# - [`torch.nn.functional.mse_loss`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.mse_loss.html)
#   and [`torch.nn.MSELoss`](https://docs.pytorch.org/docs/stable/generated/torch.nn.MSELoss.html)
#   (shape requirements and the size-mismatch warning)
#
# Previous: [01 · Tensors](01_tensors.ipynb). Next: [03 · Autograd](03_autograd.ipynb).
