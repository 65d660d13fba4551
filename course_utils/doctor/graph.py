"""What the autograd graph says about a tensor: which operation made it, and what a loss depends on.

The doctor decides "softmax/sigmoid before the loss" from the operation that produced the loss
input (its ``grad_fn``), never from the values, and finds tensors that receive gradients but are
not parameters of the model (layers kept in a plain Python list, tensors created in ``forward``).

Example:
    >>> import torch
    >>> w = torch.randn(3, 4, requires_grad=True)
    >>> producer(torch.randn(2, 3).matmul(w).softmax(dim=1).view(2, 4))
    'SoftmaxBackward0'
    >>> info = walk(torch.randn(2, 3).matmul(w).round().sum())
    >>> info.zero_gradient_ops, len(info.leaves)
    (['RoundBackward0'], 1)
    >>> floor(torch.randn(2, 3).matmul(w).clamp(min=0))
    ('ClampBackward1', 0.0)
"""

from __future__ import annotations

import re
from typing import Any


from .records import GraphInfo

#: Operations that only move, copy or reshape values: the doctor looks through them.
_PASS_THROUGH = re.compile(
    r"^(View|Reshape|ReshapeAlias|UnsafeView|Squeeze|Unsqueeze|Transpose|Permute|T|Clone|ToCopy|Select|"
    r"Slice|AsStrided|Expand|Clamp|ClampMin|ClampMax|Flatten|Contiguous|Alias|Index|Squeeze\w*|Unsqueeze\w*)Backward\d*$")
#: Operations whose derivative is zero wherever it exists.
ZERO_GRADIENT_OPS = ("RoundBackward", "FloorBackward", "CeilBackward", "SignBackward", "TruncBackward",
                     "FracBackward")


_SOFTMAX = ("SoftmaxBackward0", "SafeSoftmaxBackward0")


def _through(node: Any, hops: int = 8) -> str | None:
    """Name of the first node from ``node`` on that is not a reshape or copy."""
    for _ in range(hops):
        if node is None:
            return None
        name = type(node).__name__
        if not _PASS_THROUGH.match(name):
            return name
        nxt = [fn for fn, _ in node.next_functions if fn is not None]
        node = nxt[0] if nxt else None
    return None


def producer(tensor: Any, hops: int = 8) -> str | None:
    """Name of the operation that made ``tensor``, looking through reshapes and copies (None: a leaf
    or a tensor without a graph)."""
    node = getattr(tensor, "grad_fn", None)
    for _ in range(hops):
        if node is None:
            return None
        name = type(node).__name__
        if not _PASS_THROUGH.match(name):
            return name
        nxt = [fn for fn, _ in node.next_functions if fn is not None]
        node = nxt[0] if nxt else None
    return None


def _lower_bound(node: Any) -> float | None:
    """The lower bound a clamping node puts on its output (None: the node does not bound it)."""
    name = type(node).__name__
    if name.startswith("ReluBackward"):
        return 0.0
    for attr in ("_saved_min", "_saved_min_val"):
        value = getattr(node, attr, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    if name.startswith("ThresholdBackward"):
        return float(getattr(node, "_saved_threshold", 0.0)) if getattr(node, "_saved_threshold", 0.0) >= 0 else None
    return None


def floor(tensor: Any, hops: int = 8) -> tuple[str, float] | None:
    """The operation that bounds ``tensor`` from below at 0 or more (a ReLU, clamp(min=0), ReLU6,
    Hardtanh(0, ...)), looking through reshapes and copies, with its bound; None when the values
    are not bounded below that way (e.g. a linear layer's output, or clamp(-10, 10)).

    >>> import torch
    >>> w = torch.randn(3, 4, requires_grad=True)
    >>> floor(torch.relu(torch.randn(2, 3) @ w).view(-1)), floor((torch.randn(2, 3) @ w).clamp(-5, 5))
    (('ReluBackward0', 0.0), None)
    """
    node = getattr(tensor, "grad_fn", None)
    for _ in range(hops):
        if node is None:
            return None
        name = type(node).__name__
        if name.startswith(("Relu", "Clamp", "Hardtanh", "Threshold")):
            bound = _lower_bound(node)
            if bound is not None and bound >= 0:
                return name, bound
            if not _PASS_THROUGH.match(name):
                return None
        elif not _PASS_THROUGH.match(name):
            return None
        nxt = [fn for fn, _ in node.next_functions if fn is not None]
        node = nxt[0] if nxt else None
    return None


def graph_nodes(tensor: Any, limit: int = 4000) -> list[Any]:
    """The autograd nodes behind ``tensor`` (at most ``limit``), leaves' AccumulateGrad nodes
    excluded (a parameter's is the same object in every step's graph)."""
    start = getattr(tensor, "grad_fn", None)
    if start is None:
        return []
    nodes, seen, stack = [], {id(start)}, [start]
    while stack and len(nodes) < limit:
        node = stack.pop()
        if type(node).__name__ != "AccumulateGrad":
            nodes.append(node)
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return nodes


def walk(loss: Any, limit: int = 4000) -> GraphInfo:
    """Visit the graph behind ``loss`` (at most ``limit`` nodes)."""
    info = GraphInfo()
    start = getattr(loss, "grad_fn", None)
    if start is None:
        return info
    seen, stack = {id(start)}, [start]
    while stack:
        if len(seen) > limit:
            info.complete = False
            break
        node = stack.pop()
        name = type(node).__name__
        if name == "AccumulateGrad":
            info.leaves.append(node.variable)
        elif name.startswith(ZERO_GRADIENT_OPS) and name not in info.zero_gradient_ops:
            info.zero_gradient_ops.append(name)
        elif name in ("LogSoftmaxBackward0", "NllLossBackward0", "NllLoss2DBackward0") and not info.softmax_then_log:
            info.softmax_then_log = any(_through(nxt) in _SOFTMAX for nxt, _ in node.next_functions if nxt is not None)
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return info
