"""The Chinese edition's lessons: catalogues complete and current, code identical, terms consistent.

* ``zh/`` holds exactly the lessons ``lessons/zh_CN/edition.toml`` publishes, and each published
  lesson's catalogue (``lessons/zh_CN/NN_*.po``) has a translation for every markdown cell of
  the lesson as it is now: nothing untranslated, fuzzy or obsolete, and every translation keeps the
  English's inline code, math, link targets, numbers and heading levels, and the glossary's terms;
* the committed Chinese notebooks are what the lesson and its catalogue generate, and their code
  cells are the English notebooks' code cells, byte for byte, apart from the one language cell;
* the checks themselves can fail: a changed English cell makes its entry stale (named by lesson and
  cell, the old English kept beside it), a lost number or code span is named, a glossary variant
  is refused, and a changed code cell breaks the identity test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from tools import authoring, translate

LESSONS = authoring.lesson_paths()


PUBLISHED = translate.published_lessons()


def test_zh_holds_exactly_the_published_lessons() -> None:
    problems = translate.folder_problems()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson", PUBLISHED, ids=[p.stem for p in PUBLISHED])
def test_catalogue_is_complete_and_current(lesson: Path) -> None:
    problems = translate.catalogue_problems(lesson)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson", PUBLISHED, ids=[p.stem for p in PUBLISHED])
def test_chinese_notebooks_are_generated_from_lesson_and_catalogue(lesson: Path) -> None:
    problems = translate.sync_problems(lesson)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson", PUBLISHED, ids=[p.stem for p in PUBLISHED])
@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_code_cells_identical_to_english(lesson: Path, folder: str) -> None:
    english = nbformat.read(authoring.ROOT / folder / f"{lesson.stem}.ipynb", as_version=4)
    path = translate.ZH / folder / f"{lesson.stem}.ipynb"
    if not path.exists():
        pytest.fail(f"zh/{folder}/{path.name} is missing: run `python -m tools.translate build {lesson.name[:2]}`")
    chinese = nbformat.read(path, as_version=4)
    assert translate.code_cells(chinese) == translate.code_cells(english)
    language = [c for c in chinese.cells if translate.LANGUAGE_TAG in c.metadata.get("tags", [])]
    assert len(language) == 1 and language[0].source == translate.LANGUAGE_CELL
    assert sum(c.cell_type == "markdown" for c in chinese.cells) == sum(c.cell_type == "markdown"
                                                                          for c in english.cells)


# --------------------------------------------------------------------------- the checks can fail
LESSON_TEXT = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 98 · Toy
#
# A tensor has 3 dimensions: call `x.dim()`.

# %%
x = 1

# %% [markdown]
# The second cell, with a [link](https://docs.pytorch.org/docs/stable/tensors.html).
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(translate, "CATALOGUES", tmp_path / "zh_CN")
    (tmp_path / "zh_CN").mkdir()
    shutil.copy(translate.GLOSSARY, tmp_path / "zh_CN" / "glossary.toml")
    monkeypatch.setattr(translate, "GLOSSARY", tmp_path / "zh_CN" / "glossary.toml")
    lesson = tmp_path / "98_toy.py"
    lesson.write_text(LESSON_TEXT, encoding="utf-8")
    translate.update(lesson)
    catalog = translate.read_catalogue(translate.catalogue_path(lesson))
    chinese = ["# 98 · 玩具\n\n张量有 3 个维度：调用 `x.dim()`。",
               "第二个单元格，附有[链接](https://docs.pytorch.org/docs/stable/tensors.html)。"]
    for message, text in zip([m for m in catalog if m.id], chinese):
        message.string = text
    translate.write_catalogue(catalog, translate.catalogue_path(lesson))
    return lesson


def test_a_complete_catalogue_passes(toy: Path) -> None:
    assert translate.catalogue_problems(toy) == []


def test_a_changed_english_cell_is_stale_and_keeps_the_old_english(toy: Path) -> None:
    toy.write_text(LESSON_TEXT.replace("has 3 dimensions", "has 4 dimensions"), encoding="utf-8")
    problems = translate.catalogue_problems(toy)
    assert len(problems) == 1 and "98_toy.po: cell 1 of 2" in problems[0] and "stale" in problems[0]
    translate.update(toy)
    text = translate.catalogue_path(toy).read_text(encoding="utf-8")
    assert "#, fuzzy" in text and '#| msgid "' in text and "has 3 dimensions" in text
    translate.update(toy)  # a second update before the translator revises it keeps the old English too
    assert translate.catalogue_path(toy).read_text(encoding="utf-8") == text
    assert "fuzzy" in translate.catalogue_problems(toy)[0]
    with pytest.raises(translate.TranslationError, match="cell 1 of 2"):
        translate.chinese_solution_notebook(toy)


def test_a_new_cell_is_untranslated_and_a_removed_one_obsolete(toy: Path) -> None:
    toy.write_text(LESSON_TEXT + "\n# %% [markdown]\n# A third cell.\n", encoding="utf-8")
    assert any("cell 3 of 3" in p and "untranslated" in p for p in translate.catalogue_problems(toy))
    toy.write_text(LESSON_TEXT.split("# %%\nx = 1")[0] + "# %%\nx = 1\n", encoding="utf-8")
    translate.update(toy)
    assert any("obsolete" in p for p in translate.catalogue_problems(toy))


def test_lost_code_numbers_links_and_glossary_terms_are_named(toy: Path) -> None:
    catalog = translate.read_catalogue(translate.catalogue_path(toy))
    first, second = [m for m in catalog if m.id]
    first.string = "# 98 · 玩具\n\n张量有三个维度：调用 `x.ndim`。"
    second.string = "第二个单元格，附有[链接](https://example.com)。"
    translate.write_catalogue(catalog, translate.catalogue_path(toy))
    problems = "\n".join(translate.catalogue_problems(toy))
    assert "inline code `x.dim()` is missing" in problems and "number 3 is missing" in problems
    assert "link https://docs.pytorch.org/docs/stable/tensors.html is missing" in problems
    first.string = "# 98 · 玩具\n\n张量体有 3 个维度：调用 `x.dim()`。"
    translate.write_catalogue(catalog, translate.catalogue_path(toy))
    assert any("'张量体' should be '张量'" in p for p in translate.catalogue_problems(toy))


def test_a_changed_code_cell_breaks_identity(toy: Path) -> None:
    nb = translate.chinese_solution_notebook(toy)
    english = authoring.solution_notebook(toy)
    assert translate.code_cells(nb) == translate.code_cells(english)
    next(c for c in nb.cells if c.cell_type == "code" and c.source == "x = 1").source = "x = 2"
    assert translate.code_cells(nb) != translate.code_cells(english)


def test_chinese_readme_uses_the_glossary() -> None:
    """README.zh-CN.md is Chinese prose too: no variant the glossary refuses."""
    text = translate._without_code((authoring.ROOT / "README.zh-CN.md").read_text(encoding="utf-8"))
    found = [f"'{variant}' should be '{term['zh']}' ({term['en']})"
             for term in translate.load_glossary() for variant in term.get("avoid", []) if variant in text]
    assert not found, "\n".join(found)
