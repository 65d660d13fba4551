"""Authoring: generate learner notebooks from ``solutions/`` and re-execute notebooks in place.

``solutions/NN_topic.ipynb`` is the source of truth. In a code cell::

    def double(x):
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION
        ### BEGIN STUB
        # return ...  # your code here
        ### END STUB

the learner version keeps everything outside the markers, drops the solution, and
un-comments the stub block (one leading ``# `` removed per line). Without a stub block the
solution becomes ``raise NotImplementedError("Your turn")`` at the marker's indentation.

Execution uses the same environment as ``make test`` (see :func:`kernel_env`): a fresh
``python3`` kernel, fixed hash seed, and the network guard installed at kernel start.

Example:
    >>> learner_source('''def f(x):
    ...     ### BEGIN SOLUTION
    ...     return 2 * x
    ...     ### END SOLUTION''')
    'def f(x):\\n    raise NotImplementedError("Your turn: write this function")'
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"

_BEGIN_SOL = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$")
_END_SOL = re.compile(r"^\s*### END SOLUTION\s*$")
_BEGIN_STUB = re.compile(r"^\s*### BEGIN STUB\s*$")
_END_STUB = re.compile(r"^\s*### END STUB\s*$")
DEFAULT_STUB = 'raise NotImplementedError("Your turn: write this function")'


class AuthoringError(ValueError):
    """A solution notebook's markers are malformed."""


def learner_source(source: str) -> str:
    """Replace every solution block of one cell's source with its stub."""
    lines = source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        begin = _BEGIN_SOL.match(lines[i])
        if not begin:
            if _END_SOL.match(lines[i]) or _BEGIN_STUB.match(lines[i]) or _END_STUB.match(lines[i]):
                raise AuthoringError(f"marker without a matching BEGIN SOLUTION: {lines[i]!r}")
            out.append(lines[i])
            i += 1
            continue
        indent = begin.group(1)
        i += 1
        while i < len(lines) and not _END_SOL.match(lines[i]):
            i += 1
        if i == len(lines):
            raise AuthoringError("### BEGIN SOLUTION without ### END SOLUTION")
        i += 1
        if i < len(lines) and _BEGIN_STUB.match(lines[i]):
            i += 1
            while i < len(lines) and not _END_STUB.match(lines[i]):
                line = lines[i]
                stripped = line.lstrip()
                lead = line[: len(line) - len(stripped)]
                if stripped.startswith("# "):
                    stripped = stripped[2:]
                elif stripped.startswith("#"):
                    stripped = stripped[1:]
                out.append(lead + stripped)
                i += 1
            if i == len(lines):
                raise AuthoringError("### BEGIN STUB without ### END STUB")
            i += 1
        else:
            out.append(indent + DEFAULT_STUB)
    return "\n".join(out)


def learner_notebook(solution_nb):  # nbformat.NotebookNode -> NotebookNode
    """A learner copy of a solution notebook: stubs in place, outputs cleared."""
    nb = copy.deepcopy(solution_nb)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        new = learner_source(cell.source)
        if new != cell.source:
            cell.source = new
            cell.outputs = []
            cell.execution_count = None
    return nb


def _sources(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, sorted(c.get("metadata", {}).get("tags", []))) for c in nb.cells]


def generate(names: Iterable[str] | None = None) -> list[Path]:
    """Write ``notebooks/X`` for each ``solutions/X`` whose learner sources changed.

    A learner notebook whose sources already match is left alone (its outputs stay).
    Returns the paths written.
    """
    import nbformat

    written = []
    NOTEBOOKS.mkdir(exist_ok=True)
    for src in _select(SOLUTIONS, names):
        target = NOTEBOOKS / src.name
        expected = learner_notebook(nbformat.read(src, as_version=4))
        if target.exists() and _sources(nbformat.read(target, as_version=4)) == _sources(expected):
            continue
        nbformat.write(expected, target)
        written.append(target)
    return written


def kernel_env(ipython_dir: Path | None = None) -> dict[str, str]:
    """Environment variables for every kernel that executes a notebook (tests and authoring).

    The IPython dir holds a startup file that installs :mod:`course_utils.netguard`, so any
    attempt to reach a non-local address fails the cell.
    """
    if ipython_dir is None:
        ipython_dir = Path(tempfile.mkdtemp(prefix="course-ipython-"))
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-netguard.py").write_text(
        "import course_utils.netguard as _ng\n_ng.install()\ndel _ng\n")
    return {
        "IPYTHONDIR": str(ipython_dir),
        "PYTHONHASHSEED": "0",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "TQDM_MININTERVAL": "1000",
        "COURSE_NETGUARD": "1",
    }


def merge_streams(outputs: list) -> list:
    """Join consecutive stream outputs of the same name (stdout/stderr) into one output.

    A kernel flushes ``print`` output in chunks, which nbformat stores as separate outputs
    split mid-line; viewers such as GitHub then show one line as two. nbval compares merged
    streams, so merging changes nothing it checks.

    >>> from nbformat.v4 import new_output
    >>> merged = merge_streams([new_output("stream", name="stdout", text="a: "),
    ...                         new_output("stream", name="stdout", text="1\\n"),
    ...                         new_output("stream", name="stderr", text="w\\n")])
    >>> [(o.name, o.text) for o in merged]
    [('stdout', 'a: 1\\n'), ('stderr', 'w\\n')]
    """
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = previous["text"] + output["text"]
        else:
            merged.append(output)
    return merged


def execute(path: Path, timeout: int = 600) -> None:
    """Re-execute one notebook in place in a fresh kernel, outputs saved.

    The kernel gets an empty Inductor cache, so the saved outputs show what a learner's first
    run measures (``torch.compile`` compiling from scratch), not a warm cache of this machine.
    """
    import shutil

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    os.environ.update(kernel_env())
    cache = tempfile.mkdtemp(prefix="course-inductor-cache-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}},
                            record_timing=False, store_widget_state=True)
    try:
        client.execute()
    finally:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(cache, ignore_errors=True)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, path)


def _select(folder: Path, names: Iterable[str] | None) -> list[Path]:
    paths = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if names:
        wanted = list(names)
        paths = [p for p in paths if any(p.name.startswith(n) or p.stem == n for n in wanted)]
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["generate", "execute", "all"],
                        help="generate learner notebooks, execute notebooks, or both")
    parser.add_argument("names", nargs="*", help="notebook prefixes such as 01 or 01_tensors (default: all)")
    args = parser.parse_args(argv)
    if args.command in ("generate", "all"):
        for path in generate(args.names):
            print(f"generated {path.relative_to(ROOT)}")
    if args.command in ("execute", "all"):
        for folder in (SOLUTIONS, NOTEBOOKS):
            for path in _select(folder, args.names):
                print(f"executing {path.relative_to(ROOT)} ...", flush=True)
                execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
