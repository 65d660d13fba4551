"""Convert a percent-format script into a solution notebook (an authoring convenience).

    python tools/py2nb.py drafts/01_tensors.py solutions/01_tensors.ipynb

Cells start with ``# %%`` (code) or ``# %% [markdown]`` (markdown, each line prefixed
with ``# ``). Tags: ``# %% tags=["raises-exception"]``. The notebook is written without
outputs; run ``make notebooks NB=01`` afterwards to generate the learner version and
execute both. ``solutions/*.ipynb`` stays the source of truth: drafts/ is git-ignored.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat

HEADER = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")


def convert(text: str):
    cells = []
    kind, tags, lines = None, [], []

    def flush() -> None:
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in body.split("\n"))
            cell = nbformat.v4.new_markdown_cell(body)
        else:
            cell = nbformat.v4.new_code_cell(body)
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)

    for line in text.split("\n"):
        match = HEADER.match(line)
        if match:
            flush()
            kind = "markdown" if match.group("md") else "code"
            tags = json.loads(match.group("tags")) if match.group("tags") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for cell in nb.cells:  # stable ids keep diffs small
        cell.pop("id", None)
    nb.nbformat_minor = 4
    return nb


if __name__ == "__main__":
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    nbformat.write(convert(src.read_text()), dst)
    print(f"wrote {dst}")
