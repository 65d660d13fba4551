"""A typed run configuration, kept apart from the code: a dataclass with defaults, filled from the
command line, saved next to the run's outputs as JSON so the run can be repeated.

Example:
    >>> cfg = config_from_args(["--epochs", "5", "--lr", "0.1", "--tensorboard", "false"])
    >>> cfg.epochs, cfg.lr, cfg.tensorboard, cfg.batch_size == Config().batch_size
    (5, 0.1, False, True)
    >>> from_json(to_json(cfg)) == cfg
    True
    >>> parse_bool("yes"), parse_bool("0")
    (True, False)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Config:
    """Everything a run depends on (the code reads nothing else)."""

    epochs: int = 3
    batch_size: int = 64
    lr: float = 0.01  #: the peak of the one-cycle schedule
    train_size: int = 3000
    val_size: int = 256
    max_batches: int = 0  #: batches per epoch, 0 = all (a smoke test uses a few)
    seed: int = 0
    out: str = "runs/run"
    resume: bool = False  #: continue from the checkpoint in ``out``
    stop_after: int = 0  #: stop after this epoch, as if interrupted (0 = never)
    tensorboard: bool = True


def parse_bool(text: str) -> bool:
    """``"true"/"1"/"yes"/"on"`` -> True, ``"false"/"0"/"no"/"off"`` -> False (``bool("False")`` is True).

    >>> parse_bool("False")
    False
    """
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, found {text!r}")


def build_parser(cls: type = Config) -> argparse.ArgumentParser:
    """One ``--name`` option per field of ``cls``, typed and defaulted from the dataclass itself."""
    parser = argparse.ArgumentParser(  # a fixed name and width: the same help in a terminal and a notebook
        prog="python -m course_utils.capstone.train", description="Train the course's small CNN on the shapes data.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=100))
    for field in dataclasses.fields(cls):
        kind: Any = type(field.default)
        parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind,
                            help=f"(default: {field.default})")
    return parser


def config_from_args(argv: list[str], cls: type = Config) -> Any:
    """Parse ``argv`` (not ``sys.argv``) into a ``cls``; unknown options are an error (``SystemExit``)."""
    return cls(**vars(build_parser(cls).parse_args(argv)))


def to_json(cfg: Any) -> str:
    return json.dumps(dataclasses.asdict(cfg), indent=2, sort_keys=True)


def from_json(text: str, cls: type = Config) -> Any:
    return cls(**json.loads(text))


def save_config(cfg: Any, folder: str | Path) -> Path:
    """Write ``config.json`` into ``folder`` (created) and return its path."""
    path = Path(folder) / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(cfg) + "\n")
    return path


def load_config(folder: str | Path, cls: type = Config) -> Any:
    return from_json((Path(folder) / "config.json").read_text(), cls)
