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
import re
import textwrap
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ..i18n import ENGLISH, language, t, tn
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
        title = t("Training doctor: {errors}, {warnings}",
                  errors=tn("{n} error", "{n} errors", n_err), warnings=tn("{n} warning", "{n} warnings", n_warn))
        if "seconds" in self.measurements:
            title += t(" (diagnosis took {seconds:.2f} s)", seconds=self.measurements["seconds"])
        return title

    def _ordered(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: f.severity != "error")

    def __str__(self) -> str:
        lines = [self._title()]
        wide = language() != ENGLISH  # Chinese: two columns per character, lines wrapped at half the length
        if self.findings:
            head = (t("severity"), t("code"), t("details"))
            levels = {item.severity: _SEVERITY[item.severity]().upper() for item in self.findings}
            first = max(8, _width(head[0]), *(_width(v) for v in levels.values()))
            width = max(_width(head[1]), *(len(f.code) for f in self.findings))
            lines.append(f"{_pad(head[0], first)}  {_pad(head[1], width)}  {head[2]}")
            lines.append(f"{'-' * first}  {'-' * width}  {'-' * max(7, _width(head[2]))}")
            indent = " " * (first + 2 + width + 2)
            labels = (t("Observed"), t("Why it matters"), t("Fix"))
            for item in self._ordered():
                observed, why, fix = item.parts()
                body: list[str] = []
                for label, text in zip(labels, (observed, why, fix)):
                    if text:
                        body += (_wrap_wide(t("{label}: {text}", label=label, text=text), 76, "", "  ") if wide
                                 else textwrap.wrap(f"{label}: {text}", 76, subsequent_indent="  "))
                lines.append(f"{_pad(levels[item.severity], first)}  {item.code:<{width}}  {body[0]}")
                lines += [indent + line for line in body[1:]]
        else:
            lines.append(t("No problems found."))
        if self.notes:
            lines.append(t("Measured:"))
            lines += ["\n".join(_wrap_wide(note, 96, "  - ", "    ")) if wide else
                      textwrap.fill(note, 96, initial_indent="  - ", subsequent_indent="    ") for note in self.notes]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colours = {"error": "#c62828", "warning": "#ef6c00"}
        cell = "style='text-align:left;vertical-align:top;padding:4px 8px'"
        rows = []
        for item in self._ordered():
            observed, why, fix = (html.escape(part[:1].upper() + part[1:]) for part in item.parts())
            rows.append(
                f"<tr><td {cell}><b style='color:{colours[item.severity]}'>{html.escape(_SEVERITY[item.severity]())}"
                f"</b></td><td {cell}><code>{item.code}</code></td><td {cell}>{observed}</td>"
                f"<td {cell}>{why}</td><td {cell}>{fix}</td></tr>")
        parts = [f"<p><b>{html.escape(self._title())}</b></p>"]
        if rows:
            head = "".join(f"<th {cell}>{html.escape(h)}</th>" for h in
                           (t("severity"), t("code"), t("observed"), t("why it matters"), t("fix")))
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
        else:
            parts.append(f"<p style='color:#2e7d32'>{html.escape(t('No problems found.'))}</p>")
        if self.notes:
            items = "".join(f"<li>{html.escape(note)}</li>" for note in self.notes)
            parts.append(f"<p>{html.escape(t('Measured:'))}</p><ul>{items}</ul>")
        return "\n".join(parts)


#: A severity as the report shows it (translated when shown).
_SEVERITY = {"error": lambda: t("error"), "warning": lambda: t("warning")}


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (a Chinese character takes two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


_NO_BREAK_BEFORE = "，。：；、）》」！？,.:;)]"


def _wrap_wide(text: str, width: int, first: str, rest: str) -> list[str]:
    """Lines of at most ``width`` columns for text mixing Chinese and code: a line may break after
    any Chinese character or at a space, never inside an English word or before punctuation."""
    tokens = re.findall(r"[^\s\u2e80-\u9fff\uff00-\uffef]+|[\u2e80-\u9fff\uff00-\uffef]|\s+", text)
    merged: list[str] = []
    for token in tokens:  # punctuation stays with the token before it
        if merged and token[0] in _NO_BREAK_BEFORE and not merged[-1].isspace():
            merged[-1] += token
        else:
            merged.append(token)
    lines, line = [], first
    for token in merged:
        if token.isspace():
            token = " "
            if line.strip() == "" or _width(line) + 1 > width:
                continue
        elif _width(line) + _width(token) > width and line.strip():
            lines.append(line.rstrip())
            line = rest
        line += token
    lines.append(line.rstrip())
    return lines


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
