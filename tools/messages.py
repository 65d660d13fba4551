"""The catalogue of ``course_utils``'s learner-facing strings (:mod:`course_utils.i18n`).

Every such string is written in the source as ``t("English {placeholder}", placeholder=...)``,
``tn(singular, plural, n)`` or ``N_("English")`` (marked now, translated where shown), or is the
literal name, hint or task of a ``Mistake(...)`` / ``Exercise(...)``. This tool finds them all by
reading the source (no import), and keeps one catalogue per area in
``course_utils/locale/zh_CN/LC_MESSAGES/``: ``framework.po`` (``exercises``, ``grade``, ``claims``,
``setup``), ``checks_nbNN.po`` (``checks/nbNN.py``), ``doctor.po`` (``doctor/``), ``widgets.po``
(``widgets/``, ``viz/``) and ``helpers.po`` (every other module)::

    python -m tools.messages update    # add new msgids (empty), mark gone ones obsolete
    # translate: fill every msgstr, keep every {placeholder}, `code` span and number
    python -m tools.messages compile   # .po -> .mo (what course_utils reads at run time)
    python -m tools.messages check     # nothing untranslated, fuzzy, obsolete, lossy or uncompiled

Example:
    >>> found = strings_in_source('''
    ... from course_utils.i18n import t, N_
    ... def f(x):
    ...     return t("expected {want}, found {got}", want=1, got=x)
    ... Mistake(N_("forgot the bias"), "the bias " "is missing", f)
    ... ''')
    >>> [m.msgid for m in found]
    ['expected {want}, found {got}', 'forgot the bias', 'the bias is missing']
    >>> placeholders("{n} of {total:.1f} ({n})")
    ['n', 'total']
"""

from __future__ import annotations

import argparse
import ast
import io
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_utils"
LOCALE = "zh_CN"
FOLDER = PACKAGE / "locale" / LOCALE / "LC_MESSAGES"
#: Call names whose string arguments are catalogue entries: name -> positions of the msgids.
MARKERS = {"t": (0,), "tn": (0, 1), "N_": (0,)}
#: Constructors whose literal string arguments are learner-facing: name -> keyword/positions.
CONSTRUCTORS = {"Mistake": {"name": 0, "hint": 1}, "Exercise": {"task": 1}}


@dataclass(frozen=True)
class Found:
    msgid: str
    plural: str | None
    line: int
    col: int = 0


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def strings_in_source(source: str) -> list[Found]:
    """Catalogue strings in one module's source, in source order."""
    found: list[Found] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name in MARKERS:
            args = [_literal(node.args[i]) if i < len(node.args) else None for i in MARKERS[name]]
            if args[0] is not None:
                found.append(Found(args[0], args[1] if len(args) > 1 else None, node.lineno, node.col_offset))
        elif name in CONSTRUCTORS:
            for keyword, position in CONSTRUCTORS[name].items():
                value = next((k.value for k in node.keywords if k.arg == keyword), None)
                if value is None and position < len(node.args):
                    value = node.args[position]
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "N_":
                    continue   # already found as N_(...)
                text = _literal(value)
                if text:
                    found.append(Found(text, None, value.lineno, value.col_offset))
    return sorted(found, key=lambda f: (f.line, f.col))


def area_of(path: Path) -> str:
    """The catalogue a module's strings go to."""
    relative = path.relative_to(PACKAGE)
    if relative.parts[0] == "checks" and relative.stem.startswith("nb"):
        return f"checks_{relative.stem}"
    if relative.parts[0] == "doctor":
        return "doctor"
    if relative.parts[0] in ("widgets", "viz"):
        return "widgets"
    if relative.stem in ("exercises", "grade", "claims", "setup", "i18n", "__init__"):
        return "framework"
    return "helpers"


def extracted() -> dict[str, list[tuple[Found, str]]]:
    """area -> [(string, module path)], from every module of ``course_utils``."""
    areas: dict[str, list[tuple[Found, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "locale" in path.parts:
            continue
        for item in strings_in_source(path.read_text(encoding="utf-8")):
            areas.setdefault(area_of(path), []).append((item, str(path.relative_to(ROOT))))
    return areas


def placeholders(text: str) -> list[str]:
    """The ``{field}`` names of a template, each once, in order."""
    names: list[str] = []
    for _, field, _, _ in string.Formatter().parse(text):
        if field is not None:
            base = field.split(".")[0].split("[")[0]
            if base not in names:
                names.append(base)
    return names


def _read(path: Path) -> Any:
    from babel.messages.pofile import read_po

    with open(path, "rb") as f:
        return read_po(f, locale=LOCALE)


def merged(area: str, items: list[tuple[Found, str]]) -> Any:
    """The area's catalogue: existing translations kept for unchanged msgids, new ones empty."""
    import datetime

    from babel.messages.catalog import Catalog

    path = FOLDER / f"{area}.po"
    old = _read(path) if path.exists() else None
    date = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    catalog = Catalog(locale=LOCALE, project="course_utils", version="1", fuzzy=False,
                      creation_date=date, revision_date=date,
                      header_comment=f"# Chinese (zh_CN) messages of course_utils: {area}.\n"
                                     "# Update: python -m tools.messages update, then compile.")
    for item, module in items:
        key = (item.msgid, item.plural) if item.plural else item.msgid
        location = (module, item.line)
        if item.msgid in catalog:
            catalog[item.msgid].locations.append(location)
            continue
        previous = old.get(item.msgid) if old is not None else None
        value: Any = previous.string if previous is not None else ("", "") if item.plural else ""
        flags = set(previous.flags) - {"python-format"} if previous is not None else set()
        catalog.add(key, value, locations=[location], flags=flags)
    if old is not None:
        for message in old:
            if message.id and message.string and (message.id[0] if isinstance(message.id, tuple) else message.id) \
                    not in catalog:
                catalog.obsolete[message.id if isinstance(message.id, str) else message.id[0]] = message
    return catalog


def _write_po(catalog: Any, path: Path) -> None:
    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=0, include_lineno=False, sort_output=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def _mo_bytes(catalog: Any) -> bytes:
    from babel.messages.mofile import write_mo

    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def update() -> list[Path]:
    written = []
    for area, items in extracted().items():
        path = FOLDER / f"{area}.po"
        _write_po(merged(area, items), path)
        written.append(path)
    return written


def compile_all() -> list[Path]:
    written = []
    for path in sorted(FOLDER.glob("*.po")):
        target = path.with_suffix(".mo")
        target.write_bytes(_mo_bytes(_read(path)))
        written.append(target)
    return written


def _texts(message: Any) -> tuple[list[str], list[str]]:
    ids = list(message.id) if isinstance(message.id, tuple) else [message.id]
    strs = list(message.string) if isinstance(message.string, tuple) else [message.string]
    return ids, strs


def problems(only: Iterable[str] | None = None) -> list[str]:
    """Untranslated, fuzzy, obsolete, placeholder-changing, lossy or uncompiled entries.

    ``only``: the areas to hold to it (default: all; the tests pass the Chinese edition's required
    areas, :func:`tools.translate.message_areas`). A catalogue no module needs is named either way.
    """
    from tools.translate import glossary_problems, load_glossary, preservation_problems

    glossary = load_glossary()
    found: list[str] = []
    areas = extracted()
    for path in sorted(FOLDER.glob("*.po")):
        if path.stem not in areas:
            found.append(f"{path.relative_to(ROOT)}: no module has strings for this catalogue any more; delete it")
    for area, items in areas.items():
        if only is not None and area not in set(only):
            continue
        path = FOLDER / f"{area}.po"
        where = str(path.relative_to(ROOT))
        if not path.exists():
            found.append(f"{where} is missing ({len(items)} strings): run `python -m tools.messages update`")
            continue
        on_disk = _read(path)
        catalog = merged(area, items)
        for message in catalog:
            if not message.id:
                continue
            ids, strs = _texts(message)
            module, line = message.locations[0]
            label = f"{where}: {ids[0][:60]!r} ({module}:{line})"
            if ids[0] not in on_disk:
                found.append(f"{label}: not in the catalogue: run `python -m tools.messages update`")
            elif "fuzzy" in message.flags:
                found.append(f"{label}: fuzzy")
            elif not all(strs):
                found.append(f"{label}: untranslated")
            else:
                for text in strs:
                    if set(placeholders(text)) != set(placeholders(ids[0])):
                        found.append(f"{label}: placeholders {placeholders(ids[0])} became {placeholders(text)}")
                    found += [f"{label}: {p}" for p in preservation_problems(ids[-1], text)
                              if not p.startswith("headings")]
                    found += [f"{label}: glossary: {p}" for p in glossary_problems(ids[-1], text, glossary)]
        for message in on_disk:
            key = message.id[0] if isinstance(message.id, tuple) else message.id
            if key and key not in catalog:
                found.append(f"{where}: obsolete entry {key[:60]!r}: no source has it any more; delete it")
        found += [f"{where}: obsolete entry {k[:60]!r}; delete it" for k in on_disk.obsolete]
        mo = path.with_suffix(".mo")
        if not mo.exists() or mo.read_bytes() != _mo_bytes(on_disk):
            found.append(f"{mo.relative_to(ROOT)} is not compiled from {path.name}: run `python -m tools.messages compile`")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["update", "compile", "check"])
    args = parser.parse_args(argv)
    if args.command == "update":
        for path in update():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if args.command == "compile":
        for path in compile_all():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    found = problems()
    for problem in found:
        print(problem)
    print(f"{len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
