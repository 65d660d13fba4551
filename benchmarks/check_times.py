"""Checker speed: every ``check(id, reference)`` within 2 s, the first call in a fresh process included.

    .venv/bin/python benchmarks/check_times.py              # all exercises (make bench)
    .venv/bin/python benchmarks/check_times.py --only 12    # a subset: prints the table, writes nothing

For each exercise a fresh Python process imports ``course_utils.exercises`` (as a notebook's first
cell does, torch included), then times ``check(id, reference)`` twice: the first call pays for the
lazy imports and whatever the checker builds once; the second is what a learner waits for when they
run the cell again. The table goes to ``benchmarks/results/check_times.md`` (``make bench`` copies it
into ``RESULTS.md``). The exit status is 1 when a call takes longer than ``MAX_SECONDS`` or a
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
import json, sys, time
from course_utils.exercises import check, get_exercise
exercise_id = sys.argv[1]
reference = get_exercise(exercise_id).reference
times, statuses = [], []
for _ in range(2):
    started = time.perf_counter()
    result = check(exercise_id, reference)
    times.append(time.perf_counter() - started)
    statuses.append(result.status)
print(json.dumps({"times": times, "statuses": statuses}))
"""


def measure(exercise_id: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-c", _CHILD, exercise_id], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return {"times": [float("nan")] * 2, "statuses": ["error"] * 2, "error": done.stderr[-500:]}
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
    rows, bad = [], []
    for exercise_id in ids:
        result = measure(exercise_id)
        first, second = result["times"]
        over = not (first <= MAX_SECONDS and second <= MAX_SECONDS)
        wrong = any(s != "ok" for s in result["statuses"])
        if over or wrong:
            bad.append(exercise_id)
        mark = "over budget" if over else ("reference not [OK]" if wrong else "")
        rows.append((exercise_id, first, second, mark))
        print(f"{exercise_id:32s} first {first:6.2f} s  again {second:6.2f} s  {mark}"
              + (f"\n{result.get('error', '')}" if result.get("error") else ""), flush=True)
    worst = max(rows, key=lambda r: r[1]) if rows else None
    lines = ["## Checker times", "",
             f"`check(id, reference)` in a fresh process (first call, then again); budget {MAX_SECONDS:g} s each "
             f"(`benchmarks/check_times.py`). CPU threads: {os.cpu_count()}.", "",
             "| exercise | first call (s) | second call (s) | |", "|---|---:|---:|---|"]
    lines += [f"| {i} | {a:.2f} | {b:.2f} | {m} |" for i, a, b, m in rows]
    if worst:
        lines += ["", f"Slowest first call: {worst[0]} ({worst[1]:.2f} s); "
                      f"slowest second call: {max(r[2] for r in rows):.2f} s."]
    if not args.only:
        FRAGMENT.parent.mkdir(parents=True, exist_ok=True)
        FRAGMENT.write_text("\n".join(lines) + "\n")
    if bad:
        print(f"over {MAX_SECONDS:g} s or not [OK]: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
