"""08.save_checkpoint: write the full training state atomically; checked by resuming from it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch

from course_utils.checkpoint import capture_rng_state, load_checkpoint
from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.resume_demo import build, train

from ._common import (
    N_SAMPLES, TOTAL_EPOCHS, _CASE_INFO, _LAST, _RENAMES, _case_dir, _code_is, _fresh_run,
    _install_hook, _max_diff, _same, _straight_params,
)


# --- 08.save_checkpoint -------------------------------------------------------------------------

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


def _save_case(seed: int, epochs_done: int):
    def factory():
        _install_hook()
        folder = _case_dir() / "checkpoints"
        folder.mkdir()
        path = folder / "last.pt"
        torch.save({"epoch": epochs_done - 1, "note": "the previous checkpoint"}, path)
        _RENAMES[os.path.realpath(folder)] = []
        run = build(seed, epochs=TOTAL_EPOCHS, n=N_SAMPLES)
        train(run, epochs_done)
        _CASE_INFO[str(path)] = (seed, epochs_done)
        return ((path, run.model, run.optimizer, run.scheduler, run.generator),
                {"epoch": run.epoch, "step": run.step, "best_metric": round(0.9 / (1 + epochs_done), 4)})
    return factory


_NEEDED = {"model": "the weights (model.state_dict())",
           "optimizer": "Adam's moments and the current LR (optimizer.state_dict())",
           "scheduler": "where the LR schedule is (scheduler.state_dict())",
           "epoch": "the epoch counter", "step": "the step counter", "best_metric": "the best metric so far",
           "rng": "the random states (capture_rng_state(generator))"}


def _save_problem(out: Any, ref: Path, args: tuple, kwargs: dict) -> tuple[str, str | None]:
    path = Path(args[0])
    if not isinstance(out, (str, os.PathLike)) or Path(out).resolve() != path.resolve():
        return "return", f"expected your function to return the path it wrote ({path.name}), found {describe(out)}"
    try:
        ckpt = torch.load(path, weights_only=True)
    except Exception as exc:
        text = str(exc)
        refused = text.split("Unsupported global: ")[-1].split(" was not")[0].removeprefix("GLOBAL ")
        reason = (f"it contains a {refused} object, not only tensors, numbers, strings and containers"
                  if "Unsupported global" in text else text.strip().splitlines()[0][:160])
        return "weights_only", f"torch.load(path, weights_only=True) refused your file: {reason}"
    if not isinstance(ckpt, dict) or ckpt.get("note") == "the previous checkpoint":
        return "unchanged", f"{path.name} does not hold your new checkpoint dict: write it to `path`"
    for key in _NEEDED:
        if key not in ckpt:
            code = key if key in ("optimizer", "scheduler", "rng") else "keys"
            return code, (f"your checkpoint has no {key!r} entry (found keys {sorted(ckpt)}); "
                          f"a resume needs {_NEEDED[key]}")
    expected = torch.load(ref, weights_only=True)
    for key in ("model", "optimizer", "scheduler", "epoch", "step", "best_metric"):
        if not _same(ckpt[key], expected[key]):
            return "keys", f"the {key!r} entry does not hold {_NEEDED[key]} as it was at save time"
    rng = ckpt["rng"]
    if isinstance(rng, dict) and rng.get("generator") is None:
        return "generator", ("your 'rng' entry has no DataLoader generator state: after a resume "
                             "the batches would come in a different order")
    if not _same(rng, expected["rng"]):
        return "rng_wrong", "the 'rng' entry is not capture_rng_state(generator) taken at save time"
    seed, done = _CASE_INFO[str(path)]
    run = _fresh_run(seed)
    load_checkpoint(path, run.model, run.optimizer, run.scheduler, generator=run.generator)
    train(run, TOTAL_EPOCHS - done)
    diff = _max_diff([p.detach() for p in run.model.parameters()], _straight_params(seed))
    if diff != 0:
        return "resume", (f"resuming from your checkpoint does not reproduce the uninterrupted run "
                          f"(largest parameter difference {diff:.3g})")
    real = os.path.realpath(path)
    arrived = [src for src, dst in _RENAMES.get(os.path.dirname(real), []) if dst == real]
    if not arrived:
        return "atomic", (f"non-atomic write: nothing was os.replace()-d onto {path.name}, so the previous "
                          f"checkpoint was overwritten in place; a crash mid-write leaves a truncated file")
    if os.path.dirname(arrived[-1]) != os.path.dirname(real):
        return "tmp_folder", (f"your temp file was in {os.path.dirname(arrived[-1])}, not next to {path.name}: "
                              f"os.replace is only atomic within one filesystem (and fails across them)")
    leftovers = sorted(p.name for p in path.parent.iterdir() if p.name != path.name)
    if leftovers:
        return "leftover", f"files left next to your checkpoint: {leftovers}; the temp file must be renamed"
    return "ok", None


def _save_verify(out, ref, args, kwargs):
    code, problem = _save_problem(out, ref, args, kwargs)
    _LAST[("save", str(args[0]))] = code
    return problem


register(Exercise(
    "08.save_checkpoint",
    "save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric) writes "
    "{'model', 'optimizer', 'scheduler' (state_dicts), 'epoch', 'step', 'best_metric', "
    "'rng': capture_rng_state(generator)} atomically (temp file in the same folder, then os.replace) "
    "and returns the Path.",
    save_checkpoint_reference,
    [_save_case(0, 2), _save_case(1, 1), _save_case(2, 2)],
    _save_verify,
    [
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
        Mistake("stores objects instead of state_dicts",
                "save optimizer.state_dict(), not the optimizer object: weights_only=True loading "
                "accepts tensors, numbers, strings and containers only.",
                _save_variant(drop="optimizer-object"), detect=_code_is("save", "weights_only")),
    ],
))
