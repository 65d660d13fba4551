"""Notebook 13 exercises: the reference agrees with PyTorch; other right and wrong answers (required
ids and mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DistributedSampler

from course_utils.checks.nb13 import shard_indices_reference, unwrapped_state_dict_reference
from course_utils.exercises import check, get_exercise
from tests.learner_code import assert_accepted, assert_rejected


def _unwrap_case_models() -> list[torch.nn.Module]:
    """The model each 13.unwrapped_state_dict test case hands to the candidate."""
    return [factory()[0][0] for factory in get_exercise("13.unwrapped_state_dict").cases]


def test_shard_reference_matches_distributed_sampler() -> None:
    for n in range(1, 14):
        for world_size in range(1, 7):
            for rank in range(world_size):
                sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=False)
                assert shard_indices_reference(n, rank, world_size) == list(sampler), (n, rank, world_size)


def test_shard_indices_with_sampler_itself_passes() -> None:
    def via_sampler(n, rank, world_size):
        return list(DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=False))

    assert check("13.shard_indices", via_sampler).passed


def test_average_gradients_must_leave_per_rank_unchanged() -> None:
    """The task text says per_rank stays unchanged (a real all_reduce works in place; this simulation returns)."""
    def in_place(per_rank):
        for i in range(len(per_rank[0])):
            total = sum(grads[i] for grads in per_rank)
            for grads in per_rank:
                grads[i] = total / len(per_rank)
        return per_rank

    result = check("13.average_gradients", in_place)
    assert result.status == "fail" and "modified its input `per_rank`" in result.message, result.message
    assert "Hint (" not in result.message, result.message  # no hint about averaging: the values are right


def test_should_save_truthy_int_is_rejected() -> None:
    result = check("13.should_save", lambda rank, epoch, every: int(rank == 0 and (epoch + 1) % every == 0))
    assert result.status == "fail" and "True or False" in result.message


def test_wrapped_cases_behave_like_a_ddp_wrapper() -> None:
    wrappers = (DistributedDataParallel, torch.nn.DataParallel)
    shells = [m for m in _unwrap_case_models() if isinstance(m, wrappers)]
    kinds = {type(m) for m in shells}
    assert DistributedDataParallel in kinds and torch.nn.DataParallel in kinds, kinds
    assert any(type(m) not in wrappers for m in shells), "a subclass of a wrapper is one of the cases"
    for shell in shells:
        assert list(shell.state_dict()) == [f"module.{key}" for key in shell.module.state_dict()]
    assert check("13.unwrapped_state_dict",
                 lambda m: m.module.state_dict() if isinstance(m, wrappers) else m.state_dict()).passed
    ddp_only = check("13.unwrapped_state_dict",
                     lambda m: m.module.state_dict() if isinstance(m, DistributedDataParallel) else m.state_dict())
    assert ddp_only.status == "fail" and "Hint (unwraps DistributedDataParallel only" in ddp_only.message


def test_unwrap_tests_the_type_not_the_attribute() -> None:
    plain = next(m for m in _unwrap_case_models()
                 if not isinstance(m, (DistributedDataParallel, torch.nn.DataParallel))
                 and isinstance(getattr(m, "module", None), torch.nn.Module))  # a layer named `module`
    assert list(unwrapped_state_dict_reference(plain)) == ["module.weight", "module.bias", "head.weight", "head.bias"]
    inner = torch.nn.Linear(2, 1)
    assert list(unwrapped_state_dict_reference(torch.nn.DataParallel(inner))) == ["weight", "bias"]
    result = check("13.unwrapped_state_dict", lambda m: getattr(m, "module", m).state_dict())
    assert result.status == "fail" and "Hint (unwraps by attribute name" in result.message
    assert "isinstance" in result.message


# --- learners' answers: wrong ones must FAIL with a message naming the fix, right ones must pass ---

def _avg(how):
    def average_gradients(per_rank):
        world_size = len(per_rank)
        if how == "sum":
            summed = [sum(grads) for grads in zip(*per_rank)]
            return [[g.clone() for g in summed] for _ in range(world_size)]
        if how == "own":
            return [[g.clone() for g in grads] for grads in per_rank]
        if how == "single":
            return [torch.stack(grads).mean(dim=0) for grads in zip(*per_rank)]
        if how == "within":
            return [[g / len(grads) for g in grads] for grads in per_rank]
        if how == "minus one":
            summed = [sum(grads) for grads in zip(*per_rank)]
            return [[g / (world_size - 1) for g in summed] for _ in range(world_size)]
        if how == "in place":
            for grads in zip(*per_rank):
                total = sum(g.clone() for g in grads)
                for g in grads:
                    g.copy_(total / world_size)
            return per_rank
        if how == "first rank only":
            return [[g / world_size for g in per_rank[0]] for _ in range(world_size)]
        if how == "mean":
            means = [torch.stack(grads).mean(dim=0) for grads in zip(*per_rank)]
            return [list(means) for _ in range(world_size)]
        if how == "same list":
            means = [sum(grads) / world_size for grads in zip(*per_rank)]
            return [means] * world_size
        raise ValueError(how)
    return average_gradients


def _shard(how):
    def shard_indices(n, rank, world_size):
        per_rank = math.ceil(n / world_size)
        if how == "no rank":
            return list(range(0, n, world_size))
        if how == "drop":
            return list(range(rank, n - n % world_size, world_size))
        if how == "unequal":
            return list(range(rank, n, world_size))
        if how == "blocks":
            padded = [i % n for i in range(per_rank * world_size)]
            return padded[rank * per_rank:(rank + 1) * per_rank]
        if how == "pad zeros":
            padded = list(range(n)) + [0] * (per_rank * world_size - n)
            return padded[rank::world_size]
        if how == "pad last":
            padded = list(range(n)) + [n - 1] * (per_rank * world_size - n)
            return padded[rank::world_size]
        if how == "pad once":
            indices = list(range(n))
            indices += indices[: per_rank * world_size - n]
            return indices[rank::world_size]
        if how == "floor plus one":
            total = (n // world_size + 1) * world_size
            return [i % n for i in range(total)][rank::world_size]
        if how == "modulo":
            return [i % n for i in range(per_rank * world_size)][rank::world_size]
        if how == "tensor":
            return torch.arange(per_rank * world_size)[rank::world_size] % n
        raise ValueError(how)
    return shard_indices


def _save(how):
    def should_save(rank, epoch, every):
        if how == "every rank":
            return (epoch + 1) % every == 0
        if how == "off by one":
            return rank == 0 and epoch % every == 0
        if how == "precedence":
            return rank == 0 & (epoch + 1) % every == 0
        if how == "nonzero":
            return rank == 0 and epoch > 0 and epoch % every == 0
        if how == "threshold":
            return rank == 0 and epoch >= every - 1
        if how == "int":
            return int(rank == 0 and (epoch + 1) % every == 0)
        if how == "remainder":
            return rank == 0 and epoch % every == every - 1
        if how == "not rank":
            return not rank and not (epoch + 1) % every
        raise ValueError(how)
    return should_save


def _unwrap(how):
    def unwrapped_state_dict(model):
        if how == "prefix":
            return model.state_dict()
        if how == "always":
            return model.module.state_dict()
        if how == "getattr":
            return getattr(model, "module", model).state_dict()
        if how == "hasattr":
            return model.module.state_dict() if hasattr(model, "module") else model.state_dict()
        if how == "strip":
            return {k.removeprefix("module."): v for k, v in model.state_dict().items()}
        if how == "replace":
            return {k.replace("module.", ""): v for k, v in model.state_dict().items()}
        if how == "isinstance":
            inner = model.module if isinstance(model, (DistributedDataParallel, torch.nn.DataParallel)) else model
            return inner.state_dict()
        raise ValueError(how)
    return unwrapped_state_dict


WRONG = [
    ("13.average_gradients", _avg("sum"), ["divide by world_size"]),
    ("13.average_gradients", _avg("own"), ["ACROSS ranks"]),
    ("13.average_gradients", _avg("single"), ["one list per rank"]),
    ("13.average_gradients", _avg("within"), ["len(per_rank)"]),
    ("13.average_gradients", _avg("minus one"), ["wrong values"]),
    ("13.average_gradients", _avg("first rank only"), ["wrong values"]),
    ("13.shard_indices", _shard("no rank"), ["start at `rank`"]),
    ("13.shard_indices", _shard("drop"), ["pad"]),
    ("13.shard_indices", _shard("unequal"), ["same number of indices"]),
    ("13.shard_indices", _shard("blocks"), ["interleaves"]),
    ("13.shard_indices", _shard("pad zeros"), ["expected [3, 7, 1]"]),
    ("13.shard_indices", _shard("pad last"), ["expected [3, 7, 1]"]),
    ("13.shard_indices", _shard("pad once"), ["n=2, rank=4, world_size=5"]),
    ("13.shard_indices", _shard("floor plus one"), ["n=8, rank=1, world_size=2"]),
    ("13.shard_indices", _shard("tensor"), ["expected a list of ints"]),
    ("13.should_save", _save("every rank"), ["rank == 0"]),
    ("13.should_save", _save("off by one"), ["epoch + 1"]),
    ("13.should_save", _save("precedence"), ["rank=0, epoch=0, every=2 expected False"]),
    ("13.should_save", _save("nonzero"), ["expected"]),
    ("13.should_save", _save("threshold"), ["expected False, found True"]),
    ("13.should_save", _save("int"), ["True or False"]),
    ("13.unwrapped_state_dict", _unwrap("prefix"), ["'module.' prefix"]),
    ("13.unwrapped_state_dict", _unwrap("always"), ["has no .module"]),
    ("13.unwrapped_state_dict", _unwrap("getattr"), ["test the type"]),
    ("13.unwrapped_state_dict", _unwrap("hasattr"), ["test the type"]),
    ("13.unwrapped_state_dict", _unwrap("strip"), ["expected the keys"]),
    ("13.unwrapped_state_dict", _unwrap("replace"), ["expected the keys"]),
    ("13.average_gradients", _avg("in place"), ["modified its input `per_rank`"]),
]


@pytest.mark.parametrize(("exercise_id", "wrong", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_learners_wrong_answers_fail_with_a_message_naming_the_fix(exercise_id, wrong, words) -> None:
    result = check(exercise_id, wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


RIGHT = [
    ("13.average_gradients", _avg("mean")),
    ("13.average_gradients", _avg("same list")),
    ("13.shard_indices", _shard("modulo")),
    ("13.should_save", _save("remainder")),
    ("13.should_save", _save("not rank")),
    ("13.unwrapped_state_dict", _unwrap("isinstance")),
]


@pytest.mark.parametrize(("exercise_id", "right"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_learners_right_answers_pass(exercise_id, right) -> None:
    result = check(exercise_id, right)
    assert result.passed, result.message


# --- more answers written as a learner would (source text, as in a notebook cell) --------------------

LEARNER_WRONG = [
    ("13.should_save", "def should_save(rank, epoch, every):\n    return rank == 0 and epoch % every == 0",
     ["epoch=1", "expected True"]),
    ("13.should_save", "def should_save(rank, epoch, every):\n    return (epoch + 1) % every == 0", ["rank=1"]),
    ("13.should_save", "def should_save(rank, epoch, every):\n    return rank == 0 or (epoch + 1) % every == 0",
     ["rank=1"]),
    ("13.should_save", "def should_save(rank, epoch, every):\n    return int(rank == 0 and (epoch + 1) % every == 0)",
     ["True or False"]),
    ("13.average_gradients", """
        def average_gradients(per_rank):
            w = len(per_rank)
            return [sum(g[i] for g in per_rank) / w for i in range(len(per_rank[0]))]""", ["list of 2 gradients"]),
    ("13.average_gradients", """
        def average_gradients(per_rank):
            avg = [torch.stack([g[i] for g in per_rank]).mean() for i in range(len(per_rank[0]))]
            return [list(avg) for _ in per_rank]""", ["shape ()"]),
    ("13.average_gradients", """
        def average_gradients(per_rank):
            w = len(per_rank[0])   # the number of gradients, not of ranks
            avg = [sum(g[i] for g in per_rank) / w for i in range(len(per_rank[0]))]
            return [list(avg) for _ in per_rank]""", ["wrong values"]),
    ("13.average_gradients", """
        def average_gradients(per_rank):
            avg = [sum(g[i] for g in per_rank) / len(per_rank) for i in range(len(per_rank[0]))]
            return [avg]""", ["one gradient list per rank"]),
    ("13.shard_indices", """
        def shard_indices(n, rank, world_size):
            total = (n // world_size + 1) * world_size   # one row too many when n divides
            return [i % n for i in range(total)][rank::world_size]""", ["4 indices on every rank"]),
    ("13.shard_indices", """
        def shard_indices(n, rank, world_size):
            total = math.ceil(n / world_size) * world_size
            return (list(range(n)) + [n - 1] * (total - n))[rank::world_size]""", ["expected [3, 7, 1]"]),
    ("13.shard_indices", """
        def shard_indices(n, rank, world_size):
            total = math.ceil(n / world_size) * world_size
            indices = list(range(n))
            indices += indices[:total - n]    # one pass: too short when n < total - n
            return indices[rank::world_size]""", ["n=2", "world_size=5"]),
    ("13.unwrapped_state_dict", """
        def unwrapped_state_dict(model):
            return {k.replace("module.", ""): v for k, v in model.state_dict().items()}""", ["module.weight"]),
    ("13.unwrapped_state_dict", "def unwrapped_state_dict(model):\n    return model.module.state_dict()",
     ["AttributeError", "module"]),
    ("13.unwrapped_state_dict", """
        def unwrapped_state_dict(model):
            return (model.module if hasattr(model, "module") else model).state_dict()""", ["module.weight"]),
    ("13.unwrapped_state_dict", """
        def unwrapped_state_dict(model):
            if isinstance(model, torch.nn.parallel.DistributedDataParallel):
                model = model.module
            return model.state_dict()""", ["nn.DataParallel prefixes every key"]),
]

LEARNER_RIGHT = [
    ("13.should_save", "def should_save(rank, epoch, every):\n    return not rank and not (epoch + 1) % every"),
    ("13.should_save", """
        def should_save(rank, epoch, every):
            if rank != 0:
                return False
            return (epoch + 1) % every == 0"""),
    ("13.average_gradients", """
        def average_gradients(per_rank):
            avg = [torch.stack([g[i] for g in per_rank]).mean(dim=0) for i in range(len(per_rank[0]))]
            return [[a.clone() for a in avg] for _ in per_rank]"""),
    ("13.average_gradients", """
        def average_gradients(per_rank):
            w = len(per_rank)
            out = []
            for r in range(w):
                out.append([sum(per_rank[s][i] for s in range(w)) / w for i in range(len(per_rank[r]))])
            return out"""),
    ("13.shard_indices", """
        def shard_indices(n, rank, world_size):
            total = -(-n // world_size) * world_size
            return [i % n for i in range(total)][rank::world_size]"""),
    ("13.shard_indices", """
        def shard_indices(n, rank, world_size):
            per = math.ceil(n / world_size)
            return (list(range(n)) * world_size)[:per * world_size][rank::world_size]"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), LEARNER_WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(LEARNER_WRONG)])
def test_learner_source_wrong_answers_are_named(exercise_id, source, words) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), LEARNER_RIGHT,
                         ids=[f"{e}-{i}" for i, (e, _) in enumerate(LEARNER_RIGHT)])
def test_learner_source_right_answers_pass(exercise_id, source) -> None:
    assert_accepted(exercise_id, source)
