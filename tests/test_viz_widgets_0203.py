"""viz.shapes, viz.graph, widgets.broadcasting and widgets.accumulation (notebooks 02 and 03)."""

from __future__ import annotations

import random

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

from course_utils.viz.graph import describe_graph, draw_graph, graph_nodes
from course_utils.viz.shapes import draw_broadcast, draw_broadcasts, explain_broadcast, parse_shape
from course_utils.widgets.accumulation import (AccumulationStepper, GradAccumulator, accumulation_stepper,
                                               draw_history)
from course_utils.widgets.broadcasting import BroadcastExplorer, broadcast_explorer, torch_says


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts + [ax.title])


# --- shapes -------------------------------------------------------------------------------------

def test_explain_broadcast_agrees_with_torch() -> None:
    rng = random.Random(0)
    sizes = [1, 2, 3]
    for _ in range(400):
        a = tuple(rng.choice(sizes) for _ in range(rng.randint(0, 4)))
        b = tuple(rng.choice(sizes) for _ in range(rng.randint(0, 4)))
        try:
            expected = tuple(torch.broadcast_shapes(a, b))
        except RuntimeError:
            expected = None
        assert explain_broadcast(a, b).result == expected, (a, b)


def test_failure_names_the_dim_torch_names() -> None:
    exp = explain_broadcast((6, 4), (6,))
    assert not exp.ok and "at dim 1" in exp.message and "4 and 6" in exp.message
    with pytest.raises(RuntimeError, match="non-singleton dimension 1"):
        _ = torch.zeros(6, 4) - torch.zeros(6, 4).mean(dim=1)


def test_columns_say_what_happened() -> None:
    notes = [c.note for c in explain_broadcast("5, 1, 3", "4, 1").columns]
    assert notes == ["b missing → 5", "a: 1 → 4", "b: 1 → 3"]
    assert "ERROR" in explain_broadcast("3", "4").steps()


@pytest.mark.parametrize("text, shape", [("32, 1", (32, 1)), ("(5,1,3)", (5, 1, 3)), ("torch.Size([2, 3])", (2, 3)),
                                         ("4x1", (4, 1)), ("()", ()), ("7", (7,))])
def test_parse_shape(text: str, shape: tuple) -> None:
    assert parse_shape(text) == shape


@pytest.mark.parametrize("bad", ["a, b", "3, -1", "1.5"])
def test_parse_shape_rejects_with_advice(bad: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_shape(bad)


def test_draw_broadcast_marks_result_and_conflict() -> None:
    assert "(5, 4, 3)" in _texts(draw_broadcast((5, 1, 3), (4, 1)))
    text = _texts(draw_broadcast((6, 4), (6,)))
    assert "✗" in text and "fails at dim 1" in text
    fig = draw_broadcasts([((64, 1), (64,)), ((3,), (4,))])
    assert len(fig.axes) == 2
    with pytest.raises(ValueError):
        draw_broadcasts([])


# --- graph --------------------------------------------------------------------------------------

def test_graph_of_a_small_expression() -> None:
    w = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    out = (w * w + b).sum()
    nodes = graph_nodes(out, {"w": w, "b": b})
    labels = [n.label for n in nodes.values()]
    assert labels[0] == "SumBackward0"
    assert sum(label.startswith("w: leaf") for label in labels) == 1   # used twice, one node
    assert any(label.startswith("b: leaf") for label in labels)
    assert "(shown above)" not in describe_graph(out, {"w": w})  # leaves are not expanded twice
    assert w.grad is None, "drawing must not run backward"


def test_graph_of_a_model_lists_every_parameter() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    loss = model(torch.randn(5, 3)).pow(2).mean()
    text = describe_graph(loss, dict(model.named_parameters()))
    for name, _ in model.named_parameters():
        assert f"{name}: leaf" in text
    fig = draw_graph(loss, dict(model.named_parameters()))
    assert "0.weight" in _texts(fig)


def test_graph_errors_explain() -> None:
    with pytest.raises(ValueError, match="does not require grad"):
        graph_nodes(torch.ones(2) * 2)
    with pytest.raises(ValueError, match="leaf"):
        graph_nodes(torch.ones(2, requires_grad=True))
    with pytest.raises(TypeError):
        graph_nodes([1.0])  # type: ignore[arg-type]


# --- widgets ------------------------------------------------------------------------------------

def test_broadcast_explorer_reacts() -> None:
    explorer = broadcast_explorer("64, 1", "64")
    assert isinstance(explorer, BroadcastExplorer)
    assert explorer.explanation is not None and explorer.explanation.result == (64, 64)
    explorer.shape_b.value = "64, 1"
    assert explorer.explanation.result == (64, 1)
    explorer.shape_a.value = "nonsense"
    assert explorer.explanation is None and "expected" in explorer.text
    assert explorer.example.value is None  # blank until an example is picked
    explorer.example.value = explorer.example.options[0][1]
    assert explorer.shape_a.value == "32, 100" and explorer.explanation.result == (32, 100)
    explorer.shape_b.value = "32, 1"       # editing a shape by hand deselects the example
    assert explorer.example.value is None and explorer.explanation.result == (32, 100)


@pytest.mark.parametrize("text, bad", [("8, x, 3", "'x' is not a size"), ("8,,3", "missing"), ("5, -1", "'-1'")])
def test_broadcast_explorer_names_invalid_input(text: str, bad: str) -> None:
    """parse_shape alone reads '8, x, 3' as (8, 3); the explorer must say what it cannot read."""
    explorer = broadcast_explorer("8, 1, 3", "3")
    explorer.shape_a.value = text
    assert explorer.explanation is None, f"{text!r} was read as {explorer.explanation}"
    assert bad in explorer.text and repr(text) in explorer.text, explorer.text


def test_broadcast_static(capsys) -> None:
    fig = broadcast_explorer((6, 4), (6,), static=True)
    printed = capsys.readouterr().out
    assert "do not broadcast" in printed and "torch: RuntimeError" in printed
    assert fig.axes
    assert torch_says((2, 1), (3,)) == "torch: a + b has shape (2, 3)"


def test_accumulator_reproduces_2_then_5() -> None:
    acc = GradAccumulator()
    assert acc.backward("y = 2 * x") == 2.0
    assert acc.backward("y = 3 * x") == 5.0
    assert acc.zero_grad(set_to_none=False) == 0.0 and acc.x.grad is not None
    assert acc.zero_grad() is None and acc.x.grad is None
    assert acc.backward("y = (x + 2) * 3") == 3.0
    assert [e.added for e in acc.history] == [2.0, 3.0, None, None, 3.0]
    with pytest.raises(ValueError, match="expected one of"):
        acc.backward("y = sin(x)")


def test_accumulation_stepper_buttons() -> None:
    stepper = accumulation_stepper()
    assert isinstance(stepper, AccumulationStepper)
    stepper.backward_button.click()
    stepper.expression.value = "y = 3 * x"
    stepper.backward_button.click()
    assert stepper.accumulator.grad == 5.0 and "5" in stepper.text
    stepper.zero_button.click()
    assert stepper.accumulator.grad is None and "None" in stepper.text


def test_accumulation_static(capsys) -> None:
    fig = accumulation_stepper(["y = 2 * x", "y = 3 * x", "zero_grad", "y = x ** 2"], static=True)
    printed = capsys.readouterr().out
    assert "x.grad = None" in printed and printed.count("y.backward()") == 3
    assert "5" in _texts(fig)
    assert draw_history([]).axes


def test_every_example_agrees_with_torch() -> None:
    from course_utils.widgets.broadcasting import EXAMPLES

    for _, a, b in EXAMPLES:
        exp = explain_broadcast(a, b)
        said = torch_says(a, b)
        assert (f"shape {exp.result}" in said) if exp.ok else ("RuntimeError" in said), (a, b, said)
