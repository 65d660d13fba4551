"""notebooks/ is exactly what solutions/ generates (sources, cell types, tags)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from course_utils.authoring import learner_notebook
from notebook_files import LEARNER, SOLUTIONS, nb_id


def test_same_files() -> None:
    assert [p.name for p in SOLUTIONS] == [p.name for p in LEARNER]


@pytest.mark.parametrize("solution", SOLUTIONS, ids=nb_id)
def test_learner_version_is_generated(solution: Path) -> None:
    learner_path = solution.parent.parent / "notebooks" / solution.name
    expected = learner_notebook(nbformat.read(solution, as_version=4))
    actual = nbformat.read(learner_path, as_version=4)
    assert len(actual.cells) == len(expected.cells), "cell count differs: run `make notebooks`"
    for index, (a, e) in enumerate(zip(actual.cells, expected.cells)):
        assert (a.cell_type, a.source) == (e.cell_type, e.source), \
            f"cell {index} differs from what solutions/ generates: run `make notebooks NB={solution.name[:2]}`"
        assert a.metadata.get("tags", []) == e.metadata.get("tags", []), f"cell {index}: tags differ"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=nb_id)
def test_solutions_hold_solutions(solution: Path) -> None:
    sources = "\n".join(c.source for c in nbformat.read(solution, as_version=4).cells)
    assert "### BEGIN SOLUTION" in sources, "a solution notebook marks its solutions"
    assert "NotImplementedError(\"Your turn" not in sources
