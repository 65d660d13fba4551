"""Environments the README promises, beyond the reference machine (Linux, Python 3.11, g++, fork).

- spawn (macOS, Windows): ``COURSE_START_METHOD=spawn`` makes the test kernels start DataLoader
  workers and DDP ranks with spawn; ``make test-spawn`` runs the worker notebooks that way under
  strict nbval. The test here proves that the variable really reaches the kernel.
- no C++ compiler: notebook 11 runs top to bottom with the compiler hidden, and only its compile
  cells change (they print why they skipped and what to install).
- temporary files: every notebook that writes files removes them; run with ``TMPDIR`` set to a
  fresh folder, the folder is empty afterwards.

The other legs (Python 3.13, the oldest supported torch) are make targets that run the whole
suite or every notebook in their own virtual environment (README, "Where the course runs").
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from tests.notebook_files import ROOT, SOLUTIONS
from tools.authoring import execute, nbval_sanitizers, output_differences

#: Lessons that write files (all into one temporary folder each, removed at the end).
WRITES_FILES = ("06", "09", "12", "13", "14")
#: Files libraries keep in the temporary folder under one fixed name (rewritten, never added to, by
#: every run): onnxruntime writes a session id to `.ses` whenever it creates an InferenceSession.
LIBRARY_FILES = {".ses"}
#: What in a lesson's code writes a file.
WRITES = re.compile(r"mkdtemp|TemporaryDirectory|torch\.save\(|\.write_text\(|\.write_bytes\(|"
                    r"open\([^)]*[\"'][wa]b?[\"']|SummaryWriter\(|onnx\.export\(|jit\.save\(|save_file\(")


def _solution(number: str) -> Path:
    (path,) = [p for p in SOLUTIONS if p.name.startswith(number + "_")]
    return path


def _code(lesson: Path) -> str:
    """The lesson's code lines (markdown cells and comments dropped)."""
    lines, in_markdown = [], False
    for line in lesson.read_text(encoding="utf-8").splitlines():
        if line.startswith("# %%"):
            in_markdown = "[markdown]" in line
            continue
        if not in_markdown and not line.lstrip().startswith("#"):
            lines.append(line)
    return "\n".join(lines)


def _run(number: str, env: dict[str, str]) -> nbformat.NotebookNode:
    """Execute solutions/NN in a fresh kernel whose environment has ``env`` on top of the test's."""
    tempfile.gettempdir()  # fix this process's own temp dir before TMPDIR may change below
    path = _solution(number)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return execute(nbformat.read(path, as_version=4), path.parent, f"solutions/{path.name}")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            and "raises-exception" not in cell.metadata.get("tags", [])
            for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def test_start_method_reaches_the_kernel() -> None:
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "COURSE_START_METHOD": "spawn"}
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    try:
        code = ("import multiprocessing, course_utils.distributed as d\n"
                "print(multiprocessing.get_start_method(), d.default_start_method())")
        printed: list[str] = []
        reply = client.execute_interactive(
            code, timeout=120, output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "".join(printed).split() == ["spawn", "spawn"], (
        f"expected the kernel to start processes with spawn when COURSE_START_METHOD=spawn, "
        f"found {''.join(printed).strip()!r}: check the startup file written by netguard.kernel_env()")


def test_every_lesson_that_writes_files_is_tested() -> None:
    writers = sorted(p.name[:2] for p in (ROOT / "lessons").glob("[0-9][0-9]_*.py") if WRITES.search(_code(p)))
    assert writers == sorted(WRITES_FILES), (
        f"lessons that write files: {writers}; tested for leftovers: {sorted(WRITES_FILES)}. "
        f"Add the new lesson to WRITES_FILES (and make it remove its folder at the end).")


@pytest.mark.parametrize("number", WRITES_FILES)
def test_notebook_leaves_no_temporary_files(number: str) -> None:
    fresh = Path(tempfile.mkdtemp(prefix=f"course-tmpdir-{number}-"))
    try:
        nb = _run(number, {"TMPDIR": str(fresh), "TEMP": str(fresh), "TMP": str(fresh)})
        left = sorted(str(p.relative_to(fresh)) for p in fresh.rglob("*") if p.name not in LIBRARY_FILES)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    assert not _errors(nb), _errors(nb)
    assert not left, (f"solutions/{_solution(number).name} left {len(left)} path(s) in the temporary "
                      f"folder: {left[:10]}. Remove the notebook's work folder in its last cells.")


@pytest.mark.skipif(sys.platform == "win32", reason="hides the compiler by PATH and CXX (POSIX)")
def test_compile_cells_skip_without_a_compiler(tmp_path: Path) -> None:
    # Inductor uses $CXX (else g++/clang++ from PATH): point CXX nowhere, and leave only the
    # environment's own bin folder (python, jupyter) and a folder without compilers on PATH.
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {"CXX": "/nonexistent/c++", "CC": "/nonexistent/cc",
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(bare)])}
    nb = _run("11", env)
    assert not _errors(nb), _errors(nb)
    skipped = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
               and "skip_unless_compiler(" in cell.source]
    assert len(skipped) >= 4, f"expected the compile cells of 11 to call skip_unless_compiler, found {skipped}"
    for i in skipped:
        text = "".join(out.get("text", "") for out in nb.cells[i].outputs)
        assert "Skipped on this machine (torch.compile found no C++ compiler)" in text, (i, text)
        assert "install a C++ compiler: g++" in text, (i, text)
    # every other cell prints what it prints with a compiler (the saved outputs)
    saved = nbformat.read(_solution("11"), as_version=4)
    changed = output_differences(saved, nb, nbval_sanitizers())
    assert set(changed) <= set(skipped), (
        f"without a compiler, cells {sorted(set(changed) - set(skipped))} of 11 print something else "
        f"than with one; only the compile cells ({skipped}) may differ")
