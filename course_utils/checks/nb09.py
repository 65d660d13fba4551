"""Checkers of notebook 09 (checkpointing), in notebook order: ``09.save_checkpoint``,
``09.load_checkpoint``, ``09.latest_checkpoint``, ``09.clean_state_dict``.

How the checkpoint checkers see what cannot be seen in a return value:

* a **resume test**: the candidate's checkpoint (or loader) is used to continue a real run
  (:mod:`course_utils.resume_demo`) and the final parameters must be ``torch.equal`` to an
  uninterrupted run's;
* **atomic writes**: a Python audit hook records every ``os.rename``/``os.replace`` into the
  case's folder; the checkpoint must arrive at its name by a rename from the same folder;
* **unsafe loads**: the same hook records ``pickle.find_class``, which only the full pickle
  machinery (``weights_only=False``) calls;
* ``load_checkpoint`` is re-run on fresh objects inside ``verify``, so the global RNG state it
  leaves behind is inspected before anything else touches it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from course_utils.checkpoint import (capture_rng_state, load_checkpoint, restore_rng_state, save_checkpoint,
                                     saved_as_if_on)
from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.i18n import N_, t
from course_utils.resume_demo import build, seed_all, train


# --- shared by the 08 checkers --------------------------------------------------------------------
# Temp folders, the audit hook, the resume helpers.

TOTAL_EPOCHS = 3  # length of each case's run; a case saves after 1 or 2 epochs and resumes the rest
N_SAMPLES = 128  # 4 batches per epoch: small and quick, every RNG still in play

# --- plumbing: temp folders and the audit hook --------------------------------------------------

_ROOT: list[Path] = []
_RENAMES: dict[str, list[tuple[str, str]]] = {}  # watched folder -> [(src, dst)]
_FIND_CLASS: list[list[str]] = []  # active recorders of pickle.find_class
_HOOKED: list[bool] = []
_LAST: dict[tuple[str, str], str] = {}  # (exercise, case path) -> problem code of the last verify
_CANDIDATE: dict[str, Callable[..., Any]] = {}
_CASE_INFO: dict[str, tuple[int, int]] = {}


def _case_dir() -> Path:
    if not _ROOT:
        root = Path(tempfile.mkdtemp(prefix="course-08-checks-"))
        atexit.register(shutil.rmtree, root, True)
        _ROOT.append(root)
    return Path(tempfile.mkdtemp(dir=_ROOT[0]))


def _audit(event: str, args: tuple) -> None:
    if event == "os.rename" and _RENAMES:
        try:  # an audit hook must never raise
            src, dst = (os.path.realpath(os.fsdecode(os.fspath(a))) for a in args[:2])
            events = _RENAMES.get(os.path.dirname(dst))
            if events is not None:
                events.append((src, dst))
        except Exception:
            pass
    elif event == "pickle.find_class" and _FIND_CLASS:
        for record in _FIND_CLASS:
            record.append(f"{args[0]}.{args[1]}")


#: (st_dev, st_ino) of every file os.fsync()-ed or os.fdatasync()-ed while a case watches -> its size on disk
_SYNCED: dict[tuple[int, int], int] = {}


def _recording(sync: Callable[[Any], None]) -> Callable[[Any], None]:
    """``os.fsync``/``os.fdatasync`` that also records which file it made durable (no audit event does)."""
    @functools.wraps(sync)
    def recorded(fd: Any) -> None:
        sync(fd)
        if _RENAMES:
            try:
                st = os.fstat(fd if isinstance(fd, int) else fd.fileno())
                _SYNCED[(st.st_dev, st.st_ino)] = st.st_size
            except Exception:  # noqa: BLE001 - recording must never change what the call does
                pass
    recorded.__wrapped_sync__ = sync  # type: ignore[attr-defined]
    return recorded


#: (src, dst) of every os.rename (not os.replace) while a case watches: os.rename fails on Windows
#: when dst exists, so it cannot replace a checkpoint there (both raise the same audit event)
_PLAIN_RENAMES: list[tuple[str, str]] = []


def _recording_rename(rename: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(rename)
    def recorded(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        result = rename(src, dst, *args, **kwargs)
        if _RENAMES:
            try:
                _PLAIN_RENAMES.append(tuple(os.path.realpath(os.fsdecode(os.fspath(a))) for a in (src, dst)))
            except Exception:  # noqa: BLE001 - recording must never change what the call does
                pass
        return result
    recorded.__wrapped_rename__ = rename  # type: ignore[attr-defined]
    return recorded


def _install_hook() -> None:
    if not _HOOKED:
        sys.addaudithook(_audit)
        if not hasattr(os.rename, "__wrapped_rename__"):
            os.rename = _recording_rename(os.rename)
        for name in ("fsync", "fdatasync"):
            if hasattr(os, name) and not hasattr(getattr(os, name), "__wrapped_sync__"):
                setattr(os, name, _recording(getattr(os, name)))
        _HOOKED.append(True)


def _same(a: Any, b: Any) -> bool:
    """Exact structural equality of nested dicts/lists/tensors/numbers."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@functools.lru_cache(maxsize=8)
def _straight_params(seed: int) -> list[torch.Tensor]:
    state = capture_rng_state()
    run = build(seed, epochs=TOTAL_EPOCHS, n=N_SAMPLES)
    train(run, TOTAL_EPOCHS)
    restore_rng_state(state)  # cached or not, the caller's random state is the same afterwards
    return [p.detach().clone() for p in run.model.parameters()]


def _max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max((x - y).abs().max().item() for x, y in zip(a, b))


def _fresh_run(seed: int):
    run = build(seed + 1000, epochs=TOTAL_EPOCHS, n=N_SAMPLES)  # other weights, other data order
    seed_all(seed + 2000)  # a new process starts from some other random state
    return run


def _code_is(exercise: str, code: str):
    return lambda out, args, kwargs: _LAST.get((exercise, str(args[0]))) == code


# --- 09.save_checkpoint ---------------------------------------------------------------------------
# Write the full training state atomically; checked by resuming from it.

def save_checkpoint_reference(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    path = Path(path)
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                  "best_metric": best_metric, "rng": capture_rng_state(generator)}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def _save_variant(drop: str = "", rng: Callable[[Any], Any] | None = None, write: str = "atomic"):
    def save(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
        path = Path(path)
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                      "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                      "best_metric": best_metric,
                      "rng": rng(generator) if rng else capture_rng_state(generator)}
        if drop == "optimizer-object":
            checkpoint["optimizer"] = optimizer
        elif drop:
            del checkpoint[drop]
        if write == "in place":
            torch.save(checkpoint, path)
        elif write == "no fsync":
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
            os.replace(tmp, path)
        elif write == "other folder":
            fd, tmp = tempfile.mkstemp(suffix=".pt")
            with os.fdopen(fd, "wb") as f:
                torch.save(checkpoint, f)
            os.replace(tmp, path)
        else:
            torch.save(checkpoint, path.with_name(path.name + ".tmp"))
            os.replace(path.with_name(path.name + ".tmp"), path)
        return path
    return save


def _save_float_metric(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    return save_checkpoint_reference(path, model, optimizer, scheduler, generator, epoch, step, float(best_metric))


def _save_with_rename(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    path = Path(path)
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                  "best_metric": best_metric, "rng": capture_rng_state(generator)}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def _save_str_as_path(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                  "best_metric": best_metric, "rng": capture_rng_state(generator)}
    tmp = path.with_name(path.name + ".tmp")  # fails when path is a str
    with open(tmp, "wb") as f:
        torch.save(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _save_path_plus_str(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                  "best_metric": best_metric, "rng": capture_rng_state(generator)}
    tmp = path + ".tmp"  # fails when path is a Path
    with open(tmp, "wb") as f:
        torch.save(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _save_case(seed: int, epochs_done: int, as_str: bool = False, no_metric: bool = False):
    def factory():
        _install_hook()
        folder = _case_dir() / "checkpoints"
        folder.mkdir()
        path = folder / "last.pt"
        given = str(path) if as_str else path
        torch.save({"epoch": epochs_done - 1, "note": "the previous checkpoint"}, path)
        _RENAMES[os.path.realpath(folder)] = []
        run = build(seed, epochs=TOTAL_EPOCHS, n=N_SAMPLES)
        train(run, epochs_done)
        _CASE_INFO[str(path)] = (seed, epochs_done)
        return ((given, run.model, run.optimizer, run.scheduler, run.generator),
                {"epoch": run.epoch, "step": run.step,
                 "best_metric": None if no_metric else round(0.9 / (1 + epochs_done), 4)})
    return factory


_NEEDED = {"model": N_("the weights (model.state_dict())"),
           "optimizer": N_("Adam's moments and the current LR (optimizer.state_dict())"),
           "scheduler": N_("where the LR schedule is (scheduler.state_dict())"),
           "epoch": N_("the epoch counter"), "step": N_("the step counter"),
           "best_metric": N_("the best metric so far"),
           "rng": N_("the random states (capture_rng_state(generator))")}


def _save_problem(out: Any, ref: Path, args: tuple, kwargs: dict) -> tuple[str, str | None]:
    path = Path(args[0])
    try:
        ckpt = torch.load(path, weights_only=True)
    except Exception as exc:
        text = str(exc)
        refused = text.split("Unsupported global: ")[-1].split(" was not")[0].removeprefix("GLOBAL ")
        reason = (t("it contains a {refused} object, not only tensors, numbers, strings and containers",
                    refused=refused)
                  if "Unsupported global" in text else text.strip().splitlines()[0][:160])
        return "weights_only", t("torch.load(path, weights_only=True) refused your file: {reason}", reason=reason)
    if not isinstance(ckpt, dict) or ckpt.get("note") == "the previous checkpoint":
        return "unchanged", t("{path_name} does not hold your new checkpoint dict: write it to `path`",
                              path_name=path.name)
    for key in _NEEDED:
        if key not in ckpt:
            code = key if key in ("optimizer", "scheduler", "rng") else "keys"
            return code, t("your checkpoint has no {key!r} entry (found keys {sorted_ckpt}); a resume needs "
                           "{needed_key}", key=key, sorted_ckpt=sorted(ckpt), needed_key=t(_NEEDED[key]))
    expected = torch.load(ref, weights_only=True)
    for key in ("model", "optimizer", "scheduler", "epoch", "step", "best_metric"):
        if not _same(ckpt[key], expected[key]):
            return "keys", t("the {key!r} entry does not hold {needed_key} as it was at save time",
                             key=key, needed_key=t(_NEEDED[key]))
    rng = ckpt["rng"]
    if isinstance(rng, dict) and rng.get("generator") is None:
        return "generator", t("your 'rng' entry has no DataLoader generator state: after a resume the batches would "
                              "come in a different order")
    if not _same(rng, expected["rng"]):
        return "rng_wrong", t("the 'rng' entry is not capture_rng_state(generator) taken at save time")
    seed, done = _CASE_INFO[str(path)]
    run = _fresh_run(seed)
    load_checkpoint(path, run.model, run.optimizer, run.scheduler, generator=run.generator)
    train(run, TOTAL_EPOCHS - done)
    diff = _max_diff([p.detach() for p in run.model.parameters()], _straight_params(seed))
    if diff != 0:
        return "resume", t("resuming from your checkpoint does not reproduce the uninterrupted run (largest "
                           "parameter difference {diff:.3g})", diff=diff)
    real = os.path.realpath(path)
    arrived = [src for src, dst in _RENAMES.get(os.path.dirname(real), []) if dst == real]
    if not arrived:
        return "atomic", t("non-atomic write: nothing was os.replace()-d onto {path_name}, so the previous "
                           "checkpoint was overwritten in place; a crash mid-write leaves a truncated file",
                           path_name=path.name)
    if any(dst == real for _, dst in _PLAIN_RENAMES):
        return "rename", t("your temp file reached {path_name} through os.rename (or Path.rename): on Windows that "
                           "fails when {path_name} already exists; use os.replace(tmp, path), which replaces it "
                           "atomically everywhere", path_name=path.name)
    if os.path.dirname(arrived[-1]) != os.path.dirname(real):
        return "tmp_folder", t("your temp file was in {os_path_dirname_arrived_1}, not next to {path_name}: "
                               "os.replace is only atomic within one filesystem (and fails across them)",
                               os_path_dirname_arrived_1=os.path.dirname(arrived[-1]), path_name=path.name)
    leftovers = sorted(p.name for p in path.parent.iterdir() if p.name != path.name)
    if leftovers:
        return "leftover", t("files left next to your checkpoint: {leftovers}; the temp file must be renamed",
                             leftovers=leftovers)
    st = os.stat(real)
    synced = _SYNCED.get((st.st_dev, st.st_ino))
    if synced is None:
        return "fsync", t("the temp file was never os.fsync()-ed: after a power cut the rename can reach the disk "
                          "before the data, leaving an empty checkpoint. Inside the `with open(tmp, 'wb') as f:` "
                          "block call f.flush() and then os.fsync(f.fileno())")
    if synced < st.st_size:
        return "flush", t("os.fsync ran while only {synced:,} of {st_st_size:,} bytes had left Python's write "
                          "buffer: call f.flush() first, then os.fsync(f.fileno())",
                          synced=synced, st_st_size=st.st_size)
    return "ok", None


def _save_verify(out, ref, args, kwargs):
    code, problem = _save_problem(out, ref, args, kwargs)
    _LAST[("save", str(args[0]))] = code
    return problem


register(Exercise(
    "09.save_checkpoint",
    "save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric) writes "
    "{'model', 'optimizer', 'scheduler' (state_dicts), 'epoch', 'step', 'best_metric', "
    "'rng': capture_rng_state(generator)} atomically (temp file in the same folder, flushed and "
    "os.fsync()-ed, then os.replace) "
    "to `path` (a str or a Path); it returns nothing.",
    save_checkpoint_reference,
    # case 3: no metric yet (best_metric=None), as the lesson's first save passes it
    [_save_case(0, 2), _save_case(1, 1, as_str=True), _save_case(2, 2, no_metric=True)],
    _save_verify,
    [
        Mistake("Path + str for the temp name",
                "a Path does not support `+`: build the temp name with path.with_name(path.name + '.tmp') "
                "(or str(path) + '.tmp').",
                _save_path_plus_str, error_match="unsupported operand type(s) for +"),
        Mistake("str path used as a Path",
                "`path` may be a str: start with `path = Path(path)` before path.with_name(...) or "
                "path.parent, or build the temp name as str(path) + '.tmp'.",
                _save_str_as_path, error_match="'str' object has no attribute"),
        Mistake("optimizer state missing",
                "store optimizer.state_dict() under 'optimizer': Adam's moments (and the current LR) "
                "are part of the training state; without them the loss jumps after a resume.",
                _save_variant(drop="optimizer"), detect=_code_is("save", "optimizer")),
        Mistake("scheduler missing",
                "store scheduler.state_dict() under 'scheduler': a fresh scheduler restarts the "
                "LR schedule from step 0.",
                _save_variant(drop="scheduler"), detect=_code_is("save", "scheduler")),
        Mistake("RNG state missing",
                "store 'rng': capture_rng_state(generator) so dropout, augmentation and shuffling "
                "continue exactly where they were.",
                _save_variant(drop="rng"), detect=_code_is("save", "rng")),
        Mistake("RNG state missing the DataLoader generator",
                "pass the loader's generator: capture_rng_state(generator). The global seeds do not "
                "decide the shuffle order; that generator does.",
                _save_variant(rng=lambda g: capture_rng_state()), detect=_code_is("save", "generator")),
        Mistake("non-atomic write (torch.save straight onto the path)",
                "write to a temp file next to the target (e.g. path.with_name(path.name + '.tmp')), "
                "flush + os.fsync, then os.replace(tmp, path): readers see the old or the new file, "
                "never half of one.",
                _save_variant(write="in place"), detect=_code_is("save", "atomic")),
        Mistake("non-atomic write: temp file in another folder",
                "create the temp file in the SAME folder as the target (dir=path.parent or "
                "path.with_name(...)); os.replace is atomic only within one filesystem.",
                _save_variant(write="other folder"), detect=_code_is("save", "tmp_folder")),
        Mistake("no os.fsync before os.replace",
                "os.replace is atomic, but without os.fsync the rename can reach the disk before the data: "
                "inside the `with open(tmp, 'wb') as f:` block call f.flush() and os.fsync(f.fileno()).",
                _save_variant(write="no fsync"), detect=_code_is("save", "fsync")),
        Mistake("best_metric converted (None crashes)",
                "best_metric is None until the first validation: store it as it is, without float(...).",
                _save_float_metric, error_match="not 'NoneType'"),
        Mistake("os.rename instead of os.replace",
                "os.rename refuses to overwrite an existing file on Windows: os.replace(tmp, path) "
                "replaces it atomically on every system.",
                _save_with_rename, detect=_code_is("save", "rename")),
        Mistake("stores objects instead of state_dicts",
                "save optimizer.state_dict(), not the optimizer object: weights_only=True loading "
                "accepts tensors, numbers, strings and containers only.",
                _save_variant(drop="optimizer-object"), detect=_code_is("save", "weights_only")),
    ],
    returns=False,
))


# --- 09.load_checkpoint ---------------------------------------------------------------------------
# Restore model, optimizer, scheduler and RNG states safely (weights_only); the candidate is re-run
# on fresh objects inside verify, so the RNG state it leaves behind is seen before anything else.

def load_checkpoint_reference(path, model, optimizer, scheduler, generator, map_location="cpu"):
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    restore_rng_state(checkpoint["rng"], generator)
    return checkpoint


def _load_variant(skip: str):
    def load(path, model, optimizer, scheduler, generator, map_location="cpu"):
        where = "cpu" if skip == "map_location" else map_location
        checkpoint = torch.load(path, map_location=where, weights_only=skip != "weights_only")
        model.load_state_dict(checkpoint["model"])
        if skip != "optimizer":
            optimizer.load_state_dict(checkpoint["optimizer"])
        if skip != "scheduler":
            scheduler.load_state_dict(checkpoint["scheduler"])
        if skip != "rng":
            restore_rng_state(checkpoint["rng"], None if skip == "generator" else generator)
        return checkpoint
    return load


class RecordingMap:
    """A map_location function (storage, location) -> storage on the CPU that records its calls."""

    def __init__(self) -> None:
        self.locations: list[str] = []

    def __call__(self, storage: Any, location: str) -> Any:
        self.locations.append(location)
        return storage

    def __repr__(self) -> str:
        return "<map_location function>"


def _map_location(kind: str) -> Any:
    return RecordingMap() if kind == "function" else "cpu"


def _load_case(seed: int, epochs_done: int, *, on_gpu: bool = False, map_kind: str = "cpu",
               as_str: bool = False):
    """A checkpoint written after `epochs_done` epochs; `on_gpu`: labelled as written on cuda:0."""
    def factory():
        _install_hook()
        path = _case_dir() / "checkpoint.pt"
        run = build(seed, epochs=TOTAL_EPOCHS, n=N_SAMPLES)
        train(run, epochs_done)
        with saved_as_if_on("cuda:0") if on_gpu else contextlib.nullcontext():
            save_checkpoint(path, run.model, run.optimizer, run.scheduler, epoch=run.epoch, step=run.step,
                            best_metric=0.5, generator=run.generator)
        _CASE_INFO[str(path)] = (seed, epochs_done)
        _MAP_KIND[str(path)] = map_kind
        fresh = _fresh_run(seed)
        return ((str(path) if as_str else path, fresh.model, fresh.optimizer, fresh.scheduler, fresh.generator),
                {"map_location": _map_location(map_kind)})
    return factory


_MAP_KIND: dict[str, str] = {}


def _remember_candidate(candidate: Callable[..., Any]) -> None:
    _CANDIDATE["load"] = candidate
    return None


def _load_problem(out: Any, args: tuple) -> tuple[str, str | None]:
    path = Path(args[0])
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(out, dict):
        return "return", t("expected the checkpoint dict (what torch.load returned), found {describe_out}",
                           describe_out=describe(out))
    if out.get("epoch") != saved["epoch"] or out.get("step") != saved["step"]:
        return "return", t("expected the returned dict to say epoch {saved_epoch}, step {saved_step}; found epoch "
                           "{out_get_epoch!r}, step {out_get_step!r}",
                           saved_epoch=saved['epoch'], saved_step=saved['step'],
                           out_get_epoch=out.get("epoch"), out_get_step=out.get("step"))
    seed, done = _CASE_INFO[str(path)]
    run = _fresh_run(seed)
    record: list[str] = []
    params_before = list(run.model.parameters())
    flags_before = [m.training for m in run.model.modules()]
    _FIND_CLASS.append(record)
    map_location = _map_location(_MAP_KIND[str(path)])
    try:  # run the learner's loader again on fresh objects, then look at everything at once
        _CANDIDATE["load"](args[0], run.model, run.optimizer, run.scheduler, run.generator,
                           map_location=map_location)
    finally:
        _FIND_CLASS.remove(record)
    rng_now = capture_rng_state(run.generator)
    flags_now = [m.training for m in run.model.modules()]
    if flags_now != flags_before:
        now = "eval" if not run.model.training else "another"
        return "mode", t("your loader left the model in {now} mode (it came in train mode): loading a checkpoint "
                         "must not switch train/eval, training resumes right after it", now=now)
    if any(p is not q for p, q in zip(run.model.parameters(), params_before)):
        return "assign", t("after loading, the model holds new parameter tensors (load_state_dict(..., "
                           "assign=True)), while the optimizer still updates the old ones: load without assign, so "
                           "the values are copied into the existing parameters")
    if isinstance(map_location, RecordingMap) and not map_location.locations:
        return "map_location", t("the case passed map_location=<a function> and torch.load never called it: pass the "
                                 "map_location argument on, torch.load(path, map_location=map_location, "
                                 "weights_only=True), instead of a fixed value")
    if record:
        example = next((name for name in record if name.startswith("torch.")), record[0])
        return "weights_only", t("your loader unpickled the file with weights_only=False (it looked up {example} "
                                 "through the full pickle machinery, which can run any code)", example=example)
    if not _same(run.model.state_dict(), saved["model"]):
        return "model", t("after loading, the model's weights are not the checkpoint's")
    if not _same(run.optimizer.state_dict(), saved["optimizer"]):
        have = len(run.optimizer.state_dict()["state"])
        return "optimizer", t("after loading, the optimizer holds state for {have} of {len_saved_optimizer_state} "
                              "parameters (Adam's exp_avg/exp_avg_sq were not restored)",
                              have=have, len_saved_optimizer_state=len(saved['optimizer']['state']))
    if not _same(run.scheduler.state_dict(), saved["scheduler"]):
        return "scheduler", t("after loading, scheduler.last_epoch is {run_scheduler_last_epoch}; the checkpoint "
                              "says {saved_scheduler_last_epoch}",
                              run_scheduler_last_epoch=run.scheduler.last_epoch,
                              saved_scheduler_last_epoch=saved["scheduler"]["last_epoch"])
    for key in ("torch", "numpy", "python"):
        if not _same(rng_now[key], saved["rng"][key]):
            return "rng", t("after loading, the global {key} random state is not the one in the checkpoint", key=key)
    if not _same(rng_now["generator"], saved["rng"]["generator"]):
        return "generator", t("after loading, the DataLoader's generator is not in the checkpoint's state")
    train(run, TOTAL_EPOCHS - done)
    diff = _max_diff([p.detach() for p in run.model.parameters()], _straight_params(seed))
    if diff != 0:
        return "resume", t("training on after your load does not reproduce the uninterrupted run (largest parameter "
                           "difference {diff:.3g})", diff=diff)
    return "ok", None


def _load_verify(out, ref, args, kwargs):
    code, problem = _load_problem(out, args)
    _LAST[("load", str(args[0]))] = code
    return problem


register(Exercise(
    "09.load_checkpoint",
    "load_checkpoint(path, model, optimizer, scheduler, generator, map_location='cpu') loads the file "
    "(path a str or a Path, possibly written on a GPU machine) with torch.load(..., "
    "map_location=map_location, weights_only=True), restores the model, optimizer, "
    "scheduler and restore_rng_state(checkpoint['rng'], generator), and returns the checkpoint dict.",
    load_checkpoint_reference,
    # case 2: written on a GPU machine (tensors labelled cuda:0), path as a str; case 3: map_location
    # is a function, which only torch.load itself can apply
    [_load_case(0, 2), _load_case(3, 1, on_gpu=True, as_str=True),
     _load_case(4, 2, on_gpu=True, map_kind="function")],
    _load_verify,
    [
        Mistake("`map_location` ignored",
                "pass the argument on: torch.load(path, map_location=map_location, weights_only=True). A "
                "checkpoint written on a GPU machine remembers 'cuda:0' and does not load without it "
                "on a machine without CUDA.",
                _load_variant("map_location"), detect=_code_is("load", "map_location"),
                error_match="Attempting to deserialize object on a CUDA device"),
        Mistake("optimizer state missing (never loaded)",
                "call optimizer.load_state_dict(checkpoint['optimizer']); a fresh Adam starts with "
                "zero moments and the loss jumps.",
                _load_variant("optimizer"), detect=_code_is("load", "optimizer")),
        Mistake("scheduler missing (never loaded)",
                "call scheduler.load_state_dict(checkpoint['scheduler']) so the LR schedule continues.",
                _load_variant("scheduler"), detect=_code_is("load", "scheduler")),
        Mistake("RNG state missing (not restored)",
                "call restore_rng_state(checkpoint['rng'], generator): dropout, augmentation and "
                "shuffling must continue from the saved random state.",
                _load_variant("rng"), detect=_code_is("load", "rng")),
        Mistake("RNG state missing for the DataLoader generator",
                "pass the generator: restore_rng_state(checkpoint['rng'], generator); it decides the "
                "batch order.",
                _load_variant("generator"), detect=_code_is("load", "generator")),
        Mistake("weights_only=False (unsafe load)",
                "use torch.load(path, map_location=map_location, weights_only=True): a full pickle can "
                "run arbitrary code, and a checkpoint of state_dicts never needs it.",
                _load_variant("weights_only"), detect=_code_is("load", "weights_only")),
    ],
    inspect=_remember_candidate,
))


# --- 09.latest_checkpoint -------------------------------------------------------------------------
# The finished epoch-<n>.pt with the highest n, compared as a number.

_EPOCH_FILE = re.compile(r"epoch-(\d+)\.pt")


def latest_checkpoint_reference(folder):
    found = [(int(m.group(1)), p) for p in Path(folder).iterdir() if (m := _EPOCH_FILE.fullmatch(p.name))]
    return max(found)[1] if found else None


def _latest_text_sort(folder):
    return sorted(Path(folder).glob("epoch-*.pt"))[-1]


def _latest_any_file(folder):
    found = [(int(re.search(r"\d+", p.name).group()), p) for p in Path(folder).iterdir()
             if re.search(r"\d+", p.name)]
    return max(found)[1]


def _latest_mtime(folder):
    return max(Path(folder).glob("epoch-*.pt"), key=lambda p: p.stat().st_mtime)


def _latest_case(files: list[tuple[str, int]], as_str: bool = False):
    """files: (name, mtime offset in seconds); names containing 'tmp' get truncated bytes."""
    def factory():
        folder = _case_dir()
        base = 1_700_000_000
        for name, offset in files:
            target = folder / name
            target.parent.mkdir(exist_ok=True)
            if "tmp" in name:
                target.write_bytes(b"PK\x03\x04 truncated")
            elif name.endswith(".pt"):
                torch.save({"epoch": int(re.sub(r"\D", "", name) or 0)}, target)
            else:
                target.write_text("notes\n")
            os.utime(target, (base + offset, base + offset))
        return (str(folder) if as_str else folder,), {}
    return factory


def _latest_verify(out, ref, args, kwargs):
    folder = Path(args[0])
    names = sorted(p.name for p in folder.iterdir())
    if ref is None:
        if out is not None:
            return t("the folder holds no finished epoch-<n>.pt ({names}): expected None, found "
                     "{describe_out}", names=names or t("it is empty"), describe_out=describe(out))
        return None
    if out is None:
        return t("expected the path of {ref_name} (the folder holds {names}), found None",
                 ref_name=ref.name, names=names)
    if not isinstance(out, (str, os.PathLike)):
        return t("expected a Path, found {describe_out}", describe_out=describe(out))
    if folder.resolve() in Path(out).resolve().parents[1:]:
        return t("found {out}, in a subfolder: only the files directly in the folder count (folder.iterdir() or "
                 "folder.glob(...), not rglob): expected {ref_name}", out=out, ref_name=ref.name)
    if Path(out).name != ref.name and not _EPOCH_FILE.fullmatch(Path(out).name) \
            and (folder / Path(out).name).exists():
        return t("expected {ref_name} (the folder holds {names}), found {path_out_name}, which is not named "
                 "epoch-<n>.pt: match the whole name, re.fullmatch(r'epoch-(\\d+)\\.pt', p.name)",
                 ref_name=ref.name, names=names, path_out_name=Path(out).name)
    if Path(out).name != ref.name:
        return t("expected {ref_name} (the folder holds {names}), found {path_out_name}",
                 ref_name=ref.name, names=names, path_out_name=Path(out).name)
    if not Path(out).is_absolute() and Path(out).resolve() != (folder / ref.name).resolve():
        return t("expected the full path (folder / {ref_name!r}), found only {out!r}: return the Path from "
                 "folder.iterdir() (or Path(folder) / name), not the bare file name", ref_name=ref.name, out=str(out))
    if Path(out).resolve() != (folder / ref.name).resolve():
        return t("expected a file in the folder you were given, found {out}", out=out)
    if not isinstance(out, Path):
        return t("expected a pathlib.Path, found {describe_out}: return the Path itself, not str(path)",
                 describe_out=describe(out))
    return None


def _latest_prefix_parse(folder):
    found = [(int(p.name[len("epoch-"):-len(".pt")]), p) for p in Path(folder).iterdir()
             if p.name.startswith("epoch-")]
    return max(found)[1] if found else None


def _latest_split_every_name(folder):
    return max(Path(folder).iterdir(), key=lambda p: int(p.stem.split("-")[1]))


def _latest_none_on_max(folder):
    found = [(int(m.group(1)), p) for p in Path(folder).iterdir() if (m := _EPOCH_FILE.fullmatch(p.name))]
    return max(found)[1]


def _latest_bare_name(folder):
    found = [(int(m.group(1)), p.name) for p in Path(folder).iterdir() if (m := _EPOCH_FILE.fullmatch(p.name))]
    return max(found)[1] if found else None


register(Exercise(
    "09.latest_checkpoint",
    "latest_checkpoint(folder) (a str or a Path) returns the full Path of the finished checkpoint named "
    "epoch-<n>.pt with the highest n (n compared as a number), or None when there is none; temp files, "
    "best.pt and other files are ignored.",
    latest_checkpoint_reference,
    [_latest_case([("epoch-1.pt", 1), ("epoch-2.pt", 2), ("epoch-3.pt", 3)]),
     _latest_case([("epoch-8.pt", 1), ("epoch-9.pt", 2), ("epoch-10.pt", 3), ("epoch-11.pt", 4),
                   ("best.pt", 5), ("notes.txt", 6)], as_str=True),
     _latest_case([("epoch-9.pt", 1), ("epoch-10.pt", 2), ("epoch-11.pt.tmp", 3),
                   (".epoch-12.pt.k3x9.tmp", 4)]),
     _latest_case([("epoch-5.pt", 1), ("epoch-3.pt", 2), ("epoch-4.pt", 5), ("best.pt", 3)]),
     _latest_case([("best.pt", 1), ("epoch-1.pt.tmp", 2), ("notes.txt", 3)]),  # nothing finished yet
     _latest_case([], as_str=True),  # a new run: the folder is empty
     # an old run kept in a subfolder, and a .pt file with another name: both are not this run's epochs
     _latest_case([("epoch-2.pt", 1), ("epoch-7.pt", 2), ("old/epoch-20.pt", 3), ("model-30.pt", 4)])],
    _latest_verify,
    [
        Mistake("fails when there is no checkpoint yet",
                "a new run starts with an empty folder (or only temp files): return None when no "
                "epoch-<n>.pt is there, e.g. `return max(found)[1] if found else None`.",
                _latest_none_on_max, error_match="empty"),
        Mistake("returns the bare file name, not the full path",
                "return the Path itself (folder.iterdir() yields full paths), or Path(folder) / name.",
                _latest_bare_name,
                detect=lambda out, a, k: isinstance(out, (str, os.PathLike)) and not Path(out).is_absolute()
                and (Path(a[0]) / out).exists()),
        Mistake("sorts the numbers as text (epoch-9 after epoch-10)",
                "as text '9' > '10'; parse the number: int(re.fullmatch(r'epoch-(\\d+)\\.pt', name).group(1)).",
                _latest_text_sort),
        Mistake("picks up a temp/partial file",
                "only names that are exactly epoch-<n>.pt count; a file ending in .tmp is a save that "
                "never finished (use re.fullmatch, not a prefix test).",
                _latest_any_file),
        Mistake("parses the number out of a temp file name",
                "'epoch-11.pt.tmp'.startswith('epoch-') is True too: match the whole name, "
                "re.fullmatch(r'epoch-(\\d+)\\.pt', p.name), before int(...).",
                _latest_prefix_parse, error_match="invalid literal for int()"),
        Mistake("parses every file name (best.pt, notes.txt)",
                "best.pt and notes.txt are not an epoch-<n>.pt: 'best'.split('-')[1] does not exist. Keep only the "
                "names re.fullmatch(r'epoch-(\\d+)\\.pt', p.name) accepts, then parse their number.",
                _latest_split_every_name, error_match="list index out of range"),
        Mistake("uses modification time",
                "copying or touching files changes mtimes; the step number in the name is the truth.",
                _latest_mtime),
    ],
))


# --- 09.clean_state_dict --------------------------------------------------------------------------
# Strip the 'module.' and '_orig_mod.' wrapper prefixes from state_dict keys.

_PREFIXES = ("module.", "_orig_mod.")


def clean_state_dict_reference(state_dict):
    cleaned = OrderedDict()
    for key, value in state_dict.items():
        while key.startswith(_PREFIXES):
            key = key.removeprefix("module.").removeprefix("_orig_mod.")
        cleaned[key] = value
    return cleaned


def _clean_replace(state_dict):
    return OrderedDict((k.replace("module.", "").replace("_orig_mod.", ""), v) for k, v in state_dict.items())


def _clean_module_only(state_dict):
    return OrderedDict((k.removeprefix("module."), v) for k, v in state_dict.items())


def _clean_once(state_dict):
    return OrderedDict((k.removeprefix("module.").removeprefix("_orig_mod."), v) for k, v in state_dict.items())


def _clean_in_place(state_dict):
    for key in list(state_dict):
        state_dict[clean_state_dict_reference({key: 0}).popitem()[0]] = state_dict.pop(key)
    return state_dict


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(3, 2)
        self.submodule = nn.Linear(2, 1)
        self.module_list = nn.Linear(1, 1)  # starts with "module" but not with "module."
        self.norm = nn.BatchNorm1d(1)      # an int64 buffer (num_batches_tracked)
        self.double()                      # float64 values


def _clean_case(prefix: str):
    def factory():
        torch.manual_seed(len(prefix))
        sd = _Block().state_dict()
        wrapped = OrderedDict((prefix + k, v) for k, v in sd.items())
        wrapped.original_keys = tuple(wrapped)  # to spot in-place changes
        return (wrapped,), {}
    return factory


def _clean_verify(out, ref, args, kwargs):
    (given,) = args
    if not isinstance(out, dict):
        return t("expected a dict, found {describe_out}", describe_out=describe(out))
    if list(out) != list(ref):
        keys, given_keys = list(out), list(given)
        if keys == [k.lstrip("module.").lstrip("_orig_mod.") for k in given_keys] or \
                keys == [k.lstrip("_orig_mod.").lstrip("module.") for k in given_keys]:
            return t("str.lstrip('module.') strips any of the characters m, o, d, u, l, e, '.' from the start, not "
                     "the prefix: expected keys {list_ref}, found {keys}; use key.removeprefix('module.')",
                     list_ref=list(ref), keys=keys)
        for want, have in zip(ref, keys):
            if want != have and want.startswith(("module", "_orig_mod")):
                return t("{want!r} starts with 'module' but not with the prefix 'module.' (with the dot): strip only "
                         "whole prefixes 'module.' and '_orig_mod.'; expected keys {list_ref}, found {keys}",
                         want=want, list_ref=list(ref), keys=keys)
        return t("expected keys {list_ref}, found {keys}", list_ref=list(ref), keys=keys)
    for key in ref:
        if not (isinstance(out[key], torch.Tensor) and out[key].dtype == ref[key].dtype
                and out[key].shape == ref[key].shape and torch.equal(out[key], ref[key])):
            return t("the value of {key!r} changed ({describe_out_key}, expected {describe_ref_key}): keep the "
                     "values unchanged, only the keys change",
                     key=key, describe_out_key=describe(out[key]), describe_ref_key=describe(ref[key]))
    if tuple(given) != given.original_keys:
        return t("your function changed the caller's state_dict; build and return a new dict")
    return None


register(Exercise(
    "09.clean_state_dict",
    "clean_state_dict(state_dict) returns a NEW dict with the wrapper prefixes 'module.' "
    "(DataParallel/DDP) and '_orig_mod.' (torch.compile) removed from the START of each key, "
    "repeatedly, in any order; values and order unchanged.",
    clean_state_dict_reference,
    [_clean_case("module."), _clean_case(""), _clean_case("_orig_mod."),
     _clean_case("_orig_mod.module."), _clean_case("module._orig_mod.")],
    _clean_verify,
    [
        Mistake("replaces the prefix anywhere in the key",
                "key.replace('module.', '') also edits 'submodule.weight'; strip from the start only "
                "(key.removeprefix or key[len(prefix):] after key.startswith(prefix)).",
                _clean_replace),
        Mistake("only strips 'module.' (torch.compile's '_orig_mod.' stays)",
                "a compiled model's keys start with '_orig_mod.'; strip both prefixes.",
                _clean_module_only),
        Mistake("strips only one layer of wrappers",
                "a compiled DDP model has '_orig_mod.module.' (or the reverse); strip in a loop "
                "until no prefix is left.",
                _clean_once),
        Mistake("changes the caller's dict in place",
                "build a new OrderedDict instead of popping and re-inserting keys in the one you got.",
                _clean_in_place),
    ],
))
