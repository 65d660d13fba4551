"""What the training doctor returns: :class:`Finding`, :class:`Report` and the stable codes.

A finding's message has three parts, always in this order::

    <what was observed, with numbers> Why it matters: <...> Fix: <...>

A :class:`Report` shows as a table: as text (``print(report)``) and as HTML in Jupyter.

Example:
    >>> report = Report([finding("NAN_OR_INF", "error", "the loss is nan.",
    ...                          "one NaN spreads to every weight.", "clean the data.")])
    >>> report.codes, report.ok
    ({'NAN_OR_INF'}, False)
    >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
    Training doctor: 1 error, 0 warnings
    severity  code        details
    --------  ----------  -------
    ERROR     NAN_OR_INF  Observed: the loss is nan.
                          Why it matters: one NaN spreads to every weight.
                          Fix: clean the data.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]

#: Every code the doctor can report (stable strings), with what it means.
CODES: dict[str, str] = {
    "ZERO_GRAD_MISSING": "gradients are not cleared between steps, so they accumulate",
    "SOFTMAX_BEFORE_CE": "probabilities (softmax output) are given to a loss that expects logits",
    "PARAM_NOT_IN_OPTIMIZER": "trainable parameters that the optimizer does not update",
    "NO_GRAD_FLOW": "parameters that never receive a gradient when optimizer.step() runs",
    "NAN_OR_INF": "NaN or Inf in the batch, an activation, the loss or a gradient",
    "LR_TOO_HIGH": "the loss diverges when the model trains on one batch",
    "CANNOT_OVERFIT_BATCH": "the loss does not go down when the model trains on one batch",
    "LABEL_OUT_OF_RANGE": "class labels outside 0 .. number_of_classes - 1",
    "DEVICE_MISMATCH": "model, batch and loss are not all on one device",
    "DTYPE_MISMATCH": "input or target dtype does not fit the model or the loss",
    "BROADCAST_IN_LOSS": "prediction and target shapes differ but broadcast inside the loss",
    "INPUT_NOT_NORMALIZED": "inputs far from zero mean / unit scale",
    "EVAL_MODE_LEFT_ON": "training while Dropout/BatchNorm are in eval mode",
    "PARAMS_NOT_REGISTERED": "layers in a plain Python list/dict, or tensors, that model.parameters() does not see",
    "INPLACE_MODIFIED": "an in-place operation overwrote a tensor that backward() still needs",
    "GRAPH_REUSED": "a tensor from an earlier step (e.g. a hidden state) still holds that step's graph",
    "TARGET_SHAPE": "the target's shape does not fit the loss (e.g. class indices shaped (N, 1))",
    "NON_DIFFERENTIABLE": "a non-differentiable step (argmax, round, comparison) between the model and the loss",
    "STUCK_AT_CHANCE": "the loss settles at chance level and the model gives every sample the same output",
    "RNN_BATCH_FIRST": "an RNN built with batch_first=False is fed (batch, time, features) inputs",
    "NOT_CHECKED": "the doctor could not run its checks; the message says what and why",
    "STEP_FAILED": "the training step raised an error that none of the other codes explains",
}

_WHY = " Why it matters: "
_FIX = " Fix: "


@dataclass(frozen=True)
class Finding:
    """One problem: a stable ``code``, a ``severity`` and a message (observed, why, fix)."""

    code: str
    severity: Severity
    message: str

    def parts(self) -> tuple[str, str, str]:
        """(observed, why it matters, fix) split out of the message."""
        observed, _, rest = self.message.partition(_WHY)
        why, _, fix = rest.partition(_FIX)
        if not rest:  # a message without the markers
            observed, _, fix = self.message.partition(_FIX)
        return observed.strip(), why.strip(), fix.strip()


def finding(code: str, severity: Severity, observed: str, why: str, fix: str) -> Finding:
    """Build a :class:`Finding` whose message follows the observed / why / fix convention."""
    if code not in CODES:
        raise ValueError(f"unknown finding code {code!r}; expected one of {sorted(CODES)}")
    return Finding(code, severity, f"{observed.strip()}{_WHY}{why.strip()}{_FIX}{fix.strip()}")


@dataclass
class Report:
    """The result of :func:`course_utils.doctor.diagnose`."""

    findings: list[Finding]
    #: What the probes measured, one sentence each (shown under the table).
    notes: list[str] = field(default_factory=list)
    #: Raw numbers, e.g. ``"overfit_losses"`` (the one-batch losses) and ``"seconds"``.
    measurements: dict[str, Any] = field(default_factory=dict)

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        """True when no finding has severity ``error``."""
        return not self.errors

    def _title(self) -> str:
        n_err, n_warn = len(self.errors), len(self.warnings)
        title = (f"Training doctor: {n_err} error{'s' * (n_err != 1)}, "
                 f"{n_warn} warning{'s' * (n_warn != 1)}")
        if "seconds" in self.measurements:
            title += f" (diagnosis took {self.measurements['seconds']:.2f} s)"
        return title

    def _ordered(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: f.severity != "error")

    def __str__(self) -> str:
        lines = [self._title()]
        if self.findings:
            width = max(len("code"), *(len(f.code) for f in self.findings))
            lines.append(f"{'severity':<8}  {'code':<{width}}  details")
            lines.append(f"{'-' * 8}  {'-' * width}  -------")
            indent = " " * (8 + 2 + width + 2)
            for item in self._ordered():
                observed, why, fix = item.parts()
                body: list[str] = []
                for label, text in (("Observed", observed), ("Why it matters", why), ("Fix", fix)):
                    if text:
                        body += textwrap.wrap(f"{label}: {text}", 76, subsequent_indent="  ")
                lines.append(f"{item.severity.upper():<8}  {item.code:<{width}}  {body[0]}")
                lines += [indent + line for line in body[1:]]
        else:
            lines.append("No problems found.")
        if self.notes:
            lines.append("Measured:")
            lines += [textwrap.fill(note, 96, initial_indent="  - ", subsequent_indent="    ")
                      for note in self.notes]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colours = {"error": "#c62828", "warning": "#ef6c00"}
        cell = "style='text-align:left;vertical-align:top;padding:4px 8px'"
        rows = []
        for item in self._ordered():
            observed, why, fix = (html.escape(part[:1].upper() + part[1:]) for part in item.parts())
            rows.append(
                f"<tr><td {cell}><b style='color:{colours[item.severity]}'>{item.severity}</b></td>"
                f"<td {cell}><code>{item.code}</code></td><td {cell}>{observed}</td>"
                f"<td {cell}>{why}</td><td {cell}>{fix}</td></tr>")
        parts = [f"<p><b>{html.escape(self._title())}</b></p>"]
        if rows:
            head = "".join(f"<th {cell}>{h}</th>" for h in
                           ("severity", "code", "observed", "why it matters", "fix"))
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
        else:
            parts.append("<p style='color:#2e7d32'>No problems found.</p>")
        if self.notes:
            items = "".join(f"<li>{html.escape(note)}</li>" for note in self.notes)
            parts.append(f"<p>Measured:</p><ul>{items}</ul>")
        return "\n".join(parts)
