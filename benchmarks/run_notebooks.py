"""Notebook benchmark: wall time and peak kernel memory of every notebook, against the budgets.

    .venv/bin/python benchmarks/run_notebooks.py            # all of notebooks/ and solutions/ (make bench)
    .venv/bin/python benchmarks/run_notebooks.py --only 03  # a subset: prints the table, writes nothing

Each notebook runs top to bottom in a fresh ``python3`` kernel (nbclient, the environment of
``course_utils.netguard.kernel_env``: fixed hash seed, network guard), exactly as
``make notebooks`` executes it, but nothing is written back. Measured per notebook:

* seconds: wall time from kernel start to the end of the last cell (kernel start and the
  ``import torch`` of the first cell included; shutdown excluded);
* peak MB: the largest memory of the kernel process tree, polled every 50 ms: the kernel's
  resident set size plus the unique memory of its child processes (DataLoader workers,
  spawned DDP ranks); at least the kernel's own high-water mark (``VmHWM``).

Every kernel gets an empty Inductor cache (``TORCHINDUCTOR_CACHE_DIR``), so a notebook that
calls ``torch.compile`` is timed as on a learner's first run, C++ compilation included.
Notebook 11 has a 60 s budget for that reason (``LONGER_BUDGETS``).

A baseline kernel that only imports torch, torchvision and matplotlib.pyplot is measured the
same way first. Budgets (COURSE_DESIGN section 7): every notebook <= 30 s and <= baseline +
500 MB; median <= 15 s over a full run. The table goes to ``benchmarks/RESULTS.md`` together
with every fragment other benchmark scripts left in ``benchmarks/results/*.md`` (under
"Other measurements"). The exit status is 1 when a notebook fails or is over budget.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
FRAGMENTS = ROOT / "benchmarks" / "results"
FOLDERS = ("notebooks", "solutions")

MAX_SECONDS = 30.0
#: Notebooks allowed longer than MAX_SECONDS, and why (issue 8: compile is slow on CPU).
LONGER_BUDGETS = {"11_performance_and_compile": (60.0, "its first torch.compile runs a C++ compiler")}
MAX_MEDIAN_SECONDS = 15.0
MAX_MB_OVER_BASELINE = 500.0
BASELINE_SOURCE = "import torch\nimport torchvision\nimport matplotlib\nimport matplotlib.pyplot as plt"
MB = 1024 * 1024


@dataclass
class Measurement:
    name: str
    seconds: float
    peak_mb: float
    error: str = ""


class PeakRss:
    """Polls the memory of a process tree in a thread; ``peak`` in bytes.

    A sample is the kernel's resident set size plus the *unique* set size (pages no other
    process maps) of each descendant: a forked DataLoader worker shares torch's pages with
    the kernel and adds only what it copies or allocates, and summing plain RSS would count
    the shared libraries once per process.
    """

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        import psutil

        try:
            total = self.process.memory_info().rss
            children = self.process.children(recursive=True)
        except psutil.Error:
            return 0
        for child in children:
            try:
                total += child.memory_full_info().uss
            except psutil.Error:  # a worker that just exited
                pass
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak = max(self.peak, self._sample(), _high_water_mark(self.process.pid))
        self._stop.set()
        self._thread.join()


def _high_water_mark(pid: int) -> int:
    """The kernel's own peak RSS from /proc (0 where unavailable)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmHWM:\s+(\d+)\s+kB", status, re.M)
    return int(match.group(1)) * 1024 if match else 0


def budget_seconds(name: str) -> float:
    """The time budget of notebook ``name`` (``folder/NN_name.ipynb`` or a stem)."""
    stem = Path(name).stem
    return LONGER_BUDGETS[stem][0] if stem in LONGER_BUDGETS else MAX_SECONDS


def run_notebook(nb, name: str, cwd: Path, timeout: int = 600) -> Measurement:
    """Execute ``nb`` (a NotebookNode, modified in memory only) in a fresh kernel and measure it.

    The kernel starts with an empty, temporary Inductor cache: compile time is always paid."""
    import shutil
    import tempfile

    cache = tempfile.mkdtemp(prefix="course-inductor-cache-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    try:
        return _run_notebook(nb, name, cwd, timeout)
    finally:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(cache, ignore_errors=True)


def _run_notebook(nb, name: str, cwd: Path, timeout: int) -> Measurement:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}},
                            record_timing=False)  # widget state kept in memory: Output widgets need it
    client.reset_execution_trackers()
    error = ""
    start = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.pid  # type: ignore[union-attr]
        with PeakRss(pid) as rss:
            try:
                for index, cell in enumerate(client.nb.cells):
                    client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            except (CellExecutionError, CellTimeoutError) as exc:
                error = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__
            except Exception as exc:  # e.g. DeadKernelError when the kernel is killed (out of memory)
                error = f"{type(exc).__name__}: {exc}"[:200]
            seconds = time.perf_counter() - start
    return Measurement(name, seconds, rss.peak / MB, error)


def notebooks(only: list[str] | None) -> list[Path]:
    paths = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
            if not only or any(path.name.startswith(o) or path.stem == o for o in only):
                paths.append(path)
    return paths


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import psutil

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (f"{os.cpu_count()} CPU cores ({cpu}), {psutil.virtual_memory().total / 1024 ** 3:.1f} GiB RAM, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
            f"torch {version('torch')}, torchvision {version('torchvision')}")


def _load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _demote(text: str, top: int = 3) -> str:
    """Shift a fragment's markdown headings so its highest one is level ``top`` (code fences kept)."""
    lines, fenced, heading = text.splitlines(), False, []
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading.append(not fenced and re.match(r"#{1,6} ", line) is not None)
    levels = [len(line) - len(line.lstrip("#")) for line, h in zip(lines, heading) if h]
    shift = top - min(levels) if levels else 0
    out = [("#" * shift + line if shift > 0 else line[-shift:]) if h else line
           for line, h in zip(lines, heading)]
    return "\n".join(out).strip()


def other_measurements() -> str:
    parts = []
    for fragment in sorted(FRAGMENTS.glob("*.md")):
        text = fragment.read_text(encoding="utf-8").strip()
        if not text:
            continue
        body = _demote(text)
        if not body.startswith("#"):
            body = f"### {fragment.stem}\n\n{body}"
        parts.append(f"<!-- from benchmarks/results/{fragment.name} -->\n{body}")
    if not parts:
        return "## Other measurements\n\n(no fragments in benchmarks/results/ yet)\n"
    return "## Other measurements\n\n" + "\n\n".join(parts) + "\n"


def report(baseline: Measurement, rows: list[Measurement], subset: bool, started: str,
           load_before: str, load_after: str) -> tuple[str, bool]:
    """The markdown page and whether everything is within budget."""
    limit_mb = baseline.peak_mb + MAX_MB_OVER_BASELINE
    lines = ["# Notebook benchmark", "",
             f"Generated by `benchmarks/run_notebooks.py` (`make bench`) on {started}"
             + (" for a subset (`--only`)." if subset else "."),
             "",
             f"- Machine: {machine()}.",
             f"- Load average (1/5/15 min) before: {load_before}; after: {load_after}. "
             f"Other processes on the machine inflate the times: compare runs on a quiet machine.",
             f"- Budgets (COURSE_DESIGN section 7): each notebook <= {MAX_SECONDS:.0f} s wall in a fresh kernel "
             f"and peak kernel RSS <= baseline + {MAX_MB_OVER_BASELINE:.0f} MB; median <= {MAX_MEDIAN_SECONDS:.0f} s. "
             + " ".join(f"Notebook {stem[:2]}: <= {limit:.0f} s ({why})." for stem, (limit, why)
                        in LONGER_BUDGETS.items()),
             "- Every kernel starts with an empty Inductor cache, so `torch.compile` is timed as on a "
             "learner's first run (C++ compilation included).",
             f"- Baseline kernel (imports torch, torchvision, matplotlib.pyplot and nothing else): "
             f"{baseline.seconds:.1f} s, {baseline.peak_mb:.0f} MB peak RSS, so the memory limit is "
             f"{limit_mb:.0f} MB.",
             "",
             "| notebook | seconds | peak MB | MB over baseline | within budget |",
             "|---|---:|---:|---:|---|"]
    ok = not baseline.error
    for row in rows:
        over = row.peak_mb - baseline.peak_mb
        problems = []
        if row.error:
            problems.append(f"failed: {row.error}")
        if row.seconds > budget_seconds(row.name):
            problems.append(f"> {budget_seconds(row.name):.0f} s")
        if over > MAX_MB_OVER_BASELINE:
            problems.append(f"> baseline + {MAX_MB_OVER_BASELINE:.0f} MB")
        ok = ok and not problems
        longer = f" ({budget_seconds(row.name):.0f} s budget)" if budget_seconds(row.name) != MAX_SECONDS else ""
        verdict = f"yes{longer}" if not problems else "**NO** (" + "; ".join(problems).replace("|", "/") + ")"
        lines.append(f"| {row.name} | {row.seconds:.1f} | {row.peak_mb:.0f} | {over:+.0f} | {verdict} |")
    lines.append("")
    if rows:
        median = statistics.median(r.seconds for r in rows)
        median_ok = median <= MAX_MEDIAN_SECONDS
        if not subset:
            ok = ok and median_ok
        slowest = max(rows, key=lambda r: r.seconds)
        biggest = max(rows, key=lambda r: r.peak_mb)
        lines += [f"Median time: **{median:.1f} s** (budget <= {MAX_MEDIAN_SECONDS:.0f} s: "
                  f"{'yes' if median_ok else 'NO'}{', not judged on a subset' if subset else ''}). "
                  f"Slowest: {slowest.name} ({slowest.seconds:.1f} s). "
                  f"Largest: {biggest.name} ({biggest.peak_mb:.0f} MB).", ""]
    lines += [f"Result: **{'all within budget' if ok else 'OVER BUDGET or FAILED'}** "
              f"({len(rows)} notebooks).", "",
              "How to read it: *seconds* includes starting the kernel and importing torch (the "
              "baseline's seconds are that floor), so a notebook's own work is roughly seconds minus "
              "baseline seconds. *peak MB* is the largest resident memory of the kernel plus the unique "
              "memory of its child processes (DataLoader workers, DDP ranks: pages they share with the "
              "kernel, such as torch's libraries, are counted once). A notebook over budget: shrink data, model or epochs (without faking results), or "
              "free large tensors (`del x`) before the next section.", ""]
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NN",
                        help="notebook prefixes (e.g. 03 or 03_autograd); prints the table, writes nothing "
                             "unless --output is given")
    parser.add_argument("--output", type=Path, help=f"where to write the page (default {RESULTS} for full runs)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds one cell may run (default 600)")
    args = parser.parse_args(argv)

    import nbformat

    from course_utils.netguard import kernel_env

    os.environ.update(kernel_env())
    paths = notebooks(args.only)
    if not paths:
        print(f"no notebooks match {args.only or 'notebooks/ and solutions/'}", file=sys.stderr)
        return 1
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _load()

    print("baseline kernel (torch, torchvision, matplotlib) ...", flush=True)
    base_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BASELINE_SOURCE)])
    baseline = run_notebook(base_nb, "baseline", ROOT, args.timeout)
    print(f"  {baseline.seconds:.1f} s, {baseline.peak_mb:.0f} MB {baseline.error}", flush=True)

    rows = []
    for path in paths:
        name = f"{path.parent.name}/{path.name}"
        print(f"{name} ...", flush=True)
        row = run_notebook(nbformat.read(path, as_version=4), name, path.parent, args.timeout)
        rows.append(row)
        print(f"  {row.seconds:.1f} s, {row.peak_mb:.0f} MB ({row.peak_mb - baseline.peak_mb:+.0f}) "
              f"{row.error}", flush=True)

    page, ok = report(baseline, rows, bool(args.only), started, load_before, _load())
    page = page + "\n" + other_measurements()
    output = args.output or (None if args.only else RESULTS)
    if output is None:
        print("\n" + page)
    else:
        output.write_text(page, encoding="utf-8")
        print(f"wrote {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")
    print("all within budget" if ok else "OVER BUDGET or FAILED: see the table", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
