"""Initialisation explorer: pick an init scheme and an activation, see the activation std per layer.

The network is ``depth`` blocks of ``Linear(width, width)`` + activation, initialised with
``model.apply`` and fed a standard-normal batch; after every activation the std of its
output is recorded. Four schemes: PyTorch's ``default`` (kaiming_uniform_ with a=sqrt(5) and a
random bias), ``kaiming`` (normal, ReLU gain, zero bias), ``xavier`` (normal, zero bias) and
``zero`` (weights and biases 0).

Example:
    >>> from course_utils.widgets.init_explorer import activation_stds, init_explorer
    >>> stds = activation_stds("kaiming", "relu", depth=20, width=64, batch=64)
    >>> len(stds), 0.2 < stds[-1] < 2.0
    (20, True)
    >>> activation_stds("zero", "tanh", depth=20, width=8, batch=4)[-1]
    0.0
    >>> fig = init_explorer(static=True, depth=20, width=32)
    >>> [ax.get_title() for ax in fig.axes]
    ['ReLU, 20 layers', 'tanh, 20 layers']
    >>> box = init_explorer(depth=20, width=32)
    >>> box.children[0].children[0].value = "zero"          # the init dropdown
    >>> box.current["init"], box.current["stds"][-1]
    ('zero', 0.0)
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch import nn

from course_utils.i18n import t
from course_utils.widgets.base import Explorer, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INITS = ("default", "kaiming", "xavier", "zero")
ACTIVATIONS = ("relu", "tanh")


def init_function(scheme: str) -> Callable[[nn.Module], None]:
    """The function to pass to ``model.apply`` for one scheme (``default`` changes nothing)."""
    if scheme not in INITS:
        raise ValueError(f"expected an init scheme in {INITS}, found {scheme!r}")

    def init(module: nn.Module) -> None:
        if not isinstance(module, nn.Linear) or scheme == "default":
            return
        if scheme == "kaiming":
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        elif scheme == "xavier":
            nn.init.xavier_normal_(module.weight)
        else:
            nn.init.zeros_(module.weight)
        nn.init.zeros_(module.bias)

    return init


def deep_mlp(depth: int, width: int, activation: str) -> nn.Sequential:
    """``depth`` blocks of Linear(width, width) followed by ReLU or Tanh."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"expected an activation in {ACTIVATIONS}, found {activation!r}")
    if depth < 1 or width < 1:
        raise ValueError(f"expected depth >= 1 and width >= 1, found depth={depth}, width={width}")
    act = nn.ReLU if activation == "relu" else nn.Tanh
    return nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), act())])


@lru_cache(maxsize=64)
def _stds(scheme: str, activation: str, depth: int, width: int, batch: int, seed: int) -> tuple[float, ...]:
    # A private generator, never the global one: the explorer's callbacks may run on another
    # thread while a cell draws random numbers. It makes exactly the draws (same order, same
    # functions) that ``torch.manual_seed(seed)``, building ``deep_mlp``, ``apply(init_function)``
    # and ``torch.randn`` make, so the numbers equal that global-RNG recipe.
    if scheme not in INITS:
        raise ValueError(f"expected an init scheme in {INITS}, found {scheme!r}")
    g = torch.Generator().manual_seed(seed)
    with torch.device("meta"):
        net = deep_mlp(depth, width, activation)
    net = net.to_empty(device="cpu")
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, nn.Linear):  # what nn.Linear.reset_parameters() draws
                nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=g)
                bound = 1 / math.sqrt(layer.in_features)
                nn.init.uniform_(layer.bias, -bound, bound, generator=g)
        for layer in net:
            if not isinstance(layer, nn.Linear) or scheme == "default":
                continue
            if scheme == "kaiming":
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu", generator=g)
            elif scheme == "xavier":
                nn.init.xavier_normal_(layer.weight, generator=g)
            else:
                nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        x = torch.randn(batch, width, generator=g)
    stds = []
    with torch.no_grad():
        for layer in net:
            x = layer(x)
            if not isinstance(layer, nn.Linear):
                stds.append(x.std().item())
    return tuple(stds)


def activation_stds(scheme: str, activation: str, depth: int = 24, width: int = 256,
                    batch: int = 256, seed: int = 0) -> list[float]:
    """Std of every activation's output (one value per block), deterministic for a seed.

    Leaves the global random state untouched; results are cached.
    """
    return list(_stds(scheme, activation, depth, width, batch, seed))


def _summary(scheme: str, stds: list[float]) -> str:
    if max(stds) == 0:
        return t("{scheme}: every activation is exactly 0 in every layer; all units compute the "
                 "same thing, so they also get the same gradient (symmetry is never broken)", scheme=scheme)
    return t("{scheme}: std after layer 1 = {first}, after layer {depth} = {last} (x{ratio} overall)",
             scheme=scheme, first=f"{stds[0]:.3g}", depth=len(stds), last=f"{stds[-1]:.3g}",
             ratio=f"{stds[-1] / stds[0]:.3g}")


def _static(depth: int, width: int) -> "Figure":
    import matplotlib.pyplot as plt

    from course_utils.viz.activations import plot_activation_stds, zero_floor

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    tables = {a: {s: activation_stds(s, a, depth, width) for s in INITS} for a in ACTIVATIONS}
    floor = zero_floor(*tables.values())
    for ax, (activation, stds) in zip(axes, tables.items()):
        name = "ReLU" if activation == "relu" else "tanh"
        plot_activation_stds(stds, ax=ax, title=f"{name}, {depth} layers", floor=floor)
    fig.tight_layout()
    return fig


def init_explorer(static: bool = False, depth: int = 24, width: int = 256) -> Any:
    """A dropdown (init scheme), toggle buttons (activation) and a depth slider above a plot.

    ``static=True`` returns a matplotlib figure instead: both activations, all four schemes.
    The live widget keeps what it shows in ``box.current`` (init, activation, depth, stds).
    """
    if depth < 20:
        raise ValueError(t("the explorer is about deep nets: expected depth >= 20, found {depth}", depth=depth))
    if static:
        return _static(depth, width)

    return InitExplorer(depth, width)


class InitExplorer(Explorer):
    """Init dropdown and activation toggle, depth slider, and the std-per-layer plot.

    ``current`` holds what it shows (init, activation, depth, stds of the chosen init).
    """

    def __init__(self, depth: int = 24, width: int = 256) -> None:
        import ipywidgets as widgets

        self.width = width
        self.scheme = widgets.Dropdown(options=INITS, value="default", description=t("init"))
        self.activation = widgets.ToggleButtons(options=ACTIVATIONS, value="relu", description=t("activation"))
        self.layers = widgets.IntSlider(value=depth, min=20, max=max(60, depth), step=4, description=t("layers"))
        self.current: dict[str, Any] = {}
        super().__init__([widgets.HBox([self.scheme, self.activation]), self.layers])
        for control in (self.scheme, self.activation, self.layers):
            control.observe(self.refresh, names="value")

    def render(self):
        from course_utils.viz.activations import plot_activation_stds

        scheme, activation, depth = self.scheme.value, self.activation.value, self.layers.value
        stds = {s: activation_stds(s, activation, depth, self.width) for s in INITS}
        self.current = {"init": scheme, "activation": activation, "depth": depth, "stds": stds[scheme]}
        fig, ax = new_figure(6.4, 4.8)
        plot_activation_stds(stds, ax=ax, highlight=scheme, title=f"{scheme} init, {activation}, {depth} layers")
        return _summary(scheme, stds[scheme]), fig
