"""Accumulation stepper: every ``backward()`` ADDS to ``x.grad``; watch it grow, then reset it.

:class:`GradAccumulator` is the real thing, no simulation: a leaf ``x = tensor([1.])`` with
``requires_grad=True``; :meth:`GradAccumulator.backward` builds ``y`` from an expression and
calls ``y.backward()``; :meth:`GradAccumulator.zero_grad` sets ``x.grad`` to ``None`` (what
``optimizer.zero_grad()`` does by default) or to zeros. The widget puts buttons on it and
draws ``x.grad`` after every event as stacked bars (one colour per backward call).

Example:
    >>> from course_utils.widgets.accumulation import GradAccumulator
    >>> acc = GradAccumulator()
    >>> acc.backward("y = 2 * x"), acc.backward("y = 3 * x")
    (2.0, 5.0)
    >>> acc.zero_grad(), acc.grad
    (None, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import ipywidgets as w
import torch

from course_utils.i18n import t
from course_utils.widgets.base import Explorer, new_figure

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Expressions offered: text -> function of x (x = 1.0, so every derivative is a small integer).
EXPRESSIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "y = 2 * x": lambda x: 2 * x,
    "y = 3 * x": lambda x: 3 * x,
    "y = x ** 2": lambda x: x ** 2,
    "y = (x + 2) * 3": lambda x: (x + 2) * 3,
    "y = x ** 3": lambda x: x ** 3,
}


@dataclass(frozen=True)
class Event:
    """One click: what ran, what it added to x.grad, and x.grad afterwards (None = no tensor)."""

    action: str             # an expression from EXPRESSIONS, "zero_grad (None)" or "zero_grad (zeros)"
    added: float | None     # dy/dx of this backward call; None for a reset
    grad_after: float | None


class GradAccumulator:
    """A leaf tensor and the log of backward()/zero_grad() calls made on it."""

    def __init__(self, x0: float = 1.0) -> None:
        self.x = torch.tensor([float(x0)], requires_grad=True)
        self.history: list[Event] = []

    @property
    def grad(self) -> float | None:
        return None if self.x.grad is None else float(self.x.grad.item())

    def backward(self, expression: str = "y = 2 * x") -> float:
        """Compute y from ``expression`` and call ``y.backward()``; returns x.grad afterwards."""
        if expression not in EXPRESSIONS:
            raise ValueError(t("expected one of {choices}, found {expression}; pick an expression from that list",
                               choices=list(EXPRESSIONS), expression=repr(expression)))
        y = EXPRESSIONS[expression](self.x)
        (local,) = torch.autograd.grad(EXPRESSIONS[expression](self.x), self.x)  # this call's dy/dx alone
        y.backward()
        grad = self.grad
        assert grad is not None
        self.history.append(Event(expression, float(local.item()), grad))
        return grad

    def zero_grad(self, set_to_none: bool = True) -> float | None:
        """Reset x.grad like ``optimizer.zero_grad(set_to_none=...)``; returns x.grad afterwards."""
        if set_to_none:
            self.x.grad = None
        elif self.x.grad is not None:
            self.x.grad.zero_()
        self.history.append(Event(f"zero_grad ({'None' if set_to_none else 'zeros'})", None, self.grad))
        return self.grad

    def table(self) -> str:
        """The log as aligned text, one line per event."""
        lines = [f"{t('step'):>4}  {t('call'):<30} {t('adds'):>6}  {t('x.grad after')}"]
        for i, e in enumerate(self.history, start=1):
            call = "x.grad = None" if e.action == "zero_grad (None)" else (
                "x.grad.zero_()" if e.action == "zero_grad (zeros)" else f"{e.action}; y.backward()")
            adds = "" if e.added is None else f"{e.added:+g}"
            after = "None" if e.grad_after is None else f"{e.grad_after:g}"
            lines.append(f"{i:>4}  {call:<30} {adds:>6}  {after}")
        return "\n".join(lines)


def draw_history(history: Sequence[Event], ax: "Axes | None" = None) -> "Figure":
    """x.grad after each event as stacked bars: each colour is one backward call's contribution.

    With no event yet, the axes say so (x.grad is None until the first backward call).
    """
    import matplotlib

    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(max(3.5, 0.9 * len(history) + 1.5), 2.8))
    else:
        fig = ax.figure
    palette = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    if not history:
        ax.text(0.5, 0.5, "x.grad is None: no backward() call yet.\nPress y.backward().",
                ha="center", va="center", fontsize=9, transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_ylabel("x.grad after the call")
        ax.set_ylim(0, 1)
        ax.set_title("each backward() adds its dy/dx to x.grad", fontsize=9)
        fig.tight_layout()
        return fig
    parts: list[tuple[float, int]] = []  # contributions since the last reset: (value, colour index)
    for i, event in enumerate(history):
        if event.added is None:
            parts = []
            ax.text(i, 0.1, "None" if event.grad_after is None else "0", ha="center", va="bottom", fontsize=8)
        else:
            parts.append((event.added, i))
            bottom = 0.0
            for value, colour in parts:
                ax.bar(i, value, bottom=bottom, color=palette[colour % len(palette)], edgecolor="white", width=0.6)
                bottom += value
            ax.text(i, max(bottom, 0) + 0.1, f"{bottom:g}", ha="center", va="bottom", fontsize=8)
    labels = ["zero" if e.added is None else e.action.replace("y = ", "") for e in history]
    ax.set_xticks(range(len(history)), labels, rotation=20, fontsize=8)
    ax.set_ylabel("x.grad after the call")
    ax.set_xlim(-0.6, max(len(history), 1) - 0.4)
    top = max([abs(e.grad_after) for e in history if e.grad_after is not None] + [1.0])
    ax.set_ylim(min(0.0, -top * 0.1), top * 1.25)
    ax.set_title("each backward() adds its dy/dx to x.grad", fontsize=9)
    fig.tight_layout()
    return fig


def accumulation_stepper(expressions: Sequence[str] = ("y = 2 * x", "y = 3 * x"), static: bool = False):
    """The stepper widget, or (``static=True``) the given backward calls run, printed and drawn."""
    if not static:
        return AccumulationStepper()
    acc = GradAccumulator()
    for expression in expressions:
        if expression.startswith("zero_grad"):
            acc.zero_grad(set_to_none="zeros" not in expression)
        else:
            acc.backward(expression)
    print(acc.table())
    return draw_history(acc.history)


class AccumulationStepper(Explorer):
    """Pick an expression, press ``y.backward()`` again and again, reset with ``zero_grad``.

    ``accumulator`` holds the real tensor and the log; ``text`` is the table the Output shows.
    """

    def __init__(self) -> None:
        self.accumulator = GradAccumulator()
        self.expression = w.Dropdown(options=list(EXPRESSIONS), value="y = 2 * x", description=t("expression"))
        self.backward_button = w.Button(description="y.backward()", button_style="primary")
        self.zero_button = w.Button(description="zero_grad()", tooltip="x.grad = None (set_to_none=True)")
        super().__init__([w.HBox([self.expression, self.backward_button, self.zero_button])])
        self.backward_button.on_click(lambda _: self.step())
        self.zero_button.on_click(lambda _: self.reset())
        self.expression.observe(self.refresh, names="value")

    def step(self) -> float:
        grad = self.accumulator.backward(self.expression.value)
        self.refresh()
        return grad

    def reset(self) -> None:
        self.accumulator.zero_grad(set_to_none=True)
        self.refresh()

    def render(self):
        acc = self.accumulator
        now = "None" if acc.grad is None else f"{acc.grad:g}"
        # lesson 03 confirms `"x.grad now: None" in stepper.text`: the Chinese readout keeps that phrase
        text = (t("{setup}; next call: {call}; x.grad now: {now}", setup="x = tensor([1.], requires_grad=True)",
                  call=self.expression.value, now=now) + "\n" + acc.table())
        history = list(acc.history)
        _, ax = new_figure(max(3.5, 0.9 * len(history) + 1.5), 2.8)
        return text, draw_history(history, ax=ax)
