"""Notebook 11 exercises: required ids and mistake names; the reference agrees with PyTorch."""

from __future__ import annotations

import torch
from torch.utils.data import DistributedSampler

from course_utils.checks.nb11 import _ddp_shell, _HasModuleLayer, shard_indices_reference, \
    unwrapped_state_dict_reference
from course_utils.exercises import check, get_exercise

REQUIRED = {
    "11.shard_indices": ["overlap", "drops the remainder without padding"],
    "11.average_gradients": ["sums without dividing"],
    "11.should_save": ["every rank saves"],
    "11.unwrapped_state_dict": ["'module.' prefix", "getattr"],
}


def _names(exercise_id: str) -> str:
    return " | ".join(m.name for m in get_exercise(exercise_id).mistakes)


def test_required_ids_and_mistake_names() -> None:
    for exercise_id, words in REQUIRED.items():
        for word in words:
            assert word in _names(exercise_id), (exercise_id, word)


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


def test_ddp_shell_behaves_like_a_wrapper() -> None:
    model = torch.nn.Linear(2, 1)
    shell = _ddp_shell(model)
    assert isinstance(shell, torch.nn.parallel.DistributedDataParallel)
    assert list(shell.state_dict()) == ["module.weight", "module.bias"]
    assert check("11.unwrapped_state_dict",
                 lambda m: m.module.state_dict() if isinstance(m, torch.nn.parallel.DistributedDataParallel)
                 else m.state_dict()).passed


def test_unwrap_tests_the_type_not_the_attribute() -> None:
    plain = _HasModuleLayer()
    assert list(unwrapped_state_dict_reference(plain)) == ["module.weight", "module.bias", "head.weight", "head.bias"]
    inner = torch.nn.Linear(2, 1)
    assert list(unwrapped_state_dict_reference(torch.nn.DataParallel(inner))) == ["weight", "bias"]
    result = check("11.unwrapped_state_dict", lambda m: getattr(m, "module", m).state_dict())
    assert result.status == "fail" and "Hint (unwraps by attribute name" in result.message
    assert "isinstance" in result.message
