"""Exercises of notebook 06 (training loop): one epoch, evaluation, a clipped step.

The case factories build tiny deterministic models that *record how they are used*:
whether each forward pass ran in training mode and with gradient tracking, and whether
``backward()`` added its gradients on top of stale ones. The loss function records whether
it received probabilities instead of logits. The checkers read those records, so the
feedback names the mistake even when the numbers happen to look plausible.

* ``_common.py``: recording probes shared by the notebook 06 checkers: ProbeNet, RecordingCrossEntropy, data.
* ``06.train_one_epoch`` in ``train_one_epoch.py``: train mode, zero_grad, logits into the loss, per-sample mean.
* ``06.evaluate`` in ``evaluate.py``: eval mode, no gradient tracking, accuracy over all samples.
* ``06.clipped_step`` in ``clipped_step.py``: zero_grad, backward, clip_grad_norm_, step; the norm before clipping.

Importing this package imports every submodule, which registers all ``06.*`` exercises;
the names below are re-exported so ``course_utils.checks.nb06.<name>`` keeps working.
"""

from __future__ import annotations

from ._common import (
    N_FEATURES, N_CLASSES, _gen, ProbeNet, RecordingCrossEntropy, _classification_data, _loader, _is_number,
)
from .train_one_epoch import (
    train_one_epoch_reference, _epoch_no_zero_grad, _epoch_no_train, _epoch_softmax, _epoch_unweighted,
    _epoch_last_loss, _epoch_cases, _epoch_verify, _ran_in_eval, _batch_sizes, _unweighted_mean,
    _returned_last,
)
from .evaluate import (
    evaluate_reference, _eval_no_eval, _eval_grad, _eval_wrong_dim, _eval_batch_mean, _eval_percent,
    _eval_cases, _wrong_dim_accuracy, _eval_verify, _argmax_wrong_dim, _mean_of_batch_accuracies,
    _percent_or_tensor,
)
from .clipped_step import (
    clipped_step_reference, _clip_after_step, _clip_before_backward, _clip_no_zero_grad, _clip_tensor,
    _clip_setup, _clip_cases, _largest_difference, _clip_verify, _updated_unclipped,
)
