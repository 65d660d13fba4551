"""The coverage map `docs/seed_coverage.md` names, for every item of the source articles, a lesson
cell that shows it; these tests check that every named cell exists and shows what the row claims.

Fast: the lessons are parsed with jupytext and the executed `solutions/` notebooks are read as JSON;
nothing is executed. `benchmarks/GPU_RESULTS.md` is checked here too: its table must list every
`skip_unless_gpu(...)` call of the lessons, so a new GPU cell cannot go unrecorded.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from notebook_files import ROOT

# Rows that may still say `explained` or `missing` while the lessons are being fixed. Ids are the
# strings of the map's "#" column ("31", or "C8" in the table of outdated statements). Empty this set
# when every row is reproduced, measured or gpu; `test_in_progress_lists_only_unfinished_rows`
# fails when a listed row is already finished, so the set only shrinks.
IN_PROGRESS: set[str] = set()

MAP = ROOT / "docs" / "seed_coverage.md"
GPU_RESULTS = ROOT / "benchmarks" / "GPU_RESULTS.md"
ITEMS = [str(n) for n in range(1, 125)]          # the 124 items of the source articles
CORRECTIONS = [f"C{n}" for n in range(1, 10)]    # the 9 statements that are out of date or wrong

ITEM_HEADER = ("#", "item", "shown in", "how")
CORRECTION_HEADER = ("#", "statement in the source articles", "current practice", "shown in", "how")
GPU_HEADER_START = ("notebook",)
HOWS = {"reproduced", "measured", "gpu", "explained", "missing"}
UNFINISHED = {"explained", "missing"}
MARKER = re.compile(r"^(?P<nn>\d\d) `(?P<marker>[^`|]+)`$")


# --------------------------------------------------------------------------- parsing the map
@dataclass(frozen=True)
class Row:
    id: str
    shown: tuple[tuple[str, str], ...]   # (lesson number, marker)
    how: str
    line: int


@dataclass(frozen=True)
class Cell:
    kind: str                 # "code" or "markdown"
    source: str
    has_outputs: bool         # the executed solutions notebook's cell has outputs


def table_rows(text: str, header: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """(line number, cells) of the table whose header starts with `header`; [] if there is none."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        cells = _cells(line)
        if cells is not None and tuple(cells[:len(header)]) == header:
            rows = []
            for number, row in enumerate(lines[start + 2:], start=start + 3):
                cells = _cells(row)
                if cells is None:
                    break
                rows.append((number, cells))
            return rows
    return []


def _cells(line: str) -> list[str] | None:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")) or len(line) < 2:
        return None
    return [cell.strip() for cell in line[1:-1].split("|")]


def parse_shown(field: str) -> tuple[tuple[str, str], ...]:
    """`01 `marker`; 03 `other`` -> (("01", "marker"), ("03", "other")); `-` -> ()."""
    if field == "-":
        return ()
    pairs = []
    for part in field.split("; "):
        match = MARKER.match(part.strip())
        if not match:
            raise ValueError(f"not of the form NN `marker`: {part!r}")
        marker = match["marker"]
        if len(marker) > 60:
            raise ValueError(f"marker longer than 60 characters: {marker!r}")
        pairs.append((match["nn"], marker))
    return tuple(pairs)


def parse_map(text: str, header: tuple[str, ...]) -> tuple[list[Row], list[str]]:
    """The rows of one table of the map, and what is malformed in it."""
    rows, problems = [], []
    table = table_rows(text, header)
    if not table:
        problems.append(f"no table with header {' | '.join(header)!r}")
    shown_at, how_at = header.index("shown in"), header.index("how")
    for line, cells in table:
        if len(cells) != len(header):
            problems.append(f"line {line}: {len(cells)} columns, expected {len(header)}: {cells}")
            continue
        how = cells[how_at].strip("*")
        if how not in HOWS:
            problems.append(f"row {cells[0]} (line {line}): how {how!r} is not one of {sorted(HOWS)}")
        try:
            shown = parse_shown(cells[shown_at])
        except ValueError as error:
            problems.append(f"row {cells[0]} (line {line}): {error}")
            continue
        rows.append(Row(cells[0], shown, how, line))
    return rows, problems


# --------------------------------------------------------------------------- the lessons' cells
def lesson_file(nn: str, folder: Path, suffix: str) -> Path | None:
    found = sorted(folder.glob(f"{nn}_*{suffix}"))
    return found[0] if len(found) == 1 else None


def read_cells(lesson: Path, solution: Path | None) -> list[Cell]:
    """The lesson's cells; a code cell has outputs if the solutions cell with its source has any."""
    import jupytext

    with_outputs: dict[str, bool] = {}
    if solution is not None and solution.is_file():
        for cell in json.loads(solution.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            with_outputs[source] = with_outputs.get(source, False) or bool(cell.get("outputs"))
    return [Cell(cell.cell_type, cell.source, with_outputs.get(cell.source, False))
            for cell in jupytext.read(lesson, fmt="py:percent").cells]


def course_cells(root: Path = ROOT) -> dict[str, list[Cell]]:
    cells = {}
    for lesson in sorted((root / "lessons").glob("[0-9][0-9]_*.py")):
        cells[lesson.name[:2]] = read_cells(lesson, root / "solutions" / (lesson.stem + ".ipynb"))
    return cells


def calls_skip_unless_gpu_with_expect(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:   # a cell with IPython syntax: fall back to the text
        return "skip_unless_gpu(" in source and "expect=" in source
    return any(isinstance(node, ast.Call) and _name(node.func) == "skip_unless_gpu"
               and any(keyword.arg == "expect" for keyword in node.keywords)
               for node in ast.walk(tree))


def _name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


# --------------------------------------------------------------------------- checking rows
def map_problems(rows: list[Row], cells: dict[str, list[Cell]], expected: list[str],
                 needs_cell: bool = False) -> list[str]:
    """Everything wrong with `rows` except a row still being explained/missing (listed separately).

    - every expected id appears exactly once, and no other id;
    - every marker is found in a cell of its lesson;
    - reproduced/measured: a marker names an executed code cell with outputs;
    - gpu: a marker names a code cell calling `skip_unless_gpu(..., expect=...)`;
    - with `needs_cell`, a finished row names at least one cell.
    """
    problems = []
    ids = [row.id for row in rows]
    for missing in [i for i in expected if i not in ids]:
        problems.append(f"row {missing} is missing")
    for extra in sorted({i for i in ids if i not in expected}):
        problems.append(f"row {extra} is not one of the expected rows")
    for twice in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"row {twice} appears {ids.count(twice)} times")
    for row in rows:
        found: list[Cell] = []
        for nn, marker in row.shown:
            if nn not in cells:
                problems.append(f"row {row.id}: no lesson {nn}")
                continue
            matching = [cell for cell in cells[nn] if marker in cell.source]
            if not matching:
                problems.append(f"row {row.id}: marker {marker!r} is in no cell of lesson {nn}")
            found += matching
        if row.how in ("reproduced", "measured") and not any(
                cell.kind == "code" and cell.has_outputs for cell in found):
            problems.append(f"row {row.id} is {row.how}, but none of its markers names an executed "
                            "code cell with outputs in solutions/")
        if row.how == "gpu" and not any(
                cell.kind == "code" and calls_skip_unless_gpu_with_expect(cell.source) for cell in found):
            problems.append(f"row {row.id} is gpu, but none of its markers names a code cell calling "
                            "skip_unless_gpu(..., expect=...)")
        if needs_cell and row.how not in UNFINISHED and not row.shown:
            problems.append(f"row {row.id} names no cell")
    return problems


def unfinished(rows: list[Row], allowed: set[str]) -> list[str]:
    return [f"row {row.id} is still {row.how}" for row in rows if row.how in UNFINISHED and row.id not in allowed]


# --------------------------------------------------------------------------- GPU_RESULTS.md
def gpu_calls(lessons: list[Path]) -> list[tuple[str, str]]:
    """(lesson stem, `what` string) of every skip_unless_gpu(...) call in the lessons."""
    calls = []
    for lesson in lessons:
        for node in ast.walk(ast.parse(lesson.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _name(node.func) == "skip_unless_gpu":
                what = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg == "what"), None)
                text = what.value if isinstance(what, ast.Constant) and isinstance(what.value, str) else \
                    f"<not a plain string at line {node.lineno}>"
                calls.append((lesson.stem, text))
    return calls


def gpu_table(text: str) -> list[tuple[str, str]]:
    return [(cells[0].strip("`"), cells[1].strip("`")) for _, cells in table_rows(text, GPU_HEADER_START)
            if len(cells) >= 2]


# =========================================================================== the real map
@pytest.fixture(scope="module")
def cells() -> dict[str, list[Cell]]:
    return course_cells()


@pytest.fixture(scope="module")
def items() -> list[Row]:
    rows, problems = parse_map(MAP.read_text(encoding="utf-8"), ITEM_HEADER)
    assert not problems, "\n".join(problems)
    return rows


@pytest.fixture(scope="module")
def corrections() -> list[Row]:
    rows, problems = parse_map(MAP.read_text(encoding="utf-8"), CORRECTION_HEADER)
    assert not problems, "\n".join(problems)
    return rows


def test_every_item_row_names_existing_cells_that_show_it(items: list[Row], cells) -> None:
    problems = map_problems(items, cells, ITEMS)
    assert not problems, "\n".join(problems)


def test_every_correction_row_names_the_cell_that_shows_it(corrections: list[Row], cells) -> None:
    problems = map_problems(corrections, cells, CORRECTIONS, needs_cell=True)
    assert not problems, "\n".join(problems)


def test_no_row_is_only_explained_or_missing(items: list[Row], corrections: list[Row]) -> None:
    offending = unfinished(items + corrections, IN_PROGRESS)
    assert not offending, ("rows still explained or missing (show them in a cell, then update "
                           "docs/seed_coverage.md):\n" + "\n".join(offending))


def test_in_progress_lists_only_unfinished_rows(items: list[Row], corrections: list[Row]) -> None:
    how = {row.id: row.how for row in items + corrections}
    stale = sorted(i for i in IN_PROGRESS if how.get(i) not in UNFINISHED)
    assert not stale, f"IN_PROGRESS lists rows that are finished or unknown: {stale}; remove them"


def test_gpu_results_table_lists_every_gpu_cell() -> None:
    lessons = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
    calls, listed = gpu_calls(lessons), gpu_table(GPU_RESULTS.read_text(encoding="utf-8"))
    assert calls, "no skip_unless_gpu(...) call found in the lessons: is the parser broken?"
    unlisted = [c for c in calls if c not in listed]
    stale = [row for row in listed if row not in calls]
    assert not unlisted and not stale, (
        f"benchmarks/GPU_RESULTS.md must have one row per skip_unless_gpu call, as "
        f"| notebook stem | what | ...: unlisted {unlisted}, listed but not in a lesson {stale}")
    assert len(listed) == len(set(listed)), "a GPU cell is listed twice"


NO_RUN = "No GPU run has been recorded yet"


def gpu_record_problems(text: str, recorded: bool) -> list[str]:
    """What in GPU_RESULTS.md disagrees with devices.GPU_RUN_RECORDED (the skip message's claim)."""
    paragraphs = text.split("\n\n")
    top = paragraphs[1] if len(paragraphs) > 1 else ""  # the first paragraph under the title
    rows = [(cells[1], cells[2].strip() == "not recorded yet")
            for _, cells in table_rows(text, GPU_HEADER_START) if len(cells) >= 3]
    if recorded:
        return ([f"GPU_RUN_RECORDED is True but the page still says {NO_RUN!r}"] if NO_RUN in text else []) + \
            [f"GPU_RUN_RECORDED is True but the row {what!r} says 'not recorded yet'" for what, empty in rows if empty]
    return ([] if NO_RUN in top else [
        f"GPU_RUN_RECORDED is False (the skipped cells say no GPU run is recorded), so the first paragraph "
        f"under the title must say {NO_RUN!r}; found {top[:120]!r}"]) + \
        [f"GPU_RUN_RECORDED is False but the row {what!r} has a measurement: set it to True in "
         f"course_utils/devices.py" for what, empty in rows if not empty]


def test_gpu_results_page_agrees_with_the_skip_message() -> None:
    from course_utils import devices

    problems = gpu_record_problems(GPU_RESULTS.read_text(encoding="utf-8"), devices.GPU_RUN_RECORDED)
    assert not problems, "\n".join(problems)


def test_gpu_record_check_can_fail() -> None:
    head = "# Title\n\n"
    table = "| notebook | cell | measured on a GPU |\n|---|---|---|\n| 08_x | copies | {} |\n"
    assert gpu_record_problems(head + f"**{NO_RUN}.**\n\n" + table.format("not recorded yet"), False) == []
    assert gpu_record_problems(head + "words\n\n" + f"{NO_RUN}.\n\n" + table.format("not recorded yet"), False)
    assert gpu_record_problems(head + f"{NO_RUN}.\n\n" + table.format("1.9x, H100"), False)
    assert gpu_record_problems(head + f"{NO_RUN}.\n\n" + table.format("1.9x, H100"), True)
    assert gpu_record_problems(head + "Measured.\n\n" + table.format("not recorded yet"), True)
    assert gpu_record_problems(head + "Measured.\n\n" + table.format("1.9x, H100"), True) == []


def test_welcome_names_every_notebook_with_a_gpu_cell() -> None:
    """Notebook 00 tells a CPU learner where GPU-only cells are; that list must stay true."""
    welcome = next((ROOT / "lessons").glob("00_*.py")).read_text(encoding="utf-8")
    found = re.search(r"in notebooks ((?:\d\d,\s*(?:#\s*)?)*\d\d and \d\d)", welcome)
    assert found, "lesson 00 no longer says 'in notebooks NN, NN and NN' where the GPU cells are"
    named = set(re.findall(r"\d\d", found.group(1)))
    lessons = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))
    with_gpu = {stem[:2] for stem, _ in gpu_calls(lessons)}
    assert named == with_gpu, f"lesson 00 names notebooks {sorted(named)}, GPU cells are in {sorted(with_gpu)}"


# =========================================================================== the checker can fail
FAKE = {
    "00": [Cell("markdown", "## Title\nwords only", False),
           Cell("code", "x = 1\nprint(x)", True),
           Cell("code", "def f():\n    return 1", False),
           Cell("code", 'if skip_unless_gpu("copies", expect="2x faster"):\n    pass', True),
           Cell("code", 'if skip_unless_gpu("copies"):\n    pass', True)],
}
GOOD = """\
| # | item | shown in | how |
|---|---|---|---|
| 1 | printing | 00 `print(x)` | reproduced |
| 2 | a GPU effect | 00 `expect="2x faster"` | gpu |
| 3 | words | 00 `words only` | explained |
"""


def _check(text: str, allowed: set[str] = frozenset({"3"})) -> list[str]:
    rows, problems = parse_map(text, ITEM_HEADER)
    return problems + map_problems(rows, FAKE, ["1", "2", "3"]) + unfinished(rows, allowed)


def test_checker_accepts_a_good_map() -> None:
    assert _check(GOOD) == []


@pytest.mark.parametrize("bad, expected", [
    (GOOD.replace("| 2 | a GPU effect | 00 `expect=\"2x faster\"` | gpu |\n", ""), "row 2 is missing"),
    (GOOD + "| 1 | again | 00 `print(x)` | reproduced |\n", "row 1 appears 2 times"),
    (GOOD.replace("00 `print(x)`", "00 `print(y)`"), "marker 'print(y)' is in no cell of lesson 00"),
    (GOOD.replace("00 `print(x)`", "07 `print(x)`"), "row 1: no lesson 07"),
    (GOOD.replace("00 `print(x)`", "00 `words only`"), "none of its markers names an executed code cell"),
    (GOOD.replace("00 `print(x)`", "00 `return 1`"), "none of its markers names an executed code cell"),
    (GOOD.replace('00 `expect="2x faster"`', '00 `skip_unless_gpu("copies")`'),
     "skip_unless_gpu(..., expect=...)"),
    (GOOD.replace("| explained |", "| missing |").replace("00 `words only`", "-"), None),
    (GOOD.replace("| reproduced |", "| shown |"), "how 'shown' is not one of"),
    (GOOD.replace("00 `print(x)`", "00 print(x)"), "not of the form NN `marker`"),
    (GOOD.replace("00 `print(x)`", "00 `" + "x" * 61 + "`"), "longer than 60 characters"),
    (GOOD.replace("| 1 | printing |", "| 1 |"), "3 columns, expected 4"),
    (GOOD.replace("| # | item |", "| # | thing |"), "no table with header"),
])
def test_checker_rejects_a_bad_map(bad: str, expected: str | None) -> None:
    problems = _check(bad)
    if expected is None:       # a missing row inside IN_PROGRESS is allowed ...
        assert problems == []
        problems = _check(bad, allowed=set())   # ... and reported once it is not
        expected = "row 3 is still missing"
    assert any(expected in p for p in problems), problems


def test_unfinished_rows_are_listed_by_id() -> None:
    assert _check(GOOD, allowed=set()) == ["row 3 is still explained"]


def test_gpu_table_parser_reads_rows_and_finds_calls(tmp_path: Path) -> None:
    lesson = tmp_path / "05_data.py"
    lesson.write_text('if skip_unless_gpu("pinned copies", expect="faster"):\n    pass\n'
                      'devices.skip_unless_gpu(what="second")\n')
    assert gpu_calls([lesson]) == [("05_data", "pinned copies"), ("05_data", "second")]
    text = ("| notebook | cell (first line) | measured on a GPU |\n|---|---|---|\n"
            "| `05_data` | pinned copies | not yet |\n")
    assert gpu_table(text) == [("05_data", "pinned copies")]
