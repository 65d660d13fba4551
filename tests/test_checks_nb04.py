"""Exercises of notebook 04: alternative correct answers, extra wrong ones (required ids:
tests/test_exercise_checks.py)."""

from __future__ import annotations

import functools
from collections import OrderedDict

import pytest
import torch
from torch import nn

from course_utils.exercises import check, get_exercise, list_exercises
from tests.learner_code import assert_accepted, assert_rejected

_KAIMING = """
    def kaiming_init(module):
        if isinstance(module, nn.Linear):
            %s
            if module.bias is not None:
                nn.init.zeros_(module.bias)"""

WRONG = [
    # --- 04.make_mlp
    ("04.make_mlp", """
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            return nn.Sequential(*layers)""", ["after the last"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            return nn.Sequential(*[nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])""", ["ReLU"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            layers = []
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                if i:
                    layers.append(nn.ReLU())
                layers.append(nn.Linear(a, b))
            return nn.Sequential(layers)""", ["*layers"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            layers = []
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                if i:
                    layers.append(nn.Sigmoid())
                layers.append(nn.Linear(a, b))
            return nn.Sequential(*layers)""", ["nn.ReLU"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.ReLU(), nn.Linear(a, b)]
            return nn.Sequential(*layers)""", ["first"]),
    ("04.make_mlp", """
        class MLP(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
            def forward(self, x):
                for i, layer in enumerate(self.layers):
                    x = layer(torch.relu(x) if i else x)
                return x
        def make_mlp(sizes):
            return MLP(sizes)""", ["ModuleList"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            layers = []
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                if i:
                    layers.append(nn.ReLU())
                layers.append(nn.Linear(a, b, bias=False))
            return nn.Sequential(*layers)""", ["bias"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            return [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]""", ["nn.Module"]),
    ("04.make_mlp", """
        def make_mlp(sizes):
            return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[-1]))""",
     ["Linear layers"]),
    # --- 04.count_trainable
    ("04.count_trainable", "def count_trainable(model):\n    return sum(p.numel() for p in model.parameters())",
     ["requires_grad"]),
    ("04.count_trainable", """
        def count_trainable(model):
            return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False) if p.requires_grad)""",
     ["once"]),
    ("04.count_trainable", "def count_trainable(model):\n    return sum(t.numel() for t in model.state_dict().values())",
     ["state_dict"]),
    ("04.count_trainable", "def count_trainable(model):\n    return len([p for p in model.parameters() if p.requires_grad])",
     ["numel"]),
    ("04.count_trainable", "def count_trainable(model):\n    return sum(len(p) for p in model.parameters() if p.requires_grad)",
     ["numel"]),
    ("04.count_trainable", "def count_trainable(model):\n    return sum(p.numel() for p in model.parameters() if p.grad is not None)",
     ["requires_grad"]),
    ("04.count_trainable", "def count_trainable(model):\n    return sum(p.numel() for p in model.parameters() if not p.requires_grad)",
     ["requires_grad"]),
    ("04.count_trainable", """
        def count_trainable(model):
            total = 0
            for m in model.children():
                total += sum(p.numel() for p in m.parameters() if p.requires_grad)
            return total""", ["once"]),
    ("04.count_trainable", """
        def count_trainable(model):
            return torch.tensor([p.numel() for p in model.parameters() if p.requires_grad]).sum()""", ["int"]),
    ("04.count_trainable", """
        def count_trainable(model):
            return sum(p.numel() for p in model.parameters() if p.requires_grad) + sum(b.numel() for b in model.buffers())""",
     ["buffers"]),
    # --- 04.kaiming_init
    ("04.kaiming_init", """
        def kaiming_init(module):
            if type(module) is nn.Linear:   # a subclass of nn.Linear is skipped
                with torch.no_grad():
                    module.weight.normal_(0, (2 / module.weight.size(1)) ** 0.5)
                    if module.bias is not None:
                        module.bias.zero_()
            return module""", ["isinstance", "subclass"]),
    ("04.kaiming_init", _KAIMING % "nn.init.xavier_normal_(module.weight)", ["Xavier"]),
    ("04.kaiming_init", _KAIMING % "nn.init.xavier_uniform_(module.weight)", ["Xavier"]),
    ("04.kaiming_init", _KAIMING % "nn.init.kaiming_uniform_(module.weight, nonlinearity='relu')", ["normal"]),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity='relu')""", ["bias"]),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity='relu')
                nn.init.zeros_(module.bias)""", ["is not None"]),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if hasattr(module, "weight"):
                nn.init.kaiming_normal_(module.weight, nonlinearity='relu')
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)""", ["isinstance"]),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                nn.init.kaiming_normal_(module.weight, nonlinearity='relu')
                if module.bias is not None:
                    nn.init.zeros_(module.bias)""", ["isinstance"]),
    ("04.kaiming_init", _KAIMING % "nn.init.kaiming_normal_(module.weight, mode='fan_out', nonlinearity='relu')",
     ["fan_in"]),
    ("04.kaiming_init", _KAIMING % "nn.init.normal_(module.weight, 0, 2 / module.in_features)", ["sqrt"]),
    ("04.kaiming_init", _KAIMING % "nn.init.normal_(module.weight, 0, math.sqrt(2 / module.weight.shape[0]))",
     ["fan_in"]),
    ("04.kaiming_init", _KAIMING % "nn.init.kaiming_normal_(module.weight, nonlinearity='tanh')", ["sqrt(2/fan_in)"]),
    ("04.kaiming_init", _KAIMING % "pass", ["default"]),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity='relu')
                if module.bias is not None:
                    nn.init.constant_(module.bias, 0.01)""", ["zero"]),
    # --- 04.layer_output_stds
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds = {}
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.std().item()))
            model(x)
            return stds""", ["remove"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, i, o, name=name: stds.__setitem__(name, i[0].std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["output"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(lambda mod, i, o: stds.__setitem__(name, o.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["bind"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.std())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", [".item()"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                handles.append(m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["leaf"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_children():
                handles.append(m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["named_modules"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.var().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["expected std"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.std(dim=0))))
            model(x)
            for h in handles:
                h.remove()
            return stds""", [".item()"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(lambda mod, i, o, name=name: stds.__setitem__(name, o.abs().mean().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["expected std"]),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_pre_hook(lambda mod, i, name=name: stds.__setitem__(name, i[0].std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds""", ["output"]),
    # --- a finished function that forgets `return`
    ("04.count_trainable", "def count_trainable(model):\n    n = sum(p.numel() for p in model.parameters() if p.requires_grad)", ["return"]),
]

RIGHT = [
    ("04.make_mlp", """
        def make_mlp(sizes):
            layers = [nn.Linear(sizes[0], sizes[1])]
            for a, b in zip(sizes[1:-1], sizes[2:]):
                layers.extend([nn.ReLU(inplace=True), nn.Linear(a, b)])
            return nn.Sequential(*layers)"""),
    ("04.make_mlp", """
        def make_mlp(sizes):
            model = nn.Sequential()
            for i in range(len(sizes) - 1):
                if i > 0:
                    model.append(nn.ReLU())
                model.append(nn.Linear(sizes[i], sizes[i + 1]))
            return model"""),
    ("04.count_trainable", "def count_trainable(model):\n    return sum(p.nelement() for p in model.parameters() if p.requires_grad)"),
    ("04.count_trainable", "def count_trainable(model):\n    return int(sum(np.prod(p.shape) for p in model.parameters() if p.requires_grad))"),
    ("04.count_trainable", """
        def count_trainable(model):
            seen, total = set(), 0
            for p in model.parameters():
                if p.requires_grad and p.data_ptr() not in seen:
                    seen.add(p.data_ptr())
                    total += p.numel()
            return total"""),
    ("04.count_trainable", "def count_trainable(model):\n    return sum(math.prod(p.shape) for p in model.parameters() if p.requires_grad)"),
    ("04.kaiming_init", _KAIMING % "nn.init.kaiming_normal_(module.weight)"),
    ("04.kaiming_init", _KAIMING % "nn.init.normal_(module.weight, mean=0.0, std=math.sqrt(2.0 / module.in_features))"),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                with torch.no_grad():
                    module.weight.normal_(0, (2 / module.weight.size(1)) ** 0.5)
                    if module.bias is not None:
                        module.bias.zero_()
            return module"""),
    ("04.kaiming_init", """
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                torch.nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu")
                if module.bias is not None:
                    module.bias.data.fill_(0.0)"""),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            def make_hook(name):
                def hook(module, inputs, output):
                    stds[name] = float(output.std())
                return hook
            for name, m in model.named_modules():
                if len(list(m.children())) == 0 and m is not model:
                    handles.append(m.register_forward_hook(make_hook(name)))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return stds"""),
    ("04.layer_output_stds", """
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, i, o, name=name: stds.update({name: o.detach().std(unbiased=False).item()})))
            model(x)
            for h in handles:
                h.remove()
            return stds"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_wrong_answer_is_rejected_with_what_to_fix(exercise_id: str, source: str, words: list[str]) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_correct_alternative_is_accepted(exercise_id: str, source: str) -> None:
    assert_accepted(exercise_id, source)

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
    lambda w: nn.init.normal_(w, std=(2 / w.shape[1]) ** 0.5),
])
def test_kaiming_init_equivalent_answers_pass(weight_init) -> None:
    assert check("04.kaiming_init", _init(weight_init)).status == "ok"


def test_kaiming_init_exact_type_test_misses_linear_subclasses() -> None:
    # the task: every nn.Linear, subclasses included (MultiheadAttention's out_proj is one)
    candidate = _init(lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu"), lambda m: type(m) is nn.Linear)
    result = check("04.kaiming_init", candidate)
    assert result.status == "fail" and "isinstance(module, nn.Linear)" in result.message, result.message


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


def test_kaiming_init_returning_nothing_is_fine() -> None:
    # model.apply ignores the return value: the PyTorch idiom returns nothing.
    result = check("04.kaiming_init", _init(lambda w: nn.init.kaiming_normal_(w, nonlinearity="relu")))
    assert result.status == "ok"

    def no_return(module):
        if isinstance(module, nn.Linear):
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    assert check("04.kaiming_init", no_return).status == "ok"


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
