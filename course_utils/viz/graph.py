"""The autograd graph behind a tensor, read from ``grad_fn`` and drawn with matplotlib.

Every tensor produced by a differentiable op on tensors that require grad has a ``grad_fn``:
the backward node of that op. ``grad_fn.next_functions`` links it to the nodes of its inputs;
leaves (tensors you created with ``requires_grad=True``) appear as ``AccumulateGrad`` nodes,
whose ``.variable`` is the leaf. :func:`graph_nodes` walks those links, :func:`describe_graph`
prints them, :func:`draw_graph` draws them top (output) to bottom (leaves): the direction in
which ``backward()`` sends gradients. No graphviz needed.

Example:
    >>> import torch
    >>> from course_utils.viz.graph import describe_graph
    >>> w = torch.tensor([2.0, 3.0], requires_grad=True)
    >>> loss = (w ** 2).sum()
    >>> print(describe_graph(loss, names={"w": w, "loss": loss}))
    SumBackward0 (loss)
    └─ PowBackward0
       └─ w: leaf, shape (2,)
"""

from __future__ import annotations

from course_utils.i18n import t

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import torch

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@dataclass
class GraphNode:
    """One backward node: its label, whether it stands for a leaf, and its inputs' nodes."""

    key: int
    label: str
    kind: str                       # "op" (a grad_fn), "leaf" (AccumulateGrad) or "output"
    children: list[int] = field(default_factory=list)


def _leaf_label(variable: torch.Tensor, names: Mapping[str, torch.Tensor]) -> str:
    for name, tensor in names.items():
        if tensor is variable:
            return f"{name}: leaf, shape {tuple(variable.shape)}"
    return f"leaf, shape {tuple(variable.shape)}"


def graph_nodes(output: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None) -> dict[int, GraphNode]:
    """Walk ``output.grad_fn`` and its ``next_functions``; return the nodes by key (root first).

    ``names`` maps labels to tensors: leaves are matched to their ``AccumulateGrad`` node,
    non-leaf tensors to their ``grad_fn``. Inputs that do not require grad have no node.
    """
    if not isinstance(output, torch.Tensor):
        raise TypeError(t("expected a tensor, found {found}; pass the tensor whose graph you want",
                          found=type(output).__name__))
    if output.grad_fn is None:
        hint = (t("it is a leaf: it has no history to draw") if output.requires_grad else
                t("it does not require grad: make an input with requires_grad=True and compute it "
                  "outside torch.no_grad()/inference_mode()"))
        raise ValueError(t("expected a tensor with a grad_fn, found grad_fn=None ({hint})", hint=hint))
    names = dict(names or {})
    fn_names = {id(t.grad_fn): n for n, t in names.items() if isinstance(t, torch.Tensor) and t.grad_fn is not None}
    keep: dict[int, Any] = {}     # holds the Python node objects alive so their ids stay unique
    nodes: dict[int, GraphNode] = {}
    stack = [output.grad_fn]
    while stack:
        fn = stack.pop()
        key = id(fn)
        if key in nodes:
            continue
        keep[key] = fn
        if hasattr(fn, "variable"):
            nodes[key] = GraphNode(key, _leaf_label(fn.variable, names), "leaf")
            continue
        label = type(fn).__name__
        if key in fn_names:
            label += f" ({fn_names[key]})"
        nodes[key] = GraphNode(key, label, "output" if fn is output.grad_fn else "op")
        children = [child for child, _ in fn.next_functions if child is not None]
        for child in children:
            keep[id(child)] = child
            if id(child) not in nodes[key].children:
                nodes[key].children.append(id(child))
        stack.extend(reversed(children))
    return nodes


def describe_graph(output: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None) -> str:
    """The graph as an indented tree (a node reached twice is marked ``(shown above)``)."""
    nodes = graph_nodes(output, names)
    root = next(iter(nodes))
    lines: list[str] = []
    seen: set[int] = set()

    def walk(key: int, prefix: str, last: bool, root: bool) -> None:
        node = nodes[key]
        again = key in seen and bool(node.children)
        connector = "" if root else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{connector}{node.label}{t(' (shown above)') if again else ''}")
        if again:
            return
        seen.add(key)
        child_prefix = prefix + ("" if root else ("   " if last else "│  "))
        for i, child in enumerate(node.children):
            walk(child, child_prefix, i == len(node.children) - 1, False)

    walk(root, "", True, True)
    return "\n".join(lines)


def _layers(nodes: dict[int, GraphNode]) -> dict[int, int]:
    """Depth of every node = longest path from the root, so leaves sit below their users."""
    depth = {next(iter(nodes)): 0}
    changed = True
    while changed:
        changed = False
        for key, node in nodes.items():
            if key not in depth:
                continue
            for child in node.children:
                if depth.get(child, -1) < depth[key] + 1:
                    depth[child] = depth[key] + 1
                    changed = True
    return depth


def draw_graph(output: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None,
               ax: "Axes | None" = None, title: str | None = None) -> "Figure":
    """Draw the backward graph of ``output``: op nodes blue, leaves green, arrows = gradient flow."""
    import matplotlib.pyplot as plt

    nodes = graph_nodes(output, names)
    depth = _layers(nodes)
    rows: dict[int, list[int]] = {}
    for key in nodes:  # insertion order = depth-first discovery order: stable left-to-right
        rows.setdefault(depth[key], []).append(key)
    widest = max(len(r) for r in rows.values())
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4.0, 2.3 * widest), 0.95 * len(rows) + 0.6))
    else:
        fig = ax.figure
    parents: dict[int, list[int]] = {key: [] for key in nodes}
    for key, node in nodes.items():
        for child in node.children:
            parents[child].append(key)
    pos: dict[int, tuple[float, float]] = {}
    for level in sorted(rows):
        keys = rows[level]
        if level > 0:  # order each row under its users, so arrows cross less
            keys.sort(key=lambda k: sum(pos[p][0] for p in parents[k] if p in pos)
                      / max(1, sum(p in pos for p in parents[k])))
        for i, key in enumerate(keys):
            pos[key] = ((i + 0.5) / len(keys) * widest, -level)
    colors = {"op": "#d9e6f2", "leaf": "#bfe3bf", "output": "#ffe08a"}
    for key, node in nodes.items():
        for child in node.children:
            (x0, y0), (x1, y1) = pos[key], pos[child]
            skips = depth[child] - depth[key] > 1 and abs(x1 - x0) < 0.3
            ax.annotate("", xy=(x1, y1 + 0.22), xytext=(x0, y0 - 0.22),
                        arrowprops={"arrowstyle": "-|>", "color": "#666666", "lw": 1.0,
                                    "connectionstyle": f"arc3,rad={0.45 if skips else 0.0}"})
    for key, node in nodes.items():
        x, y = pos[key]
        ax.text(x, y, node.label.replace(": ", "\n", 1) if node.kind == "leaf" else node.label,
                ha="center", va="center", fontsize=8,
                bbox={"boxstyle": "round,pad=0.35", "facecolor": colors[node.kind], "edgecolor": "#555555"})
    ax.set_xlim(-0.2, widest + 0.2)
    ax.set_ylim(-(len(rows) - 1) - 0.5, 0.5)
    ax.axis("off")
    ax.set_title(title or "backward graph (grad_fn): gradients flow\nfrom the output (top) to the leaves (bottom)",
                 fontsize=9)
    return fig
