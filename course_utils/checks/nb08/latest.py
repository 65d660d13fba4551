"""08.latest_checkpoint: the finished epoch-<n>.pt with the highest n, compared as a number."""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import _case_dir


# --- 08.latest_checkpoint -----------------------------------------------------------------------

_EPOCH_FILE = re.compile(r"epoch-(\d+)\.pt")


def latest_checkpoint_reference(folder):
    found = [(int(m.group(1)), p) for p in Path(folder).iterdir() if (m := _EPOCH_FILE.fullmatch(p.name))]
    return max(found)[1] if found else None


def _latest_text_sort(folder):
    return sorted(Path(folder).glob("epoch-*.pt"))[-1]


def _latest_any_file(folder):
    found = [(int(re.search(r"\d+", p.name).group()), p) for p in Path(folder).iterdir()
             if re.search(r"\d+", p.name)]
    return max(found)[1]


def _latest_mtime(folder):
    return max(Path(folder).glob("epoch-*.pt"), key=lambda p: p.stat().st_mtime)


def _latest_case(files: list[tuple[str, int]]):
    """files: (name, mtime offset in seconds); names containing 'tmp' get truncated bytes."""
    def factory():
        folder = _case_dir()
        base = 1_700_000_000
        for name, offset in files:
            target = folder / name
            if "tmp" in name:
                target.write_bytes(b"PK\x03\x04 truncated")
            elif name.endswith(".pt"):
                torch.save({"epoch": int(re.sub(r"\D", "", name) or 0)}, target)
            else:
                target.write_text("notes\n")
            os.utime(target, (base + offset, base + offset))
        return (folder,), {}
    return factory


def _latest_verify(out, ref, args, kwargs):
    if not isinstance(out, (str, os.PathLike)):
        return f"expected a Path, found {describe(out)}"
    folder = Path(args[0]).resolve()
    out = Path(out) if Path(out).is_absolute() else folder / out
    if out.resolve().parent != folder:
        return f"expected a file in the folder you were given, found {out}"
    if out.name != ref.name:
        return f"expected {ref.name}, found {out.name}"
    return None


register(Exercise(
    "08.latest_checkpoint",
    "latest_checkpoint(folder) returns the Path of the finished checkpoint named epoch-<n>.pt with the "
    "highest n (n compared as a number); temp files, best.pt and other files are ignored.",
    latest_checkpoint_reference,
    [_latest_case([("epoch-1.pt", 1), ("epoch-2.pt", 2), ("epoch-3.pt", 3)]),
     _latest_case([("epoch-8.pt", 1), ("epoch-9.pt", 2), ("epoch-10.pt", 3), ("epoch-11.pt", 4),
                   ("best.pt", 5), ("notes.txt", 6)]),
     _latest_case([("epoch-9.pt", 1), ("epoch-10.pt", 2), ("epoch-11.pt.tmp", 3),
                   (".epoch-12.pt.k3x9.tmp", 4)]),
     _latest_case([("epoch-5.pt", 1), ("epoch-3.pt", 2), ("epoch-4.pt", 5), ("best.pt", 3)])],
    _latest_verify,
    [
        Mistake("sorts the numbers as text (epoch-9 after epoch-10)",
                "as text '9' > '10'; parse the number: int(re.fullmatch(r'epoch-(\\d+)\\.pt', name).group(1)).",
                _latest_text_sort),
        Mistake("picks up a temp/partial file",
                "only names that are exactly epoch-<n>.pt count; a file ending in .tmp is a save that "
                "never finished (use re.fullmatch, not a prefix test).",
                _latest_any_file),
        Mistake("uses modification time",
                "copying or touching files changes mtimes; the step number in the name is the truth.",
                _latest_mtime),
    ],
))
