"""Notebook 04 visuals: the activation-std plot and the initialisation explorer widget."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from course_utils.viz.activations import plot_activation_stds
from course_utils.widgets.init_explorer import ACTIVATIONS, INITS, activation_stds, deep_mlp, init_explorer


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- plot_activation_stds -----------------------------------------------------------------------

def test_plot_one_line_per_label_on_a_log_axis() -> None:
    fig = plot_activation_stds({"kaiming": [0.8, 0.7, 0.75], "xavier": [0.5, 0.3, 0.2]}, title="t")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["kaiming", "xavier"]
    assert ax.get_yscale() == "log" and ax.get_title() == "t"
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2, 3]


def test_plot_zero_curve_drawn_below_every_other_value() -> None:
    fig = plot_activation_stds({"xavier": [1e-3, 1e-7, 1e-9], "zero": [0.0, 0.0, 0.0]})
    zero_line = fig.axes[0].get_lines()[1]
    assert "exactly 0" in zero_line.get_label() and zero_line.get_linestyle() == "--"
    assert max(zero_line.get_ydata()) < 1e-9


def test_plot_highlight_and_existing_axes() -> None:
    fig, ax = plt.subplots()
    out = plot_activation_stds({"a": [1.0, 0.5], "b": [1.0, 1.0]}, ax=ax, highlight="b")
    assert out is fig
    faint, bold = ax.get_lines()
    assert faint.get_alpha() < 1 and bold.get_alpha() == 1 and bold.get_linewidth() > faint.get_linewidth()


@pytest.mark.parametrize("stds, kwargs, words", [
    ({}, {}, "empty"),
    ({"a": [1.0, -0.1]}, {}, "non-negative"),
    ({"a": []}, {}, "non-negative"),
    ({"a": [1.0]}, {"highlight": "b"}, "not one of the labels"),
])
def test_plot_bad_input_says_what_was_expected(stds, kwargs, words) -> None:
    with pytest.raises(ValueError, match=words):
        plot_activation_stds(stds, **kwargs)


# --- activation_stds ----------------------------------------------------------------------------

def test_activation_stds_match_theory_qualitatively() -> None:
    relu = {s: activation_stds(s, "relu", depth=20, width=128, batch=128) for s in INITS}
    assert all(len(v) == 20 for v in relu.values())
    assert all(0.2 < v < 2.0 for v in relu["kaiming"])  # preserved
    per_layer = (relu["xavier"][-1] / relu["xavier"][0]) ** (1 / 19)
    assert 0.6 < per_layer < 0.8  # about sqrt(1/2) per ReLU layer
    assert relu["default"][-1] < 0.1 * relu["kaiming"][-1]
    assert relu["zero"] == [0.0] * 20
    tanh = activation_stds("kaiming", "tanh", depth=20, width=64, batch=64)
    assert all(0 < v < 1 for v in tanh)  # tanh never leaves (-1, 1)


def test_activation_stds_deterministic_and_leave_global_rng_alone() -> None:
    state = torch.get_rng_state()
    first = activation_stds("xavier", "tanh", depth=20, width=32, batch=16, seed=3)
    assert torch.equal(state, torch.get_rng_state())
    from course_utils.widgets import init_explorer as module

    module._stds.cache_clear()
    assert activation_stds("xavier", "tanh", depth=20, width=32, batch=16, seed=3) == first
    assert activation_stds("xavier", "tanh", depth=20, width=32, batch=16, seed=4) != first


def test_bad_scheme_activation_or_depth_raise_clearly() -> None:
    with pytest.raises(ValueError, match="init scheme"):
        activation_stds("he", "relu", depth=20, width=8, batch=4)
    with pytest.raises(ValueError, match="activation"):
        deep_mlp(20, 8, "gelu")
    with pytest.raises(ValueError, match="depth >= 20"):
        init_explorer(depth=5)


# --- init_explorer ------------------------------------------------------------------------------

def test_static_rendering_shows_both_activations_and_all_schemes() -> None:
    fig = init_explorer(static=True, depth=20, width=32)
    assert [ax.get_title() for ax in fig.axes] == ["ReLU, 20 layers", "tanh, 20 layers"]
    for ax in fig.axes:
        labels = [line.get_label() for line in ax.get_lines()]
        assert [label.split(" ")[0] for label in labels] == list(INITS)


def test_widget_controls_change_the_output() -> None:
    import ipywidgets as widgets

    box = init_explorer(depth=20, width=32)
    (scheme, activation), depth, out = box.children[0].children, box.children[1], box.children[2]
    assert isinstance(scheme, widgets.Dropdown) and tuple(scheme.options) == INITS
    assert isinstance(activation, widgets.ToggleButtons) and tuple(activation.options) == ACTIVATIONS
    assert isinstance(depth, widgets.IntSlider) and isinstance(out, widgets.Output)

    def shown():
        text = out.outputs[0]["text"]
        png = out.outputs[1]["data"]["image/png"]
        return text, png

    before = shown()
    assert before[0].startswith("default:") and len(before[1]) > 1000
    scheme.value = "kaiming"
    assert box.current["init"] == "kaiming" and shown()[0].startswith("kaiming:") and shown() != before
    after_scheme = shown()
    activation.value = "tanh"
    assert box.current["activation"] == "tanh" and shown() != after_scheme
    after_activation = shown()
    depth.value = 24
    assert len(box.current["stds"]) == 24 and shown() != after_activation
    scheme.value = "zero"
    assert "exactly 0" in shown()[0] and box.current["stds"] == [0.0] * 24
