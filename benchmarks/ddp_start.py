"""What does starting notebook 13's two DDP workers cost with *fork* and with *spawn*?

    .venv/bin/python benchmarks/ddp_start.py     # writes benchmarks/results/ddp_start.md

This process imports torch, torchvision and matplotlib first (what a course kernel holds), then
runs ``course_utils.distributed.launch(lesson_worker, world_size=2)`` with each start method,
three times each, alternating. For every launch it records the wall time and the peak of "this
process's RSS + the unique memory (USS) of its child processes", sampled every 20 ms, minus this
process's RSS just before the launch: the memory the two workers add. USS counts only pages a
child does not share, so a forked child that still shares torch's pages with its parent costs
little, while a spawned child that imports torch again pays for its own copy.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import matplotlib.pyplot  # noqa: F401  (a course kernel has these loaded)
import psutil
import torch
import torchvision  # noqa: F401

import course_utils.distributed as d

RESULT = Path(__file__).resolve().parent / "results" / "ddp_start.md"
RUNS = 3


def _measure(method: str) -> tuple[float, int]:
    me = psutil.Process()
    before = me.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                total = me.memory_info().rss
                for child in me.children(recursive=True):
                    try:
                        total += child.memory_full_info().uss
                    except psutil.Error:
                        pass
                peak[0] = max(peak[0], total)
            except psutil.Error:
                pass
            time.sleep(0.02)

    watcher = threading.Thread(target=sample)
    watcher.start()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = d.launch(d.lesson_worker, world_size=2, start_method=method,
                           checkpoint=os.path.join(folder, "ckpt.pt"))
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    assert torch.equal(results[0]["final_params"], results[1]["final_params"])
    return seconds, peak[0] - before


def main() -> None:
    torch.set_num_threads(1)
    runs: dict[str, list[tuple[float, int]]] = {"fork": [], "spawn": []}
    for _ in range(RUNS):
        for method in runs:
            runs[method].append(_measure(method))
    load = os.getloadavg()[0]
    lines = [
        "## Starting notebook 13's DDP workers: fork vs spawn",
        "",
        f"`benchmarks/ddp_start.py`: `launch(lesson_worker, world_size=2)` from a process that holds "
        f"torch, torchvision and matplotlib, {RUNS} runs per start method (alternating), torch "
        f"{torch.__version__}, {os.cpu_count()} CPU core(s), 1-minute load average {load:.1f} when it "
        f"finished. *added MB* is the peak of (own RSS + children's unique memory) minus own RSS "
        f"before the launch.",
        "",
        "| start method | wall s (each run) | median wall s | added MB (each run) | median added MB |",
        "|---|---|---:|---|---:|",
    ]
    for method, values in runs.items():
        seconds = [s for s, _ in values]
        added = [m / 2**20 for _, m in values]
        lines.append(f"| {method} | {', '.join(f'{s:.2f}' for s in seconds)} | "
                     f"{statistics.median(seconds):.2f} | {', '.join(f'{m:.0f}' for m in added)} | "
                     f"{statistics.median(added):.0f} |")
    lines += ["", "Notebook 13 launches with `default_start_method()`: fork on Linux, so its two "
              "launches cost the fork row. On macOS and Windows it is spawn: each launch costs the "
              "spawn row, because every worker imports torch again (with the CPU-only wheel that "
              "import is about 230 MB instead of the CUDA build's 650 MB; not measured here).", ""]
    RESULT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
