"""Stage 4 of the training doctor, the report: :class:`Report` (one finding per code) built from
the analysis (:func:`build_report`). :class:`Finding`, :func:`finding` and the stable codes,
:data:`CODES`, are defined in :mod:`.records` and importable from here.

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
from typing import Any

from .records import CODES, Analysis, Finding, Severity, finding

__all__ = ["CODES", "Finding", "Report", "Severity", "build_report", "finding"]

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


def build_report(analysis: Analysis, seconds: float | None = None) -> Report:
    """Stage 4: the report, one finding per code (the first one found), with the notes and the
    measurements (plus ``"seconds"``, the time the diagnosis took)."""
    unique: dict[str, Finding] = {}
    for item in analysis.findings:
        unique.setdefault(item.code, item)
    measurements = dict(analysis.measurements)
    if seconds is not None:
        measurements["seconds"] = seconds
    return Report(list(unique.values()), list(analysis.notes), measurements)
