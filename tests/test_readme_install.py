"""The install options the README documents build the commands they promise (``make -n``: the
CPU index cannot be reached from the test machines, so the command is checked, not the download),
and ``make work`` / ``make reset`` keep a learner's copies."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _dry_run(*args: str, cwd: Path = ROOT) -> str:
    # A fresh, empty venv folder name: make plans the whole install without touching .venv.
    result = subprocess.run(["make", "-n", "-B", "VENV=.venv-dry-run", *args], cwd=cwd,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _torch_pins() -> list[str]:
    text = (ROOT / "requirements.txt").read_text()
    return re.findall(r"^(torch==[\d.]+|torchvision==[\d.]+)$", text, re.M)


def test_cpu_option_installs_pinned_torch_from_the_cpu_index_first() -> None:
    lines = _dry_run("lab", "TORCH=cpu").splitlines()
    cpu = [i for i, line in enumerate(lines) if CPU_INDEX in line]
    assert len(cpu) == 1, lines
    assert f"--index-url {CPU_INDEX} " + " ".join(_torch_pins()) in lines[cpu[0]]
    rest = [i for i, line in enumerate(lines) if "pip install -r requirements.txt" in line]
    assert rest and rest[0] > cpu[0], "the CPU wheels must be in place before requirements.txt"
    assert CPU_INDEX not in lines[rest[0]], "only torch and torchvision come from the CPU index"


def test_default_option_uses_pypi_and_a_wrong_option_fails() -> None:
    out = _dry_run("lab")
    assert CPU_INDEX not in out.replace("make clean lab TORCH=cpu", "")
    assert "pip install -r requirements.txt" in out
    bad = subprocess.run(["make", "-n", "lab", "TORCH=gpu"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and "TORCH must be" in bad.stderr


def test_lab_opens_the_working_copy_and_installs_no_news_settings() -> None:
    out = _dry_run("lab")
    assert "--LabApp.default_url=/lab/tree/work/00_welcome.ipynb" in out
    assert "overrides.json" in out
    assert "work/" in (ROOT / ".gitignore").read_text().splitlines()


def test_work_copies_are_never_overwritten_and_reset_keeps_a_backup(tmp_path) -> None:
    for name in ("Makefile", "requirements.txt"):
        shutil.copyfile(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    make = ["make", "--no-print-directory"]
    subprocess.run(make + ["work"], cwd=tmp_path, check=True, capture_output=True)
    names = sorted(p.name for p in (tmp_path / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (tmp_path / "work").glob("*.ipynb")) == names
    mine = tmp_path / "work" / names[3]
    mine.write_text("my work")
    subprocess.run(make + ["work"], cwd=tmp_path, check=True, capture_output=True)
    assert mine.read_text() == "my work"
    out = subprocess.run(make + ["reset", f"NB={names[3][:2]}"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    assert mine.read_bytes() == (tmp_path / "notebooks" / names[3]).read_bytes(), out
    first = tmp_path / "work" / names[3].replace(".ipynb", ".bak1.ipynb")
    assert first.read_text() == "my work" and first.name in out, out
    # A second reset never destroys the first backup: it takes the next number.
    mine.write_text("my second try")
    out = subprocess.run(make + ["reset", f"NB={names[3][:2]}"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    second = tmp_path / "work" / names[3].replace(".ipynb", ".bak2.ipynb")
    assert first.read_text() == "my work" and second.read_text() == "my second try", out
    assert second.name in out, out
    bad = subprocess.run(make + ["reset", "NB=0"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode != 0 and "two digits" in bad.stdout
