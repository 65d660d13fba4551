"""Export the lessons as an nbgrader course folder: ``make nbgrader`` (``python -m tools.nbgrader_export``).

For every ``lessons/NN_topic.py`` it writes ``<out>/source/NN_topic/NN_topic.ipynb`` (default
``build/nbgrader``, which git ignores) and ``<out>/nbgrader_config.py``:

* a cell holding ``### BEGIN SOLUTION`` / ``### END SOLUTION`` becomes an nbgrader **solution**
  cell (nbgrader uses the same markers). It keeps the lesson's ``### BEGIN STUB`` blocks (comment
  lines, so the source notebook still runs); ``generate_assignment`` puts each stub where its
  solution was, so the released cell is the exercise exactly as ``notebooks/`` shows it
  (scaffolding lines, hints, the exercise's own ``raise NotImplementedError``). That is the
  ``LessonStubs`` preprocessor of ``tools/nbgrader_stubs.py``, which ``nbgrader_config.py`` puts in
  the place of nbgrader's ``ClearSolutions``;
* each exercise's ``check("NN.name", name)`` cell becomes an **autograded test** cell worth
  ``--points`` points: it shows the check's feedback and raises ``AssertionError`` unless the check
  says ``[OK]``;
* every other cell (text, demonstrations, the bootstrap) is **locked** (read-only).

``nbgrader_config.py`` raises nbgrader's per-cell timeout (30 s by default; notebook 11 compiles),
gives nbgrader's kernels the course's test environment (network guard, fixed hash seed) and puts
this checkout on their ``PYTHONPATH`` so they import its ``course_utils``.

Then, in ``build/nbgrader``: ``nbgrader generate_assignment 03_autograd``, release, collect, and
``nbgrader autograde 03_autograd`` (see docs/instructors.md).

Example:
    >>> print(nbgrader_source('''def f(x):
    ...     ### BEGIN SOLUTION
    ...     return 2 * x
    ...     ### END SOLUTION
    ...     ### BEGIN STUB
    ...     # # double it
    ...     # raise NotImplementedError("f: your code here")
    ...     ### END STUB'''))
    def f(x):
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION
        ### BEGIN STUB
        # # double it
        # raise NotImplementedError("f: your code here")
        ### END STUB
"""

from __future__ import annotations

import argparse
import json
import copy
import re
import sys
from pathlib import Path
from typing import Any

from course_utils.grade import COURSE_ROOT, exercise_cells, final_check
from tools.authoring import DEFAULT_STUB, LESSONS, AuthoringError, lesson_paths, learner_source, solution_notebook

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "nbgrader"
#: Seconds per cell for nbgrader's kernels. The slowest cell of the course (notebook 11's first
#: ``torch.compile`` of a training step) takes about 10-20 s on an idle 2-core machine, several times
#: that on a loaded one; nbgrader's own default is 30 s.
DEFAULT_TIMEOUT = 180
SCHEMA_VERSION = 3


CONFIG = '''\
# nbgrader configuration of the course's export (written by `make nbgrader`; edit freely).
import os
import sys

c = get_config()  # noqa: F821 (nbgrader provides it)
c.CourseDirectory.course_id = {course_id!r}
# The learner's placeholder that `nbgrader generate_assignment` puts where a solution was.
c.ClearSolutions.code_stub = {{"python": {stub!r}}}
# Seconds per cell when nbgrader executes a notebook (autograde, validate). nbgrader's default is
# 30 s; notebook 11's first torch.compile of a training step needs more on a busy machine.
c.Execute.timeout = {timeout}

# nbgrader's kernels get the course's test environment: the network guard, a fixed hash seed,
# and this checkout's course_utils first on the path (the folder below, if it still exists).
COURSE = {course!r}
if os.path.isfile(os.path.join(COURSE, "course_utils", "__init__.py")):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (COURSE, os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, COURSE)
try:
    from course_utils.netguard import kernel_env
except ImportError:  # course_utils is not installed here: kernels run without the guard
    pass
else:
    os.environ.update(kernel_env())

# Released notebooks show each exercise as the course's notebooks/ do: the lesson's own stub
# (scaffolding, hints, its raise NotImplementedError) where the solution was, not code_stub.
try:
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions
    from tools.nbgrader_stubs import LessonStubs

    c.GenerateAssignment.preprocessors = [
        LessonStubs if step is ClearSolutions else step
        for step in GenerateAssignment.class_traits()["preprocessors"].default()]
except Exception as exc:  # (an error here would make nbgrader drop this whole file)
    print(f"nbgrader_config.py: {{exc!r}}; generate_assignment falls back to nbgrader's code_stub and "
          f"leaves the lessons' '### BEGIN STUB' comment blocks in the released notebooks", file=sys.stderr)
'''


def nbgrader_source(source: str) -> str:
    """A solution cell as nbgrader's source wants it: the lesson's own, stub blocks included.

    ``LessonStubs`` (``tools/nbgrader_stubs.py``) turns it into the learner's stub when
    ``nbgrader generate_assignment`` runs; malformed markers raise ``AuthoringError`` here.
    """
    learner_source(source)  # raises AuthoringError for malformed markers
    return source


def autograde_source(exercise_id: str, function: str) -> str:
    """The autograded test cell of one exercise: the check's feedback, and an error unless ``[OK]``."""
    return (f"# Autograded: full points when the check says [OK].\n"
            f"from course_utils.exercises import check\n\n"
            f"check_result = check({json.dumps(exercise_id)}, {function})\n"
            f"display(check_result)\n"
            f"assert check_result.passed, f\"{exercise_id}: {{check_result.status.upper()}} (see the feedback above)\"")


def grade_id(exercise_id: str, role: str) -> str:
    """nbgrader's id of an exercise's cell (letters, digits, ``_`` and ``-`` only): ``03_gradient_at-check``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", exercise_id) + "-" + role


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
          points: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": locked,
                            "schema_version": SCHEMA_VERSION, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def nbgrader_notebook(lesson: Path, points: float = 1, edition: str = "en") -> Any:
    """The nbgrader source notebook of one lesson (solution, test and locked cells).

    ``edition="zh"``: the Chinese notebook (``tools/translate.py``): Chinese text, the same code, and
    its language cell (locked), so the checks' feedback is in Chinese while autograding too.
    """
    import nbformat

    if edition == "zh":
        from tools.translate import chinese_solution_notebook

        nb = chinese_solution_notebook(lesson)
    else:
        nb = solution_notebook(lesson)
    exercises = exercise_cells([(c.cell_type, c.source) for c in nb.cells])
    by_check = {e.check_index: e for e in exercises}
    by_solution = {e.solution_index: e for e in exercises}
    cells = []
    for index, cell in enumerate(nb.cells):
        cell.metadata = copy.deepcopy(dict(cell.metadata))
        exercise = by_check.get(index)
        test = None
        if exercise is not None:
            test = nbformat.v4.new_code_cell(autograde_source(exercise.exercise_id, exercise.function))
            test.pop("id", None)
            test.metadata["nbgrader"] = _meta(grade_id(exercise.exercise_id, "check"), grade=True, locked=True,
                                              points=points)
            # The check moves to a test cell; what came before it in its cell (the solution, an
            # import) stays where it was.
            line = final_check(cell.source)[2]
            cell.source = "\n".join(cell.source.split("\n")[: line - 1]).rstrip()
            if not cell.source.strip():
                cells.append(test)
                continue
        if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
            answer = by_solution.get(index)
            cell.source = nbgrader_source(cell.source)
            name = grade_id(answer.exercise_id, "answer") if answer else f"cell-{index:03d}-answer"
            cell.metadata["nbgrader"] = _meta(name, solution=True)
        else:
            cell.metadata["nbgrader"] = _meta(f"cell-{index:03d}", locked=True)
        cells.append(cell)
        if test is not None:
            cells.append(test)
    nb.cells = cells
    nb.metadata["course"]["nbgrader"] = {"points": points * len(exercises),
                                         "exercises": [e.exercise_id for e in exercises]}
    return nb


def export(out: Path = DEFAULT_OUT, names: list[str] | None = None, points: float = 1,
           timeout: int = DEFAULT_TIMEOUT, lessons_dir: Path = LESSONS, edition: str = "en") -> list[Path]:
    """Write the course folder; returns the notebooks written."""
    import nbformat

    lessons = lesson_paths(names, lessons_dir)
    written = []
    for lesson in lessons:
        nb = nbgrader_notebook(lesson, points, edition)
        target = out / "source" / lesson.stem / f"{lesson.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    (out / "nbgrader_config.py").write_text(CONFIG.format(course_id="pytorch-inside", stub=DEFAULT_STUB,
                                                          timeout=timeout, course=str(COURSE_ROOT)))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nbgrader_export", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("names", nargs="*", help="lesson prefixes such as 03 or 03_autograd (default: all)")
    parser.add_argument("--out", default=None, help="the nbgrader course folder to write "
                        f"(default {DEFAULT_OUT.relative_to(ROOT)}, or {DEFAULT_OUT.relative_to(ROOT)}-zh for --edition zh)")
    parser.add_argument("--edition", choices=["en", "zh"], default="en",
                        help="zh: the Chinese notebooks (Chinese text and feedback, the same code)")
    parser.add_argument("--points", type=float, default=1, help="points per exercise")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT,
                        help="nbgrader's time limit per cell in seconds (c.Execute.timeout)")
    args = parser.parse_args(argv)
    if args.points <= 0 or args.timeout < 1:
        parser.error("--points must be positive and --timeout at least 1")
    out = Path(args.out) if args.out else (DEFAULT_OUT if args.edition == "en" else Path(f"{DEFAULT_OUT}-zh"))
    from tools.translate import TranslationError

    try:
        written = export(out, args.names, args.points, args.timeout, edition=args.edition)
    except AuthoringError as exc:
        print(f"malformed solution markers: {exc}", file=sys.stderr)
        return 1
    except TranslationError as exc:
        print(f"the Chinese edition is not ready for this lesson:\n{exc}", file=sys.stderr)
        return 1
    if not written:
        print(f"no lesson in lessons/ matches {args.names}", file=sys.stderr)
        return 2
    total = 0
    for path in written:
        import nbformat

        info = nbformat.read(path, as_version=4).metadata["course"]["nbgrader"]
        total += len(info["exercises"])
        print(f"wrote {path} ({len(info['exercises'])} autograded exercises, {info['points']:g} points)")
    print(f"{len(written)} assignments, {total} autograded exercises; nbgrader course folder: {out} "
          f"(cd there, then `nbgrader generate_assignment NN_topic`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
