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


#: The documented exception: repo2docker's base image runs its own notebook server (notebook 7.4,
#: which requires jupyterlab < 4.5), so Binder pins these two together, below the root's JupyterLab.
BINDER_SERVER = {"jupyterlab": "4.4.10", "notebook": "7.4.7"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_binder_pins_equal_root_pins_except_the_notebook_server() -> None:
    root = _pins(ROOT / "requirements.txt")
    binder = _pins(ROOT / "binder" / "requirements.txt")
    for name, version in binder.items():
        if name in BINDER_SERVER:
            assert version == BINDER_SERVER[name], f"{name}: binder {version}, documented {BINDER_SERVER[name]}"
            continue
        assert root.get(name) == version, f"{name}: binder {version}, root {root.get(name)}"
    for needed in ("torch", "torchvision", "ipywidgets", "ipykernel", "matplotlib", "numpy", "jupyterlab", "notebook"):
        assert needed in binder, f"binder/requirements.txt misses {needed}"


def test_binder_jupyterlab_fits_the_base_images_notebook_server() -> None:
    """notebook 7.N requires jupyterlab 4.N (>= 4.N.x, < 4.N+1); the pins must agree."""
    binder = _pins(ROOT / "binder" / "requirements.txt")
    lab, notebook = _version(binder["jupyterlab"]), _version(binder["notebook"])
    assert notebook[0] == 7 and lab[:2] == (4, notebook[1]), (binder["jupyterlab"], binder["notebook"])
    assert lab < (4, 5), "the base image's notebook server requires jupyterlab < 4.5"


def test_binder_uses_cpu_wheels() -> None:
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in text
    assert re.search(r"^torch==[\d.]+\+cpu$", text, re.M)


def test_binder_runtime_and_postbuild() -> None:
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    post = ROOT / "binder" / "postBuild"
    assert post.stat().st_mode & 0o111, "postBuild must be executable"
    assert "pip install" in post.read_text() and "-e ." in post.read_text()
    assert "overrides.json" in post.read_text(), "postBuild installs the no-news-toast settings"


def test_news_toast_is_off() -> None:
    import json

    settings = json.loads((ROOT / "binder" / "overrides.json").read_text())
    assert settings["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_readme_badges_open_every_notebook() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "mybinder.org/badge_logo.svg" in readme and "OWNER/REPO" not in readme
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"?urlpath=lab/tree/notebooks/{notebook.name})" in readme, notebook.name
        assert "colab.research.google.com/github/" in readme and f"/notebooks/{notebook.name})" in readme


def test_root_requirements_are_exact_pins() -> None:
    pins = _pins(ROOT / "requirements.txt")
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.1"
