"""Exercises of notebook 04: alternative correct answers, extra wrong ones (required ids:
tests/test_exercise_checks.py)."""

from __future__ import annotations

import functools
from collections import OrderedDict

import pytest
import torch
from torch import nn

from course_utils.exercises import check, get_exercise, list_exercises

def test_notebook_has_at_least_three_exercises() -> None:
    assert len([e for e in list_exercises() if e.startswith("04.")]) >= 3


# --- count_trainable ---------------------------------------------------------------------------

def test_count_trainable_alternatives_pass() -> None:
    def by_identity(model):
        seen = {id(p): p for p in model.parameters() if p.requires_grad}
        return sum(p.numel() for p in seen.values())

    def by_named(model):
        return sum(p.numel() for _, p in model.named_parameters() if p.requires_grad)

    for candidate in (by_identity, by_named):
        assert check("04.count_trainable", candidate).status == "ok"


def test_count_trainable_loop_over_modules_is_named_as_counting_twice() -> None:
    def per_module(model):
        return sum(p.numel() for m in model.modules() for p in m.parameters(recurse=False) if p.requires_grad)

    result = check("04.count_trainable", per_module)
    assert result.status == "fail" and "Hint (counts shared params twice)" in result.message


def test_count_trainable_wants_a_python_int() -> None:
    result = check("04.count_trainable",
                   lambda m: torch.tensor([p.numel() for p in m.parameters() if p.requires_grad]).sum())
    assert result.status == "fail" and "Python int" in result.message


def test_count_trainable_check_leaves_global_rng_alone() -> None:
    state = torch.get_rng_state()
    check("04.count_trainable", get_exercise("04.count_trainable").reference)
    assert torch.equal(state, torch.get_rng_state())


# --- make_mlp -----------------------------------------------------------------------------------

class _ModuleListMLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x if i == 0 else torch.relu(x))
        return x


def test_make_mlp_alternatives_pass() -> None:
    def ordered(sizes):
        parts = OrderedDict()
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            if i:
                parts[f"act{i}"] = nn.ReLU()
            parts[f"fc{i}"] = nn.Linear(a, b)
        return nn.Sequential(parts)

    for candidate in (_ModuleListMLP, ordered):
        assert check("04.make_mlp", candidate).status == "ok"


def test_make_mlp_module_list_without_forward_fails_clearly() -> None:
    result = check("04.make_mlp", lambda sizes: nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])))
    assert result.status == "fail" and "Traceback" not in result.message


def test_make_mlp_wrong_sizes() -> None:
    result = check("04.make_mlp", lambda sizes: nn.Sequential(*[nn.Linear(sizes[0], sizes[-1]) for _ in sizes[1:]]))
    assert result.status == "fail" and "expected Linear layers (in, out)" in result.message


# --- kaiming_init -------------------------------------------------------------------------------

def _init(weight_init, test=lambda m: isinstance(m, nn.Linear)):
    def init(module):
        if test(module):
            weight_init(module.weight)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        return module
    return init


@pytest.mark.parametrize("weight_init", [
    lambda w: nn.init.kaiming_normal_(w),  # default nonlinearity leaky_relu with a=0: same gain
    lambda w: nn.init.kaiming_uniform_(w, nonlinearity="relu"),  # same std, uniform shape
    lambda w: nn.init.normal_(w, std=(2 / w.shape[1]) ** 0.5),
])
def test_kaiming_init_equivalent_answers_pass(weight_init) -> None:
    assert check("04.kaiming_init", _init(weight_init)).status == "ok"


def test_kaiming_init_exact_type_test_passes() -> None:
    candidate = _init(lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu"), lambda m: type(m) is nn.Linear)
    assert check("04.kaiming_init", candidate).status == "ok"


@pytest.mark.parametrize("test", [
    lambda m: hasattr(m, "weight"),  # reaches LayerNorm's 1-D weight: fan-in error
    lambda m: isinstance(m, (nn.Linear, nn.Conv2d)),
    lambda m: getattr(m, "weight", None) is not None and m.weight.dim() == 2,  # Embedding too
])
def test_kaiming_init_touching_other_layers_is_named(test) -> None:
    result = check("04.kaiming_init", _init(lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu"), test))
    assert result.status == "fail" and "Hint (touches non-Linear layers)" in result.message, result.message


def test_kaiming_init_xavier_uniform_is_named_xavier() -> None:
    result = check("04.kaiming_init", _init(nn.init.xavier_uniform_))
    assert "Hint (Xavier instead of Kaiming)" in result.message


def test_kaiming_init_wrong_gain_fails() -> None:
    result = check("04.kaiming_init", _init(lambda w: nn.init.kaiming_normal_(w, nonlinearity="linear")))
    assert result.status == "fail" and "sqrt(2/fan_in)" in result.message


def test_kaiming_init_returning_a_copy_fails() -> None:
    import copy

    result = check("04.kaiming_init", lambda m: copy.deepcopy(get_exercise("04.kaiming_init").reference(m)))
    assert result.status == "fail" and "same module back" in result.message


def test_kaiming_init_forgetting_return_is_todo_with_the_task() -> None:
    result = check("04.kaiming_init", lambda m: None)
    assert result.status == "todo" and "return module" in result.message


# --- layer_output_stds --------------------------------------------------------------------------

def test_layer_output_stds_with_partial_passes() -> None:
    def candidate(model, x):
        stds, handles = {}, []

        def hook(name, module, inputs, output):
            stds[name] = float(output.std())

        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(module.register_forward_hook(functools.partial(hook, name)))
        with torch.no_grad():
            model(x)
        for handle in handles:
            handle.remove()
        return stds

    assert check("04.layer_output_stds", candidate).status == "ok"


def test_layer_output_stds_containers_included_fails() -> None:
    def candidate(model, x):
        stds = {}
        handles = [m.register_forward_hook(lambda mod, i, o, n=n: stds.__setitem__(n, o.std().item()))
                   for n, m in model.named_modules()]
        model(x)
        for handle in handles:
            handle.remove()
        return stds

    result = check("04.layer_output_stds", candidate)
    assert result.status == "fail" and "one per leaf module" in result.message


@pytest.mark.parametrize("exercise_id", [e for e in list_exercises() if e.startswith("04.")])
def test_mistake_feedback_is_deterministic(exercise_id: str) -> None:
    for mistake in get_exercise(exercise_id).mistakes:
        first = check(exercise_id, mistake.example).message.split("\n")[1]
        assert first == check(exercise_id, mistake.example).message.split("\n")[1]
