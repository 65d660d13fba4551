"""course_utils.deploy: the reused ONNX translation table and max_abs_diff."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.deploy import max_abs_diff, reuse_onnx_registry


def test_each_export_gets_its_own_copy_of_one_table() -> None:
    from torch.onnx._internal.exporter import _registration

    reuse_onnx_registry()
    first = _registration.ONNXRegistry().from_torchlib()
    second = _registration.ONNXRegistry.from_torchlib()
    assert first is not second and first.functions is not second.functions
    assert first.functions.keys() == second.functions.keys() and len(first.functions) > 100
    target = next(iter(first.functions))
    first.functions[target].append("added by a custom translation table")
    assert "added by a custom translation table" not in second.functions[target]
    assert _registration.ONNXRegistry.from_torchlib(opset_version=first.opset_version).opset_version == first.opset_version


def test_export_with_the_reused_table_matches_the_model(tmp_path) -> None:
    import onnxruntime

    reuse_onnx_registry()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    for name in ("a.onnx", "b.onnx"):  # the second export reuses the table built by the first
        torch.onnx.export(model, (torch.randn(2, 4),), tmp_path / name, dynamo=True, verbose=False,
                          dynamic_shapes=({0: torch.export.Dim("batch")},))
        session = onnxruntime.InferenceSession(tmp_path / name, providers=["CPUExecutionProvider"])
        x = torch.randn(5, 4)
        assert max_abs_diff(model(x), session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]) < 1e-6


def test_max_abs_diff() -> None:
    assert max_abs_diff(torch.tensor([1.0, -2.0]), np.array([1.0, 2.0])) == 4.0
    assert max_abs_diff(np.zeros(0), torch.zeros(0)) == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        max_abs_diff(torch.zeros(2, 3), torch.zeros(3, 2))
