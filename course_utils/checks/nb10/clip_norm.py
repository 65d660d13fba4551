"""10.clip_norm: an export-ready data-dependent branch with torch.cond."""

from __future__ import annotations

import contextlib
import io
from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, register


# --- 10.clip_norm ------------------------------------------------------------------------------

class _AsModule(nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


_ALIAS_HINT = ("  Hint (returns the input itself from a branch (aliasing)): torch.cond branches must "
               "return new tensors: return v.clone(), not v.")
_PY_IF_HINT = ("  Hint (Python if on a tensor value): `if x.norm() > 1:` asks for a Python bool, "
               "which only exists for one concrete input; torch.export cannot record both paths. "
               "Use torch.cond(pred, true_fn, false_fn, (x,)) (or torch.where for element-wise choices).")


def _exportable(candidate: Callable[..., Any]) -> str | None:
    """Export the candidate once; only a data-dependent-branch failure is reported here."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            torch.export.export(_AsModule(candidate), (torch.full((4,), 2.0),))
    except Exception as exc:  # anything else (stub, learner bug) is reported by the normal run
        text = f"{type(exc).__name__}: {exc}"
        if "data-dependent" in text or "GuardOnDataDependent" in text:
            return ("torch.export failed: your function uses a Python `if` on a tensor "
                    "value (data-dependent control flow)\n" + _PY_IF_HINT)
        if "aliasing" in text:
            return "torch.cond refused your branches: one returns its input tensor itself\n" + _ALIAS_HINT
    return None


def clip_norm_reference(x: torch.Tensor) -> torch.Tensor:
    return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v.clone(), (x,))


def _clip_python_if(x):
    if x.norm() > 1:
        return x / x.norm()
    return x.clone()


def _clip_swapped(x):
    return torch.cond(x.norm() > 1, lambda v: v.clone(), lambda v: v / v.norm(), (x,))


def _clip_always(x):
    return x / x.norm()


def _clip_alias(x):
    return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v, (x,))


def _clip_cases():
    def make(seed, scale, n):
        return lambda: ((scale * torch.randn(n, generator=torch.Generator().manual_seed(seed)),), {})
    # one shape for every case: torch.cond compiles its branches once per input shape
    return [make(0, 3.0, 4), make(1, 0.05, 4), make(2, 10.0, 4), make(3, 0.1, 4)]


def _clip_verify(out, ref, args, kwargs):
    problem = compare_tensors(out, ref)
    if problem:
        return f"for an input of norm {args[0].norm():.3g}: {problem}"
    if out.data_ptr() == args[0].data_ptr():
        return "expected a new tensor, found the input itself"
    return None


register(Exercise(
    "10.clip_norm",
    "clip_norm(x) returns x / x.norm() when x.norm() > 1 and an unchanged copy of x otherwise, "
    "written so that torch.export can capture both branches (torch.cond).",
    clip_norm_reference,
    _clip_cases(),
    _clip_verify,
    [
        Mistake("Python if on a tensor value",
                _PY_IF_HINT.split("): ", 1)[1],
                _clip_python_if),
        Mistake("always normalises",
                "vectors with norm <= 1 must come back unchanged: choose between two branches.",
                _clip_always),
        Mistake("branches swapped",
                "torch.cond(pred, true_fn, false_fn, operands): true_fn runs when pred is True, "
                "i.e. when the norm is larger than 1.",
                _clip_swapped),
        Mistake("returns the input itself from a branch (aliasing)",
                _ALIAS_HINT.split("): ", 1)[1],
                _clip_alias, error_match="aliasing"),
    ],
    inspect=_exportable,
))
