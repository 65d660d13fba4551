"""Notebook hygiene: structure, exercises, executed outputs, no errors/warnings, offline code."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from notebook_files import ALL_NOTEBOOKS, LEARNER, SOLUTIONS, nb_id

REQUIRED_HEADINGS = ["You will learn", "Key points", "Further reading"]
NETWORK_PATTERNS = [r"https?://", r"urlopen", r"\brequests\.", r"download\s*=\s*True",
                    r"hf_hub", r"load_state_dict_from_url", r"torch\.hub\."]
ALLOWED_STDERR_TAG = "stderr-is-the-lesson"


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_there_are_notebooks() -> None:
    assert SOLUTIONS, "solutions/ holds no notebooks"
    assert [p.name for p in SOLUTIONS] == [p.name for p in LEARNER]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_valid_nbformat(path: Path) -> None:
    """JupyterLab logs 'Notebook JSON is invalid' for e.g. cell ids in an nbformat 4.4 file."""
    import json

    nb = nbformat.from_dict(json.loads(path.read_text(encoding="utf-8")))
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as error:
        pytest.fail(f"{path.name} is not valid nbformat {nb.nbformat}.{nb.nbformat_minor}: {error.message}. "
                    f"Cells added with nbformat.v4.new_*_cell() carry an 'id' that 4.4 does not allow: "
                    f"drop it, then re-run `make notebooks`.")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_structure(path: Path) -> None:
    nb = _read(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "first cell: '# Title'"
    number = path.name[:2]
    assert first.source.startswith(f"# {number} · "), (
        f"the title should start with the notebook's number, '# {number} · ', found "
        f"{first.source.splitlines()[0]!r}: renumbering a lesson renumbers its title")
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for heading in REQUIRED_HEADINGS:
        assert re.search(rf"^#+ .*{heading}", markdown, re.M | re.I), f"missing section {heading!r}"
    assert re.search(r"\d+\s*min", markdown), "state an estimated time (e.g. '25 min')"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    first_code = _code(nb)[0].source
    assert "setup(" in first_code, "the first code cell calls course_utils.setup.setup()"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_exercises_are_checked(path: Path) -> None:
    calls = sum(len(re.findall(r"\bcheck\(\s*['\"]\d\d\.", c.source)) for c in _code(_read(path)))
    assert calls >= 3, f"{calls} check(...) calls; each notebook has at least 3 checked exercises"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_executed_in_order_without_errors(path: Path) -> None:
    cells = _code(_read(path))
    counts = [c.execution_count for c in cells]
    assert counts == list(range(1, len(cells) + 1)), "re-run top to bottom in a fresh kernel"
    for index, cell in enumerate(cells):
        tags = cell.metadata.get("tags", [])
        for out in cell.outputs:
            if out.output_type == "error":
                assert "raises-exception" in tags, f"cell {index}: error output without raises-exception tag"
            if out.output_type == "stream" and out.name == "stderr":
                assert ALLOWED_STDERR_TAG in tags, f"cell {index} wrote to stderr: {out.text[:200]!r}"
        if "raises-exception" in tags:
            assert any(o.output_type == "error" for o in cell.outputs), f"cell {index}: tagged but no error"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_cell_style(path: Path) -> None:
    for index, cell in enumerate(_code(_read(path))):
        lines = [line for line in cell.source.rstrip().splitlines() if line.strip()]
        if not lines:
            pytest.fail(f"code cell {index} is empty")
        last = lines[-1].rstrip()
        assert not (last.endswith(";") and not last.lstrip().startswith("#")), \
            f"cell {index} ends in ';': use `_ = ...` or plt.show()"
        assert "import *" not in cell.source, f"cell {index}: no star imports"
        # COURSE_DESIGN §9: never a bare .cuda(), except where the crash is the lesson.
        crash_is_the_lesson = "raises-exception" in cell.metadata.get("tags", [])
        assert crash_is_the_lesson or ".cuda()" not in cell.source, \
            f"cell {index}: use .to(device), never a bare .cuda() (allowed only in a raises-exception cell)"
        if "nbval-ignore-output" in cell.metadata.get("tags", []) or "NBVAL_IGNORE_OUTPUT" in cell.source:
            assert re.search(r"\bassert\b|\bcheck\(|\bconfirm\(", cell.source), \
                f"cell {index} ignores its output, so it must confirm its key property (course_utils.claims.confirm)"
        # The bootstrap names the course's repository (used only where course_utils is missing;
        # tests/test_bootstrap.py covers it); any other URL in code is network use.
        source = re.sub(r'(?m)^COURSE_REPO = "git\+https://[^"]+"', "", cell.source)
        for pattern in NETWORK_PATTERNS:
            assert not re.search(pattern, source), f"cell {index}: network use ({pattern})"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_no_deprecated_apis(path: Path) -> None:
    deprecated = [r"torch\.cuda\.amp\.", r"transforms\.ToTensor\(", r"from torchvision import transforms$",
                  r"torch\.load\([^)]*weights_only\s*=\s*False"]
    for index, cell in enumerate(_code(_read(path))):
        for pattern in deprecated:
            if re.search(pattern, cell.source, re.M) and "deprecated-on-purpose" not in cell.metadata.get("tags", []):
                pytest.fail(f"cell {index} uses {pattern}; teach the current API (COURSE_DESIGN section 8)")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_no_reference_to_internal_material(path: Path) -> None:
    """A learner has never seen the source articles, the design or the issues."""
    for index, cell in enumerate(_read(path).cells):
        if cell.cell_type != "markdown":
            continue
        for pattern in (r"\bthe seeds\b", r"\bseeds'", r"seed (code|article|snippet)", r"course design",
                        r"COURSE_DESIGN", r"REVIEW_FINDINGS"):
            assert not re.search(pattern, cell.source, re.I), \
                f"markdown cell {index} mentions {pattern!r}: learner-facing text never refers to internal material"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_no_test_plumbing_in_sight(path: Path) -> None:
    """What a learner reads has no test machinery: nbval markers are cell tags, stub blocks stay out of
    solutions/, the bootstrap is collapsed, and a demo states its claim with confirm(...), whose failure
    says what the run did not show, instead of a bare top-level assert."""
    import ast

    nb = _read(path)
    code = _code(nb)
    assert code[0].metadata.get("jupyter", {}).get("source_hidden") is True, \
        "the first code cell (the bootstrap) must be collapsed: jupyter.source_hidden"
    for index, cell in enumerate(code):
        assert "NBVAL" not in cell.source, \
            f"code cell {index}: an nbval marker in the source; use the cell tag (python -m tools.tag_markers)"
        assert "### BEGIN STUB" not in cell.source and "### END STUB" not in cell.source, \
            f"code cell {index}: a stub block is visible (tools/authoring.py removes them from solutions/)"
        if "assert-is-the-lesson" in cell.metadata.get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue  # IPython syntax (magics): not Python, no assert to find
        bare = [node.lineno for node in tree.body if isinstance(node, ast.Assert)]
        assert not bare, (f"code cell {index}, line {bare[0]}: a bare assert; state the claim with "
                          f"course_utils.claims.confirm(condition, 'what the text claims'), or tag the cell "
                          f"assert-is-the-lesson when the assert itself is taught")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_saved_progress_bars_read_as_they_ended(path: Path) -> None:
    """N-13: a tqdm bar's saved text (what GitHub and nbconvert show) is its final state, not "0/188"."""
    from tools.authoring import WIDGET_MIME, WIDGET_STATE_MIME, progress_text

    nb = nbformat.read(path, as_version=4)
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE_MIME, {}).get("state", {})
    stale = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                final = progress_text(state, data[WIDGET_MIME]["model_id"])
                if final is not None and data.get("text/plain") != final:
                    stale.append(f"cell {index}: saved {data.get('text/plain')!r}, ended {final!r}")
    assert not stale, "rebuild the notebook (tools.authoring build): " + "; ".join(stale)
