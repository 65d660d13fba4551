"""08.load_checkpoint: restore model, optimizer, scheduler and RNG states safely (weights_only).

``load_checkpoint`` is re-run on fresh objects inside ``verify``, so the global RNG state it
leaves behind is inspected before anything else touches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch

from course_utils.checkpoint import capture_rng_state, restore_rng_state, save_checkpoint
from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.resume_demo import build, train

from ._common import (
    N_SAMPLES, TOTAL_EPOCHS, _CANDIDATE, _CASE_INFO, _FIND_CLASS, _LAST, _case_dir, _code_is,
    _fresh_run, _install_hook, _max_diff, _same, _straight_params,
)


# --- 08.load_checkpoint -------------------------------------------------------------------------

def load_checkpoint_reference(path, model, optimizer, scheduler, generator, map_location="cpu"):
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    restore_rng_state(checkpoint["rng"], generator)
    return checkpoint


def _load_variant(skip: str):
    def load(path, model, optimizer, scheduler, generator, map_location="cpu"):
        checkpoint = torch.load(path, map_location=map_location, weights_only=skip != "weights_only")
        model.load_state_dict(checkpoint["model"])
        if skip != "optimizer":
            optimizer.load_state_dict(checkpoint["optimizer"])
        if skip != "scheduler":
            scheduler.load_state_dict(checkpoint["scheduler"])
        if skip != "rng":
            restore_rng_state(checkpoint["rng"], None if skip == "generator" else generator)
        return checkpoint
    return load


def _load_case(seed: int, epochs_done: int):
    def factory():
        _install_hook()
        path = _case_dir() / "checkpoint.pt"
        run = build(seed, epochs=TOTAL_EPOCHS, n=N_SAMPLES)
        train(run, epochs_done)
        save_checkpoint(path, run.model, run.optimizer, run.scheduler, epoch=run.epoch, step=run.step,
                        best_metric=0.5, generator=run.generator)
        _CASE_INFO[str(path)] = (seed, epochs_done)
        fresh = _fresh_run(seed)
        return (path, fresh.model, fresh.optimizer, fresh.scheduler, fresh.generator), {"map_location": "cpu"}
    return factory


def _remember_candidate(candidate: Callable[..., Any]) -> None:
    _CANDIDATE["load"] = candidate
    return None


def _load_problem(out: Any, args: tuple) -> tuple[str, str | None]:
    path = Path(args[0])
    saved = torch.load(path, weights_only=True)
    if not isinstance(out, dict):
        return "return", f"expected the checkpoint dict (what torch.load returned), found {describe(out)}"
    if out.get("epoch") != saved["epoch"] or out.get("step") != saved["step"]:
        return "return", (f"expected the returned dict to say epoch {saved['epoch']}, step {saved['step']}; "
                          f"found epoch {out.get('epoch')!r}, step {out.get('step')!r}")
    seed, done = _CASE_INFO[str(path)]
    run = _fresh_run(seed)
    record: list[str] = []
    _FIND_CLASS.append(record)
    try:  # run the learner's loader again on fresh objects, then look at everything at once
        _CANDIDATE["load"](path, run.model, run.optimizer, run.scheduler, run.generator, map_location="cpu")
    finally:
        _FIND_CLASS.remove(record)
    rng_now = capture_rng_state(run.generator)
    if record:
        example = next((name for name in record if name.startswith("torch.")), record[0])
        return "weights_only", (f"your loader unpickled the file with weights_only=False (it looked up "
                                f"{example} through the full pickle machinery, which can run any code)")
    if not _same(run.model.state_dict(), saved["model"]):
        return "model", "after loading, the model's weights are not the checkpoint's"
    if not _same(run.optimizer.state_dict(), saved["optimizer"]):
        have = len(run.optimizer.state_dict()["state"])
        return "optimizer", (f"after loading, the optimizer holds state for {have} of "
                             f"{len(saved['optimizer']['state'])} parameters (Adam's exp_avg/exp_avg_sq "
                             f"were not restored)")
    if not _same(run.scheduler.state_dict(), saved["scheduler"]):
        return "scheduler", (f"after loading, scheduler.last_epoch is {run.scheduler.last_epoch}; the "
                             f"checkpoint says {saved['scheduler']['last_epoch']}")
    for key in ("torch", "numpy", "python"):
        if not _same(rng_now[key], saved["rng"][key]):
            return "rng", f"after loading, the global {key} random state is not the one in the checkpoint"
    if not _same(rng_now["generator"], saved["rng"]["generator"]):
        return "generator", "after loading, the DataLoader's generator is not in the checkpoint's state"
    train(run, TOTAL_EPOCHS - done)
    diff = _max_diff([p.detach() for p in run.model.parameters()], _straight_params(seed))
    if diff != 0:
        return "resume", (f"training on after your load does not reproduce the uninterrupted run "
                          f"(largest parameter difference {diff:.3g})")
    return "ok", None


def _load_verify(out, ref, args, kwargs):
    code, problem = _load_problem(out, args)
    _LAST[("load", str(args[0]))] = code
    return problem


register(Exercise(
    "08.load_checkpoint",
    "load_checkpoint(path, model, optimizer, scheduler, generator, map_location='cpu') loads the file "
    "with torch.load(..., map_location=map_location, weights_only=True), restores the model, optimizer, "
    "scheduler and restore_rng_state(checkpoint['rng'], generator), and returns the checkpoint dict.",
    load_checkpoint_reference,
    [_load_case(0, 2), _load_case(3, 1), _load_case(4, 2)],
    _load_verify,
    [
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
