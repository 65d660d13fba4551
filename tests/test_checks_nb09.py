"""Notebook 09's checkers: wrong (and right) answers beyond the registered mistake examples: other
atomic-write styles, leftovers, copies, RNG consumed after restoring, relative paths (required ids and
mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

import course_utils.checkpoint as ck
from course_utils.checks import nb09
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


@pytest.mark.parametrize("candidate", [save_named_tempfile, save_with_library, save_returns_nothing_useful])
def test_other_correct_saves_pass(candidate) -> None:
    result = check("09.save_checkpoint", candidate)
    assert result.status == "ok", result.message


@pytest.mark.parametrize("candidate, words", [
    (save_then_copy, "Hint (non-atomic write (torch.save straight onto the path))"),
    (save_leaving_temp, "files left next to your checkpoint: ['b.tmp']"),
    (save_wrong_epoch, "'epoch' entry"),
])
def test_wrong_saves_fail_with_a_reason(candidate, words: str) -> None:
    result = check("09.save_checkpoint", candidate)
    assert result.status == "fail" and words in result.message, result.message
    assert "Traceback" not in result.message


def test_save_feedback_names_the_missing_entry() -> None:
    mistake = next(m for m in get_exercise("09.save_checkpoint").mistakes
                   if m.name == "optimizer state missing")
    message = check("09.save_checkpoint", mistake.example).message
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
    result = check("09.load_checkpoint", load_with_library)
    assert result.status == "ok", result.message


@pytest.mark.parametrize("candidate, words", [
    (load_then_draw, "global torch random state"),
    (load_model_only, "Hint (optimizer state missing (never loaded))"),
    (load_returns_epoch, "expected the checkpoint dict"),
])
def test_wrong_loads_fail_with_a_reason(candidate, words: str) -> None:
    result = check("09.load_checkpoint", candidate)
    assert result.status == "fail" and words in result.message, result.message


def test_unsafe_load_is_seen_through_the_audit_hook() -> None:
    mistake = next(m for m in get_exercise("09.load_checkpoint").mistakes if "weights_only" in m.name)
    message = check("09.load_checkpoint", mistake.example).message
    assert "weights_only=False" in message and "torch._utils._rebuild_tensor_v2" in message


# --- latest / clean -----------------------------------------------------------------------------

def latest_as_relative_name(folder):
    return nb09.latest_checkpoint_reference(folder).name


def latest_in_other_folder(folder):
    return Path(tempfile.gettempdir()) / nb09.latest_checkpoint_reference(folder).name


def test_latest_wants_the_full_path_in_the_given_folder() -> None:
    result = check("09.latest_checkpoint", latest_as_relative_name)
    assert result.status == "fail" and "full path" in result.message, result.message
    result = check("09.latest_checkpoint", latest_in_other_folder)
    assert result.status == "fail" and "folder you were given" in result.message


def test_clean_accepts_plain_dict_and_rejects_cloned_keys_order() -> None:
    def plain(sd):
        return {k.removeprefix("module.").removeprefix("_orig_mod.").removeprefix("module."): v
                for k, v in sd.items()}

    def reversed_order(sd):
        return OrderedDict(reversed(list(nb09.clean_state_dict_reference(sd).items())))

    assert check("09.clean_state_dict", plain).status == "ok"
    result = check("09.clean_state_dict", reversed_order)
    assert result.status == "fail" and "expected keys" in result.message


# --- learners' answers: wrong ones must FAIL with a message naming the fix, right ones must pass ---

def _save(*, keys=("model", "optimizer", "scheduler", "epoch", "step", "best_metric", "rng"), write="atomic",
          rng="generator", objects=False):
    def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
        full = {"model": model.state_dict(), "optimizer": optimizer if objects else optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step, "best_metric": best_metric,
                "rng": ck.capture_rng_state(generator if rng == "generator" else None)}
        checkpoint = {k: v for k, v in full.items() if k in keys}
        if write == "direct":
            torch.save(checkpoint, path)
        elif write == "mkstemp":
            fd, tmp = tempfile.mkstemp()
            with os.fdopen(fd, "wb") as f:
                torch.save(checkpoint, f)
            os.replace(tmp, path)
        elif write == "str":
            tmp = str(path) + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        elif write == "with_name":
            tmp = path.with_name(path.name + ".tmp")
            _durable_save(checkpoint, tmp)
            os.replace(tmp, path)
        elif write == "no fsync":
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            torch.save(checkpoint, tmp)
            os.replace(tmp, path)
        elif write == "plus":
            tmp = path + ".tmp"
            torch.save(checkpoint, tmp)
            os.replace(tmp, path)
        else:
            path = Path(path)
            tmp = path.parent / (path.name + ".tmp")
            _durable_save(checkpoint, tmp)
            tmp.replace(path)
    return save_checkpoint


def _durable_save(checkpoint, tmp) -> None:
    """torch.save to a file path, then os.fsync it through a descriptor of its own (a right idiom too)."""
    torch.save(checkpoint, tmp)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load(*, skip=(), where="argument", weights_only=True, ret="checkpoint"):
    def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
        options = {"weights_only": weights_only}
        if where == "argument":
            options["map_location"] = map_location
        elif where == "cpu":
            options["map_location"] = "cpu"
        checkpoint = torch.load(path, **options)
        model.load_state_dict(checkpoint["model"])
        if "optimizer" not in skip:
            optimizer.load_state_dict(checkpoint["optimizer"])
        if "scheduler" not in skip:
            scheduler.load_state_dict(checkpoint["scheduler"])
        if "rng" not in skip:
            ck.restore_rng_state(checkpoint["rng"], None if "generator" in skip else generator)
        if ret == "epoch":
            return checkpoint["epoch"]
        if ret == "none":
            return None
        return checkpoint
    return load_checkpoint


def _latest(*, parse="fullmatch", pick="max", path="full", empty="none"):
    def latest_checkpoint(folder):
        folder = Path(folder)
        if parse == "text":
            found = [(p.name, p) for p in folder.glob("epoch-*.pt")]
        elif parse == "digits":
            found = [(int(re.search(r"\d+", p.name).group()), p) for p in folder.iterdir()
                     if re.search(r"\d+", p.name)]
        elif parse == "mtime":
            found = [(p.stat().st_mtime, p) for p in folder.glob("epoch-*.pt")]
        elif parse == "prefix":
            found = [(int(p.name[6:-3]), p) for p in folder.iterdir() if p.name.startswith("epoch-")]
        else:
            found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := re.fullmatch(r"epoch-(\d+)\.pt", p.name))]
        if not found and empty == "none":
            return None
        best = (max(found) if pick == "max" else min(found))[1]
        return best.name if path == "name" else best
    return latest_checkpoint


def _clean(how):
    def clean_state_dict(state_dict):
        if how == "replace":
            return {k.replace("module.", "").replace("_orig_mod.", ""): v for k, v in state_dict.items()}
        if how == "lstrip":
            return {k.lstrip("module.").lstrip("_orig_mod."): v for k, v in state_dict.items()}
        if how == "split":
            return {k.split(".", 1)[1]: v for k, v in state_dict.items()}
        if how == "slice":
            return {k[len("module."):]: v for k, v in state_dict.items()}
        if how == "regex once":
            return {re.sub(r"^(module\.|_orig_mod\.)", "", k): v for k, v in state_dict.items()}
        if how == "module only":
            return {k.removeprefix("module."): v for k, v in state_dict.items()}
        if how == "in place":
            torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "module.")
            torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "_orig_mod.")
            return state_dict
        if how == "keys":
            return [k.removeprefix("module.").removeprefix("_orig_mod.") for k in state_dict]
        if how == "sorted":
            return dict(sorted(nb09.clean_state_dict_reference(state_dict).items()))
        raise ValueError(how)
    return clean_state_dict


WRONG = [
    ("09.save_checkpoint", _save(write="direct"), ["non-atomic", "os.replace"]),
    ("09.save_checkpoint", _save(write="mkstemp"), ["SAME folder"]),
    ("09.save_checkpoint", _save(keys=("model", "scheduler", "epoch", "step", "best_metric", "rng")),
     ["no 'optimizer' entry"]),
    ("09.save_checkpoint", _save(keys=("model", "optimizer", "epoch", "step", "best_metric", "rng")),
     ["no 'scheduler' entry"]),
    ("09.save_checkpoint", _save(keys=("model", "optimizer", "scheduler", "epoch", "step", "best_metric")),
     ["no 'rng' entry"]),
    ("09.save_checkpoint", _save(keys=("model", "optimizer", "scheduler", "rng")), ["no 'epoch' entry"]),
    ("09.save_checkpoint", _save(rng="global"), ["generator"]),
    ("09.save_checkpoint", _save(objects=True), ["weights_only=True", "state_dict()"]),
    ("09.save_checkpoint", _save(write="with_name"), ["test case 2", "Path(path)"]),
    ("09.save_checkpoint", _save(write="plus"), ["with_name"]),
    ("09.save_checkpoint", save_then_copy, ["non-atomic"]),
    ("09.save_checkpoint", _save(write="no fsync"), ["os.fsync", "f.flush()"]),
    ("09.load_checkpoint", _load(skip=("optimizer",)), ["optimizer.load_state_dict"]),
    ("09.load_checkpoint", _load(skip=("scheduler",)), ["scheduler.load_state_dict"]),
    ("09.load_checkpoint", _load(skip=("rng",)), ["restore_rng_state"]),
    ("09.load_checkpoint", _load(skip=("generator",)), ["generator"]),
    ("09.load_checkpoint", _load(weights_only=False), ["weights_only=True"]),
    ("09.load_checkpoint", _load(where="none"), ["test case 2", "map_location=map_location"]),
    ("09.load_checkpoint", _load(where="cpu"), ["test case 3", "map_location=map_location"]),
    ("09.load_checkpoint", _load(skip=("optimizer", "scheduler", "rng")), ["optimizer"]),
    ("09.load_checkpoint", _load(ret="epoch"), ["checkpoint dict"]),
    ("09.load_checkpoint", _load(ret="none"), ["forget `return`"]),
    ("09.load_checkpoint", load_then_draw, ["random state"]),
    ("09.latest_checkpoint", _latest(parse="text"), ["as text"]),
    ("09.latest_checkpoint", _latest(parse="digits"), ["temp"]),
    ("09.latest_checkpoint", _latest(parse="mtime"), ["mtimes"]),
    ("09.latest_checkpoint", _latest(parse="prefix"), ["re.fullmatch"]),
    ("09.latest_checkpoint", _latest(pick="min"), ["expected epoch-3.pt"]),
    ("09.latest_checkpoint", _latest(path="name"), ["full path"]),
    ("09.latest_checkpoint", _latest(empty="raise"), ["test case 5", "return None"]),
    ("09.clean_state_dict", _clean("replace"), ["start only"]),
    ("09.clean_state_dict", _clean("lstrip"), ["expected keys"]),
    ("09.clean_state_dict", _clean("split"), ["expected keys"]),
    ("09.clean_state_dict", _clean("slice"), ["expected keys"]),
    ("09.clean_state_dict", _clean("regex once"), ["in a loop"]),
    ("09.clean_state_dict", _clean("module only"), ["_orig_mod."]),
    ("09.clean_state_dict", _clean("in place"), ["in place"]),
    ("09.clean_state_dict", _clean("keys"), ["expected a dict"]),
    ("09.clean_state_dict", _clean("sorted"), ["expected keys"]),
]


@pytest.mark.parametrize(("exercise_id", "wrong", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_learners_wrong_answers_fail_with_a_message_naming_the_fix(exercise_id, wrong, words) -> None:
    result = check(exercise_id, wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


def _latest_glob(folder):
    candidates = sorted(Path(folder).glob("epoch-*.pt"), key=lambda p: int(p.stem.split("-")[1]))
    return candidates[-1] if candidates else None


def _latest_os_path(folder):
    best, best_n = None, -1
    for name in os.listdir(folder):
        m = re.match(r"epoch-(\d+)\.pt$", name)
        if m and int(m.group(1)) > best_n:
            best, best_n = os.path.join(folder, name), int(m.group(1))
    return Path(best) if best else None  # the task asks for a Path


RIGHT = [
    ("09.save_checkpoint", _save()),
    ("09.save_checkpoint", _save(write="str")),
    ("09.load_checkpoint", _load()),
    ("09.latest_checkpoint", _latest()),
    ("09.latest_checkpoint", _latest_glob),
    ("09.latest_checkpoint", _latest_os_path),
    ("09.clean_state_dict", lambda sd: OrderedDict(
        (re.sub(r"^((module|_orig_mod)\.)+", "", k), v) for k, v in sd.items())),
]


@pytest.mark.parametrize(("exercise_id", "right"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_learners_right_answers_pass(exercise_id, right) -> None:
    result = check(exercise_id, right)
    assert result.passed, result.message


def test_clean_state_dict_popping_keys_in_place_names_a_dict_copy() -> None:
    def clean_state_dict(state_dict):
        for k in list(state_dict):
            state_dict[k.removeprefix("module.")] = state_dict.pop(k)
        return state_dict

    result = check("09.clean_state_dict", clean_state_dict)
    assert result.status == "fail" and "in place" in result.message, result.message
    assert "a new dict" in result.message and ".clone()" not in result.message, result.message


def test_clean_state_dict_while_startswith_loop_passes() -> None:
    def clean_state_dict(state_dict):
        out = {}
        for k, v in state_dict.items():
            while k.startswith(("module.", "_orig_mod.")):
                k = k.split(".", 1)[1]
            out[k] = v
        return out

    assert check("09.clean_state_dict", clean_state_dict).passed
