"""Every rule each exercise's task text states has a wrong answer in ``tests/rule_table.py``, and the
checker tells that answer ``[FAIL]``. An exercise without a rule table fails here."""

from __future__ import annotations

import pytest

from course_utils.exercises import check, get_exercise, list_exercises
from tests.rule_table import RULES

# The lessons' exercises (00-14); other tests register toy exercises (98.*) in the same process.
EXERCISES = [e for e in list_exercises() if int(e.split(".")[0]) <= 14]


def test_every_exercise_has_a_rule_table() -> None:
    missing = [e for e in EXERCISES if not RULES.get(e)]
    assert not missing, f"exercises without a rule table in tests/rule_table.py: {missing}"
    unknown = sorted(set(RULES) - set(EXERCISES))
    assert not unknown, f"rule tables for unknown exercises: {unknown}"


def _wrong_answer(exercise_id: str, wrong):
    if callable(wrong):
        return wrong
    names = {m.name: m for m in get_exercise(exercise_id).mistakes}
    assert wrong in names, f"{exercise_id}: no mistake named {wrong!r} (known: {sorted(names)})"
    return names[wrong].example


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_each_rule_has_a_case_that_fails_its_wrong_answer(exercise_id: str) -> None:
    wrong_verdicts = []
    for rule in RULES.get(exercise_id, []):
        result = check(exercise_id, _wrong_answer(exercise_id, rule.wrong))
        if result.status != "fail":
            wrong_verdicts.append(f"rule {rule.text!r} ({rule.case}): its wrong answer got {result.message}")
    assert not wrong_verdicts, "\n".join(wrong_verdicts)
