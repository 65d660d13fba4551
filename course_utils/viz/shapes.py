"""Broadcasting, explained and drawn: two shapes aligned at the right, one box per dim.

:func:`explain_broadcast` applies the two rules (align trailing dims; a pair of sizes must be
equal, or one of them 1 or missing) and says, per dim, what happened; :func:`draw_broadcast`
draws the same thing as aligned shape boxes (matplotlib only).

Example:
    >>> from course_utils.viz.shapes import explain_broadcast, parse_shape
    >>> explain_broadcast((5, 1, 3), (4, 1)).result
    (5, 4, 3)
    >>> print(explain_broadcast((6, 4), (6,)).message)
    (6, 4) and (6,) do not broadcast: at dim 1 (counted from the right: -1) the sizes 4 and 6 differ and neither is 1.
    >>> parse_shape("(32, 1)")
    (32, 1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from course_utils.i18n import t

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Shape = tuple[int, ...]

#: Box colours by what happened to a dim (also used by the broadcasting widget).
COLORS = {
    "equal": "#d9e6f2",      # same size on both sides
    "stretched": "#ffe08a",  # size 1 repeated to match the other side
    "missing": "#f2f2f2",    # dim absent: treated as size 1, then stretched
    "conflict": "#f4a3a3",   # sizes differ and neither is 1: the error
    "result": "#bfe3bf",
}


@dataclass(frozen=True)
class Column:
    """One aligned dim: sizes on each side (None = missing), the result size, what happened."""

    dim: int                 # counted from the right: -1 is the last dim
    size_a: int | None
    size_b: int | None
    result: int | None       # None when this dim is where broadcasting fails
    note: str                # e.g. "equal", "a: 1 → 4", "b missing → 5", "4 ≠ 6"


@dataclass(frozen=True)
class BroadcastExplanation:
    """Result of :func:`explain_broadcast`."""

    shape_a: Shape
    shape_b: Shape
    columns: tuple[Column, ...]  # left to right, aligned at the right
    result: Shape | None         # None when the shapes do not broadcast
    message: str

    @property
    def ok(self) -> bool:
        return self.result is not None

    def steps(self) -> str:
        """One line per dim, left to right."""
        lines = []
        width = len(self.columns)
        for col in self.columns:
            a = "-" if col.size_a is None else str(col.size_a)
            b = "-" if col.size_b is None else str(col.size_b)
            r = t("ERROR") if col.result is None else str(col.result)
            lines.append(t("  dim {index} ({dim}):  a {a} | b {b}  ->  {r} {note}", index=width + col.dim,
                           dim=f"{col.dim:>2}", a=f"{a:>4}", b=f"{b:>4}", r=f"{r:<5}", note=col.note))
        return "\n".join(lines)


def parse_shape(text: str | Sequence[int]) -> Shape:
    """Turn ``"32, 1"``, ``"(32,1)"``, ``"32x1"``, ``"()"`` or a sequence into a tuple of ints.

    >>> parse_shape("4 x 1"), parse_shape([3]), parse_shape("")
    ((4, 1), (3,), ())
    """
    if not isinstance(text, str):
        values = tuple(int(v) for v in text)
    else:
        cleaned = text.strip().strip("()[]").replace("torch.Size", "")
        parts = [p for p in re.split(r"[\s,x×*]+", cleaned.strip("()[]")) if p]
        if not all(re.fullmatch(r"\d+", p) for p in parts):
            raise ValueError(t("expected a shape such as '32, 1' or '(5, 1, 3)' (non-negative integers), "
                               "found {text}; try writing the sizes separated by commas", text=repr(text)))
        values = tuple(int(p) for p in parts)
    if any(v < 0 for v in values):
        raise ValueError(t("expected non-negative sizes, found {values}; sizes count elements along a dim",
                           values=values))
    return values


def explain_broadcast(shape_a: str | Sequence[int], shape_b: str | Sequence[int]) -> BroadcastExplanation:
    """Apply the broadcasting rules to two shapes and explain every dim.

    Agrees with ``torch.broadcast_shapes`` (tests check it on many pairs).

    >>> e = explain_broadcast("32, 100", "100")
    >>> e.result, [c.note for c in e.columns]
    ((32, 100), ['b missing → 32', 'equal'])
    """
    a, b = parse_shape(shape_a), parse_shape(shape_b)
    width = max(len(a), len(b))
    pa: list[int | None] = [None] * (width - len(a)) + list(a)
    pb: list[int | None] = [None] * (width - len(b)) + list(b)
    columns: list[Column] = []
    failed: Column | None = None
    for index, (sa, sb) in enumerate(zip(pa, pb)):
        dim = index - width
        if sa is None or sb is None:
            present = sb if sa is None else sa
            side = "a" if sa is None else "b"
            assert present is not None
            columns.append(Column(dim, sa, sb, present, t("{side} missing → {present}", side=side, present=present)))
        elif sa == sb:
            columns.append(Column(dim, sa, sb, sa, t("equal")))
        elif sa == 1:
            columns.append(Column(dim, sa, sb, sb, f"a: 1 → {sb}"))
        elif sb == 1:
            columns.append(Column(dim, sa, sb, sa, f"b: 1 → {sa}"))
        else:
            col = Column(dim, sa, sb, None, t("{sa} ≠ {sb}, neither is 1", sa=sa, sb=sb))
            columns.append(col)
            failed = failed or col
    if failed is not None:
        message = t("{a} and {b} do not broadcast: at dim {index} (counted from the right: {dim}) the sizes "
                    "{size_a} and {size_b} differ and neither is 1.", a=a, b=b, index=width + failed.dim,
                    dim=failed.dim, size_a=failed.size_a, size_b=failed.size_b)
        return BroadcastExplanation(a, b, tuple(columns), None, message)
    result = tuple(int(c.result) for c in columns if c.result is not None)
    return BroadcastExplanation(a, b, tuple(columns), result, t("{a} and {b} broadcast to {result}", a=a, b=b, result=result))


def _box(ax: "Axes", x: float, y: float, text: str, color: str, dashed: bool = False) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x + 0.06, y + 0.08), 0.88, 0.74, boxstyle="round,pad=0.02",
                                facecolor=color, edgecolor="#555555", linewidth=1.0,
                                linestyle="--" if dashed else "-"))
    ax.text(x + 0.5, y + 0.45, text, ha="center", va="center", fontsize=10)


def draw_broadcast(shape_a: str | Sequence[int], shape_b: str | Sequence[int],
                   ax: "Axes | None" = None, names: tuple[str, str] = ("a", "b")) -> "Figure":
    """Draw both shapes as rows of boxes aligned at the right, and the result row below.

    Yellow: a size-1 dim stretched; grey dashed: a missing dim (counts as 1); red: the dim
    where the rules fail. Returns the figure (call ``plt.show()`` in a notebook).
    """
    import matplotlib.pyplot as plt

    exp = explain_broadcast(shape_a, shape_b)
    width = max(len(exp.columns), 1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.1 + 0.75 * width, 2.2))
    else:
        fig = ax.figure
    ax.set_xlim(-1.3, width + 0.05)
    ax.set_ylim(-0.1, 3.2)
    ax.axis("off")
    ax.set_aspect("auto")
    rows = [(f"{names[0]} {exp.shape_a}", 2.2, "a"), (f"{names[1]} {exp.shape_b}", 1.2, "b")]
    for label, y, side in rows:
        ax.text(-0.1, y + 0.45, label, ha="right", va="center", fontsize=9)
        for i, col in enumerate(exp.columns):
            size = col.size_a if side == "a" else col.size_b
            if size is None:
                _box(ax, i, y, f"·→{col.result}" if col.result is not None else "·", COLORS["missing"], True)
            elif col.result is None:
                _box(ax, i, y, str(size), COLORS["conflict"])
            elif size == col.result:
                _box(ax, i, y, str(size), COLORS["equal"])
            else:
                _box(ax, i, y, f"1→{col.result}", COLORS["stretched"])
    ax.plot([-1.25, width], [1.1, 1.1], color="#333333", linewidth=0.8)
    ax.text(-0.1, 0.55, "result", ha="right", va="center", fontsize=9, fontweight="bold")
    for i, col in enumerate(exp.columns):
        if col.result is None:
            _box(ax, i, 0.1, "✗", COLORS["conflict"])
        else:
            _box(ax, i, 0.1, str(col.result), COLORS["result"])
    title = f"→ {exp.result}" if exp.ok else f"✗ fails at dim {width + next(c.dim for c in exp.columns if c.result is None)}"
    ax.set_title(f"{names[0]} {exp.shape_a}  with  {names[1]} {exp.shape_b}   {title}", fontsize=9)
    return fig


def draw_broadcasts(pairs: Iterable[tuple[str | Sequence[int], str | Sequence[int]]], cols: int = 2) -> "Figure":
    """Several :func:`draw_broadcast` diagrams in a grid of ``cols`` columns (a static gallery)."""
    import matplotlib.pyplot as plt

    pairs = list(pairs)
    if not pairs:
        raise ValueError("expected at least one (shape_a, shape_b) pair, found none")
    cols = max(1, min(cols, len(pairs)))
    rows = -(-len(pairs) // cols)
    width = max(len(explain_broadcast(a, b).columns) for a, b in pairs)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * (1.3 + 0.75 * max(width, 3)), 2.0 * rows),
                             squeeze=False)
    for ax in axes.flat[len(pairs):]:
        ax.axis("off")
    for ax, (a, b) in zip(axes.flat, pairs):
        draw_broadcast(a, b, ax=ax)
    fig.tight_layout()
    return fig
