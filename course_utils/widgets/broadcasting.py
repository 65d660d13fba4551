"""Broadcasting explorer: type two shapes, see the result shape or the rule that fails, drawn.

The explanation comes from :func:`course_utils.viz.shapes.explain_broadcast`; the explorer
also asks torch itself (with tensors on the ``meta`` device: shapes only, no memory) and
prints what torch says, so the diagram and the real error message sit side by side.

Example:
    >>> from course_utils.widgets.broadcasting import broadcast_explorer, torch_says
    >>> torch_says((64, 1), (64,))
    'torch: a + b has shape (64, 64)'
    >>> explorer = broadcast_explorer("6, 4", "6")
    >>> explorer.explanation.ok
    False
    >>> explorer.shape_b.value = "4"
    >>> explorer.explanation.result
    (6, 4)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

import ipywidgets as w

from course_utils.i18n import N_, t
from course_utils.viz.shapes import BroadcastExplanation, draw_broadcast, explain_broadcast, parse_shape
from course_utils.widgets.base import Explorer, new_figure

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.figure import Figure

#: Examples offered in the dropdown: (label, shape a, shape b).
EXAMPLES: list[tuple[str, str, str]] = [
    (N_("batch minus column means"), "32, 100", "100"),
    (N_("batch minus row means (no keepdim)"), "32, 100", "32"),
    (N_("batch minus row means (keepdim)"), "32, 100", "32, 1"),
    (N_("prediction (N,1) vs target (N,)"), "64, 1", "64"),
    (N_("outer product via None"), "5, 1", "1, 3"),
    (N_("image batch times per-channel scale"), "8, 3, 32, 32", "3, 1, 1"),
    (N_("wrong channel scale"), "8, 3, 32, 32", "3"),
]


def torch_says(shape_a: str | Sequence[int], shape_b: str | Sequence[int]) -> str:
    """Run ``a + b`` on the meta device and report the shape or torch's own error message."""
    import torch

    a = torch.empty(parse_shape(shape_a), device="meta")
    b = torch.empty(parse_shape(shape_b), device="meta")
    try:
        return t("torch: a + b has shape {shape}", shape=tuple((a + b).shape))
    except RuntimeError as exc:
        return f"torch: RuntimeError: {str(exc).splitlines()[0]}"


_SIZE = r"\d+"
_SEPARATOR = r"\s*(?:,|[x×*]|\s)\s*"
_SHAPE_TEXT = re.compile(rf"\s*(?:{_SIZE}(?:{_SEPARATOR}{_SIZE})*\s*,?)?\s*")


def check_shape_text(text: str) -> None:
    """Raise ``ValueError`` naming the piece of a typed shape that is not a size.

    :func:`~course_utils.viz.shapes.parse_shape` reads ``x`` as a separator (``32x1``), so on its
    own it would read ``"8, x, 3"`` as ``(8, 3)``; the explorer refuses such text instead.

    >>> check_shape_text("8, x, 3")
    Traceback (most recent call last):
    ...
    ValueError: expected a shape such as '8, 1, 3', found '8, x, 3': 'x' is not a size; write only sizes, separated by commas
    """
    cleaned = text.strip().replace("torch.Size", "").strip().strip("()[]")
    if _SHAPE_TEXT.fullmatch(cleaned):
        return
    pieces = [p for p in re.split(r"[\s,]+", cleaned) if p]
    bad = next((p for p in pieces if not re.fullmatch(r"\d+(?:[x×*]\d+)*", p)), None)
    problem = t("{bad} is not a size", bad=repr(bad)) if bad is not None else \
        t("a size is missing between two separators")
    raise ValueError(t("expected a shape such as '8, 1, 3', found {text}: {problem}; write only sizes, "
                       "separated by commas", text=repr(text), problem=problem))


def _report(exp: BroadcastExplanation) -> str:
    return f"{exp.message}\n{exp.steps()}\n{torch_says(exp.shape_a, exp.shape_b)}"


def _static(shape_a: str | Sequence[int], shape_b: str | Sequence[int]) -> "Figure":
    print(_report(explain_broadcast(shape_a, shape_b)))
    return draw_broadcast(shape_a, shape_b)


def broadcast_explorer(shape_a: str | Sequence[int] = "5, 1, 3", shape_b: str | Sequence[int] = "4, 1",
                       static: bool = False):
    """An explorer widget (``static=False``) or the printed explanation + diagram (``static=True``).

    The widget has two text boxes (shapes, e.g. ``32, 1``), a dropdown of examples and an
    Output showing the explanation, torch's verdict and the diagram; ``explorer.explanation``
    holds the current :class:`~course_utils.viz.shapes.BroadcastExplanation`.
    """
    if static:
        return _static(shape_a, shape_b)
    return BroadcastExplorer(shape_a, shape_b)


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where an Output widget can show things)."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


class BroadcastExplorer(Explorer):
    """Controls (two shapes, an example picker) above an Output with text and diagram.

    ``explanation`` (or ``error`` for an unreadable shape) and ``text`` always hold what the
    Output shows.
    """

    def __init__(self, shape_a: str | Sequence[int] = "5, 1, 3", shape_b: str | Sequence[int] = "4, 1") -> None:
        def as_text(shape: str | Sequence[int]) -> str:
            return ", ".join(str(s) for s in parse_shape(shape))

        self.shape_a = w.Text(value=as_text(shape_a), description=t("shape a"), continuous_update=False)
        self.shape_b = w.Text(value=as_text(shape_b), description=t("shape b"), continuous_update=False)
        self.example = w.Dropdown(options=[(t(label), (a, b)) for label, a, b in EXAMPLES], value=None,
                                  description=t("example"))  # starts blank: the shapes above are free text
        self.explanation: BroadcastExplanation | None = None
        self.error: str | None = None
        self._picking = False
        super().__init__([w.HBox([self.shape_a, self.shape_b]), self.example])
        self.shape_a.observe(self._edited, names="value")
        self.shape_b.observe(self._edited, names="value")
        self.example.observe(self._pick, names="value")

    def _pick(self, change=None) -> None:
        if self.example.value is None:
            return
        self._picking = True
        self.shape_a.value, self.shape_b.value = self.example.value
        self._picking = False
        self.refresh()

    def _edited(self, change=None) -> None:
        if self._picking:
            return
        if self.example.value is not None and self.example.value != (self.shape_a.value, self.shape_b.value):
            self.example.value = None  # the shapes were edited by hand: no example is selected any more
        self.refresh()

    def render(self):
        try:
            check_shape_text(self.shape_a.value)
            check_shape_text(self.shape_b.value)
            explanation, error = explain_broadcast(self.shape_a.value, self.shape_b.value), None
        except ValueError as exc:
            explanation, error = None, str(exc)
        self.explanation, self.error = explanation, error
        if explanation is None:
            return str(error), None
        width = max(len(explanation.columns), 1)
        fig, ax = new_figure(1.1 + 0.75 * width, 2.2)
        draw_broadcast(explanation.shape_a, explanation.shape_b, ax=ax)
        return _report(explanation), fig
