"""Notebook 11 exercises: the reference agrees with PyTorch; other right and wrong answers (required
ids and mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DistributedSampler

from course_utils.checks.nb11 import shard_indices_reference, unwrapped_state_dict_reference
from course_utils.exercises import check, get_exercise


def _unwrap_case_models() -> list[torch.nn.Module]:
    """The model each 11.unwrapped_state_dict test case hands to the candidate."""
    return [factory()[0][0] for factory in get_exercise("11.unwrapped_state_dict").cases]


def test_shard_reference_matches_distributed_sampler() -> None:
    for n in range(1, 14):
        for world_size in range(1, 7):
            for rank in range(world_size):
                sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=False)
                assert shard_indices_reference(n, rank, world_size) == list(sampler), (n, rank, world_size)


def test_shard_indices_with_sampler_itself_passes() -> None:
    def via_sampler(n, rank, world_size):
        return list(DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=False))

    assert check("11.shard_indices", via_sampler).passed


def test_average_gradients_in_place_all_reduce_style_passes() -> None:
    def in_place(per_rank):
        for i in range(len(per_rank[0])):
            total = sum(grads[i] for grads in per_rank)
            for grads in per_rank:
                grads[i] = total / len(per_rank)
        return per_rank

    assert check("11.average_gradients", in_place).passed


def test_should_save_truthy_int_is_rejected() -> None:
    result = check("11.should_save", lambda rank, epoch, every: int(rank == 0 and (epoch + 1) % every == 0))
    assert result.status == "fail" and "True or False" in result.message


def test_wrapped_cases_behave_like_a_ddp_wrapper() -> None:
    shells = [m for m in _unwrap_case_models() if isinstance(m, DistributedDataParallel)]
    assert shells, "some cases hand over a DistributedDataParallel wrapper"
    for shell in shells:
        assert list(shell.state_dict()) == [f"module.{key}" for key in shell.module.state_dict()]
    assert check("11.unwrapped_state_dict",
                 lambda m: m.module.state_dict() if isinstance(m, torch.nn.parallel.DistributedDataParallel)
                 else m.state_dict()).passed


def test_unwrap_tests_the_type_not_the_attribute() -> None:
    plain = next(m for m in _unwrap_case_models() if not isinstance(m, DistributedDataParallel)
                 and isinstance(getattr(m, "module", None), torch.nn.Module))  # a layer named `module`
    assert list(unwrapped_state_dict_reference(plain)) == ["module.weight", "module.bias", "head.weight", "head.bias"]
    inner = torch.nn.Linear(2, 1)
    assert list(unwrapped_state_dict_reference(torch.nn.DataParallel(inner))) == ["weight", "bias"]
    result = check("11.unwrapped_state_dict", lambda m: getattr(m, "module", m).state_dict())
    assert result.status == "fail" and "Hint (unwraps by attribute name" in result.message
    assert "isinstance" in result.message
