"""Small deployment helpers for notebook 12 (export and deployment).

* :func:`reuse_onnx_registry` - ``torch.onnx.export(..., dynamo=True)`` rebuilds its table of
  ONNX translations for about 500 ATen operators on *every* call (1-2 s on a small machine);
  this keeps one built table per opset for the session and hands each export its own copy,
  so repeated exports (the notebook's and the checker's) cost only the export itself.
* :func:`max_abs_diff` - the largest absolute difference between two arrays or tensors, as a
  Python float (the number a parity check prints and compares with its tolerance).

Example:
    >>> import numpy as np, torch
    >>> from course_utils.deploy import max_abs_diff, reuse_onnx_registry
    >>> max_abs_diff(torch.tensor([1.0, 2.0]), np.array([1.0, 2.5], dtype=np.float32))
    0.5
    >>> reuse_onnx_registry() is reuse_onnx_registry()   # idempotent: installed once
    True
"""

from __future__ import annotations

from course_utils.i18n import t

from typing import Any, Callable

import numpy as np
import torch

_INSTALLED: dict[str, Callable[..., Any]] = {}


def reuse_onnx_registry() -> Callable[..., Any]:
    """Make ``torch.onnx.export`` reuse one ONNX translation table per opset (returns the builder).

    The table depends only on the installed torch and onnxscript and the opset, so a copy of a
    table built once is what a fresh build would give; each export gets its own copy (an export
    with ``custom_translation_table`` adds entries to it). Calling this again changes nothing.
    """
    if "builder" in _INSTALLED:
        return _INSTALLED["builder"]
    from torch.onnx._internal.exporter import _constants, _registration

    registry_class = _registration.ONNXRegistry
    build = registry_class.from_torchlib.__func__  # type: ignore[attr-defined]
    built: dict[int, Any] = {}

    def from_torchlib(cls: type, opset_version: int = _constants.TORCHLIB_OPSET) -> Any:
        if opset_version not in built:
            built[opset_version] = build(cls, opset_version)
        copy = cls()
        copy._opset_version = built[opset_version]._opset_version
        copy.functions = {target: list(metas) for target, metas in built[opset_version].functions.items()}
        return copy

    registry_class.from_torchlib = classmethod(from_torchlib)  # type: ignore[method-assign, assignment]
    _INSTALLED["builder"] = from_torchlib
    return from_torchlib


def max_abs_diff(a: Any, b: Any) -> float:
    """``max |a - b|`` over all elements, compared in float64 (tensors and numpy arrays alike).

    >>> max_abs_diff(np.zeros((2, 3)), torch.ones(2, 3))
    1.0
    """
    left = a.detach().cpu().double().numpy() if isinstance(a, torch.Tensor) else np.asarray(a, np.float64)
    right = b.detach().cpu().double().numpy() if isinstance(b, torch.Tensor) else np.asarray(b, np.float64)
    if left.shape != right.shape:
        raise ValueError(t("shapes differ: {left} vs {right}", left=left.shape, right=right.shape))
    return float(np.abs(left - right).max()) if left.size else 0.0

