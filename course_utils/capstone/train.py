"""The capstone's training script: ``python -m course_utils.capstone.train --epochs 2 --out runs/a``.

One run writes into ``cfg.out``: ``config.json`` (the configuration), ``steps.csv`` (one row per
optimizer step: loss, learning rate, gradient norm, update/weight ratio, memory), ``epochs.csv``
(validation loss and accuracy), a TensorBoard event file (``tensorboard/``), ``checkpoint.pt``
(after every epoch: model, optimizer, scheduler, position, library versions) and ``model.safetensors``
(the weights to serve), both written atomically (``course_utils.checkpoint.atomic_save``: a crash
mid-save leaves the previous file, never half of one). ``--resume true`` continues from
``checkpoint.pt`` exactly where the run stopped: every epoch's shuffle comes from its own generator
(seeded with seed + epoch), so the resumed run takes the same batches and the same steps as an
uninterrupted one.

Example:
    >>> import tempfile
    >>> from course_utils.capstone.config import Config
    >>> summary = train(Config(epochs=1, max_batches=2, train_size=64, batch_size=32, val_size=32,
    ...                        out=tempfile.mkdtemp(), tensorboard=False))  # doctest: +ELLIPSIS
    epoch 1/1: step 2, val_loss ...
    >>> summary["steps"], sorted(summary)[:3]
    (2, ['epochs', 'seconds', 'steps'])
"""

from __future__ import annotations

from course_utils.i18n import t

import csv
import math
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from course_utils.capstone.config import Config, config_from_args, save_config
from course_utils.checkpoint import atomic_save
from course_utils.data import CLASSES, make_shapes

#: per-channel statistics of the training images (rounded); the serving code must use the same
MEAN = torch.tensor([0.47, 0.47, 0.47])
STD = torch.tensor([0.28, 0.28, 0.28])
STEP_COLUMNS = ["step", "epoch", "loss", "lr", "grad_norm", "update_ratio", "memory_mb"]
EPOCH_COLUMNS = ["epoch", "step", "val_loss", "val_acc"]


def build_model(n_classes: int = len(CLASSES)) -> nn.Module:
    """The small CNN of notebook 6 for 32x32 RGB images (about 11k parameters)."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 8 x 16 x 16
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 16 x 8 x 8
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 32 x 4 x 4
        nn.Flatten(), nn.Linear(32 * 4 * 4, n_classes))


def to_inputs(images: Any) -> torch.Tensor:
    """uint8 images ``[N, H, W, 3]`` (numpy or tensor) -> normalised float ``[N, 3, H, W]``."""
    batch = torch.as_tensor(images).permute(0, 3, 1, 2).float() / 255
    return (batch - MEAN.view(1, -1, 1, 1)) / STD.view(1, -1, 1, 1)


def load_split(split: str, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = make_shapes(size, seed=seed, split=split)
    return to_inputs(images), torch.from_numpy(labels)


def library_versions() -> dict[str, str]:
    """The versions that wrote a file (notebook 09): the first question when a load fails or results differ."""
    import platform

    import numpy

    # str(): torch.__version__ is a TorchVersion, which torch.load(weights_only=True) refuses
    return {"python": platform.python_version(), "torch": str(torch.__version__), "numpy": numpy.__version__}


def memory_mb() -> float:
    """Peak GPU memory allocated by this process when on a GPU, else the process's resident memory."""
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def update_ratio(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> dict[str, float]:
    """``||after - before|| / ||before||`` per parameter (L2 norm of all elements), as floats.

    >>> {k: round(v, 6) for k, v in update_ratio({"w": torch.tensor([3.0, 4.0])},
    ...                                         {"w": torch.tensor([3.0, 4.5])}).items()}
    {'w': 0.1}
    """
    return {name: ((after[name] - w).norm() / w.norm()).item() for name, w in before.items()}


def global_update_ratio(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> float:
    """The same ratio over all parameters at once (one number per step for the log)."""
    delta = math.sqrt(sum(float((after[k].detach() - w).pow(2).sum()) for k, w in before.items()))
    norm = math.sqrt(sum(float(w.pow(2).sum()) for w in before.values()))
    return delta / norm


def log_row(step: int, loss: torch.Tensor, optimizer: torch.optim.Optimizer,
            grad_norm: torch.Tensor) -> dict[str, float | int]:
    """One structured log row: plain Python numbers (no tensors), the LR the optimizer holds now."""
    return {"step": int(step), "loss": float(loss.item()), "lr": float(optimizer.param_groups[0]["lr"]),
            "grad_norm": float(grad_norm)}


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    model.eval()
    with torch.no_grad():
        logits = model(x)
    model.train()
    return nn.functional.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


def _append(path: Path, columns: list[str], row: dict[str, Any]) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        if new:
            writer.writeheader()
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


def train(cfg: Config) -> dict[str, Any]:
    """Run (or resume) one training run as ``cfg`` says; returns a small summary."""
    started = time.perf_counter()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    save_config(cfg, out)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: fastest on one thread, and the same numbers everywhere
    try:
        torch.manual_seed(cfg.seed)
        x_train, y_train = load_split("train", cfg.train_size, cfg.seed)
        x_val, y_val = load_split("val", cfg.val_size, cfg.seed)
        model = build_model()
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        per_epoch = math.ceil(cfg.train_size / cfg.batch_size)
        if cfg.max_batches:
            per_epoch = min(per_epoch, cfg.max_batches)
        # warm up, then anneal (notebook 6): at its full rate from the first step, Adam stalls this CNN
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=cfg.lr, total_steps=cfg.epochs * per_epoch)
        start_epoch, step = 1, 0
        checkpoint = out / "checkpoint.pt"
        if cfg.resume and checkpoint.exists():
            state = torch.load(checkpoint, weights_only=True)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            start_epoch, step = state["epoch"] + 1, state["step"]
            if scheduler.total_steps != cfg.epochs * per_epoch:
                raise ValueError(t("expected the interrupted run's length ({planned} steps: its one-cycle schedule "
                                   "is planned for them), found {found}; resume with the same --epochs, "
                                   "--train-size, --batch-size, --max-batches", planned=scheduler.total_steps,
                                   found=cfg.epochs * per_epoch))
        else:
            for name in ("steps.csv", "epochs.csv"):
                (out / name).unlink(missing_ok=True)
        board = None
        if cfg.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            board = SummaryWriter(str(out / "tensorboard"), purge_step=step + 1 if step else None)
        loss_fn = nn.CrossEntropyLoss()
        for epoch in range(start_epoch, cfg.epochs + 1):
            order = torch.randperm(cfg.train_size, generator=torch.Generator().manual_seed(cfg.seed + epoch))
            for batch in range(per_epoch):
                index = order[batch * cfg.batch_size:(batch + 1) * cfg.batch_size]
                before = {k: p.detach().clone() for k, p in model.named_parameters()}
                optimizer.zero_grad()
                loss = loss_fn(model(x_train[index]), y_train[index])
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
                optimizer.step()
                step += 1
                row: dict[str, Any] = {**log_row(step, loss, optimizer, grad_norm), "epoch": epoch}
                row["update_ratio"] = global_update_ratio(before, dict(model.named_parameters()))
                row["memory_mb"] = memory_mb()
                scheduler.step()
                _append(out / "steps.csv", STEP_COLUMNS, row)
                if board is not None:
                    for key in ("loss", "lr", "grad_norm", "update_ratio"):
                        board.add_scalar(f"step/{key}", row[key], step)
            val_loss, val_acc = evaluate(model, x_val, y_val)
            _append(out / "epochs.csv", EPOCH_COLUMNS,
                    {"epoch": epoch, "step": step, "val_loss": val_loss, "val_acc": val_acc})
            if board is not None:
                board.add_scalar("epoch/val_loss", val_loss, step)
                board.add_scalar("epoch/val_acc", val_acc, step)
            # atomic (notebook 09): a crash mid-save leaves the previous checkpoint, never half a file
            atomic_save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                         "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                         "versions": library_versions()}, checkpoint)
            print(t("epoch {epoch}/{epochs}: step {step}, val_loss {val_loss}, val_acc {val_acc}", epoch=epoch,
                    epochs=cfg.epochs, step=step, val_loss=f"{val_loss:.3f}", val_acc=f"{val_acc:.3f}"))
            if epoch == cfg.stop_after:
                print(t("stopped after epoch {epoch} (as if interrupted)", epoch=epoch))
                break
        if board is not None:
            board.close()
        from safetensors.torch import save as safetensors_bytes

        metadata = {"classes": ",".join(CLASSES), **library_versions()}
        atomic_save(model.state_dict(), out / "model.safetensors",
                    save=lambda state, file: file.write(safetensors_bytes(state, metadata=metadata)))
    finally:
        torch.set_num_threads(threads)
    return {"epochs": cfg.epochs, "steps": step, "seconds": time.perf_counter() - started}


def load_model(folder: str | Path) -> nn.Module:
    """The trained model of a run folder, from ``model.safetensors``, in eval mode."""
    from safetensors.torch import load_file

    model = build_model()
    model.load_state_dict(load_file(str(Path(folder) / "model.safetensors")))
    return model.eval()


def predict(model: nn.Module, images: Any, classes: tuple[str, ...] | list[str] = CLASSES
            ) -> tuple[list[str], torch.Tensor]:
    """The inference wrapper: uint8 HWC image(s) -> (labels, probabilities), as in notebook 12."""
    import numpy as np

    if not isinstance(images, (list, tuple)):
        images = [images]
    x = to_inputs(np.stack([np.asarray(image) for image in images]))
    model.eval()
    with torch.inference_mode():
        probs = model(x).softmax(dim=1)
    return [classes[i] for i in probs.argmax(dim=1).tolist()], probs


def main(argv: list[str] | None = None) -> int:
    cfg = config_from_args(sys.argv[1:] if argv is None else argv)
    summary = train(cfg)
    print(t("done: {steps} steps", steps=summary['steps']))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
