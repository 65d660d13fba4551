"""08.clean_state_dict: strip the 'module.' and '_orig_mod.' wrapper prefixes from state_dict keys."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 08.clean_state_dict ------------------------------------------------------------------------

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
        return f"expected a dict, found {describe(out)}"
    if list(out) != list(ref):
        return f"expected keys {list(ref)}, found {list(out)}"
    for key in ref:
        if not (isinstance(out[key], torch.Tensor) and torch.equal(out[key], ref[key])):
            return f"the value of {key!r} is not the original tensor"
    if tuple(given) != given.original_keys:
        return "your function changed the caller's state_dict; build and return a new dict"
    return None


register(Exercise(
    "08.clean_state_dict",
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
