"""Where the lessons and notebooks are (shared by the notebook tests)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
LEARNER = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ALL_NOTEBOOKS = SOLUTIONS + LEARNER


def nb_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"
