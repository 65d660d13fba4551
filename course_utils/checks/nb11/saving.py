"""Saving under DDP: 11.should_save (only rank 0, every n-th epoch) and 11.unwrapped_state_dict."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


# --- 11.should_save --------------------------------------------------------------------------


def should_save_reference(rank: int, epoch: int, every: int) -> bool:
    return rank == 0 and (epoch + 1) % every == 0


def _save_every_rank(rank, epoch, every):
    return (epoch + 1) % every == 0


def _save_off_by_one(rank, epoch, every):
    return rank == 0 and epoch % every == 0


def _save_cases():
    return [lambda r=r, e=e, v=v: ((r, e, v), {})
            for r, e, v in [(0, 1, 2), (1, 1, 2), (0, 0, 2), (3, 5, 3), (0, 4, 1), (0, 2, 3)]]


def _save_verify(out, ref, args, kwargs):
    rank, epoch, every = args
    if not isinstance(out, bool):
        return f"expected True or False, found {describe(out)}"
    if out != ref:
        return f"for rank={rank}, epoch={epoch}, every={every} expected {ref}, found {out}"
    return None


register(Exercise(
    "11.should_save",
    "should_save(rank, epoch, every) is True only on rank 0, after every `every`-th epoch "
    "(epochs count from 0, so with every=2 it saves after epochs 1, 3, 5, ...).",
    should_save_reference,
    _save_cases(),
    _save_verify,
    [
        Mistake("every rank saves",
                "all ranks hold identical weights; if each one writes the same file they race "
                "and can leave a corrupt checkpoint. Only rank 0 writes: test `rank == 0`.",
                _save_every_rank),
        Mistake("off by one epoch",
                "epochs count from 0: after epoch `epoch`, epoch + 1 epochs are done, so test "
                "(epoch + 1) % every == 0.",
                _save_off_by_one),
    ],
))


# --- 11.unwrapped_state_dict ----------------------------------------------------------------


def _ddp_shell(module: nn.Module) -> nn.Module:
    """A DistributedDataParallel object that only wraps (no process group needed to test saving)."""
    shell = DistributedDataParallel.__new__(DistributedDataParallel)
    nn.Module.__init__(shell)
    shell.module = module
    return shell


def unwrapped_state_dict_reference(model: nn.Module) -> dict[str, torch.Tensor]:
    inner = model.module if isinstance(model, (DistributedDataParallel, nn.DataParallel)) else model
    return inner.state_dict()


def _unwrap_keeps_prefix(model):
    return model.state_dict()


def _unwrap_always(model):
    return model.module.state_dict()


def _unwrap_by_attribute(model):
    return getattr(model, "module", model).state_dict()


class _HasModuleLayer(nn.Module):
    """A plain (unwrapped) model that happens to have a layer named ``module``."""

    def __init__(self) -> None:
        super().__init__()
        self.module = nn.Linear(3, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.module(x)))


def _unwrap_cases():
    def make(seed, wrapped):
        def factory():
            torch.manual_seed(seed)
            model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
            return ((_ddp_shell(model) if wrapped else model),), {}
        return factory
    def plain_with_module_layer():
        torch.manual_seed(3)
        return (_HasModuleLayer(),), {}

    return [make(0, True), make(1, False), make(2, True), plain_with_module_layer]


def _unwrap_verify(out, ref, args, kwargs):
    if not isinstance(out, (dict, OrderedDict)):
        return f"expected a state dict (a dict of tensors), found {describe(out)}"
    if list(out) != list(ref):
        return f"expected the keys {list(ref)[:3]}..., found {list(out)[:3]}..."
    for key in ref:
        problem = compare_tensors(out[key], ref[key], name=f"entry {key!r}")
        if problem:
            return problem
    return None


register(Exercise(
    "11.unwrapped_state_dict",
    "unwrapped_state_dict(model) returns the state dict of the model inside a "
    "DistributedDataParallel wrapper (keys without the 'module.' prefix), and the plain "
    "state dict when the model is not wrapped (even when it has a layer named 'module').",
    unwrapped_state_dict_reference,
    _unwrap_cases(),
    _unwrap_verify,
    [
        Mistake("keeps the 'module.' prefix",
                "ddp_model.state_dict() names every key 'module.<name>', which a plain model cannot "
                "load: save ddp_model.module.state_dict() instead.",
                _unwrap_keeps_prefix),
        Mistake("fails on an unwrapped model",
                "a plain nn.Module has no .module: unwrap only a wrapper, model.module if "
                "isinstance(model, (DistributedDataParallel, nn.DataParallel)) else model.",
                _unwrap_always, error_match="has no attribute 'module'"),
        Mistake("unwraps by attribute name (getattr(model, 'module', model))",
                "getattr(model, 'module', model) also 'unwraps' a plain model that has a layer "
                "named module, and returns only that layer's weights: test the type instead, "
                "model.module if isinstance(model, (DistributedDataParallel, nn.DataParallel)) "
                "else model.",
                _unwrap_by_attribute),
    ],
))
