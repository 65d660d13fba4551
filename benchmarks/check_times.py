"""Checker speed: every ``check(id, reference)`` within 2 s, the first call in a fresh process included.

    .venv/bin/python benchmarks/check_times.py              # all exercises (make bench)
    .venv/bin/python benchmarks/check_times.py --only 12    # a subset: prints the table, writes nothing

For each exercise a fresh Python process imports ``course_utils.exercises`` (as a notebook's first
cell does, torch included), imports the lesson's checker module (timed: a notebook's first ``check`` pays for it), then times
``check(id, reference)`` twice: the first call pays for the
lazy imports and whatever the checker builds once; the second is what a learner waits for when they
run the cell again. The table goes to ``benchmarks/results/check_times.md`` (``make bench`` copies it
into ``RESULTS.md``). An exercise over budget in that bare process is measured again where a learner
calls it: in a process that first runs its learner notebook's code cells before the exercise (the imports
and exports a learner's kernel has done by then); the table notes both. The exit status is 1 when a call takes longer than ``MAX_SECONDS`` or a
reference is not ``[OK]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAGMENT = ROOT / "benchmarks" / "results" / "check_times.md"
MAX_SECONDS = 2.0

_CHILD = r"""
import json, os, resource, sys, time

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

exercise_id, notebook = sys.argv[1], sys.argv[2]
if notebook != "-":
    # A learner's kernel: the notebook's code cells before the exercise's check, run as Jupyter would
    # (IPython, the notebook's folder, output discarded; cells that raise on purpose raise here too).
    import contextlib, io, json as _json, pathlib
    from IPython.core.interactiveshell import InteractiveShell
    cells = [c for c in _json.loads(pathlib.Path(notebook).read_text())["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells]
    end = next(i for i, s in enumerate(sources) if f'check("{exercise_id}"' in s)
    os.chdir(pathlib.Path(notebook).parent)
    shell = InteractiveShell.instance()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for source in sources[:end]:
            shell.run_cell(source, silent=True)
from course_utils.exercises import check, get_exercise
started, started_cpu = time.perf_counter(), cpu()
reference = get_exercise(exercise_id).reference  # the lesson's checker module: a notebook's first check imports it
load = [time.perf_counter() - started, cpu() - started_cpu]
times, cpus, statuses = [], [], []
for _ in range(2):
    started, started_cpu = time.perf_counter(), cpu()
    result = check(exercise_id, reference)
    times.append(time.perf_counter() - started)
    cpus.append(cpu() - started_cpu)
    statuses.append(result.status)
print(json.dumps({"times": times, "cpus": cpus, "load": load, "statuses": statuses,
                  "loadavg": os.getloadavg()[0]}))
"""

def notebook_of(exercise_id: str) -> Path:
    """The learner notebook whose cells come before the exercise's check."""
    return next((ROOT / "notebooks").glob(f"{exercise_id[:2]}_*.ipynb"))


def measure(exercise_id: str, notebook: Path | None = None) -> dict:
    """Times in a fresh process; with ``notebook``, after that notebook's cells before the exercise."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONHASHSEED="0", MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", _CHILD, exercise_id, str(notebook or "-")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return {"times": [float("nan")] * 2, "cpus": [float("nan")] * 2, "load": [float("nan")] * 2,
                "statuses": ["error"] * 2, "loadavg": os.getloadavg()[0], "error": done.stderr[-500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="lesson numbers or exercise ids (writes no fragment)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from course_utils.exercises import list_exercises

    ids = list_exercises()
    if args.only:
        ids = [i for i in ids if any(i == o or i.split(".")[0] == o for o in args.only)]
    rows, bad, notes = [], [], []
    for exercise_id in ids:
        result = measure(exercise_id)
        (first, second), (first_cpu, second_cpu) = result["times"], result["cpus"]
        module, module_cpu = result["load"]
        # a notebook's first check also imports the lesson's checker module: counted in the first call
        first_total, first_total_cpu = first + module, first_cpu + module_cpu
        over = not (first_total <= MAX_SECONDS and second <= MAX_SECONDS)
        over_cpu = not (first_total_cpu <= MAX_SECONDS and second_cpu <= MAX_SECONDS)
        if over_cpu:
            # Over budget in a bare process: measure where a learner calls it, a kernel that has run the
            # notebook's cells before the exercise (its imports and exports done); that is the budget's case.
            fresh = (first_total, first_total_cpu, second, second_cpu)
            result = measure(exercise_id, notebook_of(exercise_id))
            (first, second), (first_cpu, second_cpu) = result["times"], result["cpus"]
            module, module_cpu = result["load"]
            first_total, first_total_cpu = first + module, first_cpu + module_cpu
            over = not (first_total <= MAX_SECONDS and second <= MAX_SECONDS)
            over_cpu = not (first_total_cpu <= MAX_SECONDS and second_cpu <= MAX_SECONDS)
            notes.append(f"{exercise_id}: in a bare process (no notebook cells run before it) the first call "
                         f"took {fresh[0]:.2f} s wall / {fresh[1]:.2f} s CPU and the second {fresh[2]:.2f} / "
                         f"{fresh[3]:.2f} s; its row is measured in a process that first ran "
                         f"`{notebook_of(exercise_id).relative_to(ROOT)}`'s code cells before the exercise, "
                         f"as a learner's kernel has.")
        wrong = any(s != "ok" for s in result["statuses"])
        if over or wrong:
            bad.append(exercise_id)
        mark = "; ".join(m for m, on in (("reference not [OK]", wrong), ("over budget (CPU)", over_cpu),
                                        ("over budget (wall)", over and not over_cpu)) if on)
        rows.append((exercise_id, module, module_cpu, first_total, first_total_cpu, second, second_cpu,
                     result["loadavg"], mark))
        print(f"{exercise_id:28s} module {module:5.2f}/{module_cpu:5.2f}  first {first_total:6.2f}/"
              f"{first_total_cpu:5.2f} s  again {second:6.2f}/{second_cpu:5.2f} s  load {result['loadavg']:4.1f}  "
              f"{mark}" + (f"\n{result.get('error', '')}" if result.get("error") else ""), flush=True)
    worst = max(rows, key=lambda r: r[3]) if rows else None
    lines = ["## Checker times", "",
             f"`check(id, reference)` in a fresh process (first call, then again); budget {MAX_SECONDS:g} s each "
             f"(`benchmarks/check_times.py`). CPU threads: {os.cpu_count()}. The first call includes importing "
             f"the lesson's checker module (its own column too), as a notebook's first `check` does; not "
             f"included: `import course_utils.exercises` (torch itself). Wall time depends on the machine's load "
             f"(1-minute load average when the row was measured); CPU time (user + sys of the process) is what "
             f"the wall time approaches on a quiet machine.", "",
             "| exercise | module import wall / CPU (s) | first call wall / CPU (s) | second call wall / CPU (s) "
             "| load | |", "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {i} | {m:.2f} / {mc:.2f} | {a:.2f} / {ac:.2f} | {b:.2f} / {bc:.2f} | {la:.1f} | {k} |"
              for i, m, mc, a, ac, b, bc, la, k in rows]
    if worst:
        lines += ["", f"Slowest first call: {worst[0]} ({worst[3]:.2f} s wall, {worst[4]:.2f} s CPU); "
                      f"slowest second call: {max(r[5] for r in rows):.2f} s wall, "
                      f"{max(r[6] for r in rows):.2f} s CPU."]
    lines += [""] + [f"- {note}" for note in notes] if notes else []
    if not args.only:
        FRAGMENT.parent.mkdir(parents=True, exist_ok=True)
        FRAGMENT.write_text("\n".join(lines) + "\n")
    if bad:
        print(f"over {MAX_SECONDS:g} s or not [OK]: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
