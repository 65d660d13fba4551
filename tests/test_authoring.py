"""Lesson -> notebook generation, the scrubbing of machine state, and the executing environment."""

from __future__ import annotations

import copy
import json
import re

import nbformat
import pytest

from course_utils.netguard import kernel_env
from tools import authoring
from tools.authoring import (AuthoringError, learner_notebook, learner_source, lesson_text, scrub_outputs,
                             solution_notebook, sync_problems)


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


LESSON = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Demo
#
# Text with a blank line above.

# %% tags=["raises-exception"]
def double(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION
'''


def test_lesson_round_trip_and_generated_notebooks(tmp_path) -> None:
    lesson = tmp_path / "07_demo.py"
    lesson.write_text(LESSON)
    nb = solution_notebook(lesson)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code"]
    assert nb.cells[1].metadata["tags"] == ["raises-exception"] and "id" not in nb.cells[1]
    assert nb.metadata["course"]["generated_from"] == "lessons/07_demo.py"
    assert nb.metadata["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    nbformat.validate(nb)
    assert lesson_text(nb) == LESSON  # the text format loses nothing
    written = authoring.build(lesson, tmp_path / "solutions", tmp_path / "notebooks", run=False)
    assert [p.parent.name for p in written] == ["solutions", "notebooks"]
    assert "NotImplementedError" in (tmp_path / "notebooks" / "07_demo.ipynb").read_text()
    assert sync_problems(lesson, tmp_path / "solutions", tmp_path / "notebooks") == []
    lesson.write_text(LESSON.replace("2 * x", "3 * x"))
    problems = sync_problems(lesson, tmp_path / "solutions", tmp_path / "notebooks")
    assert problems == ["solutions/07_demo.ipynb: cell 1 source differs from lessons/07_demo.py"]


def test_scrub_outputs_removes_machine_state() -> None:
    import sysconfig

    site = sysconfig.get_paths()["purelib"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="<Node object at 0x7f00deadbeef>\n"),
        nbformat.v4.new_output("stream", name="stdout", text="same stream\n"),
        nbformat.v4.new_output("error", ename="E", evalue="e", traceback=[f"File {site}/torch/x.py:3"]),
        nbformat.v4.new_output("display_data", data={
            "text/plain": "VBox()", authoring.WIDGET_MIME: {"model_id": "random", "version_major": 2}}),
    ])])
    nb.metadata["widgets"] = {authoring.WIDGET_STATE_MIME: {"version_major": 2, "version_minor": 0, "state": {
        "random": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_c0ffee01"], "layout": "IPY_MODEL_1a70"}},
        "c0ffee01": {"model_name": "LabelModel", "state": {"value": f"{site}/data at 0x7f00deadbeef"}},
        "1a7000": {"model_name": "LayoutModel", "state": {}},
        "0dd0dd": {"model_name": "IntSliderModel", "state": {"description": "never displayed"}}}}}
    nb.metadata["widgets"][authoring.WIDGET_STATE_MIME]["state"]["random"]["state"]["layout"] = "IPY_MODEL_1a7000"
    again = scrub_outputs(copy.deepcopy(nb), "solutions/07_demo.ipynb")
    out = scrub_outputs(nb, "solutions/07_demo.ipynb")
    outputs = out.cells[0].outputs
    assert outputs[0].text == "<Node object at 0x…>\nsame stream\n"  # merged by nbconvert
    assert outputs[1].traceback == ["File <site-packages>/torch/x.py:3"]
    model_id = outputs[2].data[authoring.WIDGET_MIME]["model_id"]
    assert model_id != "random" and len(model_id) == 32
    assert again.cells[0].outputs[2].data[authoring.WIDGET_MIME]["model_id"] == model_id  # stable
    # The widget state the website draws from: the displayed view and what it uses, under stable ids.
    state = out.metadata["widgets"][authoring.WIDGET_STATE_MIME]["state"]
    assert state == again.metadata["widgets"][authoring.WIDGET_STATE_MIME]["state"]
    assert len(state) == 3 and model_id in state, "the never-displayed slider is dropped"
    text = json.dumps(state)
    assert "random" not in text and "c0ffee01" not in text and "1a7000" not in text
    assert all(ref[10:] in state for ref in re.findall(r"IPY_MODEL_[0-9a-f]+", text)), "a dangling reference"
    assert site not in text and "0x7f00deadbeef" not in text, "machine state in the saved widget state"


def test_kernel_env_installs_netguard(tmp_path) -> None:
    env = kernel_env(tmp_path)
    startup = tmp_path / "profile_default" / "startup" / "00-netguard.py"
    assert env["IPYTHONDIR"] == str(tmp_path) and "netguard" in startup.read_text()
    assert env["PYTHONHASHSEED"] == "0"
