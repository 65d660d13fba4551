"""The mutation gate on toy exercises: a weak checker lets mutants survive and the gate fails, a good one
passes; an endless-loop mutant is killed by the time limit, or reported as a hang by the hard timeout;
equivalents are not counted; keys are stable."""

from __future__ import annotations

from typing import Iterator

import pytest

from course_utils import exercises
from tools import mutation


@pytest.fixture
def toys() -> Iterator[None]:
    from tests import mutation_toy

    mutation_toy.register_all()
    yield
    for exercise_id in mutation_toy.IDS:
        exercises._REGISTRY.pop(exercise_id, None)


def test_weak_checker_fails_the_gate(toys) -> None:
    report = mutation.run(["98.toy_weak"], jobs=0, equivalents={})
    survivors = [o.mutant.key for o in report.outcomes if o.verdict == "survived"]
    assert "compare:2:Gt->GtE" in survivors
    assert report.score() < 0.99 and not mutation.passed(report, 0.99)
    assert "SURVIVED 98.toy_weak compare:2:Gt->GtE" in mutation.format_report(report, ["98.toy_weak"], 0.99)


def test_good_checker_passes_the_gate(toys) -> None:
    report = mutation.run(["98.toy_good"], jobs=0, equivalents={})
    assert report.counts().get("killed", 0) >= 10
    survivors = [o.mutant.key for o in report.outcomes if o.verdict == "survived"]
    assert not survivors, survivors
    assert mutation.passed(report, 0.99)


def test_equivalents_are_not_counted_and_stale_ones_are_listed(toys) -> None:
    weak = mutation.run(["98.toy_weak"], jobs=0, equivalents={})
    survivors = [o.mutant.key for o in weak.outcomes if o.verdict == "survived"]
    listed = {("98.toy_weak", key): "toy" for key in survivors}
    listed[("98.toy_weak", "arith:9:no such mutant")] = "stale"
    report = mutation.run(["98.toy_weak"], jobs=0, equivalents=listed)
    assert report.counts().get("equivalent") == len(survivors) and mutation.passed(report, 0.99)
    assert report.stale_equivalents == ["98.toy_weak arith:9:no such mutant"]


def test_endless_loop_mutant_is_killed_by_the_time_limit(toys) -> None:
    report = mutation.run(["98.toy_loop"], jobs=0, equivalents={})
    loop = next(o for o in report.outcomes if o.mutant.key == "arith:2:Sub->Add")
    assert loop.verdict == "killed" and "did not finish" in loop.detail


def test_mutant_past_the_hard_timeout_is_a_hang_in_a_worker_process(toys) -> None:
    mutants = [m for m in mutation.mutants_of(exercises.get_exercise("98.toy_loop_unlimited").reference,
                                               "98.toy_loop_unlimited")
               if m.key in ("arith:2:Sub->Add", "return:3:None")]
    outcomes = mutation._run_parallel(mutants, jobs=1, hard_timeout=8.0, progress=lambda o: None)
    verdicts = {o.mutant.key: o.verdict for o in outcomes}
    assert verdicts == {"arith:2:Sub->Add": "hang", "return:3:None": "killed"}


def test_keys_are_stable_and_unique() -> None:
    first = [m.key for m in mutation.mutants_of(exercises.get_exercise("00.shrink_until_small").reference,
                                                "00.shrink_until_small")]
    second = [m.key for m in mutation.mutants_of(exercises.get_exercise("00.shrink_until_small").reference,
                                                 "00.shrink_until_small")]
    assert first == second and len(set(first)) == len(first)
    assert "compare:3:Gt->GtE" in first and "delete:5:`steps += 1`" in first


def test_equivalents_file_entries_have_reasons() -> None:
    for (exercise_id, key), reason in mutation.load_equivalents().items():
        assert exercise_id[:2].isdigit() and key.count(":") >= 2 and reason.strip(), (exercise_id, key)
