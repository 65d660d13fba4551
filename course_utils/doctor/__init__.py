"""The training doctor: ``diagnose(model, loss_fn, optimizer, batch, train_step=None)`` returns a
:class:`Report`, a table of what is wrong with a training setup and how to fix it.

The stages, one module each (all of them work on copies; the caller's objects are untouched):

- :mod:`.diagnose`: the entry point. It validates the arguments, runs the stages below and
  collects their findings (one per code) into a :class:`Report`.
- :mod:`.checks`: static checks of the objects and tensors (optimizer coverage, devices, inputs,
  and what reaches the loss); no training runs.
- :mod:`.probes`: runs the learner's step on deep copies with instruments: one step run twice
  with ``optimizer.step()`` recorded, then the one-batch overfitting run, bounded by a number of
  steps from the model's size (never by time: the verdict does not depend on machine speed).
- :mod:`.analysis`: turns what the probes recorded into findings.
- :mod:`.graph`: what the autograd graph says (which operation made the loss input, which leaf
  tensors the loss reaches, zero-gradient operations on the way).
- :mod:`.errors`: turns an exception raised by the step into a finding.
- :mod:`.report`: :class:`Finding`, :class:`Report` and the stable codes, :data:`CODES`.

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
