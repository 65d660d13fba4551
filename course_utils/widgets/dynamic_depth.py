"""Explorer for notebook 00: a network whose depth is chosen by its input.

The model applies the same layer while ``x.norm() > 1`` (ordinary Python ``while`` inside
``forward``), so a bigger input runs through more layers and autograd records a longer graph.

Example:
    >>> from course_utils.widgets.dynamic_depth import depth_explorer, norm_trajectory
    >>> norm_trajectory(8.0, factor=0.5)
    [8.0, 4.0, 2.0, 1.0]
    >>> norm_trajectory(0.5)  # already small: no layer is applied
    [0.5]
    >>> depth_explorer().text
    'input norm 10, factor 0.5 → 4 layer applications'
"""

from __future__ import annotations

import ipywidgets as widgets
import torch
from matplotlib.ticker import MaxNLocator

from course_utils.i18n import t
from course_utils.widgets.base import Explorer, new_figure


def norm_trajectory(input_norm: float, factor: float = 0.5, max_steps: int = 20) -> list[float]:
    """Norms seen by a 'shrink while norm > 1' forward pass, input first.

    Runs the real computation on a 4-element tensor with the given norm.
    """
    if input_norm <= 0:
        raise ValueError(t("input_norm must be positive, found {value}; try 0.5 or 50", value=input_norm))
    x = torch.full((4,), input_norm / 2.0)  # norm of four equal entries a is 2a
    norms = [round(float(x.norm()), 4)]
    while x.norm() > 1.0 and len(norms) <= max_steps:
        x = factor * x
        norms.append(round(float(x.norm()), 4))
    return norms


def _plot(ax, input_norm: float, factor: float) -> None:
    norms = norm_trajectory(input_norm, factor)
    ax.plot(range(len(norms)), norms, marker="o")
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    # Always show the threshold and at least one step, so a depth-0 run (a single point) still
    # gets readable axes instead of matplotlib's tiny default range around one point.
    low, high = min(norms + [1.0]), max(norms + [1.0])
    ax.set_ylim(low / 2, high * 2)
    ax.set_xlim(-0.5, max(len(norms) - 1, 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if len(norms) == 1:
        ax.annotate("‖x‖ ≤ 1 already: no layer is applied", (0, norms[0]), xytext=(8, 8),
                    textcoords="offset points")
    ax.set_xlabel("layer applications so far")
    ax.set_ylabel("‖x‖")
    ax.set_title(f"input norm {input_norm:g}, factor {factor:g}: depth {len(norms) - 1}")


INPUT_NORMS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
FACTORS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def depth_readout(input_norm: float, factor: float) -> str:
    """The line the explorer shows."""
    depth = len(norm_trajectory(input_norm, factor)) - 1
    return t("input norm {norm}, factor {factor} → {depth} layer applications", norm=f"{input_norm:g}",
             factor=f"{factor:g}", depth=depth)


def depth_explorer(static: bool = False):
    """A slider for the input norm and one for the layer's factor; shows depth and the norms.

    With ``static=True`` draws, without widgets, the depth for a range of input norms.
    """
    if static:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        inputs = [0.5, 2, 5, 10, 50, 100, 500, 1000]
        ax.bar([str(v) for v in inputs], [len(norm_trajectory(v)) - 1 for v in inputs])
        ax.set_xlabel("input norm")
        ax.set_ylabel("layers applied (factor 0.5)")
        ax.set_title("The input decides how deep the network is")
        return fig
    return DepthExplorer()


class DepthExplorer(Explorer):
    """Two sliders (input norm, factor) above the readout and the norm after each layer."""

    def __init__(self, input_norm: float = 10, factor: float = 0.5) -> None:
        self.norm = widgets.SelectionSlider(options=[(f"{v:g}", v) for v in INPUT_NORMS], value=input_norm,
                                            description=t("input ‖x‖"))
        self.factor = widgets.SelectionSlider(options=[(f"{v:g}", v) for v in FACTORS], value=factor,
                                              description=t("factor"))
        super().__init__([widgets.HBox([self.norm, self.factor])])
        self.norm.observe(self.refresh, names="value")
        self.factor.observe(self.refresh, names="value")

    def render(self):
        fig, ax = new_figure(5, 2.6)
        _plot(ax, self.norm.value, self.factor.value)
        fig.tight_layout()
        return depth_readout(self.norm.value, self.factor.value), fig
