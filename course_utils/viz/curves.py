"""Training curves and learning-rate schedules (matplotlib).

Both functions take plain data (lists of rows, lists of numbers), so they plot a
:class:`course_utils.training.History`, rows read back from a CSV log, or anything a
notebook builds by hand.

Example:
    >>> from course_utils.viz.curves import plot_history, plot_lr_schedules
    >>> rows = [{"epoch": 1, "train_loss": 1.2, "val_loss": 1.3, "val_acc": 0.5},
    ...         {"epoch": 2, "train_loss": 0.8, "val_loss": 0.9, "val_acc": 0.7}]
    >>> fig = plot_history(rows)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['loss', 'accuracy']
    >>> fig = plot_lr_schedules({"constant": [0.1, 0.1, 0.1]})
    >>> fig.axes[0].get_xlabel()
    'batch'
"""

from __future__ import annotations

from course_utils.i18n import t

from typing import Any, Mapping, Sequence

Rows = Sequence[Mapping[str, Any]]


def _floats(rows: Rows, key: str) -> list[float]:
    return [float(row[key]) for row in rows if key in row and row[key] not in ("", None)]


def plot_history(rows: Rows, x: str = "epoch", title: str | None = None) -> Any:
    """Loss curves (left) and accuracy curves (right, when present) against ``x``.

    Every key ending in ``loss`` goes left, every key ending in ``acc`` right.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if not rows:
        raise ValueError(t("expected at least one row of training history, found none"))
    keys = [k for k in rows[0] if k != x]
    loss_keys = [k for k in keys if k.endswith("loss")]
    acc_keys = [k for k in keys if k.endswith("acc")]
    if not loss_keys:
        raise ValueError(t("expected keys ending in 'loss' (e.g. train_loss), found {keys}", keys=keys))
    ncols = 2 if acc_keys else 1
    fig, axes = plt.subplots(1, ncols, figsize=(4.2 * ncols, 3.0), squeeze=False)
    xs = _floats(rows, x) if x in rows[0] else list(range(1, len(rows) + 1))
    for key in loss_keys:
        axes[0][0].plot(xs, _floats(rows, key), marker="o", ms=3, label=key)
    axes[0][0].set(xlabel=x, ylabel="loss")
    axes[0][0].legend()
    if acc_keys:
        for key in acc_keys:
            axes[0][1].plot(xs, _floats(rows, key), marker="o", ms=3, label=key)
        axes[0][1].set(xlabel=x, ylabel="accuracy", ylim=(0, 1.02))
        axes[0][1].legend()
    for ax in axes[0]:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_lr_schedules(schedules: Mapping[str, Sequence[float]], steps_per_epoch: int | None = None,
                      xlabel: str = "batch", title: str | None = None, log: bool = False,
                      ax: Any = None) -> Any:
    """One line per schedule (learning rate at each batch); epoch boundaries when given."""
    import matplotlib.pyplot as plt

    if not schedules:
        raise ValueError(t("expected at least one schedule {example}, found none", example="{name: [lr, ...]}"))
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.0, 3.0))
    else:
        fig = ax.figure
    for name, lrs in schedules.items():
        ax.plot(range(len(lrs)), list(lrs), label=name, lw=1.6)
    longest = max(len(v) for v in schedules.values())
    if steps_per_epoch:
        for boundary in range(steps_per_epoch, longest, steps_per_epoch):
            ax.axvline(boundary, color="0.85", lw=0.6, zorder=0)
    ax.set(xlabel=xlabel, ylabel="learning rate")
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
