# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Welcome: PyTorch from the inside
#
# This course shows PyTorch the way you will meet it in real projects. Mechanisms run live.
# Classic pitfalls are reproduced: you see the wrong number or the real error message, then the fix.
# Every exercise is checked by code that tells you *which* mistake you made. Everything runs on a
# CPU-only laptop, offline, in seconds per notebook.
#
# A few effects exist only on a CUDA GPU: the cost of a sync, pinned-memory copies, GPU mixed
# precision and memory, atomics, GPU utilisation and CUDA graphs. Their cells are in notebooks 01,
# 05, 08, 10 and 11. On a GPU machine they run and measure.
#
# On a CPU they print `Skipped on this machine (no CUDA GPU)`, then `What you would see on a GPU:`
# with typical figures. Those figures are *not* measured on your machine.
#
# ## You will learn (≈ 20 min)
#
# 1. Check your environment: versions, device, threads, and why the course fixes them.
# 2. How exercises and their checkers work: `[OK]`, `[FAIL]` with a hint, `[TODO]`.
# 3. What "dynamic graph" means in practice: ordinary Python `if`/`while` inside `forward`,
#    so the input can decide how deep the network is, or which tree it follows.
# 4. How to debug inside `forward` with `print` (and `breakpoint()`), because it is just Python.
#
# **How the course is laid out.** `notebooks/` holds the versions you work in. `solutions/` holds
# the same notebooks with every exercise solved. Try an exercise yourself first and run its check.
# Only then compare with `solutions/`.

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

info = setup(seed=0)

# %% [markdown]
# ## 1. Environment check
#
# `setup()` makes the numbers in these notebooks reproducible. It seeds every random number
# generator (Python, NumPy, PyTorch), fixes PyTorch to one thread, and sets the print precision.
#
# The thread count matters more than it looks. A floating-point sum computed by 1 thread and by 8
# threads adds the numbers in a different order, so the last digits differ (notebook 10 shows it).
# With one thread, the same kind of hardware and the same PyTorch build print the numbers shown
# here, to the digits shown. Another CPU or math library may take a different code path and change
# the last digits.
#
# Every notebook picks its device the same way: CUDA if there is an NVIDIA GPU, else Apple's MPS,
# else the CPU. Code written against a `device` variable runs unchanged on all three.
#
# PyTorch also has one generic question for "is there an accelerator, and which?":
# `torch.accelerator` (CUDA, MPS, XPU, ...). Ask it with `check_available=True`. Without it,
# `current_accelerator()` names the accelerator PyTorch was *built* for, even on a machine that has
# none: a CUDA build on a laptop without an NVIDIA GPU still answers `cuda`. Below, `None` means no
# accelerator, so the CPU is used.

# %%
import torch
from course_utils.devices import describe, pick_device

device = pick_device()
print("device:", describe(device))
print("torch threads:", torch.get_num_threads())
print("CUDA available:", torch.cuda.is_available())
print("torch.accelerator:", torch.accelerator.current_accelerator(check_available=True))

# %% [markdown]
# ## 2. How exercises work
#
# An exercise asks you to write a small function. Its check runs your function **on fresh inputs
# it makes itself**, not only on the notebook's example. It compares the result with a reference
# solution and gives one of three answers:
#
# - `[OK]` — correct on every test case;
# - `[FAIL]` — what was expected and what your function produced; when your answer matches a
#   typical mistake, a hint names that mistake;
# - `[TODO]` — you have not replaced the placeholder yet.
#
# Here is what a typical mistake looks like to the checker. The task is "return a *new* tensor equal
# to `2 * x`". This attempt doubles `x` in place, which silently changes the caller's data:

# %%
from course_utils.exercises import check


def double_in_place(x):
    x.mul_(2)  # the trailing underscore means "in place": x itself is overwritten
    return x


check("00.double", double_in_place)


# %% [markdown]
# ### Exercise 1 — `double`
#
# Write `double(x)` so that it returns a new tensor equal to `2 * x` and leaves `x` untouched.

# %%
def double(x: torch.Tensor) -> torch.Tensor:
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION


# %%
check("00.double", double)


# %% [markdown]
# ## 3. The dynamic graph: the graph is whatever your code did
#
# PyTorch records operations **as they run** ("define by run"). There is no separate graph-building
# step. The *autograd graph* of a result is the record of the operations that produced it this
# time; `backward()` walks it to compute gradients. So ordinary Python control flow decides the graph.
#
# Below, the sign of the input picks the branch, and the recorded graph changes with it. How to read
# the printed graph:
#
# - `y.grad_fn` is the node `backward()` visits first. It is the *last* operation of the forward:
#   here the `sum`, in both branches.
# - its `next_functions` lead back to the operation before it, the one the branch chose.

# %%
def branchy(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:
        return (x * 3).sum()
    return (x ** 2).sum()


for values in ([1.0, 2.0], [-1.0, -2.0]):
    x = torch.tensor(values, requires_grad=True)
    y = branchy(x)
    y.backward()
    print(f"x={values}: took the {'x*3' if sum(values) > 0 else 'x**2'} branch, "
          f"graph: {type(y.grad_fn).__name__} <- {type(y.grad_fn.next_functions[0][0]).__name__}, "
          f"dy/dx={x.grad.tolist()}")

# %% [markdown]
# The graph is not stored in the function: it is rebuilt on **every** call, from what that call
# did. Two calls with the same input give equal values and two distinct graphs:

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
first, second = branchy(x), branchy(x)
print("equal values:", torch.equal(first, second), "| one shared graph:", first.grad_fn is second.grad_fn)

# %% [markdown]
# This mechanism matters more than any particular API. PyTorch has worked this way since its first
# release, and everything later in the course rests on it:
#
# - autograd (notebook 03) walks this recorded graph;
# - an `nn.Module` (04) is Python code that records one;
# - even `torch.compile` and `torch.export` (11, 12) start by tracing what such code does.
#
# APIs come and go between releases; "the graph is whatever this call did" does not.
#
# A practical consequence: there is no compile stage between editing a model and running it. Below,
# a model with a new data-dependent branch is defined, built, and run forward and backward. The
# cell times all of it together:

# %% tags=["nbval-ignore-output"]
import time

from torch import nn

start = time.perf_counter()


class Edited(nn.Module):                 # pretend you just edited this class
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        if h.mean() > 0.1:               # the branch you just added
            h = h * 2
        return self.b(h)


edited = Edited()
edited(torch.randn(32, 8)).sum().backward()
elapsed = time.perf_counter() - start
print(f"edit -> define, build, forward, backward: {elapsed * 1e3:.1f} ms")
confirm(all(p.grad is not None for p in edited.parameters()),
        "right after the edit, backward reached every parameter: each one has a gradient")

# %% [markdown]
# The time printed above is what one edit-and-run cycle costs: milliseconds on a laptop. PyTorch
# only runs the Python you wrote. Compiling a graph first is possible, but optional: notebook 11
# times the first `torch.compile` call, which takes seconds to tens of seconds.

# %% [markdown]
# The same idea scales to whole networks. `ShrinkNet` below applies one layer *while* the
# activation is still large, so the input decides its depth at run time. Here that is a plain
# `while` loop; a static-graph framework would need special loop operators. Backpropagation goes
# through exactly the steps that were taken.

# %%
class ShrinkNet(nn.Module):
    def __init__(self, max_steps: int = 20):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(0.5))
        self.max_steps = max_steps

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        steps = 0
        while x.norm() > 1.0 and steps < self.max_steps:  # plain Python decides the depth
            x = self.scale * x
            steps += 1
        return x, steps


net = ShrinkNet()
for norm in (3.0, 20.0, 100.0):
    x = torch.full((4,), norm / 2)  # four equal entries: the norm is 2 * entry
    out, steps = net(x)
    out.sum().backward()
    print(f"input norm {norm:6.1f}: {steps} layer applications, "
          f"d(out)/d(scale) = {net.scale.grad.item():.4f}")
    net.scale.grad = None

# %% [markdown]
# The gradient with respect to `scale` depends on how many times `scale` was used. With `k`
# applications the output is `scale**k * x`, so its derivative is `k * scale**(k-1) * sum(x)`.
# Autograd got that right for every depth without being told the depth in advance.
#
# Explore it: move the sliders to change the input's norm and the layer's factor, and watch the
# depth change. An input norm of 0.5 is already below 1, so it gets depth 0: a single point. (If the
# sliders do not show, e.g. on GitHub, the static picture below tells the same story.)

# %% tags=["nbval-ignore-output"]
from course_utils.widgets.dynamic_depth import depth_explorer, norm_trajectory

explorer = depth_explorer()
confirm(len(norm_trajectory(1000.0)) > len(norm_trajectory(5.0)) > len(norm_trajectory(0.5)) == 1,
        "a larger input norm gives a deeper network, and an input of norm 0.5 gets no layer")
explorer

# %%
import matplotlib.pyplot as plt

fig = depth_explorer(static=True)
fig.axes[0].bar_label(fig.axes[0].containers[0])  # writes each bar's height, so the 0 shows too
plt.show()

# %% [markdown]
# The first bar has height 0: an input whose norm is already below 1 gets no layer at all.
#
# Depth is not the only shape the input can decide. A *recursive* network follows a tree:
#
# - a leaf is a word (a row of `leaves`);
# - an inner node combines its two children with one shared layer.
#
# Parse trees of sentences, molecules and program syntax trees have this form, and every input has a
# different tree.

# %%
class TreeNet(nn.Module):
    def __init__(self, dim: int = 3):
        super().__init__()
        self.combine = nn.Linear(2 * dim, dim)   # one layer, reused at every inner node

    def forward(self, tree, leaves: torch.Tensor) -> torch.Tensor:
        if isinstance(tree, int):                # a leaf: the vector of that word
            return leaves[tree]
        left, right = tree                       # an inner node: (left subtree, right subtree)
        return torch.tanh(self.combine(torch.cat([self(left, leaves), self(right, leaves)])))


def count_ops(output: torch.Tensor, name: str) -> int:
    """How many nodes called `name` the recorded graph of `output` holds."""
    seen, todo = set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in seen:
            seen.add(node)
            todo.extend(child for child, _ in node.next_functions)
    return sum(type(node).__name__ == name for node in seen)


tree_net, leaves = TreeNet(), torch.randn(5, 3)
for tree in (((0, 1), 2), (0, (1, (2, (3, 4)))), ((0, 1), (2, (3, 4)))):
    print(f"tree {str(tree):22s} -> {count_ops(tree_net(tree, leaves), 'TanhBackward0')} "
          f"tanh nodes in the graph")

# %% [markdown]
# Each tree gets a graph with one `tanh` node per inner node of the tree (2, 4 and 4 above), built
# by plain recursion. Backpropagation through such a graph is still exact. `gradcheck` checks it: it
# compares autograd's gradient with finite differences, in float64 (notebook 03 explains it).

# %%
tree_net64 = TreeNet().double()
leaves64 = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
print("gradcheck through the tree:",
      torch.autograd.gradcheck(lambda leaf_vectors: tree_net64(((0, 1), (2, (3, 4))), leaf_vectors).sum(),
                               (leaves64,)))


# %% [markdown]
# ### Exercise 2 — a loop whose length the input decides
#
# Write `shrink_until_small(x, layer, max_steps)`: apply `layer` to `x` **while** `x.norm() > 1`,
# at most `max_steps` times, and return `(x, number_of_applications)`. An input that is already
# small must come back unchanged with 0 applications. `x.norm()` is the norm of the whole tensor,
# whatever its shape. As in `ShrinkNet`, backpropagation must go through the steps that were taken
# (no `torch.no_grad()`, no `.detach()`).

# %%
def shrink_until_small(x: torch.Tensor, layer: nn.Module, max_steps: int = 10):
    ### BEGIN SOLUTION
    steps = 0
    while x.norm() > 1.0 and steps < max_steps:
        x = layer(x)
        steps += 1
    return x, steps
    ### END SOLUTION


# %%
check("00.shrink_until_small", shrink_until_small)


# %% [markdown]
# ## 4. Debugging inside `forward`
#
# Because `forward` is ordinary Python, you debug it like ordinary Python. Put a `print` in it, or a
# `breakpoint()` to stop there and inspect tensors interactively (`p x.shape`, `c` to continue).
#
# The model below has a wiring mistake. The shapes printed *before* the crash tell us which layer is
# wrong, without reading the whole traceback.

# %%
class Classifier(nn.Module):
    def __init__(self, debug: bool = False):
        super().__init__()
        self.debug = debug
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(12, 3))  # 16 != 12

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, layer in enumerate(self.body):
            if self.debug:
                print(f"layer {index} {layer.__class__.__name__:6s} input {tuple(x.shape)}")
            # breakpoint()  # uncomment to stop here and inspect x interactively
            x = layer(x)
        return x


# %% tags=["raises-exception"]
Classifier(debug=True)(torch.randn(5, 8))


# %% [markdown]
# Layer 2 receives 16 features but was built for 12. Fix the constructor and the same debug print
# shows the shapes flowing through cleanly.

# %%
class FixedClassifier(Classifier):
    def __init__(self, debug: bool = False):
        super().__init__(debug)
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


print("output shape:", tuple(FixedClassifier(debug=True)(torch.randn(5, 8)).shape))


# %% [markdown]
# ### Exercise 3 — collect the shapes instead of printing them
#
# Write `layer_shapes(model, x)` for an `nn.Sequential`: run `x` through the layers one at a time
# and return the list of each layer's **output** shape as a tuple.

# %%
def layer_shapes(model: nn.Sequential, x: torch.Tensor) -> list[tuple[int, ...]]:
    ### BEGIN SOLUTION
    shapes = []
    for layer in model:
        x = layer(x)
        shapes.append(tuple(x.shape))
    return shapes
    ### END SOLUTION


# %%
check("00.layer_shapes", layer_shapes)

# %% [markdown]
# ## Key points
#
# - Run `setup()` first: seeds and a fixed thread count make the numbers reproducible, to the printed
#   digits, on the same kind of hardware with the same PyTorch build.
# - Write device-agnostic code against a `device` variable chosen once.
# - The autograd graph is recorded while your code runs, so Python `if`/`for`/`while` in `forward`
#   are allowed and gradients follow the path actually taken.
# - The graph is rebuilt on every call, so an edited model runs at once (no compile stage) and a
#   recursive `forward` gives each input a graph shaped like its tree.
# - `forward` is plain Python: debug it with `print` or `breakpoint()`.
# - Each exercise's `check(...)` runs your code on fresh inputs and names typical mistakes.
#
# ## Further reading
#
# - PyTorch docs: [*Autograd mechanics*](https://docs.pytorch.org/docs/stable/notes/autograd.html)
#   (how the graph is recorded).
# - PyTorch docs: [*torch.nn.Module*](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html)
#   (`forward`, `__call__`).
# - PyTorch docs: [*torch.accelerator*](https://docs.pytorch.org/docs/stable/accelerator.html)
#   (`current_accelerator`).
# - Python docs: [*pdb — The Python Debugger*](https://docs.python.org/3/library/pdb.html)
#   (`breakpoint()`).
# - Next: [01 · Tensors](01_tensors.ipynb).
