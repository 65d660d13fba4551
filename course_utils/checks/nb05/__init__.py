"""Exercises of notebook 05 (data pipeline): normalisation statistics, loaders, padding.

* ``_common.py``: helpers shared by the notebook 05 checkers: seeded generators.
* ``05.normalization_stats`` in ``normalization_stats.py``: per-channel mean and std over images and pixels.
* ``05.make_loaders`` in ``make_loaders.py``: shuffled train loader without its last batch, ordered val loader.
* ``05.pad_collate`` in ``pad_collate.py``: pad a batch of sequences to its longest, with lengths and labels.

Importing this package imports every submodule, which registers all ``05.*`` exercises;
the names below are re-exported so ``course_utils.checks.nb05.<name>`` keeps working.
"""

from __future__ import annotations

from ._common import _gen
from .normalization_stats import (
    normalization_stats_reference, _stats_global, _stats_wrong_axes, _stats_mean_of_stds, _stats_cases,
    _as_pair, _stats_verify, _is_global, _is_wrong_axes, _is_mean_of_stds,
)
from .make_loaders import (
    make_loaders_reference, _loaders_shuffle_val, _loaders_no_shuffle, _loaders_keep_last, _loaders_drop_val,
    _loader_cases, _pair_of_loaders, _loaders_verify, _val_shuffled, _train_unshuffled, _train_keeps_last,
    _val_drops,
)
from .pad_collate import (
    pad_collate_reference, _pad_time_major, _pad_lengths_after, _pad_fixed, _pad_cases, _triple, _pad_verify,
    _is_time_major, _is_lengths_after, _is_fixed,
)
