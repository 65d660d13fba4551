"""Turn ``# NBVAL_IGNORE_OUTPUT`` comment lines in lessons into the ``nbval-ignore-output`` cell tag.

nbval reads the tag as it reads the comment, but a tag is metadata the learner never sees in the cell.
Idempotent: run it after adding a cell with the old comment (``python -m tools.tag_markers [NN ...]``).

Example:
    >>> print(retag('# %%\\n# NBVAL_IGNORE_OUTPUT\\nx = 1\\n'), end="")
    # %% tags=["nbval-ignore-output"]
    x = 1
    >>> print(retag('# %% tags=["raises-exception"]\\n# NBVAL_IGNORE_OUTPUT\\nx = 1\\n'), end="")
    # %% tags=["raises-exception", "nbval-ignore-output"]
    x = 1
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = "nbval-ignore-output"
_HEADER = re.compile(r'^# %%(?: tags=(\[.*\]))?\s*$')


def retag(text: str) -> str:
    """The lesson text with every ``# NBVAL_IGNORE_OUTPUT`` first line moved into its cell's tags."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _HEADER.match(line.rstrip("\n"))
        if match and i + 1 < len(lines) and lines[i + 1].strip() == "# NBVAL_IGNORE_OUTPUT":
            tags = json.loads(match.group(1)) if match.group(1) else []
            if TAG not in tags:
                tags.append(TAG)
            out.append(f"# %% tags={json.dumps(tags)}\n")
            i += 2
            continue
        out.append(line)
        i += 1
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    import sys

    prefixes = sys.argv[1:] if argv is None else argv
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py")):
        if prefixes and not any(lesson.name.startswith(p) for p in prefixes):
            continue
        text = lesson.read_text(encoding="utf-8")
        new = retag(text)
        if new != text:
            lesson.write_text(new, encoding="utf-8")
            print(f"retagged {lesson.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
