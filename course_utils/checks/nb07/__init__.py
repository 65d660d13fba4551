"""Exercises of notebook 07 (AMP and GPU memory): training-memory bytes, saved activations, an AMP step.

One module per exercise; importing this package registers all three ``07.*`` ids:

* :mod:`.training_memory` -- ``07.training_memory``
* :mod:`.saved_activation_bytes` -- ``07.saved_activation_bytes``
* :mod:`.amp_train_step` -- ``07.amp_train_step``
* :mod:`._common` -- ``_number_problem``, shared by the first two

The AMP step is checked on the CPU with a real ``torch.amp.GradScaler("cpu")`` whose method
calls are recorded (:class:`SpyScaler`) and a model that records whether its forward ran under
autocast, so every typical mistake is visible without a GPU.
"""

from __future__ import annotations

from ._common import _number_problem
from .training_memory import (
    training_memory_reference, _COPIES, _TiedLM, _tm_adam_once, _tm_cases, _tm_describe, _tm_field,
    _tm_float32_always, _tm_frozen_trained, _tm_no_grads, _tm_no_momentum, _tm_per_module,
    _tm_step_bytes, _tm_verify,
)
from .saved_activation_bytes import (
    saved_activation_bytes_reference, _graph_kept_alive, _sab_cases, _sab_every_save, _sab_no_grad,
    _sab_numel, _sab_returns_t, _sab_verify, _sab_with_params, _saved, _Square, _Watched,
)
from .amp_train_step import (
    amp_train_step_reference, SpyScaler, _amp_build, _amp_expected, _amp_variant, _amp_verify,
    _AutocastRecorder, _calls, _close_ratio, _grad_ratio, _rel,
)
