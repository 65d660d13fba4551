"""The check() contract itself: unknown ids, non-callables, messages, fresh inputs."""

from __future__ import annotations

import torch

from course_utils.exercises import CheckResult, check, list_exercises


def test_unknown_id_suggests_close_match() -> None:
    result = check("01.indepndent_copy", lambda a: a)
    assert result.status == "fail"
    assert "Did you mean 01.independent_copy" in result.message


def test_non_callable_candidate() -> None:
    result = check("00.double", torch.ones(2))
    assert result.status == "fail" and "expected a function" in result.message


def test_called_instead_of_passed() -> None:
    result = check("00.double", None)
    assert result.status == "fail" and "without calling it" in result.message


def test_result_repr_is_the_message() -> None:
    result = check("00.double", lambda x: 2 * x)
    assert isinstance(result, CheckResult)
    assert repr(result) == result.message == "[OK] 00.double: passed 3 test cases."


def test_wrong_shape_is_named() -> None:
    result = check("00.double", lambda x: (2 * x).reshape(-1, 1))
    assert result.status == "fail" and "shape" in result.message


def test_candidate_runs_on_fresh_inputs() -> None:
    seen = []

    def spy(x):
        seen.append(x.clone())
        return 2 * x

    check("00.double", spy)
    assert len(seen) == 3 and seen[0].shape != seen[1].shape


def test_a_hardcoded_answer_fails() -> None:
    example = torch.tensor([1.0, 2.0, 3.0])
    result = check("00.double", lambda x: 2 * example)
    assert result.status == "fail"


def test_ids_are_sorted_and_prefixed() -> None:
    ids = list_exercises()
    assert ids == sorted(ids)
    assert all(i[:2].isdigit() and i[2] == "." for i in ids)
