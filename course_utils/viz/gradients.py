"""Per-layer gradient norms: the picture of vanishing and exploding gradients.

``plot_grad_norms`` draws one line per network (or any label): the norm of each layer's weight
gradient against the layer number, first layer on the left, on a log axis. Vanishing gradients
show as a line falling towards the input (left), exploding ones as a line rising towards it; a
healthy network stays within an order of magnitude or two. A gradient that is exactly zero (or
missing) cannot sit on a log axis: it is drawn at a floor and marked with an ``x``.

Example:
    >>> from course_utils.viz.gradients import plot_grad_norms
    >>> fig = plot_grad_norms({"sigmoid": [1e-9, 1e-6, 1e-3, 0.1], "relu + kaiming": [0.3, 0.4, 0.5, 0.4]})
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['sigmoid', 'relu + kaiming']
    >>> fig.axes[0].get_yscale(), fig.axes[0].get_xlabel()
    ('log', 'layer (1 = next to the input)')
"""

from __future__ import annotations

from course_utils.i18n import t

import math
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def plot_grad_norms(norms: Mapping[str, Sequence[float]], *, ax: "Axes | None" = None,
                    title: str | None = None, floor: float | None = None) -> "Figure":
    """Plot ``{label: [grad norm of layer 1, layer 2, ...]}`` on a log y-axis.

    Values that are 0, ``None``-like NaN or below ``floor`` (default: a tenth of the smallest
    positive value, at most 1e-12) are drawn at ``floor`` with an ``x`` marker. Returns the
    figure; the caller shows or closes it.
    """
    import matplotlib.pyplot as plt

    if not norms:
        raise ValueError(t("expected a mapping {mapping}, found an empty mapping; pass e.g. {example}",
                           mapping="{label: list of per-layer gradient norms}",
                           example="{'sigmoid': [1e-8, 1e-5, 0.01]}"))
    cleaned: dict[str, list[float]] = {}
    for label, values in norms.items():
        try:
            cleaned[label] = [float(v) for v in values]
        except (TypeError, ValueError):
            raise ValueError(t("expected numbers for {label}, found {values}; convert tensors with .item() "
                               "(or float(...)) first", label=repr(label), values=list(values)[:4])) from None
        if not cleaned[label] or any(v < 0 for v in cleaned[label]):
            raise ValueError(t("expected a non-empty list of norms >= 0 for {label}, found {values}",
                               label=repr(label), values=cleaned[label][:5]))
    positive = [v for values in cleaned.values() for v in values if v > 0 and math.isfinite(v)]
    if floor is None:
        floor = min(1e-12, min(positive) / 10) if positive else 1e-12
    if ax is None:
        fig, ax = plt.subplots()
    else:
        fig = ax.figure
    for label, values in cleaned.items():
        layers = list(range(1, len(values) + 1))
        shown = [v if v > floor and math.isfinite(v) else floor for v in values]
        (line,) = ax.plot(layers, shown, marker=".", label=label)
        low = [(i, floor) for i, v in zip(layers, values) if not (v > floor and math.isfinite(v))]
        if low:
            ax.plot(*zip(*low), linestyle="none", marker="x", color=line.get_color())
    ax.set_yscale("log")
    ax.set_xlabel("layer (1 = next to the input)")
    ax.set_ylabel("gradient norm of the layer's weight")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    return fig
