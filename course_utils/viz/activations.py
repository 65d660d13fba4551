"""How the spread of activations changes layer by layer through a deep network.

``plot_activation_stds`` draws one line per initialisation scheme (or any label): the standard
deviation of each layer's output against the layer number, on a log axis, so "shrinks by a
constant factor per layer" shows as a straight downward line. A curve that is exactly zero
(all-zero init) cannot sit on a log axis: it is drawn dashed at a floor below every other value
and its label says so.

Example:
    >>> from course_utils.viz.activations import plot_activation_stds
    >>> fig = plot_activation_stds({"kaiming": [0.8, 0.8, 0.7], "zero": [0.0, 0.0, 0.0]})
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['kaiming', 'zero (exactly 0, drawn at 1e-06)']
    >>> fig.axes[0].get_yscale()
    'log'
"""

from __future__ import annotations

from course_utils.i18n import t

import math
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: One colour per scheme, so the same scheme looks the same in every plot of the course.
COLORS = {"default": "tab:gray", "kaiming": "tab:blue", "xavier": "tab:orange", "zero": "tab:red"}


def zero_floor(*tables: Mapping[str, Sequence[float]]) -> float:
    """Where to draw exact zeros: 1e-6, or a power of ten below every positive value.

    >>> zero_floor({"a": [0.5, 0.0]}), zero_floor({"a": [3e-8]}, {"b": [1.0]})
    (1e-06, 1e-09)
    """
    positive = [float(v) for table in tables for values in table.values() for v in values if v > 0]
    if not positive or min(positive) / 10 >= 1e-6:
        return 1e-6
    return 10.0 ** math.floor(math.log10(min(positive) / 10))


def plot_activation_stds(stds: Mapping[str, Sequence[float]], *, ax: "Axes | None" = None,
                         title: str | None = None, highlight: str | None = None,
                         floor: float | None = None) -> "Figure":
    """Plot ``{label: [std after layer 1, std after layer 2, ...]}`` on a log y-axis.

    ``highlight`` draws that label bold and the others faint. Values <= ``floor`` are drawn
    at ``floor`` (default: :func:`zero_floor`; pass one floor to panels that share an axis).
    Returns the figure (the caller shows or closes it).
    """
    import matplotlib.pyplot as plt

    if not stds:
        raise ValueError(t("expected a mapping {mapping}, found an empty mapping; pass e.g. {example}",
                           mapping="{label: list of stds}", example="{'kaiming': [0.8, 0.7, ...]}"))
    if highlight is not None and highlight not in stds:
        raise ValueError(t("highlight={highlight} is not one of the labels {labels}; pass one of them or None",
                           highlight=repr(highlight), labels=list(stds)))
    for label, values in stds.items():
        if len(values) == 0 or any(v < 0 or v != v for v in values):
            raise ValueError(t("expected non-negative numbers for {label}, found {values}; "
                               "standard deviations are >= 0 (and not NaN)", label=repr(label),
                               values=list(values)[:5]))
    if floor is None:
        floor = zero_floor(stds)
    if ax is None:
        fig, ax = plt.subplots()
    else:
        fig = ax.figure
    for label, values in stds.items():
        values = [float(v) for v in values]
        clipped = [max(v, floor) for v in values]
        all_zero = max(values) <= floor
        faint = highlight is not None and label != highlight
        ax.plot(range(1, len(values) + 1), clipped,
                label=f"{label} (exactly 0, drawn at {floor:g})" if all_zero else label,
                color=COLORS.get(label), linestyle="--" if all_zero else "-",
                marker="." if not faint else None,
                linewidth=0.8 if faint else 2.2 if highlight else 1.5, alpha=0.35 if faint else 1.0)
    ax.set_yscale("log")
    ax.set_xlabel("layer")
    ax.set_ylabel("std of the layer's output")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    return fig
