"""Notebook 01 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

from collections import namedtuple

import torch

from course_utils.checks.nb01 import Batch, to_device_reference
from course_utils.exercises import check, get_exercise


def test_to_device_reference_keeps_namedtuples_like_default_collate() -> None:
    from torch.utils.data import default_collate

    Pair = namedtuple("Pair", ["x", "y"])
    collated = default_collate([Pair(torch.ones(2), 1), Pair(torch.zeros(2), 0)])
    assert type(collated) is Pair                       # what a DataLoader hands to to_device
    moved = to_device_reference(collated, "meta")
    assert type(moved) is Pair and moved.x.device.type == "meta" and moved.y.device.type == "meta"
    assert any(isinstance(args[0], Batch) for args, _ in (f() for f in get_exercise("01.to_device").cases))


def test_to_device_other_correct_answer_passes() -> None:
    def via_make(batch, device):
        if isinstance(batch, torch.Tensor):
            return batch.to(device)
        if isinstance(batch, dict):
            return {k: via_make(v, device) for k, v in batch.items()}
        if hasattr(batch, "_make"):
            return batch._make(via_make(v, device) for v in batch)
        if isinstance(batch, (list, tuple)):
            return type(batch)([via_make(v, device) for v in batch])
        return batch

    assert check("01.to_device", via_make).passed


def test_to_device_namedtuple_mistakes_are_named() -> None:
    def generator_rebuild(batch, device):
        if isinstance(batch, torch.Tensor):
            return batch.to(device)
        if isinstance(batch, dict):
            return {k: generator_rebuild(v, device) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return type(batch)(generator_rebuild(v, device) for v in batch)
        return batch

    def plain_tuple(batch, device):
        if isinstance(batch, tuple) and hasattr(batch, "_fields"):
            return tuple(to_device_reference(v, device) for v in batch)
        return to_device_reference(batch, device)

    for candidate in (generator_rebuild, plain_tuple):
        result = check("01.to_device", candidate)
        assert result.status == "fail"
        assert "Hint (namedtuple not rebuilt field by field)" in result.message
