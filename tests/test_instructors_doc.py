"""docs/instructors.md: linked from the README, and what it names exists (make targets, modules,
options, pins, timeouts); the commands themselves run in tests/test_grade.py and tests/test_nbgrader.py."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import grade
from tools import nbgrader_export

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")


def test_readme_links_the_guide() -> None:
    assert "](docs/instructors.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_make_targets_and_modules_exist() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*)\s*:", makefile, re.M))
    for target in set(re.findall(r"\bmake ([a-z][\w-]*)", DOC)):
        assert target in targets, f"docs/instructors.md names `make {target}`, the Makefile has no such target"
    for module in set(re.findall(r"python -m ([\w.]+)", DOC)):
        assert importlib.util.find_spec(module) is not None, module
    for path in ("benchmarks/RESULTS.md", "binder/requirements.txt", "requirements-instructor.txt", "CONTRIBUTING.md"):
        assert path in DOC and (ROOT / path).exists(), path


def test_grade_options_in_the_guide_exist() -> None:
    help_text = subprocess.run([sys.executable, "-m", "course_utils.grade", "--help"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout
    for option in set(re.findall(r"`(--[a-z-]+)", DOC.split("## Grading with the course's command")[1].split("## ")[0])):
        assert option in help_text, option
    assert f"default {grade.DEFAULT_TIMEOUT}" in DOC
    assert f"c.Execute.timeout = {nbgrader_export.DEFAULT_TIMEOUT}" in DOC


def test_pins_in_the_guide_are_the_course_pins() -> None:
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line)
    for name, version in re.findall(r"\b(torch|torchvision)==([\d.]+)", DOC):
        assert pins[name] == version, (name, version)
    assert re.search(r"pip install -r (grader/)?requirements\.txt", DOC)


@pytest.mark.parametrize("status", ["OK", "FAIL", "TODO", "ERROR"])
def test_statuses_are_documented(status: str) -> None:
    assert f"`{status}`" in DOC


def test_notebook_names_in_the_guides_exist() -> None:
    """Every `NN_topic` the learner and instructor guides name is a real notebook (N-10: a renamed lesson)."""
    real = {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    for doc in ("docs/instructors.md", "README.md", "CONTRIBUTING.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for name in set(re.findall(r"\b[01][0-9]_[a-z]+(?:_[a-z]+)*\b", text)):
            assert name in real, f"{doc} names notebook {name!r}; the notebooks are {sorted(real)}"
