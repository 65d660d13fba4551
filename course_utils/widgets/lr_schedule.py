"""LR schedule explorer for notebook 06: pick a scheduler and its parameters, see the curve.

The curve is traced by stepping a real ``torch.optim.lr_scheduler`` object (see
:func:`course_utils.training.lr_curve`). The "step() every" toggle shows what happens when
``scheduler.step()`` is called in the wrong place: per batch for an epoch-based schedule
(it runs out after a fraction of the training) or per epoch for one-cycle (it never warms up).

Example:
    >>> from course_utils.widgets.lr_schedule import lr_schedule_explorer, schedule_summary
    >>> schedule_summary("step", epochs=6, steps_per_epoch=4, lr=0.1, step_every="epoch")
    'step, step() every epoch: lr 0.1 → 0.009 (min 0.009, max 0.1) over 24 batches'
    >>> fig = lr_schedule_explorer(static=True, epochs=6, steps_per_epoch=4)
    >>> [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    ['CosineAnnealingLR', 'StepLR', 'ReduceLROnPlateau', 'OneCycleLR']
"""

from __future__ import annotations

from typing import Any

from course_utils.i18n import N_, t
from course_utils.training import SCHEDULERS, lr_curve
from course_utils.widgets.base import Explorer, new_figure

_LABELS = {"cosine": "CosineAnnealingLR", "step": "StepLR", "plateau": "ReduceLROnPlateau",
           "onecycle": "OneCycleLR"}


def schedule_summary(name: str, *, epochs: int, steps_per_epoch: int, lr: float,
                     step_every: str | None = None, **params: Any) -> str:
    """One line describing a schedule's start, end and range."""
    lrs = lr_curve(name, epochs=epochs, steps_per_epoch=steps_per_epoch, lr=lr,
                   step_every=step_every, **params)
    where = step_every or ("batch" if name == "onecycle" else "epoch")
    return t("{name}, step() {where}: lr {start} → {end} (min {low}, max {high}) over {n} batches",
             name=name, where=t({"batch": N_("every batch"), "epoch": N_("every epoch")}[where]),
             start=f"{lrs[0]:.3g}", end=f"{lrs[-1]:.3g}", low=f"{min(lrs):.3g}", high=f"{max(lrs):.3g}",
             n=len(lrs))


def _params(name: str, step_size: int, gamma: float, pct_start: float) -> dict[str, Any]:
    if name == "step":
        return {"step_size": step_size, "gamma": gamma}
    if name == "plateau":
        return {"factor": gamma}
    if name == "onecycle":
        return {"pct_start": pct_start}
    return {}


def lr_schedule_explorer(static: bool = False, epochs: int = 10, steps_per_epoch: int = 20,
                         lr: float = 0.1) -> Any:
    """Dropdown (scheduler), sliders (lr, epochs, step_size, gamma/factor, pct_start) and
    a toggle for where ``step()`` is called; the Output shows the LR at every batch.

    ``static=True`` returns a matplotlib figure with the four schedules, each stepped
    where it should be.
    """
    from course_utils.viz.curves import plot_lr_schedules

    if static:
        curves = {_LABELS[n]: lr_curve(n, epochs=epochs, steps_per_epoch=steps_per_epoch, lr=lr)
                  for n in SCHEDULERS}
        return plot_lr_schedules(curves, steps_per_epoch=steps_per_epoch,
                                 title=f"{epochs} epochs x {steps_per_epoch} batches, "
                                       "step() where each belongs")

    return LRScheduleExplorer(epochs, steps_per_epoch, lr)


#: Learning rates the lr slider offers (the given ``lr`` is added, exactly).
LR_CHOICES = (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0)


class LRScheduleExplorer(Explorer):
    """Scheduler menu, lr, epochs, step_size, gamma/factor and pct_start, and where step() runs."""

    def __init__(self, epochs: int = 10, steps_per_epoch: int = 20, lr: float = 0.1) -> None:
        import ipywidgets as widgets

        style = {"description_width": "90px"}
        self.steps_per_epoch = steps_per_epoch
        self.name = widgets.Dropdown(options=[(_LABELS[n], n) for n in SCHEDULERS], value="cosine",
                                     description=t("scheduler"), style=style)
        self.where = widgets.ToggleButtons(options=[(t("natural place"), "auto"), (t("every batch"), "batch"),
                                                    (t("every epoch"), "epoch")],
                                           value="auto", description=t("step() called"), style=style)
        self.base_lr = widgets.SelectionSlider(options=[(f"{v:g}", v) for v in sorted({*LR_CHOICES, lr})],
                                               value=lr, description="lr", style=style)
        self.n_epochs = widgets.IntSlider(value=epochs, min=2, max=max(40, epochs), description=t("epochs"),
                                          style=style)
        self.step_size = widgets.IntSlider(value=max(1, epochs // 3), min=1, max=20,
                                           description="step_size", style=style)
        self.gamma = widgets.SelectionSlider(options=[f"{v / 100:.2f}" for v in range(5, 100, 5)], value="0.30",
                                             description="gamma/factor", style=style)
        self.pct = widgets.SelectionSlider(options=[f"{v / 100:.2f}" for v in range(5, 95, 5)], value="0.30",
                                           description="pct_start", style=style)
        super().__init__([widgets.HBox([self.name, self.base_lr]), self.where,
                          widgets.HBox([self.n_epochs, self.step_size]), widgets.HBox([self.gamma, self.pct])])
        for control in (self.name, self.where, self.base_lr, self.n_epochs, self.step_size, self.gamma, self.pct):
            control.observe(self.refresh, names="value")

    def render(self):
        from course_utils.viz.curves import plot_lr_schedules

        name, epochs, lr = self.name.value, self.n_epochs.value, self.base_lr.value
        gamma, pct = float(self.gamma.value), float(self.pct.value)
        params = _params(name, self.step_size.value, gamma, pct)
        step_every = None if self.where.value == "auto" else self.where.value
        lrs = lr_curve(name, epochs=epochs, steps_per_epoch=self.steps_per_epoch, lr=lr,
                       step_every=step_every, **params)
        called = dict((value, label) for label, value in self.where.options)[self.where.value]
        text = (t("settings: step() called: {called}, lr={lr}, epochs={epochs}, step_size={step_size} (StepLR), "
                  "gamma/factor={gamma} (StepLR, ReduceLROnPlateau), pct_start={pct} (OneCycleLR)",
                  called=called, lr=f"{lr:g}", epochs=epochs, step_size=self.step_size.value, gamma=f"{gamma:.2f}",
                  pct=f"{pct:.2f}") + "\n"
                + schedule_summary(name, epochs=epochs, steps_per_epoch=self.steps_per_epoch, lr=lr,
                                   step_every=step_every, **params))
        fig, ax = new_figure(6.0, 2.8)
        plot_lr_schedules({_LABELS[name]: lrs}, steps_per_epoch=self.steps_per_epoch, ax=ax)
        return text, fig
