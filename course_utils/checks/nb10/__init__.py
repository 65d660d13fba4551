"""Exercises of notebook 10 (performance, compile, export): timing, sync-free logging, export-ready branches.

One module per exercise; importing this package registers all three ``10.*`` ids:

* :mod:`.time_it` -- ``10.time_it`` (with :class:`FakeAsyncDevice`)
* :mod:`.mean_epoch_loss` -- ``10.mean_epoch_loss``
* :mod:`.clip_norm` -- ``10.clip_norm``
"""

from __future__ import annotations

from .time_it import (
    FakeAsyncDevice, time_it_reference, _device_of, _real_clock_used, _same_as, _time_cases,
    _time_no_sync, _time_no_warmup, _time_real_clock, _time_sync_first_only, _time_sync_unchecked,
    _time_total, _time_verify, _time_warmup_unsynced,
)
from .mean_epoch_loss import (
    mean_epoch_loss_reference, _loss_cases, _loss_graph, _loss_items, _loss_sum, _loss_verify,
    _SyncCounter, _SYNCING, _syncs,
)
from .clip_norm import (
    clip_norm_reference, _ALIAS_HINT, _AsModule, _clip_alias, _clip_always, _clip_cases,
    _clip_python_if, _clip_swapped, _clip_verify, _exportable, _PY_IF_HINT,
)
