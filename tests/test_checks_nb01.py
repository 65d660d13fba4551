"""Notebook 01 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

from collections import namedtuple

import torch

from course_utils.checks.nb01 import Batch, to_device_reference
import pytest

from course_utils.exercises import check, get_exercise
from tests.learner_code import assert_accepted, assert_rejected

_TO_DEVICE_BODY = """
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            %s
            return batch"""

WRONG = [
    # --- 01.independent_copy
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.from_numpy(arr)", ["shares memory"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.as_tensor(arr)", ["as_tensor"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.asarray(arr)", ["shares memory"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.tensor(arr, dtype=torch.float32)",
     ["dtype"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.Tensor(arr)", ["dtype", "torch.Tensor("]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.tensor(arr.tolist())", ["dtype"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.from_numpy(arr).float()", ["dtype"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.from_numpy(arr).contiguous()",
     ["shares memory"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return arr.copy()", ["torch.Tensor"]),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.tensor(arr).flatten()", ["shape"]),
    # --- 01.flatten_batch
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.view(x.size(0), -1)", ["view", "reshape"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.flatten()", ["dim 0"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return torch.flatten(x.squeeze(), 1)", ["squeeze", "batch of one"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.reshape(x.size(0), -1).squeeze()",
     ["squeeze", "batch of one"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.reshape(-1, x.shape[-1])", ["shape"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.reshape(x.shape[0], x.shape[1] * x.shape[2])",
     ["every dim"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.flatten(start_dim=1, end_dim=2)", ["every dim"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.flatten(0, -2)", ["shape"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.transpose(0, 1).reshape(x.size(0), -1)",
     ["wrong values"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.view(-1, x[0].numel())", ["view", "reshape"]),
    # --- 01.to_device
    ("01.to_device", _TO_DEVICE_BODY % "", ["still on cpu"]),
    ("01.to_device", """
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
            return type(batch)(v.to(device) if isinstance(v, torch.Tensor) else v for v in batch)""",
     ["recursively"]),
    ("01.to_device", _TO_DEVICE_BODY % """if isinstance(batch, (list, tuple)):
                return [to_device(v, device) for v in batch]""", ["container", "tuple"]),
    ("01.to_device", _TO_DEVICE_BODY % """if isinstance(batch, (list, tuple)):
                return tuple(to_device(v, device) for v in batch)""", ["container"]),
    ("01.to_device", _TO_DEVICE_BODY % """if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)""", ["namedtuple"]),
    ("01.to_device", "def to_device(batch, device):\n    return batch.to(device)", ["has no attribute 'to'",
                                                                              "recursively"]),
    ("01.to_device", """
        from collections.abc import Sequence, Mapping
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, Mapping):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, Sequence):
                return type(batch)([to_device(v, device) for v in batch])
            return batch""", ["str"]),
    ("01.to_device", """
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                batch.to(device)
                return batch
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch""", ["batch = batch.to(device)", "still on cpu"]),
    ("01.to_device", """
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device, dtype=torch.float32)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch""", ["dtype"]),
    ("01.to_device", """
        def to_device(batch, device):
            if isinstance(batch, (int, float, str)):
                return torch.tensor(batch).to(device) if not isinstance(batch, str) else batch
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            return type(batch)(to_device(v, device) for v in batch)""", ["non-tensors"]),
    # --- a finished function that forgets `return`
    ("01.independent_copy", "def independent_copy(arr):\n    t = torch.tensor(arr)", ["return"]),
    ("01.flatten_batch", "def flatten_batch(x):\n    x = torch.flatten(x, 1)", ["return"]),
]

RIGHT = [
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.from_numpy(arr).clone()"),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.from_numpy(arr.copy())"),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.tensor(arr, dtype=torch.from_numpy(arr).dtype)"),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.as_tensor(arr).clone()"),
    ("01.independent_copy", "def independent_copy(arr):\n    return torch.from_numpy(np.array(arr, copy=True))"),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.reshape(x.size(0), -1)"),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.contiguous().view(x.size(0), -1)"),
    ("01.flatten_batch", "def flatten_batch(x):\n    return nn.Flatten()(x)"),
    ("01.flatten_batch", "def flatten_batch(x):\n    return x.flatten(1)"),
    ("01.flatten_batch", "def flatten_batch(x):\n    return torch.reshape(x, (len(x), -1))"),
    ("01.to_device", """
        from collections.abc import Mapping
        def to_device(batch, device):
            if torch.is_tensor(batch):
                return batch.to(device, non_blocking=True)
            if isinstance(batch, Mapping):
                return type(batch)({k: to_device(v, device) for k, v in batch.items()})
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return batch._make(to_device(v, device) for v in batch)
            if isinstance(batch, (list, tuple)):
                return type(batch)([to_device(v, device) for v in batch])
            return batch"""),
    ("01.to_device", """
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            elif isinstance(batch, list):
                return [to_device(b, device) for b in batch]
            elif isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*[to_device(b, device) for b in batch])
            elif isinstance(batch, tuple):
                return tuple(to_device(b, device) for b in batch)
            elif isinstance(batch, dict):
                out = {}
                for key in batch:
                    out[key] = to_device(batch[key], device)
                return out
            else:
                return batch"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_wrong_answer_is_rejected_with_what_to_fix(exercise_id: str, source: str, words: list[str]) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_correct_alternative_is_accepted(exercise_id: str, source: str) -> None:
    assert_accepted(exercise_id, source)


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
