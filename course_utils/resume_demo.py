"""A tiny training run to interrupt, checkpoint and resume, importable by a fresh process.

Every source of randomness a real run has is here, so a resume that forgets one is caught:

* the DataLoader shuffles with its own ``torch.Generator`` (the batch order),
* ``ToyData.__getitem__`` adds NumPy noise and a Python-``random`` scale (augmentation),
* the model has Dropout (torch's global generator),
* Adam keeps per-parameter moments and OneCycleLR changes the learning rate every step.

Resume in a new Python process (the command notebook 09 shows; tests/test_checkpoint.py runs it)::

    python -m course_utils.resume_demo --resume ckpt.pt --epochs 3 --out final.pt

Example:
    >>> from course_utils.resume_demo import build, train
    >>> run = build(seed=0, epochs=2)
    >>> losses = train(run, epochs=1)
    >>> run.epoch, run.step, len(losses)
    (1, 8, 8)
"""

from __future__ import annotations

from course_utils.i18n import t

import argparse
import os
import random
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_FEATURES, N_CLASSES = 8, 3


class ToyData(Dataset):
    """``n`` points in 8-D, 3 classes; each access adds NumPy noise and a random scale."""

    def __init__(self, n: int = 256, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, N_FEATURES, generator=g)
        w = torch.randn(N_FEATURES, N_CLASSES, generator=g)
        self.y = (self.x @ w).argmax(dim=1)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        noise = np.random.normal(0.0, 0.05, size=N_FEATURES).astype(np.float32)  # NumPy's RNG
        scale = random.uniform(0.9, 1.1)  # Python's RNG
        return (self.x[i] + torch.from_numpy(noise)) * scale, self.y[i]


@dataclass
class Run:
    """The objects of one training run and its counters."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    loader: DataLoader
    generator: torch.Generator
    epoch: int = 0
    step: int = 0


def seed_all(seed: int) -> None:
    """Seed torch, NumPy and Python ``random`` (a fresh process would start anywhere)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def build(seed: int = 0, *, epochs: int = 6, lr: float = 0.05, batch_size: int = 32,
          n: int = 256) -> Run:
    """A fresh run: the same data for every seed; ``seed`` sets the weights and all RNGs."""
    seed_all(seed)
    model = nn.Sequential(nn.Linear(N_FEATURES, 64), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(64, N_CLASSES))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    loader = DataLoader(ToyData(n), batch_size=batch_size, shuffle=True, generator=generator)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr,
                                                    total_steps=epochs * len(loader))
    return Run(model, optimizer, scheduler, loader, generator)


def full_loss(run: Run) -> float:
    """Cross-entropy on the whole clean training set, in eval mode (uses no randomness)."""
    data = run.loader.dataset
    was_training = run.model.training
    run.model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(run.model(data.x), data.y).item()
    run.model.train(was_training)
    return loss


def train(run: Run, epochs: int, log: dict[str, list[float]] | None = None) -> list[float]:
    """Train whole epochs (the scheduler steps per batch); return every step's batch loss.

    ``log``, if given, gets ``log["lr"]`` (the LR each step used) and ``log["loss"]``
    (:func:`full_loss` after each step: a smooth curve to compare runs with).
    """
    losses = []
    for _ in range(epochs):
        run.model.train()
        for x, y in run.loader:
            if log is not None:
                log.setdefault("lr", []).append(run.optimizer.param_groups[0]["lr"])
            run.optimizer.zero_grad()
            loss = F.cross_entropy(run.model(x), y)
            loss.backward()
            run.optimizer.step()
            run.scheduler.step()
            run.step += 1
            losses.append(loss.item())
            if log is not None:
                log.setdefault("loss", []).append(full_loss(run))
        run.epoch += 1
    return losses


def main(argv: list[str] | None = None) -> int:
    """Resume from a checkpoint in this (fresh) process, train, save the final weights."""
    from course_utils.checkpoint import atomic_save, load_checkpoint

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--resume", required=True, help="checkpoint written by save_checkpoint")
    parser.add_argument("--epochs", type=int, required=True, help="epochs to train after resuming")
    parser.add_argument("--total-epochs", type=int, default=6, help="length of the LR schedule")
    parser.add_argument("--out", required=True, help="where to write the final weights and losses")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the same arithmetic as the notebook's kernel
    run = build(seed=12345, epochs=args.total_epochs)  # other weights, other RNG states
    ckpt = load_checkpoint(args.resume, run.model, run.optimizer, run.scheduler,
                           generator=run.generator)
    run.epoch, run.step = ckpt["epoch"], ckpt["step"]
    print(t("fresh process: resumed at epoch {epoch}, step {step}", epoch=run.epoch, step=run.step))
    losses = train(run, args.epochs)
    atomic_save({"model": run.model.state_dict(), "losses": losses, "epoch": run.epoch,
                 "pid": os.getpid()}, args.out)
    print(t("fresh process: trained to epoch {epoch}, step {step}; wrote {name}", epoch=run.epoch, step=run.step,
            name=os.path.basename(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
