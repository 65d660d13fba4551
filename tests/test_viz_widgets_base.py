"""Every explorer: complete on construction, values exactly as given, no pyplot in callbacks
(safe when JupyterLab runs them on a kernel subshell), a plain-text form that says what it is."""

from __future__ import annotations

import contextlib
import io
import threading

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course_utils.widgets import base  # noqa: E402
from course_utils.widgets.accumulation import accumulation_stepper  # noqa: E402
from course_utils.widgets.broadcasting import broadcast_explorer  # noqa: E402
from course_utils.widgets.dynamic_depth import depth_explorer  # noqa: E402
from course_utils.widgets.init_explorer import init_explorer  # noqa: E402
from course_utils.widgets.lr_schedule import lr_schedule_explorer  # noqa: E402
from course_utils.widgets.memory_calculator import memory_calculator  # noqa: E402

FACTORIES = {
    "depth": lambda: depth_explorer(),
    "broadcast": lambda: broadcast_explorer("64, 1", "64"),
    "accumulation": lambda: accumulation_stepper(),
    "init": lambda: init_explorer(depth=20, width=16),
    "lr": lambda: lr_schedule_explorer(epochs=6, steps_per_epoch=4),
    "memory": lambda: memory_calculator(1234.5, n_params=545_098, batch_size=64),
}


def _shown(explorer) -> tuple[str, bool]:
    outputs = explorer.output.outputs
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    return text, any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("name", FACTORIES)
def test_complete_on_construction_without_pyplot(name: str) -> None:
    plt.close("all")
    explorer = FACTORIES[name]()
    text, has_picture = _shown(explorer)
    assert text == explorer.text + "\n" and has_picture, (name, text)
    assert plt.get_fignums() == [], "an explorer drew with pyplot"
    plain = explorer._repr_mimebundle_()["text/plain"]
    assert plain == f"{base.INTERACTIVE_NOTE}\nIt starts at: {explorer.text}"
    assert base.readout(explorer.model_id) == explorer.text


def test_memory_calculator_keeps_the_exact_parameter_count_and_matches_its_static_line() -> None:
    calc = memory_calculator(1234.5, n_params=545_098, batch_size=64)
    assert calc.params.value == 545_098 and "545,098 parameters" in calc.text
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        fig = memory_calculator(1234.5, n_params=545_098, batch_size=64, static=True)
    plt.close(fig)
    assert printed.getvalue().strip() == calc.text  # the static rendering says what the widget starts at
    calc.optimizer.value = "sgd"
    assert calc.text.startswith("SGD, float32 everywhere, 545,098 parameters") and _shown(calc)[1]


def test_callbacks_on_other_threads_while_a_cell_plots() -> None:
    """Simultaneous callbacks (subshells) and a pyplot cell: every result complete and current."""
    explorer = depth_explorer()
    choices = [opt[1] for opt in explorer.norm.options]
    errors: list[BaseException] = []

    def move(values):
        try:
            for value in values:
                explorer.norm.value = value
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=move, args=(choices[i::3],)) for i in range(3)]
    for thread in threads:
        thread.start()
    for _ in range(5):  # the "cell": pyplot's global state, at the same time
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3])
        plt.close(fig)
    for thread in threads:
        thread.join()
    assert not errors, errors
    explorer.refresh()
    text, has_picture = _shown(explorer)
    assert has_picture and text.strip() == explorer.text == base.readout(explorer.model_id)
    assert f"input norm {explorer.norm.value:g}," in text
