"""Grade submitted learner notebooks: ``python -m course_utils.grade SUBMISSIONS... --out grades.csv``.

Each submission (a ``.ipynb`` file, or a folder searched for them) is executed cell by cell in a
**fresh kernel** started in an empty temporary folder, so only the notebook's own cells run: no
file next to the submission is imported or read. The kernel gets the environment the course's
tests use (:func:`course_utils.netguard.kernel_env`: network guard, fixed hash seed, an empty
Inductor cache) and a time limit per cell. Right after the submission's ``check(...)`` cell of an
exercise (or at the end, if that cell was deleted) the grader calls the course's ``check`` itself,
captured when the kernel started, and records its verdict; it never trusts the printed output.

Which exercises a notebook has comes from its lesson (``lessons/NN_topic.py``, found from the
notebook's metadata or its file name): every ``check("NN.name", name)`` cell whose function is
written in a solution cell. Without a lesson the notebook's own ``check`` cells are used.

The CSV has one row per submission x exercise::

    submission,exercise,status,message,seconds
    alice/03_autograd.ipynb,03.accumulated_grads,OK,[OK] 03.accumulated_grads: ...,0.41

``status`` is ``OK``, ``FAIL`` or ``TODO`` (the check's verdict) or ``ERROR`` (not graded: the
notebook is not valid JSON, a cell timed out, the kernel died). Problems of the notebook itself get
rows whose exercise is ``(notebook)``: a cell that raised an error it was not tagged to raise, a
timeout, a dead kernel. A broken submission is a row, never a crash of the grader.

This is a grader for honest work, not a sandbox: a submission runs with your user's rights (the
network guard only stops accidental downloads). Grade untrusted code in a container.

Example (the parts that need no kernel):
    >>> cells = [("code", 'def double(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION'),
    ...          ("code", 'check("00.double", double)'), ("code", 'check("00.double", other)')]
    >>> [(e.exercise_id, e.function, e.check_index, e.solution_index) for e in exercise_cells(cells)]
    [('00.double', 'double', 1, 0)]
    >>> check_call('check("00.double", double)  # run me')
    ('00.double', 'double')
    >>> check_call('ok = check("00.double", double).passed') is None
    True
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from course_utils.i18n import N_

#: The repository checkout this package lives in (its lessons/ folder, when there is one).
COURSE_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LESSONS = COURSE_ROOT / "lessons"
DEFAULT_TIMEOUT = 120
NOTEBOOK_ROW = "(notebook)"
FIELDS = ["submission", "exercise", "status", "message", "seconds"]
_LESSON_NAME = re.compile(r"(\d\d_[A-Za-z0-9_]+?)(?:\.ipynb|\.py)?$")
_SOLUTION = "### BEGIN SOLUTION"

#: Runs in the kernel before any cell: keeps the course's own ``check`` where a submission cannot
#: rebind it, and prints each verdict as one JSON line after a marker only the grader knows.
_STARTUP = '''\
def _course_grade_install():
    import builtins, json, time
    from course_utils.exercises import check

    def grade(marker, exercise_id, name, namespace):
        start = time.perf_counter()
        if name not in namespace:
            from course_utils.i18n import t
            status, message = "fail", t("[FAIL] {exercise_id}: `{name}` is not defined when its check runs "
                                        "(deleted, renamed, or its cell raised an error)",
                                        exercise_id=exercise_id, name=name)
        else:
            try:
                result = check(exercise_id, namespace[name])
                status, message = result.status, result.message
            except BaseException as exc:  # check() never raises for a learner's mistake; say so if it does
                status, message = "error", f"the check itself raised {type(exc).__name__}: {exc}"
        seconds = round(time.perf_counter() - start, 3)
        print(marker + json.dumps({"status": status, "message": message, "seconds": seconds}), flush=True)

    builtins.__course_grade__ = grade


_course_grade_install()
del _course_grade_install
'''


# --------------------------------------------------------------------------- which cells are exercises
@dataclass(frozen=True)
class ExerciseCell:
    """One graded exercise of a notebook: its id, the function checked, and where its cells are."""

    exercise_id: str
    function: str
    check_index: int
    solution_index: int | None


def _as_check(node: ast.stmt) -> tuple[str, str] | None:
    if not isinstance(node, ast.Expr):
        return None
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "check"
            and len(call.args) == 2 and not call.keywords):
        return None
    exercise_id, function = call.args
    if not (isinstance(exercise_id, ast.Constant) and isinstance(exercise_id.value, str)
            and isinstance(function, ast.Name)):
        return None
    return exercise_id.value, function.id


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:  # IPython magics, or a learner's unfinished code
        return None


def check_call(source: str) -> tuple[str, str] | None:
    """``(exercise_id, function_name)`` when a cell is exactly one ``check("id", name)`` call."""
    tree = _parse(source)
    if tree is None or len(tree.body) != 1:
        return None
    return _as_check(tree.body[0])


def final_check(source: str) -> tuple[str, str, int] | None:
    """``(exercise_id, function_name, line)`` when a cell *ends* with a ``check("id", name)`` call.

    >>> final_check('def f(x):\\n    return x\\n\\n\\ncheck("00.f", f)')
    ('00.f', 'f', 5)
    """
    tree = _parse(source)
    if tree is None or not tree.body:
        return None
    found = _as_check(tree.body[-1])
    return (*found, tree.body[-1].lineno) if found else None


def _defines(source: str, name: str) -> bool:
    tree = _parse(source)
    if tree is None:
        return re.search(rf"^\s*def {re.escape(name)}\b", source, re.M) is not None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def exercise_cells(cells: Sequence[tuple[str, str]]) -> list[ExerciseCell]:
    """The graded exercises of a lesson's cells ``(cell_type, source)``, in notebook order.

    A graded exercise is a ``check("id", name)`` call, the last statement of its cell, where
    ``name`` is defined in a cell holding ``### BEGIN SOLUTION``: that cell itself (then
    ``check_index == solution_index``) or an earlier one. A ``check`` of some other function (a
    demonstration of a wrong answer) is not graded.
    """
    found: list[ExerciseCell] = []
    seen: set[str] = set()
    for index, (cell_type, source) in enumerate(cells):
        if cell_type != "code":
            continue
        ending = final_check(source)
        call = ending[:2] if ending else None
        if call is None or call[0] in seen:
            continue
        exercise_id, function = call
        solution = next((i for i in range(index, -1, -1)
                         if cells[i][0] == "code" and _SOLUTION in cells[i][1] and _defines(cells[i][1], function)),
                        None)
        if solution is not None:
            found.append(ExerciseCell(exercise_id, function, index, solution))
            seen.add(exercise_id)
    return found


def runs_check(source: str, exercise: ExerciseCell) -> bool:
    """True when a (submitted) cell is, or ends with, this exercise's ``check`` call."""
    ending = final_check(source)
    return ending is not None and ending[:2] == (exercise.exercise_id, exercise.function)


def _own_checks(cells: Sequence[tuple[str, str]]) -> list[ExerciseCell]:
    """Without a lesson: the notebook's ``check("NN.name", name)`` cells (function named like the id)."""
    found: list[ExerciseCell] = []
    for index, (cell_type, source) in enumerate(cells):
        call = final_check(source) if cell_type == "code" else None
        if call and call[0].split(".", 1)[-1] == call[1] and call[0] not in {e.exercise_id for e in found}:
            found.append(ExerciseCell(call[0], call[1], index, None))
    return found


def lesson_for(notebook: Any, path: Path, lessons: Path) -> Path | None:
    """The lesson a notebook comes from: its ``course.generated_from`` metadata, else its file name."""
    if not lessons.is_dir():
        return None
    generated = str(notebook.get("metadata", {}).get("course", {}).get("generated_from", "")) if notebook else ""
    candidates = [Path(generated).stem] if generated else []
    match = _LESSON_NAME.search(path.name)
    if match:
        candidates.append(match.group(1))
    for stem in candidates:
        if stem and (lessons / f"{stem}.py").is_file():
            return lessons / f"{stem}.py"
    number = re.search(r"(?<!\d)(\d\d)_", path.name)
    if number:
        same = sorted(lessons.glob(f"{number.group(1)}_*.py"))
        if len(same) == 1:
            return same[0]
    return None


def lesson_exercises(lesson: Path) -> list[ExerciseCell]:
    """The graded exercises of a lesson source (``lessons/NN_topic.py``)."""
    import jupytext

    nb = jupytext.read(lesson, fmt="py:percent")
    return exercise_cells([(c.cell_type, c.source) for c in nb.cells])


# --------------------------------------------------------------------------- grading one notebook
@dataclass
class Row:
    submission: str
    exercise: str
    status: str
    message: str
    seconds: float | str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"submission": self.submission, "exercise": self.exercise, "status": self.status,
                "message": self.message, "seconds": self.seconds}


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of a message, shortened to ``limit`` characters.

    >>> first_line("\\n[FAIL] 00.double: expected 2, found 3\\n  Hint (x): y")
    '[FAIL] 00.double: expected 2, found 3'
    """
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


_HINT_NAME = re.compile(r"^\s*(?:Hint \((?P<name>.+?)\):|提示（(?P<zh>.+?)）：)", re.MULTILINE)
#: The startup code's learner-facing message (it runs in the submission's kernel, in its language).
N_("[FAIL] {exercise_id}: `{name}` is not defined when its check runs "
   "(deleted, renamed, or its cell raised an error)")


def check_summary(text: str, limit: int = 300) -> str:
    """A check's message for one CSV cell: its first line, and the name of the mistake its hint names.

    The first line is shortened so that the mistake's name is never cut off.

    >>> check_summary("[FAIL] 00.double: expected 2, found 3\\n  Hint (added 1): y")
    '[FAIL] 00.double: expected 2, found 3 | mistake: added 1'
    >>> check_summary("[FAIL] 00.double：应为 2，实际为 3\\n  提示（多加了 1）：y")
    '[FAIL] 00.double：应为 2，实际为 3 | mistake: 多加了 1'
    >>> len(check_summary("[FAIL] " + "x" * 400 + "\\n  Hint (added 1): y", limit=60))
    60
    """
    match = _HINT_NAME.search(str(text))
    suffix = f" | mistake: {match.group('name') or match.group('zh')}" if match else ""
    return first_line(text, max(limit - len(suffix), 20)) + suffix


def _kernel_env(workdir: Path) -> dict[str, str]:
    from course_utils.netguard import kernel_env

    env = dict(os.environ)
    ipython = workdir / "ipython"
    env.update(kernel_env(ipython))
    (ipython / "profile_default" / "startup" / "01-course-grade.py").write_text(_STARTUP)
    cache = workdir / "inductor-cache"
    cache.mkdir()
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    # This checkout's course_utils first, whatever the current folder or installed copy.
    if (COURSE_ROOT / "course_utils" / "__init__.py").is_file():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(COURSE_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _error_text(output: Any) -> str:
    return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".strip()


def grade_notebook(path: Path, label: str | None = None, *, timeout: int = DEFAULT_TIMEOUT,
                   lessons: Path = DEFAULT_LESSONS, kernel_name: str = "python3") -> list[Row]:
    """Execute one submission in a fresh kernel and return its rows (never raises for a bad submission)."""
    import nbformat

    label = label or str(path)
    try:
        nb = nbformat.read(path, as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
    except Exception as exc:  # invalid JSON, not a notebook, unreadable file
        rows = [Row(label, NOTEBOOK_ROW, "ERROR", first_line(f"not a readable notebook: {type(exc).__name__}: {exc}"))]
        lesson = lesson_for(None, path, lessons)
        if lesson is not None:
            rows += [Row(label, e.exercise_id, "ERROR", "not graded: the notebook could not be read")
                     for e in lesson_exercises(lesson)]
        return rows

    cells = [(c.get("cell_type", ""), c.get("source", "")) for c in nb.cells]
    lesson = lesson_for(nb, path, lessons)
    expected = lesson_exercises(lesson) if lesson is not None else _own_checks(cells)
    if not expected:
        return [Row(label, NOTEBOOK_ROW, "ERROR", "no exercises found: not a course notebook "
                    "(no lesson of that name and no check(\"NN.name\", name) cells)")]
    # Where to grade each exercise: right after the submission's own check cell, else at the end.
    after: dict[int, list[ExerciseCell]] = {}
    for exercise in expected:
        own = [i for i, (kind, source) in enumerate(cells)
               if kind == "code" and runs_check(source, exercise)]
        after.setdefault(own[0] if own else len(cells), []).append(exercise)
    results: dict[str, Row] = {}
    rows: list[Row] = []
    workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))
    try:
        rows += _execute(nb, after, results, label, workdir, timeout, kernel_name)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    stopped = next((r.message for r in rows if r.status == "ERROR" and r.message.startswith("stopped")), None)
    graded = [results.get(e.exercise_id) or Row(label, e.exercise_id, "ERROR",
                                                f"not graded: {stopped or 'its check did not report'}")
              for e in expected]
    return graded + rows


def _execute(nb: Any, after: dict[int, list[ExerciseCell]], results: dict[str, Row], label: str,
             workdir: Path, timeout: int, kernel_name: str) -> list[Row]:
    """Run the cells and the grading calls; returns the ``(notebook)`` rows."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    rows: list[Row] = []
    marker = f"COURSE-GRADE-{uuid.uuid4().hex}:"
    run_dir = workdir / "run"
    run_dir.mkdir()
    # Only the notebook's cells: no outputs or widget state carried in, nothing next to it copied.
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, allow_errors=True,
                            interrupt_on_timeout=False, record_timing=False,
                            resources={"metadata": {"path": str(run_dir)}})

    slot = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(""))  # where the grading calls run (never saved)

    def grade(index: int) -> None:
        for exercise in after.get(index, []):
            call = f"__course_grade__({marker!r}, {exercise.exercise_id!r}, {exercise.function!r}, globals())"
            probe = nbformat.v4.new_code_cell(call)
            client.execute_cell(probe, slot, store_history=False)
            text = "".join(o.get("text", "") for o in probe.outputs if o.get("output_type") == "stream")
            reports = [line[len(marker):] for line in text.splitlines() if line.startswith(marker)]
            errors = [_error_text(o) for o in probe.outputs if o.get("output_type") == "error"]
            if reports:
                report = json.loads(reports[-1])
                results[exercise.exercise_id] = Row(label, exercise.exercise_id, report["status"].upper(),
                                                    check_summary(report["message"]), report["seconds"])
            else:
                results[exercise.exercise_id] = Row(label, exercise.exercise_id, "ERROR", first_line(
                    f"the grader's check could not run: {errors[0] if errors else 'no report'}"))

    started = time.perf_counter()
    try:
        with client.setup_kernel(env=_kernel_env(workdir)):
            for index, cell in enumerate(nb.cells[:slot]):
                if cell.get("cell_type") == "code":
                    client.execute_cell(cell, index)
                    tags = cell.get("metadata", {}).get("tags", [])
                    for output in cell.outputs:
                        if output.get("output_type") == "error" and "raises-exception" not in tags:
                            rows.append(Row(label, NOTEBOOK_ROW, "ERROR",
                                            first_line(f"cell {index} raised {_error_text(output)}")))
                grade(index)
            grade(slot)
    except CellTimeoutError:
        rows.append(Row(label, NOTEBOOK_ROW, "ERROR", f"stopped: a cell ran longer than the time limit "
                        f"of {timeout} s (--timeout)", round(time.perf_counter() - started, 1)))
    except DeadKernelError:
        rows.append(Row(label, NOTEBOOK_ROW, "ERROR", "stopped: the kernel died (out of memory, or the "
                        "code ended the process)", round(time.perf_counter() - started, 1)))
    except Exception as exc:  # the kernel would not start, a broken message, ...
        rows.append(Row(label, NOTEBOOK_ROW, "ERROR", first_line(f"stopped: {type(exc).__name__}: {exc}"),
                        round(time.perf_counter() - started, 1)))
    return rows


# --------------------------------------------------------------------------- command line
def find_submissions(paths: Iterable[str]) -> list[Path]:
    """The notebooks named on the command line; a folder stands for every ``.ipynb`` under it."""
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if not inside:
                raise FileNotFoundError(f"{name}: a folder with no .ipynb file in it")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"{name}: no such file or folder")
    return found


def write_csv(rows: Iterable[Row], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow(row.as_dict())


def _grade_one(args: tuple[str, int, str]) -> tuple[list[Row], float]:
    path, timeout, lessons = args
    start = time.perf_counter()
    try:
        rows = grade_notebook(Path(path), path, timeout=timeout, lessons=Path(lessons))
    except Exception as exc:  # a bug of the grader itself: still one row, and the other submissions go on
        rows = [Row(path, NOTEBOOK_ROW, "ERROR", first_line(f"the grader failed on this submission: "
                                                            f"{type(exc).__name__}: {exc}"))]
    return rows, time.perf_counter() - start


def _summary(rows: list[Row], seconds: float) -> str:
    counts = {s: sum(r.status == s for r in rows if r.exercise != NOTEBOOK_ROW) for s in ("OK", "FAIL", "TODO", "ERROR")}
    problems = sum(r.exercise == NOTEBOOK_ROW for r in rows)
    return (", ".join(f"{n} {s}" for s, n in counts.items())
            + (f"; {problems} notebook problem(s)" if problems else "") + f" ({seconds:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_utils.grade",
        description="Grade submitted learner notebooks: execute each one in a fresh kernel (time limit per "
                    "cell, network guard, the course's test environment), run the course's check of every "
                    "exercise, and write one CSV row per submission and exercise.",
        epilog="Columns: submission, exercise, status (OK, FAIL, TODO, or ERROR: not graded), the first line "
               "of the check's message, seconds the check took. Rows with exercise '(notebook)' describe the "
               "notebook itself (a cell that raised, a timeout, a dead kernel, invalid JSON). Exit status: 0 "
               "when the CSV is written (whatever the grades; with --require-ok: 1 unless all are OK), 2 for "
               "bad arguments. Example: "
               "python -m course_utils.grade submissions/ --out grades.csv",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                        help="a submitted .ipynb file, or a folder: every .ipynb under it")
    parser.add_argument("--out", required=True, metavar="CSV", help="where to write the grades (CSV)")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="time limit for each cell; a cell that runs longer stops that submission "
                             "(notebook 11 compiles: keep at least 60)")
    parser.add_argument("--lessons", default=str(DEFAULT_LESSONS), metavar="DIR",
                        help="the lessons/ folder that says which exercises each notebook has")
    parser.add_argument("--require-ok", action="store_true",
                        help="exit with status 1 unless every exercise of every submission is OK (for CI, "
                             "e.g. a GitHub Classroom test)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="submissions graded at the same time (one kernel each, about 0.8-1.2 GB of memory)")
    args = parser.parse_args(argv)
    if args.timeout < 1:
        parser.error(f"--timeout must be at least 1 second, found {args.timeout}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, found {args.jobs}")
    out = Path(args.out)
    if out.suffix.lower() == ".ipynb" or out.is_dir():
        parser.error(f"--out {args.out}: give the CSV file to write (e.g. grades.csv), not a notebook or folder")
    try:
        submissions = find_submissions(args.submissions)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    if out.resolve() in {p.resolve() for p in submissions}:
        parser.error(f"--out {args.out} is one of the submissions")
    lessons = Path(args.lessons)
    if args.lessons != str(DEFAULT_LESSONS) and not lessons.is_dir():
        parser.error(f"--lessons {args.lessons}: no such folder")

    rows: list[Row] = []
    jobs = [(str(p), args.timeout, str(lessons)) for p in submissions]
    start = time.perf_counter()
    if args.jobs == 1:
        results = map(_grade_one, jobs)
    else:
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=args.jobs)
        results = pool.map(_grade_one, jobs)
    for (name, *_), (graded, seconds) in zip(jobs, results):
        rows += graded
        print(f"{name}: {_summary(graded, seconds)}", flush=True)
    if args.jobs != 1:
        pool.shutdown()
    write_csv(rows, out)
    print(f"{len(submissions)} submission(s), {len(rows)} row(s): {_summary(rows, time.perf_counter() - start)}; "
          f"wrote {out}")
    if args.require_ok:
        missing = [r for r in rows if r.status != "OK"]
        for row in missing:
            print(f"not OK: {row.submission} {row.exercise}: {row.status} {row.message}", file=sys.stderr)
        return 1 if missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
