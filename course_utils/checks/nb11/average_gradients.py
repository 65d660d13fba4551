"""11.average_gradients: what every rank holds after all_reduce(SUM) and a division by world_size."""

from __future__ import annotations

import torch

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


# --- 11.average_gradients --------------------------------------------------------------------


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
    "11.average_gradients",
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
))
