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

from course_utils.training import SCHEDULERS, lr_curve

_LABELS = {"cosine": "CosineAnnealingLR", "step": "StepLR", "plateau": "ReduceLROnPlateau",
           "onecycle": "OneCycleLR"}


def schedule_summary(name: str, *, epochs: int, steps_per_epoch: int, lr: float,
                     step_every: str | None = None, **params: Any) -> str:
    """One line describing a schedule's start, end and range."""
    lrs = lr_curve(name, epochs=epochs, steps_per_epoch=steps_per_epoch, lr=lr,
                   step_every=step_every, **params)
    where = step_every or ("batch" if name == "onecycle" else "epoch")
    return (f"{name}, step() every {where}: lr {lrs[0]:.3g} → {lrs[-1]:.3g} "
            f"(min {min(lrs):.3g}, max {max(lrs):.3g}) over {len(lrs)} batches")


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
    import matplotlib.pyplot as plt

    from course_utils.viz.curves import plot_lr_schedules

    if static:
        curves = {_LABELS[n]: lr_curve(n, epochs=epochs, steps_per_epoch=steps_per_epoch, lr=lr)
                  for n in SCHEDULERS}
        return plot_lr_schedules(curves, steps_per_epoch=steps_per_epoch,
                                 title=f"{epochs} epochs x {steps_per_epoch} batches, "
                                       "step() where each belongs")

    import ipywidgets as widgets

    style = {"description_width": "90px"}
    name = widgets.Dropdown(options=[(_LABELS[n], n) for n in SCHEDULERS], value="cosine",
                            description="scheduler", style=style)
    where = widgets.ToggleButtons(options=[("natural place", "auto"), ("every batch", "batch"),
                                           ("every epoch", "epoch")],
                                  value="auto", description="step() called", style=style)
    base_lr = widgets.FloatLogSlider(value=lr, base=10, min=-4, max=0, step=0.25,
                                     description="lr", style=style)
    n_epochs = widgets.IntSlider(value=epochs, min=2, max=40, description="epochs", style=style)
    step_size = widgets.IntSlider(value=max(1, epochs // 3), min=1, max=20,
                                  description="step_size", style=style)
    gamma = widgets.FloatSlider(value=0.3, min=0.05, max=0.95, step=0.05,
                                description="gamma/factor", style=style)
    pct = widgets.FloatSlider(value=0.3, min=0.05, max=0.9, step=0.05,
                              description="pct_start", style=style)
    out = widgets.Output()

    def update(_change: Any = None) -> None:
        params = _params(name.value, step_size.value, gamma.value, pct.value)
        step_every = None if where.value == "auto" else where.value
        out.clear_output(wait=True)
        with out:
            lrs = lr_curve(name.value, epochs=n_epochs.value, steps_per_epoch=steps_per_epoch,
                           lr=base_lr.value, step_every=step_every, **params)
            print(f"settings: lr={base_lr.value:.3g}, epochs={n_epochs.value}, "
                  f"step_size={step_size.value} (StepLR), gamma/factor={gamma.value:.2f} "
                  f"(StepLR, ReduceLROnPlateau), pct_start={pct.value:.2f} (OneCycleLR)")
            print(schedule_summary(name.value, epochs=n_epochs.value,
                                   steps_per_epoch=steps_per_epoch, lr=base_lr.value,
                                   step_every=step_every, **params))
            fig, ax = plt.subplots(figsize=(6.0, 2.8))
            plot_lr_schedules({_LABELS[name.value]: lrs}, steps_per_epoch=steps_per_epoch, ax=ax)
            plt.show()

    for control in (name, where, base_lr, n_epochs, step_size, gamma, pct):
        control.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([name, base_lr]), where,
                         widgets.HBox([n_epochs, step_size]), widgets.HBox([gamma, pct]), out])
