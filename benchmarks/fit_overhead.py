"""How much time does ``course_utils.training.fit()`` add to the bare six-line loop?

    .venv/bin/python benchmarks/fit_overhead.py     # writes benchmarks/results/fit_overhead.md

Same model (notebook 06's CNN), same data (its 3,000 normalised training images, batch 64,
shuffled by identically seeded generators), same optimizer, same number of epochs, one torch
thread. ``fit()`` runs with everything it does by default: a tqdm progress bar (sent to
/dev/null here), per-step loss / learning rate / gradient norm, a CSV log. No validation on
either side. The runs alternate in ABBA order (bare, fit, fit, bare, ...) so neither side always
runs first and a change in machine load hits both; the overhead is the ratio of the median
times minus 1, in wall time and in CPU time. Both sides must end with bit-identical
parameters (they do the same work). On a shared, loaded machine single runs vary by 10-20 %,
so the script also times the per-step extras of ``fit()`` in isolation (gradient norm,
progress-bar update, bookkeeping) against the median step time: that part does not depend on
the load. Budget (issue 5): at most 5 % of wall time.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader

from course_utils.training import fit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_06 import datasets, make_cnn  # noqa: E402

RESULT = Path(__file__).resolve().parent / "results" / "fit_overhead.md"
EPOCHS, PAIRS, BUDGET = 1, 8, 0.05


def _setup(train_data):
    torch.manual_seed(0)
    model = make_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = DataLoader(train_data, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(1))
    return model, optimizer, loader


def bare(train_data) -> tuple[float, float, nn.Module]:
    model, optimizer, loader = _setup(train_data)
    loss_fn = nn.CrossEntropyLoss()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(EPOCHS):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    return time.perf_counter() - wall, time.process_time() - cpu, model


def with_fit(train_data, log_dir: Path) -> tuple[float, float, nn.Module]:
    model, optimizer, loader = _setup(train_data)
    wall, cpu = time.perf_counter(), time.process_time()
    with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
        fit(model, loader, epochs=EPOCHS, optimizer=optimizer, log_csv=log_dir / "log.csv",
            progress=True, verbose=False)
    return time.perf_counter() - wall, time.process_time() - cpu, model


def per_step_extras(train_data) -> tuple[float, float]:
    """Seconds per step of fit()'s additions, and of one bare step, timed in isolation."""
    from tqdm.auto import tqdm

    from course_utils.training import _total_norm

    model, optimizer, loader = _setup(train_data)
    x, y = next(iter(loader))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    loss = step()
    params = [p for p in model.parameters() if p.requires_grad]
    kept: list = []
    with open(os.devnull, "w") as sink:
        bar = tqdm(total=10**9, file=sink)
        n = 2000
        start = time.process_time()
        for _ in range(n):
            kept.append(optimizer.param_groups[0]["lr"])
            kept.append(_total_norm(params, None))
            kept.append(loss.detach())
            bar.update()
        extras = (time.process_time() - start) / n
        bar.close()
    start = time.process_time()
    for _ in range(20):
        step()
    return extras, (time.process_time() - start) / 20


def main() -> int:
    torch.set_num_threads(1)
    train_data, _ = datasets()
    log_dir = Path(tempfile.mkdtemp(prefix="fit-overhead-"))
    bare(train_data)  # warm-up (first-call allocations, lazy imports)
    runs: dict[str, list[tuple[float, float]]] = {"bare": [], "fit": []}
    for index in range(PAIRS):
        order = ("bare", "fit") if index % 2 == 0 else ("fit", "bare")
        models = {}
        for side in order:
            wall, cpu, models[side] = bare(train_data) if side == "bare" else with_fit(train_data, log_dir)
            runs[side].append((wall, cpu))
        same = all(torch.equal(p, q) for p, q in zip(models["bare"].parameters(), models["fit"].parameters()))
        assert same, "fit() and the bare loop must do exactly the same work"
    median = {side: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
              for side, r in runs.items()}
    wall_overhead = median["fit"][0] / median["bare"][0] - 1
    cpu_overhead = median["fit"][1] / median["bare"][1] - 1
    spread = (max(c for _, c in runs["bare"]) - min(c for _, c in runs["bare"])) / median["bare"][1]
    extras, step = per_step_extras(train_data)
    load = os.getloadavg()[0]
    verdict = "within" if wall_overhead <= BUDGET else "OVER"
    lines = [
        "## fit() overhead vs the bare six-line loop",
        "",
        f"`benchmarks/fit_overhead.py`: notebook 06's CNN, {len(train_data)} images, batch 64, "
        f"{EPOCHS} epoch per run, {PAIRS} runs per side in ABBA order, 1 torch thread, torch "
        f"{torch.__version__}, {os.cpu_count()} CPU core(s), 1-minute load average {load:.1f} when it "
        "finished. Parameters after training are bit-identical on both sides.",
        "",
        "| | bare loop | fit() |",
        "|---|---|---|",
        f"| wall s per run (each run, in order) | {', '.join(f'{w:.2f}' for w, _ in runs['bare'])} "
        f"| {', '.join(f'{w:.2f}' for w, _ in runs['fit'])} |",
        f"| CPU s per run | {', '.join(f'{c:.2f}' for _, c in runs['bare'])} "
        f"| {', '.join(f'{c:.2f}' for _, c in runs['fit'])} |",
        f"| median wall s / CPU s | {median['bare'][0]:.2f} / {median['bare'][1]:.2f} "
        f"| {median['fit'][0]:.2f} / {median['fit'][1]:.2f} |",
        "",
        f"Overhead of the medians: **{wall_overhead:+.1%} wall**, {cpu_overhead:+.1%} CPU ({verdict} the "
        f"{BUDGET:.0%} budget); the bare runs alone spread over {spread:.0%} of their median CPU time, "
        "which bounds how precisely a loaded machine can resolve the difference.",
        f"Per-step extras of fit() timed in isolation (learning-rate read, total gradient norm, "
        f"progress-bar update, keeping the loss): {extras * 1e6:.0f} µs CPU per step, against "
        f"{step * 1e3:.1f} ms CPU for one bare training step: **{extras / step:.2%}** of the step.",
        "",
    ]
    RESULT.parent.mkdir(exist_ok=True)
    RESULT.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0 if wall_overhead <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
