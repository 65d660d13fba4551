"""Exercises of notebook 03 (autograd): micro-batch accumulation, clean gradients, finite differences.

* ``_common.py``: helpers shared by the notebook 03 checkers: seeded generators, gradient comparison.
* ``03.accumulated_grads`` in ``accumulated_grads.py``: micro-batch gradients add up to the full-batch gradient.
* ``03.gradient_at`` in ``gradient_at.py``: df/dx with autograd, leaving the caller's x untouched.
* ``03.finite_difference_grad`` in ``finite_difference_grad.py``: central differences, one element at a time.

Importing this package imports every submodule, which registers all ``03.*`` exercises;
the names below are re-exported so ``course_utils.checks.nb03.<name>`` keeps working.
"""

from __future__ import annotations

from ._common import _gen, _all_close, _ScalarFn
from .accumulated_grads import (
    accumulated_grads_reference, _acc_no_division, _acc_stale, _acc_zero_inside, _stale_input, _grads, _full,
    _stale, _last_chunk, _acc_case, _acc_verify,
)
from .gradient_at import (
    gradient_at_reference, _at_backward, _at_no_requires_grad, _at_flip_flag, _at_case, _grad_changed,
    _at_verify,
)
from .finite_difference_grad import (
    finite_difference_grad_reference, _fd_forward, _fd_all_at_once, _fd_inplace, _fd_float32, _fd_case,
    _fd_verify,
)
