"""The training doctor: ``diagnose(model, loss_fn, optimizer, batch, train_step=None)`` returns a
:class:`Report`, a table of what is wrong with a training setup and how to fix it.

The package is a one-way pipeline: each stage takes the plain records (dataclasses of
:mod:`.records`) of the stages before it and hands its own to the next; a module imports only
modules listed above it here (``tests/test_doctor.py`` checks this):

- :mod:`.records`: the records, :class:`Finding` and the stable codes, :data:`CODES`.
- :mod:`.common`: helpers of every stage (batch layout, kinds of loss, the divergence rule, the
  guard that stops a loss call before it runs).
- :mod:`.graph`: what the autograd graph says (the operation that made the loss input, the leaf
  tensors the loss reaches, zero-gradient operations on the way).
- :mod:`.checks` (stage 1): static checks of the objects (optimizer coverage, devices, inputs,
  tensors that ``model.parameters()`` does not see); no training runs.
- :mod:`.probes` (stage 2): runs the learner's step on deep copies with instruments and records
  what it did: one step run twice with ``optimizer.step()`` recorded, then the one-batch
  overfitting run, bounded by a number of steps from the model's size (never by time: the
  verdict does not depend on machine speed). The caller's objects are untouched.
- :mod:`.errors` and :mod:`.analysis` (stage 3): turn the records into findings.
- :mod:`.report` (stage 4): :class:`Report`, one finding per code.
- :mod:`.diagnose`: the entry point; validates the arguments and runs the stages in order.

Example: see :mod:`.diagnose`. Note that ``course_utils.doctor.diagnose`` is the function; the
module of the same name is ``sys.modules["course_utils.doctor.diagnose"]``.
"""

from .diagnose import (
    OVERFIT_SAMPLES,
    diagnose,
    first_samples,
    split_batch,
    standard_step,
)
from .report import CODES, Finding, Report

__all__ = [
    "CODES",
    "OVERFIT_SAMPLES",
    "Finding",
    "Report",
    "diagnose",
    "first_samples",
    "split_batch",
    "standard_step",
]
