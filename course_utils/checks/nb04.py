"""Checkers of notebook 04 (nn.Module), in notebook order: ``04.make_mlp``, ``04.count_trainable``,
``04.kaiming_init``, ``04.layer_output_stds``.

Cases that build modules go through ``_seeded`` (a fixed seed inside ``fork_rng``): identical modules
on every run, the learner's global RNG untouched. Many mistakes are named by a ``detect`` that looks
at the candidate's output on the same case (a wrong formula's count, a weight std, unregistered layers).
"""

from __future__ import annotations

import math
import numbers
import weakref
from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import N_, t


# --- shared by the 04 checkers --------------------------------------------------------------------
# Seeded case factories.

def _seeded(build: Callable[[], Any], seed: int) -> Callable[[], tuple[tuple, dict]]:
    """A case factory building identical objects on every call, leaving the global RNG alone."""
    def factory() -> tuple[tuple, dict]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            built = build()
        return (built if isinstance(built, tuple) else (built,)), {}
    return factory


# --- 04.make_mlp ----------------------------------------------------------------------------------
# Registered Linear layers with ReLU between them.

def make_mlp_reference(sizes: list[int]) -> nn.Module:
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


class _ListMLP(nn.Module):
    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(torch.relu(x) if i > 0 else x)
        return x


def _linears_then(sizes: list[int], act: Callable[[], nn.Module] | None) -> nn.Sequential:
    pairs = zip(sizes[:-1], sizes[1:])
    return nn.Sequential(*[m for a, b in pairs for m in (nn.Linear(a, b), *([act()] if act else []))])


def _chain(linears: list[nn.Linear], x: torch.Tensor, between: bool, last: bool) -> torch.Tensor:
    for i, layer in enumerate(linears):
        x = nn.functional.linear(torch.relu(x) if i > 0 and between else x, layer.weight, layer.bias)
    return torch.relu(x) if last else x


def _hidden_container(module: Any, kinds: tuple[type, ...]) -> bool:
    """True when a public attribute is a plain container of one of ``kinds`` holding modules (not registered)."""
    def holds_module(v: Any) -> bool:
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else []
        return any(isinstance(m, nn.Module) for m in items)
    return isinstance(module, nn.Module) and any(
        isinstance(v, kinds) and holds_module(v) for k, v in vars(module).items() if not k.startswith("_"))


def _hidden_list(module: Any) -> bool:
    return _hidden_container(module, (list, tuple))


class _DictMLP(nn.Module):
    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.layers = {f"fc{i}": nn.Linear(a, b) for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers.values()):
            x = layer(torch.relu(x) if i > 0 else x)
        return x


def _mlp_relu_class(sizes):
    layers = [m for a, b in zip(sizes[:-1], sizes[1:]) for m in (nn.ReLU, nn.Linear(a, b))][1:]
    return nn.Sequential(*layers)   # nn.ReLU, the class, where an instance nn.ReLU() belongs


def _mlp_dropout(sizes):
    layers = [m for a, b in zip(sizes[:-1], sizes[1:]) for m in (nn.ReLU(), nn.Dropout(0.2), nn.Linear(a, b))][2:]
    return nn.Sequential(*layers)


def _mlp_softmax(sizes):
    return nn.Sequential(*make_mlp_reference(sizes), nn.Softmax(dim=-1))


def _mlp_list_to_sequential(sizes):
    layers = [m for a, b in zip(sizes[:-1], sizes[1:]) for m in (nn.ReLU(), nn.Linear(a, b))][1:]
    return nn.Sequential(layers)   # a list instead of the layers themselves


def _mlp_sigmoid(sizes):
    layers = [m for a, b in zip(sizes[:-1], sizes[1:]) for m in (nn.Sigmoid(), nn.Linear(a, b))][1:]
    return nn.Sequential(*layers)


def _mlp_relu_first(sizes):
    return nn.Sequential(*[m for a, b in zip(sizes[:-1], sizes[1:]) for m in (nn.ReLU(), nn.Linear(a, b))])


def _mlp_no_bias(sizes):
    layers = [m for a, b in zip(sizes[:-1], sizes[1:]) for m in (nn.ReLU(), nn.Linear(a, b, bias=False))][1:]
    return nn.Sequential(*layers)


_ACTIVATIONS = (nn.Sigmoid, nn.Tanh, nn.GELU, nn.LeakyReLU, nn.ELU, nn.SiLU, nn.Softplus, nn.ReLU6)


def _mlp_verify(out, ref, args, kwargs):
    (sizes,) = args
    if not isinstance(out, nn.Module):
        return t("expected an nn.Module, found {got}", got=describe(out))
    other = sorted({type(m).__name__ for m in out.modules() if isinstance(m, _ACTIVATIONS)})
    if other:
        return t("found {names} in the model; the task asks for nn.ReLU() between the Linear layers",
                 names=", ".join(other))
    linears = [m for m in out.modules() if isinstance(m, nn.Linear)]
    wanted = list(zip(sizes[:-1], sizes[1:]))
    if len(linears) < len(wanted):
        return t("expected {want} registered nn.Linear layers, model.modules() finds "
                 "{found} (model.parameters() holds {n} tensors)", want=len(wanted), found=len(linears),
                 n=len(list(out.parameters())))
    if [(m.in_features, m.out_features) for m in linears] != wanted:
        return t("expected Linear layers (in, out) = {want}, found {got}", want=wanted,
                 got=[(m.in_features, m.out_features) for m in linears])
    if any(m.bias is None for m in linears):
        return t("expected nn.Linear(sizes[i], sizes[i+1]) layers, which have a bias; found Linear layers with "
                 "bias=False")
    x = torch.randn(64, sizes[0], generator=torch.Generator().manual_seed(len(sizes)))   # 64 rows: a ReLU always shows
    with torch.no_grad():
        got, expected = out(x), _chain(linears, x, True, False)
        problem = compare_tensors(got, expected, name=t("output"))
        if problem and isinstance(got, torch.Tensor) and got.shape == expected.shape:
            if torch.allclose(got, _chain(linears, x, True, True), atol=1e-6):
                return t("the output is never negative: a ReLU follows the last Linear layer")
            if torch.allclose(got, _chain(linears, x, False, False), atol=1e-6):
                return t("the output is an affine function of the input: no ReLU between the Linear layers")
            if torch.allclose(got, _chain(linears, torch.relu(x), True, False), atol=1e-6):
                return t("the output ignores negative inputs: a ReLU comes before the first Linear layer")
    return problem


register(Exercise(
    "04.make_mlp",
    "make_mlp(sizes) returns an nn.Module with nn.Linear(sizes[i], sizes[i+1]) layers, a ReLU "
    "between consecutive layers and none after the last; every layer registered.",
    make_mlp_reference,
    [lambda: (([4, 8, 3],), {}), lambda: (([6, 16, 16, 2],), {}), lambda: (([5, 1],), {})],
    _mlp_verify,
    [
        Mistake("plain Python list (layers not registered)",
                "a list attribute hides its layers from parameters(), .to() and state_dict(): "
                "use nn.Sequential(*layers) or nn.ModuleList(layers).",
                _ListMLP, detect=lambda out, a, k: _hidden_list(out)),
        Mistake("plain Python dict (layers not registered)",
                "a dict attribute hides its layers from parameters(), .to() and state_dict(): use "
                "nn.ModuleDict(layers) (or nn.Sequential(*layers)).",
                _DictMLP, detect=lambda out, a, k: _hidden_container(out, (dict,))),
        Mistake("ReLU after the last layer",
                "the last layer produces scores/logits that may be negative: no activation after it.",
                lambda sizes: _linears_then(sizes, nn.ReLU)),
        Mistake("no activation between layers",
                "stacked Linear layers without a nonlinearity collapse into one affine map: "
                "put nn.ReLU() between them.",
                lambda sizes: _linears_then(sizes, None)),
        Mistake("a list passed to nn.Sequential",
                "nn.Sequential takes the layers as separate arguments: nn.Sequential(*layers), "
                "with the star.",
                _mlp_list_to_sequential, error_match="list is not a Module subclass"),
        Mistake("nn.ReLU without () (the class, not a layer)",
                "nn.ReLU is the class; nn.Sequential needs a layer object: write nn.ReLU() with the parentheses.",
                _mlp_relu_class, error_match="ReLU is not a Module subclass"),
        Mistake("adds Dropout",
                "the task asks for Linear layers with nn.ReLU() between them and nothing else: no nn.Dropout "
                "(which also makes the output random in training mode).",
                _mlp_dropout, detect=lambda out, a, k: isinstance(out, nn.Module)
                and any(isinstance(m, nn.modules.dropout._DropoutNd) for m in out.modules())),
        Mistake("softmax at the end",
                "the last Linear layer's scores (logits) are the output: no nn.Softmax after it "
                "(nn.CrossEntropyLoss applies log-softmax itself).",
                _mlp_softmax, detect=lambda out, a, k: isinstance(out, nn.Module)
                and any(isinstance(m, (nn.Softmax, nn.LogSoftmax, nn.Softmin)) for m in out.modules())),
        Mistake("another activation instead of ReLU",
                "the task asks for nn.ReLU() between the layers (Sigmoid, Tanh, ... are other functions).",
                _mlp_sigmoid, detect=lambda out, a, k: isinstance(out, nn.Module)
                and any(isinstance(m, _ACTIVATIONS) for m in out.modules())),
        Mistake("ReLU before the first layer",
                "the first Linear layer sees the raw input: put a ReLU only BETWEEN two Linear layers "
                "(for i > 0, before layer i).",
                _mlp_relu_first, detect=lambda out, a, k: isinstance(out, nn.Sequential) and len(out) > 0
                and isinstance(out[0], nn.ReLU)),
        Mistake("Linear layers without bias",
                "nn.Linear(sizes[i], sizes[i+1]) has a bias by default; do not pass bias=False.",
                _mlp_no_bias, detect=lambda out, a, k: isinstance(out, nn.Module) and any(
                    isinstance(m, nn.Linear) and m.bias is None for m in out.modules())),
    ],
))


# --- 04.count_trainable ---------------------------------------------------------------------------
# Trainable scalars, frozen and tied weights handled.

def count_trainable_reference(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


_WRONG_COUNTS: dict[str, Callable[[nn.Module], int]] = {
    "frozen": lambda model: sum(p.numel() for p in model.parameters()),
    "twice": lambda model: sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False)
                               if p.requires_grad),
    "state_dict": lambda model: sum(t.numel() for t in model.state_dict().values()),
    "tensors": lambda model: len([p for p in model.parameters() if p.requires_grad]),
    "rows": lambda model: sum(len(p) for p in model.parameters() if p.requires_grad),
    "grad": lambda model: sum(p.numel() for p in model.parameters() if p.grad is not None),
    "buffers": lambda model: sum(p.numel() for p in model.parameters() if p.requires_grad)
    + sum(b.numel() for b in model.buffers()),
    "frozen_only": lambda model: sum(p.numel() for p in model.parameters() if not p.requires_grad),
    "state_dict_requires_grad": lambda model: sum(t.numel() for t in model.state_dict().values() if t.requires_grad),
    "own_only": lambda model: sum(p.numel() for p in model.parameters(recurse=False) if p.requires_grad),
    "modules_x_parameters": lambda model: sum(p.numel() for m in model.modules() for p in m.parameters()
                                              if p.requires_grad),
}


class _Scaled(nn.Module):
    """A parameter of its own (``scale``), a buffer, a frozen first layer that still holds a .grad from before
    it was frozen, a trainable head: every wrong way of counting gives a different number here."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(2))
        self.register_buffer("running_mean", torch.zeros(7))   # state, not trained
        self.body = nn.Linear(4, 3)
        self.head = nn.Linear(3, 2)
        self.body.weight.grad = torch.zeros_like(self.body.weight)   # left from training before freezing
        self.scale.grad = torch.zeros_like(self.scale)
        self.body.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x)) * self.scale


class _TiedLM(nn.Module):
    """Embedding and output layer share one weight matrix (weight tying)."""

    def __init__(self, vocab: int = 50, dim: int = 16, freeze_embedding: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Sequential(nn.Linear(dim, dim), nn.LayerNorm(dim))
        self.head = nn.Linear(dim, vocab)
        self.head.weight = self.embed.weight
        self.embed.weight.requires_grad_(not freeze_embedding)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.mix(self.embed(tokens)))


def _frozen_backbone() -> nn.Module:
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    model[:2].requires_grad_(False)
    return model


def _count_verify(out, ref, args, kwargs):
    if isinstance(out, bool) or not isinstance(out, numbers.Integral):   # int, or a NumPy integer
        return t("expected a Python int (a number of scalars), found {got}", got=describe(out))
    return None if int(out) == ref else t("expected {want} trainable scalars, found {got}", want=ref, got=out)


def _count_mistake(key: str, name: str, hint: str) -> Mistake:
    wrong = _WRONG_COUNTS[key]
    return Mistake(name, hint, wrong, detect=lambda out, args, kwargs: isinstance(out, int)
                   and out == wrong(args[0]) != count_trainable_reference(args[0]))


register(Exercise(
    "04.count_trainable",
    "count_trainable(model) returns the number of scalars (an int) the optimizer can train: "
    "only parameters with requires_grad=True, each shared Parameter counted once.",
    count_trainable_reference,
    [_seeded(_Scaled, 4), _seeded(lambda: nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 3)), 0),
     _seeded(_frozen_backbone, 1), _seeded(_TiedLM, 2),
     _seeded(lambda: _TiedLM(vocab=40, dim=12, freeze_embedding=True), 3)],
    _count_verify,
    [
        _count_mistake("frozen", N_("counts frozen params"),
                       N_("a parameter with requires_grad=False is frozen: the optimizer never changes "
                          "it. Keep only `p.requires_grad` parameters.")),
        _count_mistake("twice", N_("counts shared params twice"),
                       N_("a tied weight is ONE Parameter reachable from two modules; model.parameters() "
                          "yields it once, named_parameters(remove_duplicate=False) or a loop over "
                          "modules yields it twice.")),
        _count_mistake("state_dict", N_("counts buffers and shared weights via state_dict"),
                       N_("state_dict() also holds buffers (BatchNorm's running stats) and lists a tied "
                          "weight under every name; iterate over model.parameters() instead.")),
        _count_mistake("tensors", N_("counts tensors instead of scalars"),
                       N_("len(list(model.parameters())) is the number of tensors; sum p.numel() instead.")),
        _count_mistake("rows", N_("len(p) counts rows, not scalars"),
                       N_("len(p) is the size of a parameter's FIRST dim; p.numel() is its number of scalars.")),
        _count_mistake("grad", N_("tests p.grad instead of p.requires_grad"),
                       N_("p.grad is None until a backward pass has run, whether or not p is trainable; "
                          "test p.requires_grad.")),
        _count_mistake("frozen_only", N_("counts the frozen params only (the requires_grad test inverted)"),
                       N_("`if not p.requires_grad` keeps exactly the frozen parameters; the optimizer trains the "
                          "others: keep the parameters with p.requires_grad True.")),
        _count_mistake("state_dict_requires_grad", N_("state_dict() values never require grad"),
                       N_("state_dict() returns detached tensors (requires_grad is always False there, and buffers "
                          "and tied weights are listed too); test p.requires_grad on model.parameters().")),
        _count_mistake("own_only", N_("parameters(recurse=False) sees only the model's own parameters"),
                       N_("recurse=False leaves out every submodule's parameters; model.parameters() (recurse=True, "
                          "the default) walks the whole tree and yields each Parameter once.")),
        _count_mistake("modules_x_parameters", N_("modules() x parameters() counts nested parameters several times"),
                       N_("m.parameters() already includes every submodule's parameters, so looping over "
                          "model.modules() counts a nested parameter once per enclosing module; iterate over "
                          "model.parameters() once.")),
        _count_mistake("buffers", N_("counts buffers"),
                       N_("buffers (BatchNorm's running mean and variance) are state, not trained: "
                          "count model.parameters() only.")),
    ],
))


# --- 04.kaiming_init ------------------------------------------------------------------------------
# Kaiming-normal Linear weights, zero biases, other modules untouched.

def kaiming_init_reference(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def _wrong_init(weight_init: Callable[[torch.Tensor], Any] | None, zero_bias: bool = True,
                bias_guard: bool = True, linear_only: bool = True) -> Callable[[nn.Module], nn.Module]:
    """A kaiming_init variant with one typical mistake (the examples of the mistakes below)."""
    def init(module: nn.Module) -> nn.Module:
        weight = getattr(module, "weight", None)
        if isinstance(module, nn.Linear) or (not linear_only and weight is not None and weight.dim() >= 2):
            if weight_init is not None:
                weight_init(module.weight)
            if zero_bias and (module.bias is not None or not bias_guard):
                nn.init.zeros_(module.bias)
        return module
    return init


def _init_new_params(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        std = math.sqrt(2 / module.in_features)
        module.weight = nn.Parameter(torch.randn(module.out_features, module.in_features) * std)
        if module.bias is not None:
            module.bias = nn.Parameter(torch.zeros(module.out_features))


def _init_exact_type(module: nn.Module) -> None:
    if type(module) is nn.Linear:
        kaiming_init_reference(module)


def _reseeds(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        torch.manual_seed(0)
        kaiming_init_reference(module)


def _init_inspect(candidate: Callable[[nn.Module], Any]) -> str | None:
    """Two separate Linear layers of one shape must get different weights (a seed inside gives them the same)."""
    grad_mode, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        with torch.random.fork_rng(devices=[]):
            first, second = nn.Linear(32, 32), nn.Linear(32, 32)
            candidate(first)
            candidate(second)
            same = torch.equal(first.weight, second.weight)
    except Exception:  # a broken candidate: the test cases report what it does
        return None
    finally:  # what the candidate changed globally is the test cases' to find
        torch.set_grad_enabled(grad_mode)
        torch.set_default_dtype(dtype)
    if same:
        return t("two separate Linear(32, 32) layers got identical weights from your function: is "
                 "torch.manual_seed called inside it? Seeding resets the global random generator, so every "
                 "layer of the same shape gets the same weights; seed once at the start of a script, never "
                 "inside an init function")
    return None


def _kaiming(w: torch.Tensor) -> Any:
    return nn.init.kaiming_normal_(w, nonlinearity="relu")


def _weight_std_is(std: Callable[[int, int], float]):
    def detect(out, args, kwargs) -> bool:
        m = args[0]
        return isinstance(m, nn.Linear) and abs(m.weight.std().item() / std(m.in_features, m.out_features) - 1) < 0.05
    return detect


def _tail_ratio(w: torch.Tensor) -> float:
    """max |w| / std: about 1.73 for a uniform distribution, above 4 for 100k normal draws."""
    w = w.detach().double()
    return float(w.abs().max() / w.std())


def _looks_uniform(out, args, kwargs) -> bool:
    m = args[0]
    return isinstance(m, nn.Linear) and m.weight.numel() >= 10_000 and _tail_ratio(m.weight) < 2.0


def _non_linear_changed(out, args, kwargs) -> bool:
    module = args[0]
    if isinstance(module, nn.Linear):
        return False
    fresh = _INIT_BUILDERS[type(module)]()[0][0]
    return any(not torch.equal(a, b) for a, b in zip(module.state_dict().values(), fresh.state_dict().values()))


#: module -> {name: (the Parameter object, its dtype)} when its case was built
_INIT_PARAMS: "weakref.WeakKeyDictionary[nn.Module, dict[str, tuple[nn.Parameter, torch.dtype]]]" = (
    weakref.WeakKeyDictionary())


def _remember_params(factory: Callable[[], tuple[tuple, dict]]) -> Callable[[], tuple[tuple, dict]]:
    def remembered() -> tuple[tuple, dict]:
        args, kwargs = factory()
        _INIT_PARAMS[args[0]] = {name: (p, p.dtype) for name, p in args[0].named_parameters()}
        return args, kwargs
    return remembered


def _params_replaced(module: nn.Module) -> str | None:
    for name, (param, dtype) in _INIT_PARAMS.get(module, {}).items():
        now = getattr(module, name, None)
        if now is not param:
            return t("{cls}.{name} is a new object: change the existing Parameter in place "
                     "(nn.init.kaiming_normal_(module.weight, ...), nn.init.zeros_(module.bias)), so that an "
                     "optimizer built earlier, which holds the old Parameter, still trains it",
                     cls=type(module).__name__, name=name)
        if now.dtype != dtype:
            return t("{cls}.{name} has dtype {got}, but the layer's dtype is {want}: "
                     "initialise the existing tensor in place (nn.init functions) instead of assigning new data",
                     cls=type(module).__name__, name=name, got=now.dtype, want=dtype)
    return None


def _init_verify(out, ref, args, kwargs):
    module = args[0]
    if out is not None and out is not module:
        return t("expected the module to be initialised in place (returning nothing, or the module itself), "
                 "found {got} returned", got=describe(out))
    replaced = _params_replaced(module)
    if replaced:
        return replaced
    if not isinstance(module, nn.Linear):
        fresh = _INIT_BUILDERS[type(module)]()[0][0]
        for (key, got), want in zip(module.state_dict().items(), fresh.state_dict().values()):
            if not torch.equal(got, want):
                return t("{cls}.{key} was changed; expected every non-Linear layer left exactly as it was",
                         cls=type(module).__name__, key=key)
        return None
    fan_in, fan_out = module.in_features, module.out_features
    w, want = module.weight.detach(), math.sqrt(2.0 / fan_in)
    if abs(w.std().item() / want - 1) > 0.05 or abs(w.mean().item()) > 0.05 * want:
        return t("{cls}({fan_in}, {fan_out}).weight has mean {mean:.4f} and std "
                 "{std:.4f}; Kaiming for ReLU expects mean 0 and std sqrt(2/fan_in) = "
                 "{want:.4f} (Xavier would give {xavier:.4f})", cls=type(module).__name__, fan_in=fan_in,
                 fan_out=fan_out, mean=w.mean().item(), std=w.std().item(), want=want,
                 xavier=math.sqrt(2 / (fan_in + fan_out)))
    if w.numel() >= 10_000 and _tail_ratio(w) < 2.0:
        return t("{cls}({fan_in}, {fan_out}).weight has the right std but no value beyond "
                 "{ratio:.2f} std from 0: that is a uniform distribution; Kaiming NORMAL draws from "
                 "a normal distribution (values beyond 3 std occur)", cls=type(module).__name__, fan_in=fan_in,
                 fan_out=fan_out, ratio=_tail_ratio(w))
    if module.bias is not None and bool(module.bias.detach().ne(0).any()):
        return t("{cls}({fan_in}, {fan_out}).bias has nonzero entries (max |b| = "
                 "{biggest:.4f}); expected all zeros", cls=type(module).__name__, fan_in=fan_in, fan_out=fan_out,
                 biggest=module.bias.abs().max().item())
    return None


def _perturbed(norm: nn.LayerNorm) -> nn.LayerNorm:
    with torch.no_grad():  # non-default values, so resetting them would show too
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)
    return norm


_INIT_BUILDERS = {
    nn.Conv2d: _seeded(lambda: nn.Conv2d(8, 16, 3), 13),
    nn.LayerNorm: _seeded(lambda: _perturbed(nn.LayerNorm(64)), 14),
    nn.Embedding: _seeded(lambda: nn.Embedding(200, 32), 15),
}

register(Exercise(
    "04.kaiming_init",
    "kaiming_init(module), used as model.apply(kaiming_init): for an nn.Linear (subclasses included), weights "
    "drawn from a Kaiming NORMAL distribution for ReLU (mean 0, std sqrt(2/fan_in)) and zero bias (if it has "
    "one), the module's own parameters changed in place; any other module untouched. It need not return anything.",
    kaiming_init_reference,
    [_remember_params(case) for case in (
        _seeded(lambda: nn.Linear(512, 256), 10), _seeded(lambda: nn.Linear(128, 640), 11),
        _seeded(lambda: nn.Linear(400, 300, bias=False), 12), *_INIT_BUILDERS.values(),
        # a subclass of nn.Linear (MultiheadAttention's out_proj is one): still a Linear layer
        _seeded(lambda: nn.modules.linear.NonDynamicallyQuantizableLinear(256, 128), 16),
        _seeded(lambda: nn.Linear(300, 200).double(), 17))],   # a float64 layer stays float64
    _init_verify,
    [
        Mistake("type(module) == nn.Linear misses subclasses of nn.Linear",
                "test isinstance(module, nn.Linear): a subclass of nn.Linear (MultiheadAttention's out_proj, "
                "for example) is a Linear layer too.",
                _init_exact_type, detect=lambda out, a, k: type(a[0]) is not nn.Linear and isinstance(a[0], nn.Linear)
                and _weight_std_is(lambda i, o: 1 / math.sqrt(3 * i))(out, a, k)
                and a[0].bias is not None and bool(a[0].bias.detach().ne(0).any())),
        Mistake("Xavier instead of Kaiming",
                "Xavier (std sqrt(2/(fan_in+fan_out))) suits tanh; ReLU zeroes half its inputs, so "
                "Kaiming doubles the variance: nn.init.kaiming_normal_(w, nonlinearity='relu').",
                _wrong_init(nn.init.xavier_normal_), detect=_weight_std_is(lambda i, o: math.sqrt(2 / (i + o)))),
        Mistake("biases not zeroed",
                "the default bias init is random: add nn.init.zeros_(module.bias) when the bias exists.",
                _wrong_init(_kaiming, zero_bias=False),
                detect=lambda out, a, k: isinstance(a[0], nn.Linear) and a[0].bias is not None
                and bool(a[0].bias.detach().ne(0).any())),
        Mistake("touches non-Linear layers",
                "model.apply calls your function on EVERY submodule (Conv, LayerNorm, Embedding, ...): "
                "test `isinstance(module, nn.Linear)` before changing anything.",
                _wrong_init(_kaiming, linear_only=False), detect=_non_linear_changed,
                error_match="Fan in and fan out can not be computed"),
        Mistake("fan_out mode instead of fan_in",
                "mode='fan_out' preserves gradient variance in the backward pass; the forward "
                "activations need the default mode='fan_in'.",
                _wrong_init(lambda w: nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")),
                detect=_weight_std_is(lambda i, o: math.sqrt(2 / o))),
        Mistake("weights left at the default init",
                "nn.Linear's default is kaiming_uniform_ with a=sqrt(5), std 1/sqrt(3*fan_in): "
                "re-initialise the weight too.",
                _wrong_init(None), detect=_weight_std_is(lambda i, o: 1 / math.sqrt(3 * i))),
        Mistake("uniform instead of normal",
                "kaiming_uniform_ has the same std but a uniform shape (nothing beyond sqrt(3) std); the "
                "task asks for the normal version: nn.init.kaiming_normal_(w, nonlinearity='relu').",
                _wrong_init(lambda w: nn.init.kaiming_uniform_(w, nonlinearity="relu")), detect=_looks_uniform),
        Mistake("std 2/fan_in (the square root forgotten)",
                "2/fan_in is the VARIANCE; the std is its square root, math.sqrt(2 / fan_in).",
                _wrong_init(lambda w: nn.init.normal_(w, 0.0, 2 / w.shape[1])),
                detect=_weight_std_is(lambda i, o: 2 / i)),
        Mistake("new Parameter objects instead of an in-place change",
                "module.weight = nn.Parameter(...) (or new .data) replaces the tensor: an optimizer built "
                "earlier keeps the old Parameter, and the dtype/device may change. Use the in-place nn.init "
                "functions on module.weight and module.bias.",
                _init_new_params, detect=lambda out, a, k: _params_replaced(a[0]) is not None),
        Mistake("assumes every Linear has a bias",
                "nn.Linear(..., bias=False) has module.bias = None: check `if module.bias is not None`.",
                _wrong_init(_kaiming, bias_guard=False), error_match="'NoneType' object has no attribute"),
    ],
    inspect=_init_inspect,
    returns=False,
    may_modify=("module",),
))


# --- 04.layer_output_stds -------------------------------------------------------------------------
# Forward hooks record each leaf module's output std.

def _stds_with_hooks(model: nn.Module, x: torch.Tensor, of_input: bool = False, bind_name: bool = True,
                     remove: bool = True, as_float: bool = True) -> dict[str, Any]:
    """The reference (default arguments) and, with one flag flipped, a typical mistake."""
    stds: dict[str, Any] = {}
    handles = []
    for name, module in model.named_modules():
        if name and not list(module.children()):
            def hook(m, inputs, output, name=name if bind_name else None):
                value = (inputs[0] if of_input else output).detach().std()
                stds[name if bind_name else last_name] = value.item() if as_float else value
            handles.append(module.register_forward_hook(hook))
            last_name = name  # what a closure without a bound name sees when it finally runs
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles if remove else []:
            handle.remove()
    return stds


def layer_output_stds_reference(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    return _stds_with_hooks(model, x)


def _stds_variance(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    return {name: std ** 2 for name, std in _stds_with_hooks(model, x).items()}


def _is_variance(out, args, kwargs) -> bool:
    if not isinstance(out, dict):
        return False
    _CHECKER_FORWARD[0] = True
    try:
        want = _stds_with_hooks(*args)
    finally:
        _CHECKER_FORWARD[0] = False
    return (sorted(out) == sorted(want) and all(isinstance(v, float) for v in out.values())
            and any(abs(want[k] - 1) > 1e-3 for k in want)
            and all(math.isclose(out[k], want[k] ** 2, rel_tol=1e-4, abs_tol=1e-6) for k in want))


def _stds_twice(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    with torch.no_grad():
        model(x)                     # a warm-up pass: the model runs twice
    return _stds_with_hooks(model, x)


def _stds_hook_returns(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    stds: dict[str, float] = {}
    handles = [module.register_forward_hook(lambda m, i, o, name=name: stds.setdefault(name, o.std().item()))
               for name, module in model.named_modules() if name and not list(module.children())]
    try:
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return stds


def _stds_clear_hooks(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    stds = _stds_with_hooks(model, x)
    for module in model.modules():
        module._forward_hooks.clear()
    return stds


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.ReLU())
        self.head = nn.Linear(12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class _Residual(nn.Module):
    """A custom forward: a skip connection, so chaining the leaves one after another is not the model."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(6, 6)
        self.act = nn.Tanh()
        self.out = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.act(self.inner(x)) + x)


#: model -> [forward calls seen, id of the checker's own hook (a hook the model already has when called),
#: the train flag of every submodule when the case was built]
_STDS_CALLS: "weakref.WeakKeyDictionary[nn.Module, list[Any]]" = weakref.WeakKeyDictionary()
#: True while the checker itself runs a model (those forward passes are not the candidate's)
_CHECKER_FORWARD = [False]


def _stds_case(build: Callable[[], nn.Module], width: int, seed: int, train: bool = False):
    def build_counted() -> tuple[nn.Module, torch.Tensor]:
        model = build().train(train)
        record: list[Any] = [0, 0, [m.training for m in model.modules()]]

        def count_call(module: nn.Module, inputs: tuple, output: Any) -> None:
            record[0] += 0 if _CHECKER_FORWARD[0] else 1
        record[1] = model.register_forward_hook(count_call).id
        _STDS_CALLS[model] = record
        return model, torch.randn(32, width)
    return _seeded(build_counted, seed)


def _forward_calls(model: nn.Module) -> int | None:
    record = _STDS_CALLS.get(model)
    return None if record is None else record[0]


def _own_hook_removed(model: nn.Module) -> bool:
    record = _STDS_CALLS.get(model)
    return record is not None and record[1] not in model._forward_hooks


def _leaf_chain_stds(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    stds = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if name and not list(module.children()):
                x = module(x)
                stds[name] = x.std().item()
    return stds


def _biased(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """std(correction=0) of each leaf's output: the task accepts the biased std as well."""
    outputs: dict[str, torch.Tensor] = {}
    handles = [module.register_forward_hook(lambda m, i, o, name=name: outputs.__setitem__(name, o.detach()))
               for name, module in model.named_modules() if name and not list(module.children())]
    _CHECKER_FORWARD[0] = True
    try:
        with torch.no_grad():
            model(x)
    finally:
        _CHECKER_FORWARD[0] = False
        for handle in handles:
            handle.remove()
    return {name: o.std(correction=0).item() for name, o in outputs.items()}


def _flags_changed(model: nn.Module) -> str | None:
    record = _STDS_CALLS.get(model)
    if record is None:
        return None
    for (name, module), was in zip(model.named_modules(), record[2]):
        if module.training != was:
            mode = "eval" if was is False else "train"
            return t("`{target}` was left in {now} mode (it came in {mode} mode): run model(x) as it is, "
                     "without model.eval() or model.train()", target=f"model{'.' + name if name else ''}",
                     now="train" if module.training else "eval", mode=mode)
    return None


def _stds_verify(out, ref, args, kwargs):
    model = args[0]
    flags = _flags_changed(model)
    if flags:
        return flags
    if _own_hook_removed(model):
        return t("a forward hook the model already had before your call is gone: remove only your own hooks, "
                 "with the handles register_forward_hook returned (never clear module._forward_hooks)")
    calls = _forward_calls(model)
    if calls is not None and calls != 1:
        return t("model(x) ran {calls} time(s); the task is to run model(x) exactly once, with forward hooks on "
                 "the leaf modules recording their outputs (a second run updates BatchNorm statistics again)",
                 calls=calls)
    biased = _biased(*args)
    ref = {key: (value, biased.get(key, value)) for key, value in ref.items()}
    if not isinstance(out, dict):
        return t("expected a dict {{layer name: std}}, found {got}", got=describe(out))
    if sorted(out) != sorted(ref):
        return t("expected keys {want} (one per leaf module), found {got}", want=sorted(ref), got=sorted(out))
    for key, want in ref.items():
        if not isinstance(out[key], float):
            return t("expected a Python float for {key}, found {got}", key=repr(key), got=describe(out[key]))
        if not any(math.isclose(out[key], value, rel_tol=1e-4, abs_tol=1e-6) for value in want):
            return t("expected std {want:.4f} for the output of {key}, found {got:.4f}", want=want[0], key=repr(key),
                     got=out[key])
    left = sum(len(m._forward_hooks) for m in args[0].modules()) - (model in _STDS_CALLS)
    return t("the model still has {left} forward hook(s) of yours after your function returned; expected none",
             left=left) if left else None


register(Exercise(
    "04.layer_output_stds",
    "layer_output_stds(model, x) runs model(x) once with forward hooks and returns {name: std of "
    "that module's output as a float (output.std(); std(correction=0) accepted too)} for every leaf submodule "
    "(named as in named_modules()), removing its own hooks afterwards and leaving the model's mode as it was.",
    layer_output_stds_reference,
    [_stds_case(lambda: nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh()), 5, 20),
     _stds_case(_Block, 6, 21),
     _stds_case(_Residual, 6, 22),                      # a custom forward (skip connection)
     _stds_case(lambda: nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)), 5, 23,
                train=True)],                           # in training mode: it stays there
    _stds_verify,
    [
        Mistake("hooks not removed",
                "register_forward_hook returns a handle: keep them all and call handle.remove() "
                "(in a `finally:`), or the hooks fire on every later forward pass.",
                lambda model, x: _stds_with_hooks(model, x, remove=False)),
        Mistake("records the input instead of the output",
                "a forward hook is called as hook(module, inputs, output): `inputs` is a tuple of "
                "what went in, `output` is what the module produced.",
                lambda model, x: _stds_with_hooks(model, x, of_input=True)),
        Mistake("late-binding name in the hook",
                "a function defined in a loop sees the loop variable's LAST value when it runs; bind "
                "it now: `lambda m, i, o, name=name: ...` or a small factory function.",
                lambda model, x: _stds_with_hooks(model, x, bind_name=False),
                detect=lambda out, a, k: isinstance(out, dict) and len(out) == 1),
        Mistake("runs the model more than once",
                "run model(x) ONCE, with all the hooks registered before it: every forward pass fires the "
                "hooks again and updates BatchNorm's running statistics.",
                _stds_twice, detect=lambda out, a, k: (_forward_calls(a[0]) or 0) > 1),
        Mistake("chains the leaf modules by hand instead of hooking model(x)",
                "calling the leaves one after another is not the model's forward (skip connections, "
                "functional ops, branches are lost); register a forward hook on every leaf and run model(x) once.",
                lambda model, x: _leaf_chain_stds(model, x), detect=lambda out, a, k: _forward_calls(a[0]) == 0),
        Mistake("a hook that returns a value replaces the module's output",
                "whatever a forward hook returns REPLACES the module's output (a float here, which the next layer "
                "cannot take); record the value with a statement (stds[name] = ...) and return None.",
                _stds_hook_returns, error_match="must be Tensor, not float"),
        Mistake("clears hooks that were not its own",
                "module._forward_hooks.clear() also removes hooks that were there before your call; keep the "
                "handles register_forward_hook returns and call handle.remove() on each.",
                _stds_clear_hooks, detect=lambda out, a, k: _own_hook_removed(a[0])),
        Mistake("variance instead of std",
                "output.var() is the SQUARE of the std; the task asks for output.std().",
                _stds_variance, detect=_is_variance),
        Mistake("returns tensors instead of floats",
                "turn each 0-d tensor into a Python number with .item().",
                lambda model, x: _stds_with_hooks(model, x, as_float=False),
                detect=lambda out, a, k: isinstance(out, dict)
                and any(isinstance(v, torch.Tensor) for v in out.values())),
    ],
))
