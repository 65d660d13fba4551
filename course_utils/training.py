"""A small ``fit()`` / ``evaluate()`` used after notebook 06, once learners wrote their own loop.

``fit`` is the loop of notebook 06 plus bookkeeping: a ``tqdm.auto`` progress bar,
per-step loss / learning rate / gradient norm, per-epoch validation, an optional CSV log
and optional gradient clipping. Per-step values stay on the device until the end of the
epoch (one ``.tolist()`` per epoch instead of one ``.item()`` per step), so logging adds
no host-device synchronisation inside the loop.

:func:`make_scheduler` and :func:`lr_curve` build the four schedulers of notebook 06 by
name and trace their learning rate batch by batch (for plots and the LR widget).

Example:
    >>> import torch
    >>> from torch import nn
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from course_utils.training import fit
    >>> g = torch.Generator().manual_seed(0)
    >>> x = torch.randn(64, 4, generator=g)
    >>> y = (x[:, 0] > 0).long()
    >>> loader = DataLoader(TensorDataset(x, y), batch_size=16)
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Linear(4, 2)
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.5)
    >>> history = fit(model, loader, epochs=3, optimizer=opt, val_loader=loader,
    ...               progress=False, verbose=False)
    >>> len(history.epochs), len(history.steps), history.epochs[-1]["val_acc"] > 0.8
    (3, 12, True)
"""

from __future__ import annotations

from course_utils.i18n import t

import csv
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
from torch import nn

Row = dict[str, float]


@dataclass
class History:
    """What :func:`fit` returns: one row per epoch and one row per optimizer step."""

    epochs: list[Row] = field(default_factory=list)
    steps: list[Row] = field(default_factory=list)

    def column(self, key: str, level: str = "epochs") -> list[float]:
        """All values of ``key`` (e.g. ``"val_acc"``) at ``level`` ``"epochs"`` or ``"steps"``."""
        rows = self.epochs if level == "epochs" else self.steps
        if rows and key not in rows[0]:
            raise KeyError(f"expected one of {sorted(rows[0])}, found {key!r}")
        return [row[key] for row in rows]

    def __repr__(self) -> str:
        last = self.epochs[-1] if self.epochs else {}
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in last.items() if k != "seconds")
        return f"History({len(self.epochs)} epochs, {len(self.steps)} steps; last: {shown})"


def _fmt(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _to(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to(b, device) for b in batch)
    return batch


def _model_device(model: nn.Module) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def evaluate(model: nn.Module, loader: Iterable, loss_fn: Callable | None = None,
             device: torch.device | str | None = None) -> dict[str, float]:
    """Mean loss and accuracy over ``loader`` in eval mode under ``inference_mode``.

    ``acc`` is reported when the targets are integer class labels. The model's
    train/eval mode is restored afterwards.
    """
    device = torch.device(device) if device is not None else _model_device(model)
    loss_fn = loss_fn if loss_fn is not None else nn.CrossEntropyLoss()
    was_training = model.training
    model.eval()
    total_loss = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    count, classification = 0, True
    try:
        with torch.inference_mode():
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                out = model(x)
                total_loss += loss_fn(out, y) * len(y)
                if y.dtype in (torch.int64, torch.int32) and out.dim() == 2:
                    correct += (out.argmax(dim=1) == y).sum()
                else:
                    classification = False
                count += len(y)
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError(t("expected a loader with at least one batch, found an empty one"))
    result = {"loss": total_loss.item() / count}
    if classification:
        result["acc"] = correct.item() / count
    return result


SCHEDULERS = ("cosine", "step", "plateau", "onecycle")
_PER_BATCH = (torch.optim.lr_scheduler.OneCycleLR, torch.optim.lr_scheduler.CyclicLR)


def make_scheduler(name: str, optimizer: torch.optim.Optimizer, *, epochs: int,
                   steps_per_epoch: int = 1, **params: Any) -> Any:
    """One of :data:`SCHEDULERS` with course defaults; ``params`` override them.

    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    >>> type(make_scheduler("cosine", opt, epochs=5)).__name__
    'CosineAnnealingLR'
    """
    sched = torch.optim.lr_scheduler
    if name == "cosine":
        return sched.CosineAnnealingLR(optimizer, **{"T_max": epochs, **params})
    if name == "step":
        return sched.StepLR(optimizer, **{"step_size": max(1, epochs // 3), "gamma": 0.3, **params})
    if name == "plateau":
        return sched.ReduceLROnPlateau(optimizer, **{"factor": 0.3, "patience": 1, **params})
    if name == "onecycle":
        max_lr = params.pop("max_lr", optimizer.param_groups[0]["lr"])
        return sched.OneCycleLR(optimizer, max_lr=max_lr, epochs=epochs,
                                steps_per_epoch=steps_per_epoch, **params)
    raise ValueError(t("expected a scheduler name in {choices}, found {found}", choices=SCHEDULERS, found=repr(name)))


def default_plateau_metric(epochs: int) -> list[float]:
    """A made-up validation loss that improves, then stalls (drives ``plateau`` demos)."""
    floor = 1.0 / (1 + max(1, epochs // 4))
    return [max(1.0 / (1 + e), floor) for e in range(epochs)]


def lr_curve(name: str, *, epochs: int, steps_per_epoch: int, lr: float = 0.1,
             step_every: str | None = None, metrics: Sequence[float] | None = None,
             **params: Any) -> list[float]:
    """Learning rate used at every batch when ``scheduler.step()`` runs every ``step_every``.

    ``step_every`` defaults to the right place: ``"batch"`` for one-cycle, ``"epoch"``
    for the others. Pass the other one to see the classic mistake.

    >>> lrs = lr_curve("step", epochs=4, steps_per_epoch=2, lr=1.0, step_size=2, gamma=0.5)
    >>> lrs
    [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]
    """
    param = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([param], lr=lr)
    scheduler = make_scheduler(name, optimizer, epochs=epochs, steps_per_epoch=steps_per_epoch,
                               **params)
    natural = "batch" if isinstance(scheduler, _PER_BATCH) else "epoch"
    step_every = step_every or natural
    if step_every not in ("batch", "epoch"):
        raise ValueError(t("expected step_every 'batch' or 'epoch', found {found}", found=repr(step_every)))
    metrics = list(metrics) if metrics is not None else default_plateau_metric(epochs)
    total_steps = epochs * steps_per_epoch
    lrs: list[float] = []
    for step in range(total_steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()  # no gradients: changes nothing, but keeps the scheduler's order check happy
        end_of_epoch = (step + 1) % steps_per_epoch == 0
        if isinstance(scheduler, _PER_BATCH) and scheduler.last_epoch + 1 >= scheduler.total_steps:
            continue  # stepping past the end of a one-cycle schedule raises
        if step_every == "batch" or end_of_epoch:
            if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                scheduler.step(metrics[min(step // steps_per_epoch, len(metrics) - 1)])
            else:
                scheduler.step()
    return lrs


def _total_norm(params: list[torch.Tensor], max_norm: float | None) -> torch.Tensor:
    if max_norm is not None:
        return torch.nn.utils.clip_grad_norm_(params, max_norm)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    return torch.nn.utils.get_total_norm(grads)


def fit(model: nn.Module, train_loader: Iterable, *, epochs: int,
        optimizer: torch.optim.Optimizer, loss_fn: Callable | None = None,
        val_loader: Iterable | None = None, scheduler: Any = None,
        step_scheduler: str = "auto", device: torch.device | str | None = None,
        max_grad_norm: float | None = None, log_csv: str | Path | None = None,
        log_tensorboard: str | Path | None = None,
        progress: bool = True, verbose: bool = True) -> History:
    """Train ``model`` for ``epochs`` on ``(x, y)`` batches; returns a :class:`History`.

    Each step: zero_grad, forward, loss, backward, (clip), optimizer.step, (scheduler).
    ``step_scheduler="auto"`` steps one-cycle/cyclic schedulers every batch, others every
    epoch, ``ReduceLROnPlateau`` with the validation loss (or the training loss).
    Epoch rows: epoch, train_loss, val_loss, val_acc, lr, grad_norm (mean over the
    epoch's steps), seconds. ``log_csv`` writes the epoch rows as they come;
    ``log_tensorboard`` (a folder) writes TensorBoard scalars: ``step/loss``, ``step/lr``,
    ``step/grad_norm`` per step and ``epoch/<column>`` per epoch (read them back with
    :func:`read_tensorboard_log`, or view them with ``tensorboard --logdir <folder>``).
    """
    if epochs < 1:
        raise ValueError(t("expected epochs >= 1, found {epochs}", epochs=epochs))
    if step_scheduler not in ("auto", "batch", "epoch"):
        raise ValueError(t("expected step_scheduler 'auto', 'batch' or 'epoch', found {found}",
                           found=repr(step_scheduler)))
    device = torch.device(device) if device is not None else _model_device(model)
    loss_fn = loss_fn if loss_fn is not None else nn.CrossEntropyLoss()
    params = [p for p in model.parameters() if p.requires_grad]
    per_batch = scheduler is not None and (
        step_scheduler == "batch" or (step_scheduler == "auto" and isinstance(scheduler, _PER_BATCH)))
    plateau = isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
    history = History()
    bar = _progress_bar(epochs, train_loader) if progress else None
    writer, handle = None, None
    board = _summary_writer(log_tensorboard) if log_tensorboard is not None else None
    try:
        for epoch in range(1, epochs + 1):
            start = time.perf_counter()
            model.train()
            losses, norms, lrs = [], [], []
            for x, y in train_loader:
                x, y = _to(x, device), _to(y, device)
                lrs.append(optimizer.param_groups[0]["lr"])
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                norms.append(_total_norm(params, max_grad_norm))
                optimizer.step()
                if per_batch:
                    scheduler.step()
                losses.append(loss.detach())
                if bar is not None:
                    bar.update()
            step_losses = torch.stack(losses).tolist()  # one sync per epoch
            step_norms = torch.stack([n.to(device) for n in norms]).tolist()
            first = len(history.steps)
            history.steps += [{"step": first + i + 1, "epoch": epoch, "loss": loss_i, "lr": lr_i,
                               "grad_norm": norm_i}
                              for i, (loss_i, lr_i, norm_i) in enumerate(zip(step_losses, lrs, step_norms))]
            if board is not None:
                for record in history.steps[first:]:
                    for key in ("loss", "lr", "grad_norm"):
                        board.add_scalar(f"step/{key}", record[key], record["step"])
            row: Row = {"epoch": epoch, "train_loss": sum(step_losses) / len(step_losses)}
            if val_loader is not None:
                result = evaluate(model, val_loader, loss_fn, device)
                row["val_loss"] = result["loss"]
                if "acc" in result:
                    row["val_acc"] = result["acc"]
            row["lr"] = lrs[-1]
            row["grad_norm"] = sum(step_norms) / len(step_norms)
            if scheduler is not None and not per_batch:
                if plateau:
                    scheduler.step(row.get("val_loss", row["train_loss"]))
                else:
                    scheduler.step()
            row["seconds"] = time.perf_counter() - start
            history.epochs.append(row)
            if log_csv is not None:
                if writer is None:
                    handle = open(log_csv, "w", newline="")
                    writer = csv.DictWriter(handle, fieldnames=list(row))
                    writer.writeheader()
                writer.writerow(row)
                handle.flush()  # type: ignore[union-attr]
            if board is not None:
                for key, value in row.items():
                    if key not in ("epoch", "seconds"):
                        board.add_scalar(f"epoch/{key}", value, epoch)
                board.flush()
            if bar is not None:
                bar.set_postfix({k: _fmt(v) for k, v in row.items() if k in ("train_loss", "val_acc")})
            if verbose:
                print(t("epoch {epoch}/{epochs}", epoch=epoch, epochs=epochs) + "  " + "  ".join(
                    f"{k} {_fmt(v)}" for k, v in row.items() if k not in ("epoch", "seconds"))
                    + f"  ({row['seconds']:.1f} s)")
    finally:
        if bar is not None:
            bar.close()
            _show_final(bar)
        if handle is not None:
            handle.close()
        if board is not None:
            board.close()
    if any(math.isnan(r["train_loss"]) for r in history.epochs) and verbose:
        print(t("note: the training loss became NaN (see the 'loss will not go down' checklist)"))
    return history


def _progress_bar(epochs: int, loader: Iterable) -> Any:
    from tqdm.auto import tqdm

    try:
        total: int | None = epochs * len(loader)  # type: ignore[arg-type]
    except TypeError:  # an iterable-style loader may not know its length
        total = None
    bar = tqdm(total=total, desc=t("training"), unit="step", leave=True, display=False) \
        if _notebook_tqdm(tqdm) else tqdm(total=total, desc=t("training"), unit="step", leave=True)
    if hasattr(bar, "container"):  # the Jupyter widget: shown with a display id, see _show_final
        from IPython.display import display

        bar._course_display = display(bar.container, display_id=True)
    return bar


def _notebook_tqdm(tqdm_class: Any) -> bool:
    """True when ``tqdm.auto`` picked the Jupyter widget bar (it then accepts ``display=False``)."""
    from tqdm.notebook import tqdm as notebook_tqdm

    return isinstance(tqdm_class, type) and issubclass(tqdm_class, notebook_tqdm)


def _show_final(bar: Any) -> None:
    """Refresh the shown bar's saved form, so a saved notebook reads "100% 188/188", not "0%"."""
    handle = getattr(bar, "_course_display", None)
    if handle is not None:
        handle.update(bar.container)


def _summary_writer(folder: str | Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:  # the package is pinned in requirements.txt; a bare install may lack it
        raise ImportError("log_tensorboard needs the `tensorboard` package: `pip install tensorboard` "
                          "(or log with log_csv=..., which needs nothing)") from error
    return SummaryWriter(log_dir=str(folder))


def read_tensorboard_log(folder: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar a TensorBoard log folder holds: ``{tag: [(step, value), ...]}``.

    >>> import tempfile
    >>> from torch.utils.tensorboard import SummaryWriter
    >>> folder = tempfile.mkdtemp()
    >>> with SummaryWriter(folder) as board:
    ...     board.add_scalar("loss", 0.5, 1)
    >>> read_tensorboard_log(folder)
    {'loss': [(1, 0.5)]}
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if not Path(folder).is_dir():
        raise FileNotFoundError(f"expected a TensorBoard log folder, found no folder {str(folder)!r}")
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})  # 0: keep every point
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)]
            for tag in sorted(events.Tags()["scalars"])}


def read_csv_log(path: str | Path) -> list[Row]:
    """Rows of a CSV log written by :func:`fit` (or by hand), numbers as floats."""
    with open(path, newline="") as handle:
        return [{k: float(v) for k, v in row.items() if v not in ("", None)}
                for row in csv.DictReader(handle)]
