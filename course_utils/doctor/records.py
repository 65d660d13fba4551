"""The plain records the training doctor's stages hand each other, and the stable codes.

The doctor is a one-way pipeline (see :mod:`course_utils.doctor`); each stage takes the records
of the stages before it and returns its own:

=====================  ===========================  =======================================
stage                  module                       returns
=====================  ===========================  =======================================
the arguments          :mod:`.diagnose`             :class:`Inputs`
static checks          :mod:`.checks`               :class:`StaticRecord`
probes                 :mod:`.probes`               :class:`ProbeRecord` (:class:`StepRecord`,
                                                    :class:`OverfitRecord`)
analysis               :mod:`.analysis`             :class:`Analysis` (:class:`Finding` list)
the report             :mod:`.report`               :class:`~.report.Report`
=====================  ===========================  =======================================

A finding's message has three parts, always in this order::

    <what was observed, with numbers> Why it matters: <...> Fix: <...>

Example:
    >>> item = finding("NAN_OR_INF", "error", "the loss is nan.", "one NaN spreads.", "clean the data.")
    >>> item.parts()
    ('the loss is nan.', 'one NaN spreads.', 'clean the data.')
    >>> finding("NO_SUCH_CODE", "error", "a", "b", "c")
    Traceback (most recent call last):
    ...
    ValueError: unknown finding code 'NO_SUCH_CODE'; expected one of [...]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

from ..i18n import N_, t

Severity = Literal["error", "warning"]

class _Meanings(dict):
    """code -> what it means; a meaning is read in the current language (:func:`course_utils.i18n.t`)."""

    def __getitem__(self, code: str) -> str:
        return t(super().__getitem__(code))

    def get(self, code: str, default: Any = None) -> Any:
        return self[code] if code in self else default

    def values(self) -> list[str]:  # type: ignore[override]
        return [self[code] for code in self]

    def items(self) -> list[tuple[str, str]]:  # type: ignore[override]
        return [(code, self[code]) for code in self]


#: Every code the doctor can report (stable strings), with what it means.
CODES: dict[str, str] = _Meanings({
    "ZERO_GRAD_MISSING": N_("gradients are not cleared between steps, so they accumulate"),
    "SOFTMAX_BEFORE_CE": N_("probabilities (a softmax or sigmoid output) are given to a loss that expects logits"),
    "PARAM_NOT_IN_OPTIMIZER": N_("trainable parameters that the optimizer does not update"),
    "NO_GRAD_FLOW": N_("parameters that never receive a gradient when optimizer.step() runs"),
    "NAN_OR_INF": N_("NaN or Inf in the batch, an activation, the loss or a gradient"),
    "LR_TOO_HIGH": N_("the loss diverges when the model trains on one batch"),
    "CANNOT_OVERFIT_BATCH": N_("the loss does not go down when the model trains on one batch"),
    "LABEL_OUT_OF_RANGE": N_("class labels outside 0 .. number_of_classes - 1"),
    "DEVICE_MISMATCH": N_("model, batch and loss are not all on one device"),
    "DTYPE_MISMATCH": N_("input or target dtype does not fit the model or the loss"),
    "BROADCAST_IN_LOSS": N_("prediction and target shapes differ but broadcast inside the loss"),
    "INPUT_NOT_NORMALIZED": N_("inputs far from zero mean / unit scale (e.g. image pixels 0..255 never scaled)"),
    "EVAL_MODE_LEFT_ON": N_("training while Dropout/BatchNorm are in eval mode"),
    "PARAMS_NOT_REGISTERED": N_("layers in a plain Python list/dict, or tensors, that model.parameters() does not see"),
    "INPLACE_MODIFIED": N_("an in-place operation overwrote a tensor that backward() still needs"),
    "GRAPH_REUSED": N_("a tensor from an earlier step (e.g. a hidden state) still holds that step's graph"),
    "TARGET_SHAPE": N_("the target's shape does not fit the loss (class indices shaped (N, 1), classes not in dim 1)"),
    "NON_DIFFERENTIABLE": N_("a non-differentiable step (argmax, round, comparison) between the model and the loss"),
    "STUCK_AT_CHANCE": N_("the loss settles at chance level and the model gives every sample the same output"),
    "RNN_BATCH_FIRST": N_("an RNN built with batch_first=False is fed (batch, time, features) inputs"),
    "NLL_ON_LOGITS": N_("NLLLoss receives raw scores instead of log-probabilities (no log_softmax)"),
    "BCE_ON_LOGITS": N_("BCELoss receives raw scores instead of probabilities (no sigmoid)"),
    "RELU_ON_OUTPUT": (N_("the output ends in a ReLU (or a clamp at 0): a regression model can never predict the "
                       "negative targets, a classifier's scores can never go below 0")),
    "NOT_CHECKED": N_("the doctor could not run its checks; the message says what and why"),
    "STEP_FAILED": N_("the training step raised an error that none of the other codes explains"),
})

_WHY = " Why it matters: "
_FIX = " Fix: "


def _markers() -> list[tuple[str, str]]:
    """The (why, fix) markers of a message: the current language's, then the English ones."""
    here = (f" {t('Why it matters:')} ", f" {t('Fix:')} ")
    return [here] if here == (_WHY, _FIX) else [here, (_WHY, _FIX)]


@dataclass(frozen=True)
class Finding:
    """One problem: a stable ``code``, a ``severity`` and a message (observed, why, fix)."""

    code: str
    severity: Severity
    message: str

    def parts(self) -> tuple[str, str, str]:
        """(observed, why it matters, fix) split out of the message."""
        for why_marker, fix_marker in _markers():
            observed, _, rest = self.message.partition(why_marker)
            if rest:
                why, _, fix = rest.partition(fix_marker)
                return observed.strip(), why.strip(), fix.strip()
        for _, fix_marker in _markers():
            observed, _, fix = self.message.partition(fix_marker)  # a message without the why marker
            if fix:
                break
        return observed.strip(), "", fix.strip()


def finding(code: str, severity: Severity, observed: str, why: str, fix: str) -> Finding:
    """Build a :class:`Finding` whose message follows the observed / why / fix convention."""
    if code not in CODES:
        raise ValueError(f"unknown finding code {code!r}; expected one of {sorted(CODES)}")
    (why_marker, fix_marker), *_ = _markers()
    return Finding(code, severity, f"{observed.strip()}{why_marker}{why.strip()}{fix_marker}{fix.strip()}")


# --- stage 0: the arguments ---------------------------------------------------------------------

Step = Callable[[nn.Module, Any, torch.optim.Optimizer, Any], Any]


@dataclass
class Inputs:
    """The validated arguments of :func:`course_utils.doctor.diagnose`."""

    model: nn.Module
    loss_fn: Any
    optimizer: torch.optim.Optimizer
    batch: Any
    step: Step
    #: True when diagnose() runs its own standard step (no ``train_step`` given).
    standard: bool
    #: The inputs and targets when the batch is a pair or a dict with known keys (else None).
    x: Any = None
    y: Any = None
    max_steps: int = 60


# --- stage 1: static checks ---------------------------------------------------------------------

@dataclass
class Hidden:
    """Tensors that require gradients but that ``model.parameters()`` does not list, found under
    one attribute (a layer in a plain Python list, a bare tensor)."""

    label: str
    kind: str
    #: ids of the caller's tensors, and their sizes.
    ids: list[int]
    numels: list[int]
    in_optimizer: list[bool]


@dataclass
class StaticRecord:
    """What :func:`.checks.static_checks` found without running anything."""

    findings: list[Finding] = field(default_factory=list)
    hidden: list[Hidden] = field(default_factory=list)
    #: Why no step can run (devices differ, the batch is on the meta device), or None.
    stop: str | None = None
    #: Findings about the batch's inputs when a train_step of your own runs: it may convert or
    #: normalise them, so the analysis judges what reached the model instead, and uses these only
    #: when the step never called the model.
    deferred: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)


# --- stage 2: probes --------------------------------------------------------------------------

@dataclass
class GraphInfo:
    """What :func:`.graph.walk` found behind a loss."""

    #: The leaf tensors the loss depends on (each AccumulateGrad node's variable).
    leaves: list[torch.Tensor] = field(default_factory=list)
    #: Names of zero-gradient operations (round, floor, sign, ...) on the way.
    zero_gradient_ops: list[str] = field(default_factory=list)
    #: A log_softmax (or NLLLoss) applied to a softmax's output on the way: cross-entropy on probabilities.
    softmax_then_log: bool = False
    complete: bool = True


@dataclass
class LossCall:
    """One call of the loss function, as the doctor saw it."""

    pred: torch.Tensor
    target: torch.Tensor
    autocast: bool
    #: The operation that made the prediction, looking through reshapes (``SoftmaxBackward0``...).
    producer: str | None
    requires_grad: bool
    #: When the shapes differ: does the loss give the same value with the target reshaped to the
    #: prediction's shape? (True: the loss reshapes internally; None: not tried.)
    reshaped_same: bool | None = None
    #: The ``ignore_index`` passed to the call (None: not passed; the loss object's or -100 applies).
    ignore_index: int | None = None
    #: The operation right after the last layer that bounds the prediction from below (a ReLU, a
    #: clamp(min=0)...), looking through reshapes: (operation, lower bound); None when there is none.
    floor: tuple[str, float] | None = None


@dataclass
class StepError:
    """Why a probed step stopped: an exception it raised, or a guard of the loss recorder that
    stopped the loss before it ran (``guard``: ``"labels"``, ``"target_n1"``, ``"class_dim"``,
    ``"one_hot"``, ``"regression_labels"``, ``"bce_range"``; see :func:`.common.loss_guard`; then
    ``call`` is what reached the loss)."""

    kind: str
    text: str
    #: The learner's own line that raised, as `` (at `...`)`` (empty when unknown).
    line: str = ""
    guard: str | None = None
    call: LossCall | None = None


@dataclass
class StepRecord:
    """What :func:`.probes.probe_step` saw (ids are those of the probe's copies)."""

    names: dict[int, str]
    trainable: list[nn.Parameter]
    losses: list[float] = field(default_factory=list)
    #: The gradients at each (recorded, not executed) optimizer.step().
    step_grads: list[dict[int, torch.Tensor | None]] = field(default_factory=list)
    #: Per call: the gradient backward() computed for each parameter (summed over backward calls).
    increments: list[dict[int, torch.Tensor]] = field(default_factory=list)
    #: Per call: what .grad held when the call's first gradient arrived (None: empty / zero).
    leftover: list[dict[int, torch.Tensor | None]] = field(default_factory=list)
    #: Per call: whether it updated the parameters (optimizer.step() or a hand-written update).
    updated: list[bool] = field(default_factory=list)
    accumulated: dict[int, int] = field(default_factory=dict)
    eval_layers: list[str] = field(default_factory=list)
    root_training: bool | None = None
    nonfinite: str | None = None
    loss_calls: list[LossCall] = field(default_factory=list)
    model_outputs: list[Any] = field(default_factory=list)
    graph: GraphInfo | None = None
    #: Number of values in all layer outputs of the first call (the cost of a step, with the parameters).
    activations: int = 0
    samples: int = 0
    #: ids of the caller's tensors that the loss reaches (mapped back from the copies), when the
    #: loss graph was walked completely; None otherwise.
    reached: set[int] | None = None
    #: Shapes of tensors the loss depends on that receive gradients but are parameters of neither
    #: the model nor the optimizer, and are not attributes of the model (created inside forward()):
    #: (shape, id of the caller's tensor or None, whether it is an nn.Parameter).
    foreign: list[tuple[tuple[int, ...], int | None, bool]] = field(default_factory=list)
    #: RNN layers seen in the first call: (name, batch_first, shape of the input).
    rnn_inputs: list[tuple[str, bool, tuple[int, ...]]] = field(default_factory=list)
    error: StepError | None = None
    #: Operations recorded during the first call that the second call's backward() went through
    #: again (state carried between steps with its graph, hidden by retain_graph=True).
    reused_operations: int = 0
    #: What the model's forward() received first in the first call (the first tensor argument).
    model_input: torch.Tensor | None = None
    #: Type name of what the step returned when it was not a loss (and loss_fn was never called).
    returned: str | None = None


@dataclass
class OverfitRecord:
    """What :func:`.probes.probe_overfit` saw: the loss after each step on the same batch."""

    losses: list[float]
    lrs: list[float]
    step_calls: int
    changed: float
    samples: int = 0
    error: StepError | None = None
    #: The last (prediction, target) that reached the loss.
    last: tuple[torch.Tensor, torch.Tensor] | None = None
    budget: int = 0
    #: The learning rates after the last step (a scheduler the step closes over may change them).
    end_lrs: list[float] = field(default_factory=list)


@dataclass
class ProbeRecord:
    """Everything :func:`.probes.run_probes` ran: the instrumented step, then the one-batch run
    (and its second opinion with the learning rate x10 or x0.1)."""

    step: StepRecord | None = None
    overfit: OverfitRecord | None = None
    second: OverfitRecord | None = None
    #: Number of parameter values of the model (for the step budget).
    n_params: int = 0
    budget: int = 0
    #: The copies could not be made: why (then nothing ran).
    copy_failed: str | None = None
    #: The one-batch run used the whole batch because the step failed on its first samples.
    whole_batch: bool = False
    notes: list[str] = field(default_factory=list)


# --- stage 3: analysis ----------------------------------------------------------------------------

@dataclass
class Analysis:
    """The findings, notes and measurements :func:`.analysis.analyse` drew from the records."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    measurements: dict[str, Any] = field(default_factory=dict)
