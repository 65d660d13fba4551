"""The committed notebooks are exactly what the lessons generate; re-executing changes nothing fixed."""

from __future__ import annotations

import json
import re
import sysconfig
from pathlib import Path

import pytest

from notebook_files import ALL_NOTEBOOKS, LESSONS, ROOT, SOLUTIONS, nb_id
from tools.authoring import idempotence_problems, lesson_of, sync_problems


def test_one_lesson_per_notebook() -> None:
    assert LESSONS, "lessons/ holds no lesson sources"
    assert [p.stem for p in LESSONS] == [p.stem for p in SOLUTIONS], \
        "every lessons/NN_topic.py has solutions/ and notebooks/ NN_topic.ipynb: run `make notebooks`"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name)
def test_notebooks_are_generated_from_the_lesson(lesson: Path) -> None:
    problems = sync_problems(lesson)
    assert not problems, "\n".join(problems) + f"\nrun `make notebooks NB={lesson.name[:2]}`"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_marked_as_generated(path: Path) -> None:
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    assert meta["course"]["generated_from"] == f"lessons/{lesson_of(path).name}"


def test_gitattributes_mark_generated_notebooks() -> None:
    text = (ROOT / ".gitattributes").read_text()
    for folder in ("solutions", "notebooks"):
        assert re.search(rf"^{folder}/\*\.ipynb .*linguist-generated", text, re.M), folder


def _machine_paths() -> list[str]:
    paths = sysconfig.get_paths()
    found = {str(ROOT), paths["purelib"], paths["stdlib"], "/tmp/"}
    return sorted(p for p in found if len(p) > 1)


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_no_machine_state_in_outputs(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(nb["cells"]):
        text = json.dumps(cell.get("outputs", []))
        for machine_path in _machine_paths():
            assert machine_path not in text, f"cell {index} shows this machine's path {machine_path!r}"
        assert not re.search(r"(/home/|/Users/|/root/|[A-Z]:\\\\Users)", text), f"cell {index}: a home path"
        assert not re.search(r"\bat 0x[0-9a-fA-F]{6,}", text), f"cell {index}: a memory address"
    # Saved widget state (what the website draws widgets from) holds stable ids only: every view's
    # model and every model it refers to, nothing else (tools/authoring.py stable_widget_state).
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    views = {o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for c in nb["cells"]
             for o in c.get("outputs", []) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})}
    if state:
        text = json.dumps(state)
        refs = set(re.findall(r"IPY_MODEL_([0-9a-f]+)", text))
        assert views <= set(state) and refs <= set(state), "a widget refers to a model missing from the saved state"
        assert set(state) <= views | refs, "saved widget state holds models no displayed widget uses"
        for machine_path in _machine_paths():
            assert machine_path not in text, f"the saved widget state shows this machine's path {machine_path!r}"


@pytest.mark.slow
def test_reexecuting_an_unchanged_lesson_changes_only_variable_cells() -> None:
    # One short lesson (both notebooks, about 20 s); `python -m tools.authoring idempotence` runs all.
    lesson = next(p for p in LESSONS if p.name.startswith("02_"))
    problems = idempotence_problems(lesson)
    assert not problems, "\n".join(problems)
