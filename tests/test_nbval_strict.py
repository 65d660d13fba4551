"""nbval really compares outputs, and its kernels run with the network guard installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow

NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with",
         str(Path(__file__).parent / "nbval_sanitize.cfg")]


def _notebook(path: Path, printed: str, extra: str = "") -> Path:
    cells = [nbformat.v4.new_code_cell(
        "import course_utils.netguard as ng\nprint(1 + 1, ng.installed())", execution_count=1,
        outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])]
    if extra:
        cells.append(nbformat.v4.new_code_cell(extra, execution_count=2))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _run(tmp_path: Path, notebook: Path) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
                           *NBVAL, str(notebook)],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path),
                          timeout=300)


def _env(tmp_path: Path) -> dict[str, str]:
    # A log of our own: the deliberate network attempt below must not reach the session's log,
    # which fails the whole run when anything was blocked.
    env = os.environ.copy()
    env["COURSE_NETGUARD_LOG"] = str(tmp_path / "netguard.log")
    return env


def test_matching_outputs_pass_and_guard_is_on(tmp_path: Path) -> None:
    result = _run(tmp_path, _notebook(tmp_path / "ok.ipynb", "2 True\n"))
    assert result.returncode == 0, result.stdout[-2000:]


def test_an_edited_output_fails(tmp_path: Path) -> None:
    result = _run(tmp_path, _notebook(tmp_path / "edited.ipynb", "3 True\n"))
    assert result.returncode != 0
    assert "1 failed" in result.stdout


def test_network_use_in_a_notebook_fails(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "net.ipynb", "2 True\n",
                         extra="import socket\nsocket.getaddrinfo('example.invalid', 80)")
    result = _run(tmp_path, notebook)
    assert result.returncode != 0
    assert "NetworkBlockedError" in result.stdout
    assert "example.invalid" in (tmp_path / "netguard.log").read_text()
