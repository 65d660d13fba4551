"""Checkpoints that survive a crash and resume training exactly.

* :func:`atomic_save` writes to a temp file in the target's folder, flushes and fsyncs it,
  then ``os.replace``-s it onto the target (and fsyncs the folder): a reader sees the old
  file or the new one, never half of one.
* :func:`capture_rng_state` / :func:`restore_rng_state` cover torch (CPU and CUDA), NumPy,
  Python ``random`` and a DataLoader's ``torch.Generator``, stored as tensors, lists and
  numbers only, so ``torch.load(weights_only=True)`` accepts them.
* :func:`save_checkpoint` / :func:`load_checkpoint`: model, optimizer, scheduler, scaler,
  epoch/step, best metric and RNG states in one dict; loading uses ``weights_only=True``.
* :class:`CheckpointManager`: ``ckpt-<step>.pt`` files, keep the last k plus ``best.pt``;
  :meth:`~CheckpointManager.latest` never returns an unfinished temp file.

Example:
    >>> import tempfile, torch
    >>> from course_utils.checkpoint import CheckpointManager, load_checkpoint, make_checkpoint
    >>> model = torch.nn.Linear(2, 1)
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> manager = CheckpointManager(tempfile.mkdtemp(), keep_last=2)
    >>> for step in (10, 20, 30):
    ...     _ = manager.save(make_checkpoint(model, opt, epoch=step // 10, step=step), step,
    ...                      metric=1.0 / step)
    >>> [p.name for p in manager.checkpoints()], manager.best().name
    (['ckpt-00000020.pt', 'ckpt-00000030.pt'], 'best.pt')
    >>> load_checkpoint(manager.latest(), model, opt)["step"]
    30
"""

from __future__ import annotations

from course_utils.i18n import t

import contextlib
import os
import pickle
import random
import re
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

import numpy as np
import torch

#: Suffix of the temp files :func:`atomic_save` writes before the rename (names start with ".").
TMP_SUFFIX = ".tmp"


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, or lacks an entry the caller asked for."""


def _fsync_dir(folder: Path) -> None:
    if os.name == "nt":  # Windows cannot open a directory for fsync; the rename is still atomic
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_save(obj: Any, path: str | os.PathLike,
                save: Callable[[Any, BinaryIO], Any] | None = None) -> Path:
    """``torch.save(obj)`` to ``path`` so that a crash never leaves a partial file there.

    ``save(obj, file)`` writes the bytes (``torch.save`` by default); any other writer gets the same
    guarantee, e.g. safetensors: ``atomic_save(state, "model.safetensors",
    save=lambda s, f: f.write(safetensors.torch.save(s)))``.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(t("expected a file path for the checkpoint, found the folder {path}; "
                                  "add a file name, e.g. {example}", path=path, example=path / 'last.pt'))
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(t("expected an existing folder for {name}, found no folder {folder}; "
                                  "create it first: {code}", name=path.name, folder=folder,
                                  code=f"Path({str(folder)!r}).mkdir(parents=True, exist_ok=True)"))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            (torch.save if save is None else save)(obj, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)  # atomic on POSIX and Windows (same folder, same filesystem)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)  # make the rename itself durable
    return path


_TAG_AS: list[str] = []
_REGISTERED: list[bool] = []


def _tag_as(storage: Any) -> str | None:
    return _TAG_AS[-1] if _TAG_AS and storage.device.type == "cpu" else None


@contextlib.contextmanager
def saved_as_if_on(device: str) -> Iterator[None]:
    """Inside this block ``torch.save`` labels CPU tensors as stored on ``device`` ("cuda:0"):
    the file then loads exactly like one written on that GPU, for practising ``map_location``
    on a machine without one. Only the label in the file changes; the bytes are the same.
    """
    if not _REGISTERED:  # priority 1 runs before the built-in taggers (cpu is 10)
        torch.serialization.register_package(1, _tag_as, lambda storage, location: None)
        _REGISTERED.append(True)
    _TAG_AS.append(str(torch.device(device)))
    try:
        yield
    finally:
        _TAG_AS.pop()


# --- RNG state -------------------------------------------------------------------------------

def capture_rng_state(generator: torch.Generator | None = None) -> dict[str, Any]:
    """Every RNG a training step can touch, as weights_only-loadable tensors, lists and numbers.

    ``generator`` is the ``torch.Generator`` you gave your DataLoader (it decides the shuffle order).
    """
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(t("expected the DataLoader's torch.Generator (or None), found {found}; "
                          "pass loader.generator or the generator you built the loader with",
                          found=type(generator).__name__))
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, py_state, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "python": {"version": version, "state": torch.tensor(py_state, dtype=torch.int64),
                   "gauss_next": gauss_next},
        "generator": None if generator is None else generator.get_state(),
    }


def restore_rng_state(state: dict[str, Any], generator: torch.Generator | None = None) -> None:
    """Put back what :func:`capture_rng_state` captured (tensors may come back on any device)."""
    missing = {"torch", "numpy", "python"} - set(state) if isinstance(state, dict) else {"torch"}
    if missing:
        found = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(t("expected an RNG state from capture_rng_state() with keys torch, numpy, "
                                "python, found {found}", found=found))
    torch.set_rng_state(state["torch"].cpu())
    cuda = state.get("cuda") or []
    if cuda and torch.cuda.is_available():
        for index, cuda_state in enumerate(cuda[: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state.cpu(), index)
    np_state = state["numpy"]
    np.random.set_state((np_state["kind"], np_state["keys"].cpu().numpy().astype(np.uint32),
                         np_state["pos"], np_state["has_gauss"], np_state["cached_gaussian"]))
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"].tolist()), py["gauss_next"]))
    if generator is not None:
        if state.get("generator") is None:
            raise CheckpointError(t("expected a DataLoader generator state in the checkpoint, found none: "
                                    "it was saved without generator=...; resume with generator=None "
                                    "(the data order will then differ from an uninterrupted run)"))
        generator.set_state(state["generator"].cpu())


# --- full checkpoints --------------------------------------------------------------------------

def make_checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None,
                    scheduler: Any = None, scaler: Any = None, *, epoch: int = 0, step: int = 0,
                    best_metric: float | None = None, generator: torch.Generator | None = None,
                    extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dict a training run needs to continue exactly: state_dicts, counters and RNG states."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(t("expected an nn.Module as model, found {found}", found=type(model).__name__))
    checkpoint: dict[str, Any] = {"model": model.state_dict(), "epoch": int(epoch), "step": int(step),
                                  "best_metric": best_metric, "rng": capture_rng_state(generator)}
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("scaler", scaler)):
        if obj is not None:
            checkpoint[name] = obj.state_dict()
    if extra:
        checkpoint["extra"] = dict(extra)
    return checkpoint


def save_checkpoint(path: str | os.PathLike, model: torch.nn.Module, optimizer: Any = None,
                    scheduler: Any = None, scaler: Any = None, **kwargs: Any) -> Path:
    """:func:`make_checkpoint` + :func:`atomic_save`; keyword args as for make_checkpoint."""
    return atomic_save(make_checkpoint(model, optimizer, scheduler, scaler, **kwargs), path)


def read_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """``torch.load(path, weights_only=True)`` with errors that say what to try."""
    path = Path(path)
    if not path.is_file():
        folder = path.parent
        present = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        raise FileNotFoundError(t("expected a checkpoint file at {path}, found none; {folder} holds {present}",
                                  path=path, folder=folder,
                                  present=present or t("nothing (or does not exist)")))
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:  # a global that weights_only refuses
        refused = str(exc).split("Unsupported global: ")[-1].split(" was not")[0]
        raise CheckpointError(t("{name} holds objects weights_only=True refuses ({refused}); save "
                                "state_dict()s, or if you trust the file and its class use "
                                "torch.serialization.safe_globals([...])", name=path.name, refused=refused)) from exc
    except Exception as exc:  # a truncated zip, or not a torch.save file at all
        raise CheckpointError(t("could not read {name} as a checkpoint: {error} If it is truncated, load the "
                                "previous one (CheckpointManager.latest() skips unfinished temp files)",
                                name=path.name, error=str(exc).splitlines()[0])) from exc
    if not isinstance(checkpoint, dict):
        raise CheckpointError(t("expected {name} to hold a dict, found {found}", name=path.name,
                                found=type(checkpoint).__name__))
    return checkpoint


def load_checkpoint(path: str | os.PathLike, model: torch.nn.Module | None = None,
                    optimizer: Any = None, scheduler: Any = None, scaler: Any = None, *,
                    generator: torch.Generator | None = None, map_location: Any = "cpu",
                    restore_rng: bool = True, strict: bool = True) -> dict[str, Any]:
    """Load with ``weights_only=True`` and restore every object passed; returns the dict.

    Everything you pass must be in the file (a missing optimizer state is an error, not a
    silent fresh start). ``restore_rng=False`` leaves the random generators as they are.
    """
    checkpoint = read_checkpoint(path, map_location)
    wanted = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler}
    for name, obj in wanted.items():
        if obj is not None and checkpoint.get(name) is None:
            raise CheckpointError(t("expected a {entry} entry in {file}, found keys {keys}; pass {name}=None to "
                                    "resume without it", entry=repr(name), file=Path(path).name,
                                    keys=sorted(checkpoint), name=name))
    if restore_rng and checkpoint.get("rng") is None:
        raise CheckpointError(t("expected an 'rng' entry in {file}, found keys {keys}; pass restore_rng=False to "
                                "continue with the current random state", file=Path(path).name,
                                keys=sorted(checkpoint)))
    if model is not None:
        model.load_state_dict(checkpoint["model"], strict=strict)
    for name in ("optimizer", "scheduler", "scaler"):
        if wanted[name] is not None:
            wanted[name].load_state_dict(checkpoint[name])
    if restore_rng:
        restore_rng_state(checkpoint["rng"], generator)
    return checkpoint


# --- keep the last k, plus the best ------------------------------------------------------------

def find_latest(folder: str | os.PathLike, prefix: str = "ckpt") -> Path | None:
    """The finished ``<prefix>-<step>.pt`` with the highest step (temp files never match)."""
    return next(reversed(list_checkpoints(folder, prefix)), None)


def list_checkpoints(folder: str | os.PathLike, prefix: str = "ckpt") -> list[Path]:
    """Finished checkpoints in ``folder``, sorted by step number (not by name or mtime)."""
    pattern = re.compile(rf"{re.escape(prefix)}-(\d+)\.pt")
    found = [(int(m.group(1)), p) for p in Path(folder).iterdir() if (m := pattern.fullmatch(p.name))]
    return [p for _, p in sorted(found)]


class CheckpointManager:
    """Save ``ckpt-<step>.pt`` atomically, keep the newest ``keep_last``, and ``best.pt``.

    ``mode="min"`` means a lower metric is better (a loss); use ``"max"`` for accuracy. To keep
    tracking the best across a restart, pass the resumed checkpoint's ``best_metric``.
    """

    def __init__(self, folder: str | os.PathLike, keep_last: int = 3, prefix: str = "ckpt",
                 mode: str = "min", best_metric: float | None = None) -> None:
        if not isinstance(keep_last, int) or keep_last < 1:
            raise ValueError(t("expected keep_last to be an int >= 1, found {found}; "
                               "use 1 to keep only the newest checkpoint", found=repr(keep_last)))
        if mode not in ("min", "max"):
            raise ValueError(t("expected mode 'min' (lower is better, a loss) or 'max' (an accuracy), found {found}",
                               found=repr(mode)))
        if not re.fullmatch(r"[A-Za-z0-9_]+", prefix):
            raise ValueError(t("expected a prefix of letters, digits or '_', found {found}", found=repr(prefix)))
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.keep_last, self.prefix, self.mode, self.best_metric = keep_last, prefix, mode, best_metric

    def path_for(self, step: int) -> Path:
        return self.folder / f"{self.prefix}-{step:08d}.pt"

    def save(self, checkpoint: dict[str, Any], step: int, metric: float | None = None) -> Path:
        """Write the checkpoint for ``step``; update ``best.pt`` if ``metric`` improved; prune."""
        if not isinstance(step, int) or step < 0:
            raise ValueError(t("expected step to be an int >= 0, found {found}", found=repr(step)))
        path = atomic_save(checkpoint, self.path_for(step))
        best = self.best_metric
        if metric is not None and (best is None or (metric < best if self.mode == "min" else metric > best)):
            self.best_metric = float(metric)
            atomic_save(checkpoint, self.folder / "best.pt")
        self.prune()
        return path

    def checkpoints(self) -> list[Path]:
        return list_checkpoints(self.folder, self.prefix)

    def latest(self) -> Path | None:
        return find_latest(self.folder, self.prefix)

    def best(self) -> Path | None:
        return self.folder / "best.pt" if (self.folder / "best.pt").is_file() else None

    def prune(self) -> list[Path]:
        """Delete all but the newest ``keep_last`` checkpoints (``best.pt`` stays); return them."""
        old = self.checkpoints()[: -self.keep_last]
        for path in old:
            path.unlink()
        return old
