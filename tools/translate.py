"""The Chinese edition: lesson prose translated in gettext catalogues, code copied byte for byte.

``lessons/NN_topic.py`` stays the only source of code. Its prose (every markdown cell) is
translated in ``lessons/zh_CN/NN_topic.po``: one entry per markdown cell, the English cell as
``msgid``. From the two, ``python -m tools.translate build NN`` writes and executes

* ``zh/solutions/NN_topic.ipynb`` and ``zh/notebooks/NN_topic.ipynb``: the English notebooks with
  every markdown cell replaced by its translation, every code cell copied unchanged, and one
  generated code cell (tagged ``course-language``) that sets ``COURSE_LANG=zh_CN``, so
  ``course_utils`` speaks Chinese (:mod:`course_utils.i18n`).

Workflow for a translator (``CONTRIBUTING.md`` §12)::

    python -m tools.translate update 03     # merge lessons/03_*.py into lessons/zh_CN/03_*.po
    # edit the .po: fill empty msgstr, revise entries flagged "fuzzy" (the old English is in "#| msgid")
    python -m tools.translate check         # nothing untranslated, fuzzy or obsolete; code and numbers kept
    python -m tools.translate build 03      # both Chinese notebooks, executed

The merge is exact: an unchanged cell keeps its translation; a changed cell keeps its old
translation, flagged ``fuzzy``, with the previous English beside it (``#| msgid``), paired with
the new cell by position among the cells that changed (never by text similarity); a removed
cell's entry becomes obsolete (``#~``). ``check`` (and ``tests/test_translation.py``) fail on any
untranslated, fuzzy or obsolete entry, naming the lesson and the cell.

Example:
    >>> old = ["# Title", "Intro.", "Old text."]
    >>> new = ["# Title", "Intro.", "New text.", "Added."]
    >>> pair_changed(old, new)
    {2: 2}
    >>> preservation_problems("Call `x.sum()` on 3 $n^2$ [docs](https://a.b/c).",
    ...                       "对 3 个 $n^2$ 调用 `x.sum()`（[文档](https://a.b/c)）。")
    []
    >>> preservation_problems("Call `x.sum()` 3 times.", "调用 `x.mean()` 三次。")
    ['inline code `x.sum()` is missing', 'number 3 is missing']
"""

from __future__ import annotations

import argparse
import copy
import datetime
import difflib
import io
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from tools import authoring

ROOT = authoring.ROOT
LOCALE = "zh_CN"
CATALOGUES = ROOT / "lessons" / LOCALE
GLOSSARY = CATALOGUES / "glossary.toml"
ZH = ROOT / "zh"
ZH_SOLUTIONS = ZH / "solutions"
ZH_NOTEBOOKS = ZH / "notebooks"
EDITION = CATALOGUES / "edition.toml"
#: The one generated cell in which the Chinese notebooks differ from the English code.
LANGUAGE_TAG = "course-language"
LANGUAGE_CELL = ('# 中文版：course_utils 的检查结果、提示和诊断用中文显示（删去这一行则恢复英文）。\n'
                 'import os; os.environ["COURSE_LANG"] = "zh_CN"')


#: Header dates stay fixed, so an update that changes no entry changes no byte.
FIXED_DATE = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


class TranslationError(ValueError):
    """A catalogue cannot build a notebook: an entry is missing or stale."""


# --------------------------------------------------------------------------- catalogues
def catalogue_path(lesson: Path) -> Path:
    return CATALOGUES / f"{lesson.stem}.po"


def prose_cells(lesson: Path) -> list[str]:
    """The lesson's markdown cells, in order (the msgids of its catalogue)."""
    nb = authoring.solution_notebook(lesson)
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def _heading(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= 70 else first[:67] + "..."


def read_catalogue(path: Path) -> Any:
    """A catalogue as babel reads it, with each fuzzy entry's previous English (``#| msgid``) restored:
    babel 2.19's reader drops it, so an ``update`` that rewrote an unrevised entry lost the old English."""
    from babel.messages.pofile import read_po

    with open(path, "rb") as f:
        catalog = read_po(f, locale=LOCALE)
    for msgid, previous in previous_ids(path.read_text(encoding="utf-8")).items():
        if msgid in catalog:
            catalog[msgid].previous_id = previous
    return catalog


_PO_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def previous_ids(text: str) -> dict[str, str]:
    r"""msgid -> its previous msgid (``#| msgid`` lines, on one line or continued with ``#| "..."``).

    >>> po = '#, fuzzy\n#| msgid "" "old\\n" "two"\nmsgid ""\n"new\\n"\n"two"\nmsgstr "x"\n'
    >>> previous_ids(po)
    {'new\ntwo': 'old\ntwo'}
    """
    from babel.messages.pofile import unescape

    found: dict[str, str] = {}
    previous: list[str] | None = None
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("#| msgid"):
            previous, current = [unescape(f'"{m}"') for m in _PO_STRING.findall(line[len("#| msgid"):])], None
        elif line.startswith('#| "') and previous is not None:
            previous += [unescape(f'"{m}"') for m in _PO_STRING.findall(line[2:])]
        elif line.startswith("msgid ") and previous is not None:
            current = [unescape(f'"{m}"') for m in _PO_STRING.findall(line[len("msgid "):])]
        elif line.startswith('"') and current is not None:
            current += [unescape(f'"{m}"') for m in _PO_STRING.findall(line)]
        elif line.startswith("msgstr") and current is not None and previous is not None:
            found["".join(current)] = "".join(previous)
            previous = current = None
    return found


def write_catalogue(catalog: Any, path: Path) -> None:
    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=0, include_previous=True, include_lineno=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def pair_changed(old: list[str], new: list[str]) -> dict[int, int]:
    """Pair changed cells by position: new index -> old index, within blocks that differ.

    Unchanged cells (equal text) are matched by :class:`difflib.SequenceMatcher` on whole cells;
    inside a replaced block the k-th new cell pairs with the k-th old one. No text similarity.
    """
    pairs: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                pairs[j1 + k] = i1 + k
    return pairs


def merged_catalogue(lesson: Path, existing: Any | None) -> Any:
    """The lesson's catalogue after an exact merge with ``existing`` (None: a fresh template)."""
    from babel.messages.catalog import Catalog

    new_ids = prose_cells(lesson)
    catalog = Catalog(locale=LOCALE, project="PyTorch from the inside", fuzzy=False, version="1",
                      creation_date=FIXED_DATE, revision_date=FIXED_DATE,
                      header_comment=f"# Chinese (zh_CN) prose of lessons/{lesson.name}.\n"
                                     f"# Update: python -m tools.translate update {lesson.name[:2]}")
    old_messages = [m for m in existing if m.id] if existing is not None else []
    old_ids = [m.id for m in old_messages]
    by_id = {m.id: m for m in old_messages}
    pairs = pair_changed(old_ids, new_ids)
    used: set[str] = set()
    for index, text in enumerate(new_ids):
        comment = f"cell {index + 1} of {len(new_ids)} markdown cells: {_heading(text)}"
        if text in catalog:
            catalog[text].auto_comments.append(comment)
            continue
        string, flags, previous = "", set(), ()
        if text in by_id:
            old = by_id[text]
            string, flags, previous = old.string, set(old.flags) - {"python-format"}, old.previous_id
            used.add(text)
        elif index in pairs and old_ids[pairs[index]] not in new_ids:
            old = old_messages[pairs[index]]
            string, flags = old.string, {"fuzzy"}
            previous = old.previous_id or old.id   # the English the translation was made from
            used.add(old.id)
        catalog.add(text, string, locations=[(f"lessons/{lesson.name}", index + 1)],
                    auto_comments=[comment], flags=flags, previous_id=previous)
    for message in old_messages:
        if message.id not in used and message.id not in new_ids and message.string:
            catalog.obsolete[message.id] = message
    if existing is not None:
        for key, message in existing.obsolete.items():
            if key not in catalog and message.string:
                catalog.obsolete[key] = message
    return catalog


def update(lesson: Path) -> Path:
    """Merge the lesson into its catalogue (created if missing); returns the catalogue's path."""
    path = catalogue_path(lesson)
    existing = read_catalogue(path) if path.exists() else None
    write_catalogue(merged_catalogue(lesson, existing), path)
    return path


# --------------------------------------------------------------------------- quality
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
_URL = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6}) ", re.M)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")


def _without_code(text: str) -> str:
    return _MATH.sub(" ", _CODE.sub(" ", text))


def preserved_parts(text: str) -> dict[str, Counter]:
    """What a translation must carry over unchanged: inline code, math, link targets, numbers."""
    plain = _URL.sub("]", _without_code(text))
    return {
        "inline code": Counter(m.group(0) for m in _CODE.finditer(text)),
        "math": Counter(m.group(0) for m in _MATH.finditer(_CODE.sub(" ", text))),
        "link": Counter(_URL.findall(_without_code(text))),
        "number": Counter(_NUMBER.findall(plain)),
    }


def preservation_problems(english: str, chinese: str, messages: dict[str, str] | None = None) -> list[str]:
    """Inline code, math, link targets and numbers of ``english`` that ``chinese`` lost.

    ``messages`` (msgid -> translation of ``course_utils``' own catalogue): a code span that quotes a line
    ``course_utils`` prints may be replaced by that line's translation, which is what the Chinese notebook
    prints next to it:

    >>> preservation_problems("It prints `Skipped (no GPU)`.", "它打印 `已跳过（没有 GPU）`。",
    ...                       {"Skipped (no GPU)": "已跳过（没有 GPU）"})
    []
    """
    want, have = preserved_parts(english), preserved_parts(chinese)
    problems = []
    for kind, items in want.items():
        for item, count in items.items():
            if have[kind][item] < count:
                if kind == "inline code" and messages and \
                        any(have[kind][f"`{zh}`"] + have[kind][item] >= count
                            for zh in quoted_translations(item.strip("`"), messages)):
                    continue
                problems.append(f"{kind} {item} is missing")
    levels = [[len(m.group(1)) for m in _HEADING.finditer(_without_code(text))] for text in (english, chinese)]
    if levels[0] != levels[1]:
        problems.append(f"headings differ: levels {levels[0]} in English, {levels[1]} in the translation")
    return problems


_FIELD = re.compile(r"\{(\w+)(?:[:!][^{}]*)?\}")


def quoted_translations(span: str, messages: dict[str, str]) -> list[str]:
    """The Chinese of a line ``course_utils`` prints, quoted in prose as ``span``: the whole message with
    its fields filled as quoted, or the part before its first field.

    >>> zh = {"fresh process: resumed at epoch {epoch}, step {step}": "新进程：从第 {epoch} 轮、第 {step} 步恢复",
    ...       "What you would see on a GPU: {expect}": "在 GPU 上你会看到：{expect}"}
    >>> quoted_translations("fresh process: resumed at epoch 3, step 24", zh)
    ['新进程：从第 3 轮、第 24 步恢复']
    >>> quoted_translations("What you would see on a GPU:", zh)
    ['在 GPU 上你会看到：']
    >>> quoted_translations("x on y", {"{a} on {b}": "{a} 在 {b} 上"})
    []
    """
    found = [messages[span]] if span in messages else []
    for msgid, text in messages.items():
        # a template that is mostly fields ("{what}: {problem}") would match any quoted text
        if "{" not in msgid or len(re.findall(r"[A-Za-z]{2,}", _FIELD.sub(" ", msgid))) < 3:
            continue
        pattern = "".join(f"(?P<{m.group(1)}>.+?)" if m.group(1) else re.escape(m.group(0))
                          for m in re.finditer(r"\{(\w+)(?:[:!][^{}]*)?\}|[^{]+|\{", msgid))
        try:
            match = re.fullmatch(pattern, span)
        except re.error:  # a field used twice: not a quotable line
            match = None
        if match:
            found.append(_FIELD.sub(lambda m: match.group(m.group(1)), text))
        head, zh_head = msgid.split("{")[0], text.split("{")[0]
        if head.strip() and zh_head.strip() and span in (head.rstrip(), head.rstrip(" :")):
            found.append(zh_head.rstrip() if span == head.rstrip() else zh_head.rstrip(" :："))
    return found


def printed_messages() -> dict[str, str]:
    """``course_utils``' messages and their Chinese (the compiled catalogues), for quoted output in prose."""
    from course_utils import i18n

    return i18n.catalogue(LOCALE)


def load_glossary(path: Path = GLOSSARY) -> list[dict[str, Any]]:
    """The bilingual glossary: each term's English, the one Chinese term to use, variants to avoid."""
    with open(path, "rb") as f:
        return tomllib.load(f)["term"]


def glossary_problems(english: str, chinese: str, glossary: list[dict[str, Any]]) -> list[str]:
    """Terms translated otherwise than the glossary says (outside code and math).

    A term's ``ignore`` lists names that merely start with it ("TensorBoard" is no tensor):

    >>> terms = [{"en": "tensor", "zh": "张量", "ignore": ["TensorBoard"]}]
    >>> glossary_problems("Log to TensorBoard.", "记录到 TensorBoard。", terms)
    []
    >>> glossary_problems("A tensor in TensorBoard.", "TensorBoard 里的一个数组。", terms)
    ["'tensor' is translated without '张量'"]
    """
    problems = []
    plain_en = _URL.sub("]", _without_code(english)).lower()
    plain_zh = _URL.sub("]", _without_code(chinese))
    for term in glossary:
        for variant in term.get("avoid", []):
            if variant in plain_zh:
                problems.append(f"'{variant}' should be '{term['zh']}' ({term['en']})")
        term_en = plain_en
        for name in term.get("ignore", []):
            term_en = re.sub(rf"\b{re.escape(name.lower())}\b", " ", term_en)
        if term.get("required", True) and re.search(rf"\b{re.escape(term['en'].lower())}", term_en) \
                and term["zh"] not in plain_zh:
            problems.append(f"'{term['en']}' is translated without '{term['zh']}'")
    return problems


def catalogue_problems(lesson: Path) -> list[str]:
    """Why the lesson's catalogue is not ready: untranslated, fuzzy, obsolete or lossy entries."""
    path = catalogue_path(lesson)
    where = f"lessons/{LOCALE}/{path.name}"
    if not path.exists():
        return [f"{where} is missing: run `python -m tools.translate update {lesson.name[:2]}`"]
    existing = read_catalogue(path)
    merged = merged_catalogue(lesson, existing)
    glossary = load_glossary()
    problems = []
    file_ids = {m.id for m in existing if m.id}
    for message in merged:
        if not message.id:
            continue
        cell = message.auto_comments[0] if message.auto_comments else ""
        if message.id not in file_ids and "fuzzy" not in message.flags:
            problems.append(f"{where}: {cell}: untranslated (new English; run `update`, then translate)")
        elif "fuzzy" in message.flags and message.id not in file_ids:
            problems.append(f"{where}: {cell}: stale: the English changed (run `update`; the old English is kept "
                            f"as '#| msgid' beside the old translation)")
        elif "fuzzy" in message.flags:
            problems.append(f"{where}: {cell}: fuzzy: revise the translation against the new English, then "
                            f"remove the fuzzy flag")
        elif not message.string:
            problems.append(f"{where}: {cell}: untranslated")
        else:
            problems += [f"{where}: {cell}: {p}" for p in preservation_problems(message.id, message.string,
                                                                               printed_messages())]
            problems += [f"{where}: {cell}: glossary: {p}" for p in glossary_problems(message.id, message.string,
                                                                                       glossary)]
    for key in merged.obsolete:
        problems.append(f"{where}: obsolete entry (its cell is gone from the lesson): {_heading(key)!r}; "
                        f"delete it")
    return problems


# --------------------------------------------------------------------------- the published lessons
def edition(path: Path | None = None) -> dict[str, list[str]]:
    """``lessons/zh_CN/edition.toml``: the published lessons' prefixes and the message areas required."""
    config = tomllib.loads((path or EDITION).read_text(encoding="utf-8"))
    return {"published": [str(n) for n in config.get("published", [])],
            "messages": [str(a) for a in config.get("messages", [])]}


def is_published(lesson: Path) -> bool:
    """Whether the Chinese edition publishes this lesson (listed in ``edition.toml``)."""
    return lesson.name[:2] in edition()["published"]


def published_lessons() -> list[Path]:
    """The lessons the Chinese edition publishes, in order."""
    return [lesson for lesson in authoring.lesson_paths() if is_published(lesson)]


def message_areas() -> list[str]:
    """Message catalogues that must be complete: the listed ones and each published lesson's checkers."""
    config = edition()
    return config["messages"] + [f"checks_nb{n}" for n in config["published"]]


def folder_problems() -> list[str]:
    """Chinese notebooks in zh/ for a lesson that is not published (or a published one missing)."""
    want = {lesson.stem for lesson in published_lessons()}
    problems = []
    for folder in (ZH_SOLUTIONS, ZH_NOTEBOOKS):
        have = {path.stem for path in folder.glob("*.ipynb")} if folder.exists() else set()
        problems += [f"zh/{folder.name}/{stem}.ipynb: the lesson is not published (lessons/{LOCALE}/edition.toml); "
                     f"delete it or publish the lesson" for stem in sorted(have - want)]
        problems += [f"zh/{folder.name}/{stem}.ipynb is missing: run `python -m tools.translate build {stem[:2]}`"
                     for stem in sorted(want - have)]
    return problems


# --------------------------------------------------------------------------- notebooks
def translations(lesson: Path) -> dict[str, str]:
    """msgid -> msgstr of a ready catalogue; :class:`TranslationError` naming the cells otherwise."""
    problems = [p for p in catalogue_problems(lesson) if "glossary" not in p]
    if problems:
        raise TranslationError("\n".join(problems))
    return {m.id: m.string for m in read_catalogue(catalogue_path(lesson)) if m.id}


def language_cell() -> Any:
    import nbformat

    return nbformat.from_dict({"cell_type": "code", "execution_count": None, "outputs": [],
                               "metadata": {"tags": [LANGUAGE_TAG]}, "source": LANGUAGE_CELL})


def chinese_solution_notebook(lesson: Path, strings: dict[str, str] | None = None) -> Any:
    """The Chinese solution notebook of a lesson, unexecuted: prose translated, code unchanged."""
    strings = translations(lesson) if strings is None else strings
    nb = copy.deepcopy(authoring.solution_notebook(lesson))
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = strings[cell.source]
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first_code, language_cell())
    nb.metadata["course"] = {
        "generated_from": f"lessons/{lesson.name} + lessons/{LOCALE}/{lesson.stem}.po",
        "edit": f"edit lessons/{LOCALE}/{lesson.stem}.po, then run `python -m tools.translate build {lesson.name[:2]}`",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def build(lesson: Path, run: bool = True) -> list[Path]:
    """Generate (and by default execute) both Chinese notebooks of one lesson."""
    import nbformat

    solution = chinese_solution_notebook(lesson)
    written = []
    for nb, folder in ((authoring.solution_view(solution), ZH_SOLUTIONS),
                       (authoring.learner_notebook(solution), ZH_NOTEBOOKS)):
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{lesson.stem}.ipynb"
        if run:
            print(f"executing zh/{folder.name}/{target.name} ...", flush=True)
            nb = authoring.execute(nb, folder, f"zh/{folder.name}/{target.name}")
        nbformat.write(nb, target)
        written.append(target)
    return written


def code_cells(nb: Any) -> list[tuple[str, dict]]:
    """Code cells as (source, metadata), without the language cell."""
    return [(c.source, dict(c.metadata)) for c in nb.cells
            if c.cell_type == "code" and LANGUAGE_TAG not in c.metadata.get("tags", [])]


def sync_problems(lesson: Path) -> list[str]:
    """Where the committed Chinese notebooks differ from what the lesson and its catalogue give."""
    import nbformat

    try:
        expected = chinese_solution_notebook(lesson)
    except TranslationError as error:
        return str(error).splitlines()
    problems = []
    for want, folder in ((authoring.solution_view(expected), ZH_SOLUTIONS),
                         (authoring.learner_notebook(expected), ZH_NOTEBOOKS)):
        path = folder / f"{lesson.stem}.ipynb"
        where = f"zh/{folder.name}/{path.name}"
        if not path.exists():
            problems.append(f"{where} is missing: run `python -m tools.translate build {lesson.name[:2]}`")
            continue
        got = nbformat.read(path, as_version=4)
        a, b = authoring.structure(got), authoring.structure(want)
        if len(a) != len(b):
            problems.append(f"{where}: {len(a)} cells, the lesson and its catalogue give {len(b)}")
        for index, (g, w) in enumerate(zip(a, b)):
            if g != w:
                problems.append(f"{where}: cell {index} differs from the lesson and its catalogue "
                                f"(run `python -m tools.translate build {lesson.name[:2]}`)")
                break
    return problems


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["update", "check", "generate", "build", "sync"],
                        help="update: merge lessons into their catalogues; check: list untranslated, stale or "
                             "lossy entries; generate: write the Chinese notebooks unexecuted; build: write and "
                             "execute them; sync: report committed Chinese notebooks that differ from the sources")
    parser.add_argument("names", nargs="*", help="lesson prefixes such as 01 (default: all)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    lessons = authoring.lesson_paths(args.names)
    if not lessons:
        print(f"no lesson in lessons/ matches {args.names}", file=sys.stderr)
        return 2
    problems: list[str] = []
    for lesson in lessons:
        if args.command == "update":
            path = update(lesson)
            left = catalogue_problems(lesson)
            print(f"{path.relative_to(ROOT)}: {len(left)} entries to do")
        elif args.command == "check":
            problems += catalogue_problems(lesson)
        elif args.command == "sync":
            problems += sync_problems(lesson)
        elif not is_published(lesson):
            print(f"{lesson.stem}: not published in Chinese yet (lessons/{LOCALE}/edition.toml): skipped")
        else:
            try:
                for path in build(lesson, run=args.command == "build"):
                    print(f"wrote {path.relative_to(ROOT)}", flush=True)
            except TranslationError as error:
                problems += str(error).splitlines()
    for problem in problems:
        print(problem)
    if args.command in ("check", "sync", "generate", "build"):
        print(f"{len(lessons)} lessons, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
