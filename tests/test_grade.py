"""The grading command: ``python -m course_utils.grade SUBMISSIONS... --out grades.csv``.

One small lesson (00) keeps it short: all OK on its solutions notebook, all TODO on its learner
notebook, exactly one FAIL (the right id) on a learner copy with one wrong answer pasted in, and
broken submissions (invalid JSON, a cell that raises, a timeout, a dead kernel) as rows."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils import grade
from course_utils.grade import NOTEBOOK_ROW, exercise_cells, lesson_exercises

ROOT = Path(__file__).resolve().parent.parent
LESSON = "00_welcome"
IDS = ["00.double", "00.shrink_until_small", "00.layer_shapes"]


def _rows(csv_path: Path) -> list[dict[str, str]]:
    with csv_path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _by_submission(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        out.setdefault(Path(row["submission"]).parent.name + "/" + Path(row["submission"]).name, []).append(row)
    return out


def _learner_copy(folder: Path, replace: dict[str, str] | None = None, extra: list | None = None) -> Path:
    nb = nbformat.read(ROOT / "notebooks" / f"{LESSON}.ipynb", as_version=4)
    for cell in nb.cells:
        for old, new in (replace or {}).items():
            if cell.cell_type == "code" and old in cell.source:
                cell.source = cell.source.replace(old, new)
    for index, source in extra or []:
        nb.cells.insert(index, nbformat.v4.new_code_cell(source))
    folder.mkdir(parents=True)
    path = folder / f"{LESSON}.ipynb"
    nbformat.write(nb, path)
    return path


def test_lessons_name_their_exercises() -> None:
    # every lesson has graded exercises, each id prefixed by its lesson's number, none twice
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py")):
        ids = [e.exercise_id for e in lesson_exercises(lesson)]
        assert len(ids) >= 3 and len(set(ids)) == len(ids), (lesson.name, ids)
        assert all(i.startswith(lesson.name[:3].replace("_", ".")) for i in ids), (lesson.name, ids)
    assert [e.exercise_id for e in lesson_exercises(ROOT / "lessons" / f"{LESSON}.py")] == IDS
    # a check of a function no solution cell defines is a demonstration, not an exercise
    assert exercise_cells([("code", 'def f(x):\n    return x'), ("code", 'check("00.f", f)')]) == []


@pytest.mark.slow
def test_solutions_ok_learner_todo_one_wrong_answer_fail_and_broken_rows(tmp_path) -> None:
    subs = tmp_path / "subs"
    shutil.copytree(ROOT / "solutions", subs / "solutions", ignore=lambda d, names: [
        n for n in names if n.endswith(".ipynb") and not n.startswith(LESSON)])
    wrong = _learner_copy(subs / "wrong")
    nb = nbformat.read(wrong, as_version=4)
    [cell] = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("def double(")]
    cell.source = cell.source.split("\n")[0] + "\n    return x + x + 1  # wrong: off by one"
    nbformat.write(nb, wrong)
    shutil.copytree(ROOT / "notebooks", subs / "learner", ignore=lambda d, names: [
        n for n in names if n.endswith(".ipynb") and not n.startswith(LESSON)])
    # a cell that raises (importing a file next to the notebook: the grader runs only the notebook's cells)
    raising = _learner_copy(subs / "raising", extra=[(3, "import helper_next_to_it")])
    (raising.parent / "helper_next_to_it.py").write_text("print('must not be imported')\n")
    (subs / "invalid").mkdir()
    (subs / "invalid" / f"{LESSON}.ipynb").write_text('{"cells": [ not json')
    out = tmp_path / "grades.csv"
    result = subprocess.run([sys.executable, "-m", "course_utils.grade", str(subs), "--out", str(out), "--jobs", "2"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _by_submission(_rows(out))
    assert list(_rows(out)[0]) == ["submission", "exercise", "status", "message", "seconds"]

    def statuses(name: str) -> dict[str, str]:
        return {r["exercise"]: r["status"] for r in rows[name]}

    assert statuses(f"solutions/{LESSON}.ipynb") == dict.fromkeys(IDS, "OK")
    assert statuses(f"learner/{LESSON}.ipynb") == dict.fromkeys(IDS, "TODO")
    assert statuses(f"wrong/{LESSON}.ipynb") == {"00.double": "FAIL", "00.shrink_until_small": "TODO",
                                                 "00.layer_shapes": "TODO"}
    [fail] = [r for r in rows[f"wrong/{LESSON}.ipynb"] if r["status"] == "FAIL"]
    assert fail["message"].startswith("[FAIL] 00.double:") and "\n" not in fail["message"]
    assert float(fail["seconds"]) >= 0
    # the raising cell is a row; the exercises after it are still graded
    raised = [r for r in rows[f"raising/{LESSON}.ipynb"] if r["exercise"] == NOTEBOOK_ROW]
    assert len(raised) == 1 and raised[0]["status"] == "ERROR"
    assert "cell 3 raised ModuleNotFoundError" in raised[0]["message"], raised
    assert {r["status"] for r in rows[f"raising/{LESSON}.ipynb"] if r["exercise"] != NOTEBOOK_ROW} == {"TODO"}
    invalid = statuses(f"invalid/{LESSON}.ipynb")
    assert invalid == {NOTEBOOK_ROW: "ERROR", **dict.fromkeys(IDS, "ERROR")}
    assert "not a readable notebook" in rows[f"invalid/{LESSON}.ipynb"][0]["message"]
    assert f"solutions/{LESSON}.ipynb: 3 OK, 0 FAIL, 0 TODO, 0 ERROR" in result.stdout


@pytest.mark.slow
def test_a_timeout_and_a_dead_kernel_stop_only_their_submission(tmp_path) -> None:
    def tiny(name: str, source: str) -> Path:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(source)]
        path = tmp_path / name / f"{LESSON}.ipynb"  # named like lesson 00: its three exercises are due
        path.parent.mkdir()
        nbformat.write(nb, path)
        return path

    slow = tiny("slow", "import time\ntime.sleep(60)")
    dead = tiny("dead", "import os\nos._exit(1)")
    rows = grade.grade_notebook(slow, timeout=3) + grade.grade_notebook(dead, timeout=60)
    notebook_rows = [r for r in rows if r.exercise == NOTEBOOK_ROW]
    assert [r.submission for r in notebook_rows] == [str(slow), str(dead)]
    assert "time limit of 3 s" in notebook_rows[0].message and "kernel died" in notebook_rows[1].message
    graded = [r for r in rows if r.exercise != NOTEBOOK_ROW]
    assert [r.exercise for r in graded] == IDS + IDS
    assert {r.status for r in graded} == {"ERROR"} and all(r.message.startswith("not graded: stopped") for r in graded)


def test_require_ok_fails_a_broken_submission_without_a_kernel(tmp_path, capsys) -> None:
    broken = tmp_path / "alice" / f"{LESSON}.ipynb"
    broken.parent.mkdir()
    broken.write_text("not json")
    out = tmp_path / "grades.csv"
    assert grade.main([str(broken), "--out", str(out)]) == 0
    assert grade.main([str(broken), "--out", str(out), "--require-ok"]) == 1
    assert "not OK:" in capsys.readouterr().err
    assert [r["status"] for r in _rows(out)] == ["ERROR"] * 4


def test_bad_arguments_get_clear_messages(tmp_path, capsys) -> None:
    def fails(*args: str) -> str:
        with pytest.raises(SystemExit) as exc:
            grade.main(list(args))
        assert exc.value.code == 2
        return capsys.readouterr().err

    assert "no such file or folder" in fails(str(tmp_path / "missing.ipynb"), "--out", str(tmp_path / "g.csv"))
    assert "--out" in fails(str(ROOT / "notebooks" / f"{LESSON}.ipynb"))
    (tmp_path / "empty").mkdir()
    assert "no .ipynb file" in fails(str(tmp_path / "empty"), "--out", str(tmp_path / "g.csv"))
    assert "not a notebook" in fails(str(ROOT / "notebooks"), "--out", str(tmp_path / "g.ipynb"))
    assert "at least 1" in fails(str(ROOT / "notebooks"), "--out", "g.csv", "--timeout", "0")
    with pytest.raises(SystemExit) as exc:
        grade.main(["--help"])
    assert exc.value.code == 0 and "grades.csv" in capsys.readouterr().out


def test_csv_message_keeps_the_named_mistake() -> None:
    """A long FAIL line is cut before the mistake's name, never the name itself."""
    from course_utils.grade import check_summary

    message = "[FAIL] 06.train_one_epoch: on test case 1: " + "expected x " * 60 + "\n  Hint (missing zero_grad): z"
    summary = check_summary(message)
    assert summary.endswith(" | mistake: missing zero_grad"), summary
    assert len(summary) <= 300 and summary.startswith("[FAIL] 06.train_one_epoch")
    assert check_summary("[OK] 00.double: passed 3 test cases.") == "[OK] 00.double: passed 3 test cases."
