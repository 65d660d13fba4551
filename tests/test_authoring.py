"""Learner-notebook generation and the executing environment."""

from __future__ import annotations

import nbformat
import pytest

from course_utils import authoring
from course_utils.authoring import AuthoringError, learner_notebook, learner_source


def test_stub_block_replaces_solution() -> None:
    src = ("def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
           "    ### BEGIN STUB\n    # return ...  # your code\n    ### END STUB\nprint(1)")
    assert learner_source(src) == "def f(x):\n    return ...  # your code\nprint(1)"


def test_default_stub_keeps_indentation() -> None:
    src = "if True:\n        ### BEGIN SOLUTION\n        y = 1\n        ### END SOLUTION"
    assert learner_source(src).endswith('        raise NotImplementedError("Your turn: write this function")')


def test_two_solution_blocks() -> None:
    src = "### BEGIN SOLUTION\na = 1\n### END SOLUTION\nb = 2\n### BEGIN SOLUTION\nc = 3\n### END SOLUTION"
    out = learner_source(src)
    assert out.count("NotImplementedError") == 2 and "b = 2" in out and "a = 1" not in out


@pytest.mark.parametrize("bad", ["### BEGIN SOLUTION\nx = 1", "x = 1\n### END SOLUTION",
                                 "### BEGIN SOLUTION\n### END SOLUTION\n### BEGIN STUB\n# x"])
def test_malformed_markers_raise(bad: str) -> None:
    with pytest.raises(AuthoringError):
        learner_source(bad)


def test_learner_notebook_clears_only_changed_cells() -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print(1)", execution_count=1,
                                  outputs=[nbformat.v4.new_output("stream", text="1\n")]),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", execution_count=2),
    ])
    out = learner_notebook(nb)
    assert out.cells[0].outputs and out.cells[1].execution_count is None
    assert nb.cells[1].source.startswith("### BEGIN")  # input untouched


def test_generate_leaves_matching_notebooks_alone(tmp_path, monkeypatch) -> None:
    sol, learn = tmp_path / "solutions", tmp_path / "notebooks"
    sol.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "### BEGIN SOLUTION\nx = 1\n### END SOLUTION")])
    nbformat.write(nb, sol / "07_demo.ipynb")
    monkeypatch.setattr(authoring, "SOLUTIONS", sol)
    monkeypatch.setattr(authoring, "NOTEBOOKS", learn)
    assert [p.name for p in authoring.generate()] == ["07_demo.ipynb"]
    assert authoring.generate() == []  # second run: nothing to write
    assert "NotImplementedError" in (learn / "07_demo.ipynb").read_text()


def test_kernel_env_installs_netguard(tmp_path) -> None:
    env = authoring.kernel_env(tmp_path)
    startup = tmp_path / "profile_default" / "startup" / "00-netguard.py"
    assert env["IPYTHONDIR"] == str(tmp_path) and "netguard" in startup.read_text()
    assert env["PYTHONHASHSEED"] == "0"
