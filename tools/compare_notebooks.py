"""Compare the committed notebooks of a git revision with the working tree's.

    python -m tools.compare_notebooks BEFORE_REV [--after REV]

For every notebook in ``solutions/`` and ``notebooks/`` it reports whether cell types, sources,
tags and execution counts are unchanged, and whether each code cell's outputs are unchanged once
both sides are scrubbed of machine state (:func:`tools.authoring.scrub_outputs`) and normalised
with the nbval sanitize rules. Cells marked ``NBVAL_IGNORE_OUTPUT`` vary by design and are
counted separately. Exit status 1 when anything but machine state or variable cells changed.
"""

from __future__ import annotations

import argparse
import copy
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from tools.authoring import ROOT, nbval_sanitizers, normal_outputs, scrub_outputs, variable_by_design


@dataclass
class Summary:
    notebooks: int = 0
    cells: int = 0
    code_cells: int = 0
    same_outputs: int = 0
    machine_state_only: int = 0
    variable_cells_changed: int = 0
    problems: list[str] = field(default_factory=list)


def _read(rev: str | None, path: str) -> Any:
    import nbformat

    if rev is None:
        return nbformat.read(ROOT / path, as_version=4)
    text = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    return nbformat.reads(text, as_version=4)


def _paths(rev: str | None) -> list[str]:
    if rev is None:
        return sorted(str(p.relative_to(ROOT)) for folder in ("solutions", "notebooks")
                      for p in (ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
    out = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "solutions", "notebooks"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return sorted(p for p in out.split() if re.match(r"(solutions|notebooks)/\d\d_.*\.ipynb$", p))


def compare(before: str, after: str | None = None) -> Summary:
    sanitize = nbval_sanitizers()
    summary = Summary()
    old_paths, new_paths = _paths(before), _paths(after)
    if old_paths != new_paths:
        summary.problems.append(f"notebook files differ: {sorted(set(old_paths) ^ set(new_paths))}")
    for path in sorted(set(old_paths) & set(new_paths)):
        summary.notebooks += 1
        old, new = _read(before, path), _read(after, path)
        if len(old.cells) != len(new.cells):
            summary.problems.append(f"{path}: {len(old.cells)} cells before, {len(new.cells)} after")
            continue
        raw_old = copy.deepcopy(old)
        scrub_outputs(old, path)
        scrub_outputs(new, path)
        for index, (a, b, raw) in enumerate(zip(old.cells, new.cells, raw_old.cells)):
            summary.cells += 1
            where = f"{path} cell {index}"
            if (a.cell_type, a.source) != (b.cell_type, b.source):
                summary.problems.append(f"{where}: type or source changed")
            if a.get("metadata", {}).get("tags", []) != b.get("metadata", {}).get("tags", []):
                summary.problems.append(f"{where}: tags changed")
            if a.cell_type != "code":
                continue
            summary.code_cells += 1
            if a.execution_count != b.execution_count:
                summary.problems.append(f"{where}: execution count {a.execution_count} -> {b.execution_count}")
            if normal_outputs(a.outputs, sanitize) == normal_outputs(b.outputs, sanitize):
                if normal_outputs(raw.outputs, sanitize) == normal_outputs(b.outputs, sanitize):
                    summary.same_outputs += 1
                else:
                    summary.machine_state_only += 1
            elif variable_by_design(a):
                summary.variable_cells_changed += 1
            else:
                summary.problems.append(f"{where}: outputs changed beyond machine state")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="git revision holding the notebooks before the change")
    parser.add_argument("--after", help="git revision after the change (default: the working tree)")
    args = parser.parse_args(argv)
    s = compare(args.before, args.after)
    print(f"{s.notebooks} notebooks, {s.cells} cells ({s.code_cells} code cells): "
          f"sources, cell types and tags {'unchanged' if not any('source' in p or 'tags' in p for p in s.problems) else 'CHANGED'}; "
          f"outputs: {s.same_outputs} identical, {s.machine_state_only} differ only in removed machine state, "
          f"{s.variable_cells_changed} variable-by-design cells re-measured, {len(s.problems)} other differences")
    for problem in s.problems:
        print("  " + problem)
    return 1 if s.problems else 0


if __name__ == "__main__":
    sys.exit(main())
