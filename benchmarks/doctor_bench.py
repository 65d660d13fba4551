"""Benchmark: how long one ``course_utils.doctor.diagnose`` takes on the course's models.

    .venv/bin/python benchmarks/doctor_bench.py [--threads 1 2] [--repeats 3]

Budget (issue 7): one diagnosis <= 5 s on 2 CPU cores. Measured cases: a correct MLP, the course's
3x32x32 CNN (BatchNorm + Dropout, batch 64) correct and broken, and the two worst cases of the
one-batch probe (a second opinion with lr x10 / x0.1 after 50 steps that did not help). Writes
``benchmarks/results/doctor.md``, a markdown section that the notebook benchmark runner appends to
``benchmarks/RESULTS.md``. The machine's load average is recorded beside the numbers: other
processes on a shared machine inflate them.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_utils.doctor import diagnose  # noqa: E402 (after the sys.path line)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def course_cnn() -> nn.Sequential:
    """The notebook-06 style classifier for 3x32x32 images (conv 16/32, fc 128), with BN and Dropout."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 8 * 8, 128), nn.ReLU(), nn.Dropout(0.25),
        nn.Linear(128, 10))


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10))


def images(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 3, 32, 32, generator=_g(1)), torch.randint(0, 10, (n,), generator=_g(2))


def tabular(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, 20, generator=_g(3))
    return x, (x @ torch.randn(20, 10, generator=_g(4))).argmax(dim=1)


def step_without_zero_grad(model, batch, optimizer, loss_fn):
    x, y = batch
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


Case = Callable[[], tuple[nn.Module, Any, torch.optim.Optimizer, Any, Any]]


def _case(make_model: Callable[[], nn.Module], make_opt: Callable, batch: Callable, step: Any = None) -> Case:
    def build():
        model = make_model()
        return model, nn.CrossEntropyLoss(), make_opt(model.parameters()), batch(), step
    return build


CASES: dict[str, Case] = {
    "MLP 20-64-10, batch 64, correct": _case(mlp, lambda p: torch.optim.Adam(p, lr=1e-2), tabular),
    "MLP, lr 1e-7 (two 50-step probes)": _case(mlp, lambda p: torch.optim.SGD(p, lr=1e-7), tabular),
    "course CNN 3x32x32, batch 64, correct": _case(course_cnn, lambda p: torch.optim.Adam(p, lr=1e-3), images),
    "course CNN, zero_grad missing": _case(course_cnn, lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
                                           images, step_without_zero_grad),
    "course CNN, lr 20 (diverges, second probe)": _case(course_cnn, lambda p: torch.optim.SGD(p, lr=20.0), images),
    "course CNN, lr 1e-7 (worst case: two 50-step probes)": _case(
        course_cnn, lambda p: torch.optim.SGD(p, lr=1e-7), images),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="torch thread counts to measure (notebooks run with 1; the budget is for 2 cores)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "doctor.md")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    diagnose(*CASES["MLP 20-64-10, batch 64, correct"]()[:4])  # warm-up: lazy imports, first optimizer step
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for name, build in CASES.items():
            times, cpu, report = [], [], None
            for _ in range(args.repeats):
                model, loss_fn, optimizer, batch, step = build()
                start, start_cpu = time.perf_counter(), time.process_time()
                report = diagnose(model, loss_fn, optimizer, batch, train_step=step)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            steps = (len(report.measurements.get("overfit_losses", []))
                     + len(report.measurements.get("second_opinion_losses", [])))
            codes = ", ".join(sorted(report.codes)) or "none"
            rows.append((name, threads, codes, steps, statistics.median(times), max(times), statistics.median(cpu)))
            print(f"{threads} thread(s) {name:<55} {statistics.median(times):6.2f} s (max {max(times):.2f}, "
                  f"CPU {statistics.median(cpu):.2f} s)  codes: {codes}", flush=True)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    worst = max(r[5] for r in rows)
    worst_cpu = max(r[6] for r in rows if r[1] == 1) if any(r[1] == 1 for r in rows) else float("nan")
    lines = [
        "## Training doctor: time per diagnosis",
        "",
        (f"`benchmarks/doctor_bench.py`: {args.repeats} runs per case, torch {torch.__version__}, "
         f"{os.cpu_count()} CPU core(s) visible ({platform.machine()}), 1-minute load average "
         f"{load_before:.1f} before and {load_after:.1f} after (other processes inflate the times). "
         "Budget (issue 7): <= 5 s per diagnosis on 2 cores. The one-batch probe trains on 16 samples. "
         "*CPU s* is the process CPU time of the diagnosis: with one thread it approximates the wall time "
         "on an idle core (it leaves out the time spent waiting for other processes)."),
        "",
        "| setup | torch threads | findings | one-batch steps run | median s | max s | CPU s (median) |",
        "|---|---|---|---|---|---|---|",
        *[f"| {n} | {t} | {c} | {s} | {m:.2f} | {x:.2f} | {u:.2f} |" for n, t, c, s, m, x, u in rows],
        "",
        (f"Slowest diagnosis: {worst:.2f} s wall ({'within' if worst <= 5 else 'over'} the 5 s budget on this "
         f"machine at this load); largest CPU time with one thread: {worst_cpu:.2f} s."),
        "",
    ]
    if max(load_before, load_after) > (os.cpu_count() or 1) and any(r[1] > 1 for r in rows):
        lines[-1:-1] = ["", ("The load average was above the number of cores: with more than one torch thread "
                             "the threads wait for each other on oversubscribed cores (their CPU time grows "
                             "too), so the multi-thread rows measure that contention more than the doctor.")]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
