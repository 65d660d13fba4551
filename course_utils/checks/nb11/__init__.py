"""Exercises of notebook 11 (distributed data parallel): sharding, gradient averaging, saving.

Importing this package registers all four ``11.*`` ids:

* :mod:`.shard_indices` -- ``11.shard_indices``
* :mod:`.average_gradients` -- ``11.average_gradients``
* :mod:`.saving` -- ``11.should_save`` and ``11.unwrapped_state_dict``
"""

from __future__ import annotations

from .shard_indices import (
    shard_indices_reference, _as_list, _shard_blocks, _shard_cases, _shard_drop_remainder,
    _shard_same_for_all, _shard_unequal, _shard_verify,
)
from .average_gradients import (
    average_gradients_reference, _avg_cases, _avg_no_communication, _avg_single_list,
    _avg_sum_only, _avg_verify, _avg_within_rank,
)
from .saving import (
    should_save_reference, unwrapped_state_dict_reference, _ddp_shell, _HasModuleLayer,
    _save_cases, _save_every_rank, _save_off_by_one, _save_verify, _unwrap_always,
    _unwrap_by_attribute, _unwrap_cases, _unwrap_keeps_prefix, _unwrap_verify,
)
