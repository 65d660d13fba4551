"""Paragraph lengths of each lesson's markdown (words per paragraph), for editing the prose.

A paragraph is a block of markdown lines separated by a blank line; headings, lists, tables, code
fences and block quotes are not paragraphs of prose and are skipped.

Example:
    >>> paragraphs("# Title\\n\\nOne two three.\\nFour.\\n\\n- a list\\n\\nFive six.")
    [4, 2]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def paragraphs(markdown: str) -> list[int]:
    """Word counts of the prose paragraphs of one markdown text."""
    counts, block, fenced = [], [], False
    for line in markdown.splitlines() + [""]:
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            block = []
            continue
        if fenced:
            continue
        if not stripped:
            if block:
                counts.append(sum(len(b.split()) for b in block))
            block = []
            continue
        if block == [] and (stripped.startswith(("#", "-", "*", "|", ">", "<")) or stripped[:2].rstrip(".").isdigit()):
            continue
        if stripped.startswith(("- ", "* ", "|")):
            continue
        block.append(stripped)
    return counts


def lesson_paragraphs(lesson: Path) -> list[int]:
    import jupytext

    nb = jupytext.read(lesson, fmt="py:percent")
    return [n for cell in nb.cells if cell.cell_type == "markdown" for n in paragraphs(cell.source)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson prefixes such as 03 (default: all)")
    args = parser.parse_args(argv)
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py")):
        if args.lessons and not any(lesson.stem.startswith(p) for p in args.lessons):
            continue
        counts = lesson_paragraphs(lesson)
        print(f"{lesson.stem}: {len(counts)} paragraphs, median {statistics.median(counts):.0f} words, "
              f"longest {max(counts)}, over 80 words: {sum(c > 80 for c in counts)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
