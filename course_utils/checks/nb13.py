"""Checkers of notebook 13 (distributed data parallel), in notebook order: ``13.average_gradients``,
``13.shard_indices``, ``13.should_save``, ``13.unwrapped_state_dict``.

No process group is needed: gradient averaging is list arithmetic over per-rank gradients, sharding is
compared with ``DistributedSampler(shuffle=False)``'s padded, interleaved order, and unwrapping runs on
a ``DistributedDataParallel`` shell that only wraps (``_ddp_shell``) and on a plain model that has a
layer named ``module``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


# --- 13.average_gradients -------------------------------------------------------------------------
# What every rank holds after all_reduce(SUM) and a division by world_size.

def average_gradients_reference(per_rank: list[list[torch.Tensor]]) -> list[list[torch.Tensor]]:
    world_size = len(per_rank)
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]  # all_reduce(SUM)
    return [[g / world_size for g in summed] for _ in range(world_size)]


def _avg_sum_only(per_rank):
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]
    return [[g.clone() for g in summed] for _ in per_rank]


def _avg_no_communication(per_rank):
    return [[g.clone() for g in grads] for grads in per_rank]


def _avg_single_list(per_rank):
    return [torch.stack(grads).mean(dim=0) for grads in zip(*per_rank)]


def _avg_within_rank(per_rank):
    return [[g / len(grads) for g in grads] for grads in per_rank]


def _avg_cases():
    def make(seed, world_size, shapes):
        def factory():
            gen = torch.Generator().manual_seed(seed)
            return ([[torch.randn(*s, generator=gen) for s in shapes] for _ in range(world_size)],), {}
        return factory
    return [make(0, 2, [(3, 2), (3,)]), make(1, 4, [(2, 2), (2,), (1,)]), make(2, 3, [(5,)])]


def _avg_verify(out, ref, args, kwargs):
    (per_rank,) = args
    if not isinstance(out, (list, tuple)) or len(out) != len(ref):
        return f"expected a list with one gradient list per rank ({len(ref)} ranks), found {describe(out)}"
    for rank, (grads, expected) in enumerate(zip(out, ref)):
        if not isinstance(grads, (list, tuple)) or len(grads) != len(expected):
            return (f"expected rank {rank} to hold a list of {len(expected)} gradients, "
                    f"found {describe(grads)}")
        for index, (g, e) in enumerate(zip(grads, expected)):
            problem = compare_tensors(g, e, name=f"rank {rank}'s gradient {index}")
            if problem:
                return problem
    return None


register(Exercise(
    "13.average_gradients",
    "average_gradients(per_rank) takes per_rank[r][i] = gradient i computed on rank r and returns "
    "what every rank holds after all_reduce(SUM) and a division by world_size: a list with, for "
    "every rank, the list of averaged gradients.",
    average_gradients_reference,
    _avg_cases(),
    _avg_verify,
    [
        Mistake("sums without dividing by world_size",
                "all_reduce with ReduceOp.SUM adds the ranks' gradients; divide by world_size so "
                "the step matches one big batch (DDP does this for you).",
                _avg_sum_only),
        Mistake("keeps each rank's own gradients (no all-reduce)",
                "combine gradient i ACROSS ranks (zip(*per_rank)); without that the replicas "
                "drift apart after the first optimizer step.",
                _avg_no_communication),
        Mistake("returns a single list instead of one per rank",
                "after an all-reduce EVERY rank holds the result: return one list per rank.",
                _avg_single_list,
                detect=lambda out, a, k: isinstance(out, (list, tuple)) and len(out) > 0
                and isinstance(out[0], torch.Tensor)),
        Mistake("averages within a rank instead of across ranks",
                "divide by the number of ranks (len(per_rank)), after summing the same gradient "
                "from every rank, not by the number of parameters.",
                _avg_within_rank),
    ],
    may_modify=("per_rank",),  # all_reduce itself works in place: overwriting the inputs is fine
))


# --- 13.shard_indices -----------------------------------------------------------------------------
# The dataset indices one rank uses, like DistributedSampler(shuffle=False).

def shard_indices_reference(n: int, rank: int, world_size: int) -> list[int]:
    per_rank = math.ceil(n / world_size)
    total = per_rank * world_size
    indices = list(range(n))
    while len(indices) < total:  # pad by repeating from the start, like DistributedSampler
        indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]


def _shard_same_for_all(n, rank, world_size):
    return list(range(0, n, world_size))


def _shard_drop_remainder(n, rank, world_size):
    usable = n - n % world_size
    return list(range(rank, usable, world_size))


def _shard_unequal(n, rank, world_size):
    return list(range(rank, n, world_size))


def _shard_blocks(n, rank, world_size):
    per_rank = math.ceil(n / world_size)
    padded = [i % n for i in range(per_rank * world_size)]
    return padded[rank * per_rank:(rank + 1) * per_rank]


def _shard_cases():
    return [lambda n=n, r=r, w=w: ((n, r, w), {})
            for n, r, w in [(8, 1, 2), (10, 1, 4), (10, 3, 4), (3, 3, 4), (2, 4, 5), (7, 2, 3), (5, 0, 1)]]


def _as_list(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.tolist()
    if isinstance(out, (tuple, range)):
        return list(out)
    return out


def _shard_verify(out, ref, args, kwargs):
    n, rank, world_size = args
    out = _as_list(out)
    if not isinstance(out, list) or not all(isinstance(i, int) for i in out):
        return f"expected a list of ints, found {describe(out)}"
    if out != ref:
        return (f"for n={n}, rank={rank}, world_size={world_size} expected {ref} "
                f"({len(ref)} indices on every rank), found {out}")
    return None


register(Exercise(
    "13.shard_indices",
    "shard_indices(n, rank, world_size) returns the dataset indices rank `rank` uses, like "
    "DistributedSampler(shuffle=False): pad range(n) by repeating from its start until its "
    "length divides by world_size, then take every world_size-th index starting at rank.",
    shard_indices_reference,
    _shard_cases(),
    _shard_verify,
    [
        Mistake("ignores rank (every rank gets the same samples: overlap)",
                "start at `rank`: indices[rank::world_size]. Otherwise all ranks train on the same "
                "samples and the extra processes add nothing.",
                _shard_same_for_all),
        Mistake("drops the remainder without padding",
                "samples past the last multiple of world_size are never seen; pad the index list by "
                "repeating its first entries instead (DistributedSampler's default, drop_last=False).",
                _shard_drop_remainder,
                detect=lambda out, a, k: _as_list(out) == _shard_drop_remainder(*a)
                and a[1] < a[0] % a[2]),
        Mistake("unequal shard sizes (no padding)",
                "every rank must get the same number of indices, or one rank runs an extra step and "
                "waits forever in an all-reduce the others never join: pad first, then shard.",
                _shard_unequal,
                detect=lambda out, a, k: _as_list(out) == _shard_unequal(*a)),
        Mistake("contiguous blocks instead of every world_size-th index",
                "DistributedSampler interleaves: rank r takes positions r, r + world_size, ... of the "
                "padded list, not one contiguous block.",
                _shard_blocks),
    ],
))


# --- 13.should_save -------------------------------------------------------------------------------
# Only rank 0 saves, after every n-th epoch.

def should_save_reference(rank: int, epoch: int, every: int) -> bool:
    return rank == 0 and (epoch + 1) % every == 0


def _save_every_rank(rank, epoch, every):
    return (epoch + 1) % every == 0


def _save_off_by_one(rank, epoch, every):
    return rank == 0 and epoch % every == 0


def _save_cases():
    return [lambda r=r, e=e, v=v: ((r, e, v), {})
            for r, e, v in [(0, 1, 2), (1, 1, 2), (0, 0, 2), (3, 5, 3), (0, 4, 1), (0, 2, 3),
                            (0, 3, 3), (0, 2, 2), (0, 0, 1)]]


def _save_verify(out, ref, args, kwargs):
    rank, epoch, every = args
    if not isinstance(out, bool):
        return f"expected True or False, found {describe(out)}"
    if out != ref:
        return f"for rank={rank}, epoch={epoch}, every={every} expected {ref}, found {out}"
    return None


register(Exercise(
    "13.should_save",
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


# --- 13.unwrapped_state_dict ----------------------------------------------------------------


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
    "13.unwrapped_state_dict",
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
