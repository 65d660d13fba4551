"""Every blind answer (tests/blind/nbNN.py) judged as its writer decided from the task text alone."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import tests.blind as blind
from course_utils.exercises import check, list_exercises
from tests.learner_code import define


def _answers() -> list:
    found = []
    for info in sorted(pkgutil.iter_modules(blind.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"tests.blind.{info.name}")
        for i, answer in enumerate(getattr(module, "ANSWERS", [])):
            marks = [pytest.mark.xfail(reason=answer.defect, strict=True)] if answer.defect else []
            found.append(pytest.param(answer, id=f"{answer.exercise}-{i}-{answer.expect}", marks=marks))
    return found


ANSWERS = _answers()


def test_answers_are_well_formed():
    assert ANSWERS, "no blind answers found in tests/blind/"
    known = set(list_exercises())
    for param in ANSWERS:
        answer = param.values[0]
        assert answer.exercise in known, answer
        assert answer.expect in ("ok", "fail"), answer
        if answer.expect == "fail" and not answer.defect:
            assert answer.words, f"{answer.exercise} {answer.label!r}: a wrong answer must list the words naming it"


@pytest.mark.parametrize("answer", ANSWERS)
def test_blind_answer(answer):
    result = check(answer.exercise, define(answer.source, answer.name or None))
    if answer.expect == "ok":
        assert result.status == "ok", f"{answer.label}: correct answer rejected: {result.message}"
        return
    assert result.status == "fail", f"{answer.label}: wrong answer got {result.status}: {result.message}"
    assert "Traceback" not in result.message, result.message
    lowered = result.message.lower()
    missing = [w for w in answer.words if w.lower() not in lowered]
    assert not missing, f"{answer.label}: message does not name the mistake (missing {missing}): {result.message}"
