"""11.shard_indices: the dataset indices one rank uses, like DistributedSampler(shuffle=False)."""

from __future__ import annotations

import math
from typing import Any

import torch

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 11.shard_indices ------------------------------------------------------------------------


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
            for n, r, w in [(8, 1, 2), (10, 1, 4), (10, 3, 4), (3, 3, 4), (2, 4, 5)]]


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
    "11.shard_indices",
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
