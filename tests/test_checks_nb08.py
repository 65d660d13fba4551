"""Notebook 08's checkers: wrong (and right) answers beyond the registered mistake examples: other
atomic-write styles, leftovers, copies, RNG consumed after restoring, relative paths (required ids and
mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

import course_utils.checkpoint as ck
from course_utils.checks import nb08
from course_utils.exercises import check, get_exercise


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _checkpoint_dict(model, optimizer, scheduler, generator, epoch, step, best_metric):
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
            "best_metric": best_metric, "rng": ck.capture_rng_state(generator)}


# --- save -------------------------------------------------------------------------------------

def save_named_tempfile(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    path = Path(path)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".part") as f:
        torch.save(_checkpoint_dict(model, optimizer, scheduler, generator, epoch, step, best_metric), f)
        f.flush()
        os.fsync(f.fileno())
    Path(f.name).replace(path)
    return path


def save_with_library(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    return ck.save_checkpoint(path, model, optimizer, scheduler, epoch=epoch, step=step,
                              best_metric=best_metric, generator=generator)


def save_then_copy(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    tmp = Path(path).with_name("staging.pt")
    torch.save(_checkpoint_dict(model, optimizer, scheduler, generator, epoch, step, best_metric), tmp)
    shutil.copyfile(tmp, path)  # copying onto the target rewrites it in place
    tmp.unlink()
    return path


def save_leaving_temp(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    path = Path(path)
    state = _checkpoint_dict(model, optimizer, scheduler, generator, epoch, step, best_metric)
    torch.save(state, path.with_name("a.tmp"))
    torch.save(state, path.with_name("b.tmp"))
    os.replace(path.with_name("a.tmp"), path)
    return path


def save_wrong_epoch(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    return save_with_library(path, model, optimizer, scheduler, generator, epoch + 1, step, best_metric)


def save_returns_nothing_useful(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
    save_with_library(path, model, optimizer, scheduler, generator, epoch, step, best_metric)
    return str(path) + ".bak"


@pytest.mark.parametrize("candidate", [save_named_tempfile, save_with_library])
def test_other_correct_saves_pass(candidate) -> None:
    result = check("08.save_checkpoint", candidate)
    assert result.status == "ok", result.message


@pytest.mark.parametrize("candidate, words", [
    (save_then_copy, "Hint (non-atomic write (torch.save straight onto the path))"),
    (save_leaving_temp, "files left next to your checkpoint: ['b.tmp']"),
    (save_wrong_epoch, "'epoch' entry"),
    (save_returns_nothing_useful, "return the path it wrote"),
])
def test_wrong_saves_fail_with_a_reason(candidate, words: str) -> None:
    result = check("08.save_checkpoint", candidate)
    assert result.status == "fail" and words in result.message, result.message
    assert "Traceback" not in result.message


def test_save_feedback_names_the_missing_entry() -> None:
    mistake = next(m for m in get_exercise("08.save_checkpoint").mistakes
                   if m.name == "optimizer state missing")
    message = check("08.save_checkpoint", mistake.example).message
    assert "has no 'optimizer' entry" in message and "Adam's moments" in message


# --- load -------------------------------------------------------------------------------------

def load_with_library(path, model, optimizer, scheduler, generator, map_location="cpu"):
    return ck.load_checkpoint(path, model, optimizer, scheduler, generator=generator,
                              map_location=map_location)


def load_then_draw(path, model, optimizer, scheduler, generator, map_location="cpu"):
    checkpoint = load_with_library(path, model, optimizer, scheduler, generator, map_location)
    torch.rand(1)  # consumes the restored torch RNG: the run is no longer the same
    return checkpoint


def load_model_only(path, model, optimizer, scheduler, generator, map_location="cpu"):
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    return checkpoint


def load_returns_epoch(path, model, optimizer, scheduler, generator, map_location="cpu"):
    return load_with_library(path, model, optimizer, scheduler, generator, map_location)["epoch"]


def test_library_loader_passes() -> None:
    result = check("08.load_checkpoint", load_with_library)
    assert result.status == "ok", result.message


@pytest.mark.parametrize("candidate, words", [
    (load_then_draw, "global torch random state"),
    (load_model_only, "Hint (optimizer state missing (never loaded))"),
    (load_returns_epoch, "expected the checkpoint dict"),
])
def test_wrong_loads_fail_with_a_reason(candidate, words: str) -> None:
    result = check("08.load_checkpoint", candidate)
    assert result.status == "fail" and words in result.message, result.message


def test_unsafe_load_is_seen_through_the_audit_hook() -> None:
    mistake = next(m for m in get_exercise("08.load_checkpoint").mistakes if "weights_only" in m.name)
    message = check("08.load_checkpoint", mistake.example).message
    assert "weights_only=False" in message and "torch._utils._rebuild_tensor_v2" in message


# --- latest / clean -----------------------------------------------------------------------------

def latest_as_relative_name(folder):
    return nb08.latest_checkpoint_reference(folder).name


def latest_in_other_folder(folder):
    return Path(tempfile.gettempdir()) / nb08.latest_checkpoint_reference(folder).name


def test_latest_accepts_a_name_and_rejects_another_folder() -> None:
    assert check("08.latest_checkpoint", latest_as_relative_name).status == "ok"
    result = check("08.latest_checkpoint", latest_in_other_folder)
    assert result.status == "fail" and "folder you were given" in result.message


def test_clean_accepts_plain_dict_and_rejects_cloned_keys_order() -> None:
    def plain(sd):
        return {k.removeprefix("module.").removeprefix("_orig_mod.").removeprefix("module."): v
                for k, v in sd.items()}

    def reversed_order(sd):
        return OrderedDict(reversed(list(nb08.clean_state_dict_reference(sd).items())))

    assert check("08.clean_state_dict", plain).status == "ok"
    result = check("08.clean_state_dict", reversed_order)
    assert result.status == "fail" and "expected keys" in result.message
