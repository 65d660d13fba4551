"""Binder installs the same versions as the root requirements (CPU torch wheels)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.name}: {line!r} is not an exact == pin"
        pins[name.lower().replace("_", "-")] = version.split("+")[0]
    return pins


def test_binder_pins_equal_root_pins() -> None:
    root = _pins(ROOT / "requirements.txt")
    binder = _pins(ROOT / "binder" / "requirements.txt")
    for name, version in binder.items():
        assert root.get(name) == version, f"{name}: binder {version}, root {root.get(name)}"
    for needed in ("torch", "torchvision", "ipywidgets", "matplotlib", "numpy", "jupyterlab"):
        assert needed in binder, f"binder/requirements.txt misses {needed}"


def test_binder_uses_cpu_wheels() -> None:
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in text
    assert re.search(r"^torch==[\d.]+\+cpu$", text, re.M)


def test_binder_runtime_and_postbuild() -> None:
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    post = ROOT / "binder" / "postBuild"
    assert post.stat().st_mode & 0o111, "postBuild must be executable"
    assert "pip install" in post.read_text() and "-e ." in post.read_text()


def test_readme_badge_opens_first_notebook() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "mybinder.org/badge_logo.svg" in readme
    assert "urlpath=lab/tree/notebooks/00_welcome.ipynb" in readme


def test_root_requirements_are_exact_pins() -> None:
    pins = _pins(ROOT / "requirements.txt")
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.1"
