"""The nbgrader export: cells marked as nbgrader expects (every lesson), and real nbgrader on one
small lesson: ``generate_assignment``, then ``autograde`` of a correct and a wrong submission."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils.grade import exercise_cells, final_check
from tools.authoring import lesson_paths, solution_notebook
from tools.nbgrader_export import DEFAULT_TIMEOUT, export, nbgrader_source

ROOT = Path(__file__).resolve().parent.parent
LESSON = "00_welcome"  # the smallest lesson: the real-nbgrader test stays short


def _nbgrader(cell) -> dict:
    return cell.metadata["nbgrader"]


def test_every_lesson_exports_solution_test_and_locked_cells(tmp_path) -> None:
    from nbgrader.nbgraderformat import MetadataValidator

    written = export(tmp_path)
    lessons = lesson_paths()
    assert [p.parent.name for p in written] == [p.stem for p in lessons]
    for lesson, path in zip(lessons, written):
        assert path == tmp_path / "source" / lesson.stem / f"{lesson.stem}.ipynb"
        nb = nbformat.read(path, as_version=4)
        MetadataValidator().validate_nb(nb)  # nbgrader's own schema and consistency rules
        source = solution_notebook(lesson)
        exercises = exercise_cells([(c.cell_type, c.source) for c in source.cells])
        assert exercises, lesson.name
        tests = [c for c in nb.cells if _nbgrader(c)["grade"]]
        solutions = [c for c in nb.cells if _nbgrader(c)["solution"]]
        others = [c for c in nb.cells if not (_nbgrader(c)["grade"] or _nbgrader(c)["solution"])]
        # one test cell per exercise, in notebook order, each raising unless its check passed
        assert [re.search(r'check\("([^"]+)", (\w+)\)', c.source).groups() for c in tests] == \
            [(e.exercise_id, e.function) for e in exercises]
        for cell in tests:
            assert _nbgrader(cell)["locked"] and _nbgrader(cell)["points"] == 1
            assert "assert check_result.passed" in cell.source
        # every solution block is in a solution cell, with the lesson's stub block (if any) after it
        assert sum(c.source.count("### BEGIN SOLUTION") for c in solutions) == \
            sum(c.source.count("### BEGIN SOLUTION") for c in source.cells)
        assert sum(c.source.count("### BEGIN STUB") for c in solutions) == \
            sum(c.source.count("### BEGIN STUB") for c in source.cells)
        assert not any("### BEGIN STUB" in c.source for c in others + tests)
        assert all(_nbgrader(c)["locked"] for c in others)
        ids = [_nbgrader(c)["grade_id"] for c in nb.cells]
        assert len(ids) == len(set(ids)), lesson.name
        assert nb.metadata["course"]["nbgrader"]["points"] == len(exercises)
    config = (tmp_path / "nbgrader_config.py").read_text()
    assert f"c.Execute.timeout = {DEFAULT_TIMEOUT}" in config and DEFAULT_TIMEOUT > 30


def test_config_gives_nbgraders_kernels_the_course_environment(tmp_path, monkeypatch) -> None:
    from traitlets.config import Config

    export(tmp_path, [LESSON])
    config = Config()
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setattr(sys, "path", list(sys.path))
    exec((tmp_path / "nbgrader_config.py").read_text(), {"get_config": lambda: config})
    assert config.Execute.timeout == DEFAULT_TIMEOUT
    assert "NotImplementedError" in config.ClearSolutions.code_stub["python"]
    from nbgrader.preprocessors import ClearSolutions

    from tools.nbgrader_stubs import LessonStubs

    steps = config.GenerateAssignment.preprocessors
    assert LessonStubs in steps and ClearSolutions not in steps, steps
    assert os.environ["COURSE_NETGUARD"] == "1"
    startup = Path(os.environ["IPYTHONDIR"]) / "profile_default" / "startup" / "00-netguard.py"
    assert "install()" in startup.read_text()
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)


def test_release_puts_the_lessons_stub_where_the_solution_was() -> None:
    from nbformat.v4 import new_code_cell

    from tools.nbgrader_stubs import LessonStubs

    source = ("def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
              "    ### BEGIN STUB\n    # # hint one\n    # y = 0\n    # raise NotImplementedError('f')\n"
              "    ### END STUB\n\nprint(1)")
    assert nbgrader_source(source) == source  # the source notebook keeps the stub block (comments)
    cell = new_code_cell(source)
    assert LessonStubs()._replace_solution_region(cell, "python")
    assert cell.source == ("def f(x):\n    # hint one\n    y = 0\n    raise NotImplementedError('f')\n\nprint(1)")
    plain = new_code_cell("def g():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION")
    assert LessonStubs()._replace_solution_region(plain, "python")
    assert plain.source == 'def g():\n    raise NotImplementedError("Your turn: write this function")'


def _run(args: list[str], cwd: Path) -> str:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` from the venv's bin/
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["JUPYTER_CONFIG_DIR"] = str(cwd / ".jupyter-config")
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("edition", ["en", "zh"])
def test_real_nbgrader_generates_and_autogrades(tmp_path, edition: str) -> None:
    from tools import translate

    if edition == "zh" and LESSON[:2] not in translate.edition()["published"]:
        pytest.skip(f"lesson {LESSON} is not published in Chinese yet (lessons/zh_CN/edition.toml)")
    course = tmp_path / "course"
    [source_path] = export(course, [LESSON], edition=edition)
    _run(["generate_assignment", LESSON], course)
    release = nbformat.read(course / "release" / LESSON / f"{LESSON}.ipynb", as_version=4)
    source = nbformat.read(source_path, as_version=4)
    answers = {_nbgrader(c)["grade_id"]: c.source for c in source.cells if _nbgrader(c)["solution"]}
    assert len(answers) == 3
    released = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert all("NotImplementedError" in c.source and "### BEGIN SOLUTION" not in c.source for c in released)
    assert "return 2 * x" not in json.dumps(release)

    def submit(student: str, replace: dict[str, str]) -> None:
        nb = nbformat.from_dict(json.loads(json.dumps(release)))
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = replace.get(gid, answers[gid])
        target = course / "submitted" / student / LESSON / f"{LESSON}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(nb, target)

    submit("correct", {})
    submit("wrong", {"00_double-answer": "def double(x):\n    return x + x + 1"})  # off by one
    _run(["autograde", LESSON, "--create"], course)

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {}
        for student in ("correct", "wrong"):
            notebook = gradebook.find_submission_notebook(LESSON, LESSON, student)
            scores[student] = {g.name: g.score for g in notebook.grades}
            assert gradebook.find_submission(LESSON, student).max_score == 3
    assert scores["correct"] == {"00_double-check": 1, "00_shrink_until_small-check": 1, "00_layer_shapes-check": 1}
    assert scores["wrong"] == {"00_double-check": 0, "00_shrink_until_small-check": 1, "00_layer_shapes-check": 1}
    graded = nbformat.read(course / "autograded" / "wrong" / LESSON / f"{LESSON}.ipynb", as_version=4)
    feedback = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "00_double-check"][0]
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in feedback.outputs)
    assert "[FAIL] 00.double" in shown
    if edition == "zh":   # the Chinese notebook's feedback is Chinese while autograding too
        assert re.search(r"[\u4e00-\u9fff]", shown) and "test case" not in shown, shown
        assert any("course-language" in c.metadata.get("tags", []) for c in graded.cells)
    shutil.rmtree(course, ignore_errors=True)


def _released_stub(learner_source: str) -> str:
    """What a released solution cell should hold: the learner notebook's cell, less a final
    ``check(...)`` call (the export moves it to the autograded test cell that follows)."""
    ending = final_check(learner_source)
    if ending is None:
        return learner_source
    return "\n".join(learner_source.split("\n")[: ending[2] - 1]).rstrip()


@pytest.mark.slow
def test_release_shows_every_exercise_as_the_learner_notebook_does(tmp_path) -> None:
    """Real ``nbgrader generate_assignment`` of every lesson: each released solution cell is the
    stub of ``notebooks/`` line for line (scaffolding such as 07's ``decay, no_decay, seen = ...``,
    hints, the exercise's own ``raise NotImplementedError``)."""
    course = tmp_path / "course"
    written = export(course)
    _run(["generate_assignment", "*"], course)
    compared, problems = 0, []
    for source_path in written:
        name = source_path.parent.name
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        learner_path = ROOT / "notebooks" / f"{name}.ipynb"
        learner = nbformat.read(learner_path, as_version=4).cells
        lesson_cells = solution_notebook(ROOT / "lessons" / f"{name}.py").cells
        assert len(learner) == len(lesson_cells), f"{learner_path.name} is stale: rebuild it"
        # the learner's cells that hold an exercise, in order, against the release's solution cells
        stubs = [learner[i] for i, c in enumerate(lesson_cells) if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
        released = [c for c in release.cells if _nbgrader(c).get("solution")]
        assert len(released) == len(stubs) > 0, (name, len(released), len(stubs))
        for number, (cell, stub) in enumerate(zip(released, stubs), 1):
            want = _released_stub(stub.source)
            where = f"{name}, solution cell {number} ({_nbgrader(cell)['grade_id']})"
            dropped = [line for line in want.split("\n") if line not in cell.source.split("\n")]
            if dropped:
                problems.append(f"{where}: the release drops {len(dropped)} line(s) of the learner's stub in "
                                f"notebooks/: {dropped}")
            elif cell.source != want:
                problems.append(f"{where}: the released source differs from notebooks/\n--- released:\n"
                                f"{cell.source}\n--- notebooks/:\n{want}")
            compared += 1
    exercises = sum(len(nbformat.read(p, as_version=4).metadata["course"]["nbgrader"]["exercises"]) for p in written)
    assert not problems, f"{len(problems)} of {compared} released solution cells are not the learner's stub " \
        "(tools/nbgrader_export.py, tools/nbgrader_stubs.py):\n" + "\n".join(problems)
    assert compared >= exercises, (compared, exercises)


def test_make_nbgrader_and_make_test_install_the_instructor_extra() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def plan(target: str) -> str:
        result = subprocess.run(["make", "-n", "-B", "VENV=.venv-dry-run", target], cwd=ROOT,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    extra = "pip install -r requirements-instructor.txt"
    assert extra in plan("test") and extra in plan("nbgrader") and extra not in plan("lab")
    assert "tools.nbgrader_export --edition en --out build/nbgrader" in plan("nbgrader")
    assert "build/" in (ROOT / ".gitignore").read_text().splitlines()
    root = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line)
    pins = [line for line in (ROOT / "requirements-instructor.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\d.]+", line) for line in pins), pins
    assert "nbgrader==0.9.6" in pins
    assert not {name.lower() for name, _ in (p.split("==") for p in pins)} & {n.lower() for n in root}
