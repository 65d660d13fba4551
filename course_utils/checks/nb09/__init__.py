"""Exercises of notebook 09 (debugging and reproducibility): seeding, NaN hunting with forward
hooks, and fixing a training step from the training doctor's report.

One module per exercise; importing this package registers all three ``09.*`` ids:

* :mod:`.seed_everything` -- ``09.seed_everything``
* :mod:`.nonfinite_layers` -- ``09.nonfinite_layers``
* :mod:`.fix_train_step` -- ``09.fix_train_step``
"""

from __future__ import annotations

from .seed_everything import (
    seed_everything_reference, _AFTER_CANDIDATE, _expected_draws, _fixed_seed, _global_draws,
    _RNG_NAMES, _seed_case, _seed_fixed, _seed_generator_unseeded, _seed_no_numpy, _seed_no_random,
    _seed_no_torch, _seed_verify,
)
from .nonfinite_layers import (
    Exp, Log, nonfinite_layers_reference, _nonfinite_all_modules, _nonfinite_cases,
    _nonfinite_hooks_left, _nonfinite_nan_only, _nonfinite_registration_order, _nonfinite_verify,
    _OutOfOrder,
)
from .fix_train_step import (
    fix_train_step_inputs, fix_train_step_reference, _CANDIDATE, _doctor_says, _fix_case,
    _fix_verify, _remember, _step_no_train, _step_no_zero_grad, _step_softmax, _step_tensor,
    _step_zero_after_backward,
)
