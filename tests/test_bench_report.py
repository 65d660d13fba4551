"""benchmarks/run_notebooks.py: the budget verdicts of the results table (no notebook is run here)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "benchmarks" / "run_notebooks.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["run_notebooks"] = bench  # dataclasses look their module up
_spec.loader.exec_module(bench)  # type: ignore[union-attr]

BASE = bench.Measurement("baseline", 7.0, 750.0)


def _verdicts(rows, subset=False):
    page, ok = bench.report(BASE, rows, subset, "now", "0 / 0 / 0", "0 / 0 / 0")
    lines = {line.split(" | ")[0].lstrip("| "): line for line in page.splitlines() if line.startswith("| ")}
    return page, ok, lines


def test_within_budget_rows_pass() -> None:
    rows = [bench.Measurement(f"notebooks/0{i}_x.ipynb", 10.0, 800.0) for i in range(3)]
    _, ok, lines = _verdicts(rows)
    assert ok and all(lines[r.name].endswith("| yes |") for r in rows)


@pytest.mark.parametrize("seconds, peak, reason", [(30.5, 800.0, "> 30 s"),
                                                   (10.0, 1251.0, "> baseline + 500 MB")])
def test_over_budget_row_fails_and_says_why(seconds: float, peak: float, reason: str) -> None:
    rows = [bench.Measurement("notebooks/05_data_pipeline.ipynb", seconds, peak)]
    page, ok, lines = _verdicts(rows, subset=True)
    assert not ok and f"**NO** ({reason})" in lines[rows[0].name]
    assert "OVER BUDGET" in page


def test_notebook_10_has_its_longer_budget_and_the_table_says_so() -> None:
    name = "solutions/11_performance_and_compile.ipynb"
    assert bench.budget_seconds(name) == 60.0 and bench.budget_seconds("notebooks/06_x.ipynb") == 30.0
    _, ok, lines = _verdicts([bench.Measurement(name, 45.0, 900.0)], subset=True)
    assert ok and lines[name].endswith("| yes (60 s budget) |")
    _, ok, lines = _verdicts([bench.Measurement(name, 61.0, 900.0)], subset=True)
    assert not ok and "**NO** (> 60 s)" in lines[name]


def test_median_over_budget_fails_a_full_run_only() -> None:
    rows = [bench.Measurement(f"notebooks/0{i}_x.ipynb", 20.0, 800.0) for i in range(3)]
    assert not _verdicts(rows)[1]
    assert _verdicts(rows, subset=True)[1]


def test_failed_notebook_is_reported() -> None:
    rows = [bench.Measurement("notebooks/03_x.ipynb", 5.0, 800.0, error="ValueError: boom")]
    _, ok, lines = _verdicts(rows, subset=True)
    assert not ok and "failed: ValueError: boom" in lines[rows[0].name]


def test_every_kernel_gets_an_empty_inductor_cache(monkeypatch) -> None:
    seen = {}

    def fake_run(nb, name, cwd, timeout):
        cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        seen["cache"], seen["empty"] = cache, cache.is_dir() and not any(cache.iterdir())
        return bench.Measurement(name, 1.0, 1.0)

    monkeypatch.setattr(bench, "_run_notebook", fake_run)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    bench.run_notebook(None, "x", ROOT)
    assert seen["empty"] and not seen["cache"].exists()
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
