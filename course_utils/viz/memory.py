"""Plots for notebook 08: a training-memory breakdown as stacked bars, activation bytes vs batch size.

Example:
    >>> from course_utils.memory import MemoryBreakdown
    >>> from course_utils.viz.memory import plot_memory_breakdown, plot_activation_vs_batch
    >>> ax = plot_memory_breakdown({"SGD": MemoryBreakdown(400, 400, 0, 1200),
    ...                             "Adam": MemoryBreakdown(400, 400, 800, 1200)})
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['SGD', 'Adam']
    >>> ax = plot_activation_vs_batch([8, 16, 32], [1000, 2000, 4000])
    >>> ax.get_xlabel()
    'batch size'
"""

from __future__ import annotations

from course_utils.i18n import t

from typing import Mapping, Sequence

from course_utils.memory import MemoryBreakdown

#: Category -> (label, colour); the order is the stacking order.
CATEGORIES: dict[str, tuple[str, str]] = {
    "params": ("parameters", "#4C72B0"),
    "grads": ("gradients", "#55A868"),
    "optimizer_state": ("optimizer state", "#C44E52"),
    "activations": ("activations (saved for backward)", "#DD8452"),
}
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _pick_unit(largest: float) -> str:
    for unit in ("GiB", "MiB", "KiB"):
        if largest >= _UNITS[unit]:
            return unit
    return "B"


def plot_memory_breakdown(breakdowns: Mapping[str, MemoryBreakdown], ax=None, unit: str | None = None,
                          title: str = "Where training memory goes"):
    """One horizontal stacked bar per entry (parameters, gradients, optimizer state, activations)."""
    import matplotlib.pyplot as plt

    if not breakdowns:
        raise ValueError(t("expected at least one {example} entry, found none", example="{label: MemoryBreakdown}"))
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 0.55 * len(breakdowns) + 1.4))
    unit = unit or _pick_unit(max(b.total for b in breakdowns.values()))
    scale = _UNITS[unit]
    labels = list(breakdowns)
    rows = range(len(labels))
    left = [0.0] * len(labels)
    for key, (label, colour) in CATEGORIES.items():
        widths = [getattr(breakdowns[name], key) / scale for name in labels]
        if any(widths):
            ax.barh(rows, widths, left=left, color=colour, label=label, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    for row, total in zip(rows, left):
        ax.text(total, row, f" {total:.3g} {unit}", va="center", fontsize=8)
    ax.set_yticks(list(rows), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(left) * 1.22)
    ax.set_xlabel(f"memory ({unit})")
    ax.set_title(title)
    axes_inches = ax.get_position().height * ax.figure.get_figheight()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.42 / axes_inches), ncol=4, fontsize=7,
              frameon=False, handlelength=1.2, columnspacing=1.0)  # below the x label
    return ax


def plot_activation_vs_batch(batch_sizes: Sequence[int], measured_bytes: Sequence[float],
                             predicted_bytes: Sequence[float] | None = None, ax=None,
                             label: str = "measured (saved-tensor hooks)"):
    """Activation bytes against batch size, with the per-sample slope from a line fit."""
    import matplotlib.pyplot as plt
    import numpy as np

    if len(batch_sizes) != len(measured_bytes) or len(batch_sizes) < 2:
        raise ValueError(t("expected two equally long sequences (at least 2 points), found {n_sizes} batch sizes "
                           "and {n_measured} measurements", n_sizes=len(batch_sizes), n_measured=len(measured_bytes)))
    if ax is None:
        _, ax = plt.subplots()
    unit = _pick_unit(max(measured_bytes))
    scale = _UNITS[unit]
    b = np.asarray(batch_sizes, dtype=float)
    m = np.asarray(measured_bytes, dtype=float)
    slope, intercept = np.polyfit(b, m, 1)
    ax.plot(b, m / scale, "o-", label=label)
    if predicted_bytes is not None:
        ax.plot(b, np.asarray(predicted_bytes, dtype=float) / scale, "k--", linewidth=1,
                label="predicted by hand")
    ax.set_xlabel("batch size")
    ax.set_ylabel(f"activation memory ({unit})")
    ax.set_title(f"Activations grow linearly: ≈ {slope / 1024:.3g} KiB per sample")
    ax.legend(fontsize=8)
    return ax
