"""Exercises of notebook 04 (nn.Module): counting parameters, registering layers, init, hooks.

* ``_common.py``: helpers shared by the notebook 04 checkers: seeded case factories.
* ``04.count_trainable`` in ``count_trainable.py``: trainable scalars, frozen and tied weights handled.
* ``04.make_mlp`` in ``make_mlp.py``: registered Linear layers with ReLU between them.
* ``04.kaiming_init`` in ``kaiming_init.py``: Kaiming-normal Linear weights, zero biases, other modules untouched.
* ``04.layer_output_stds`` in ``layer_output_stds.py``: forward hooks record each leaf module's output std.

Importing this package imports every submodule, which registers all ``04.*`` exercises;
the names below are re-exported so ``course_utils.checks.nb04.<name>`` keeps working.
"""

from __future__ import annotations

from ._common import _seeded
from .count_trainable import (
    count_trainable_reference, _WRONG_COUNTS, _TiedLM, _frozen_backbone, _count_verify, _count_mistake,
)
from .make_mlp import make_mlp_reference, _ListMLP, _linears_then, _chain, _hidden_list, _mlp_verify
from .kaiming_init import (
    kaiming_init_reference, _wrong_init, _kaiming, _weight_std_is, _non_linear_changed, _init_verify,
    _perturbed, _INIT_BUILDERS,
)
from .layer_output_stds import _stds_with_hooks, layer_output_stds_reference, _Block, _stds_case, _stds_verify
