"""Explorer for notebook 00: a network whose depth is chosen by its input.

The model applies the same layer while ``x.norm() > 1`` (ordinary Python ``while`` inside
``forward``), so a bigger input runs through more layers and autograd records a longer graph.

Example:
    >>> from course_utils.widgets.dynamic_depth import depth_explorer, norm_trajectory
    >>> norm_trajectory(8.0, factor=0.5)
    [8.0, 4.0, 2.0, 1.0]
    >>> norm_trajectory(0.5)  # already small: no layer is applied
    [0.5]
"""

from __future__ import annotations

import ipywidgets as widgets
import torch


def norm_trajectory(input_norm: float, factor: float = 0.5, max_steps: int = 20) -> list[float]:
    """Norms seen by a 'shrink while norm > 1' forward pass, input first.

    Runs the real computation on a 4-element tensor with the given norm.
    """
    if input_norm <= 0:
        raise ValueError(f"input_norm must be positive, found {input_norm}; try 0.5 or 50")
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
    ax.set_xlabel("layer applications so far")
    ax.set_ylabel("‖x‖")
    ax.set_title(f"input norm {input_norm:g}, factor {factor:g}: depth {len(norms) - 1}")


def depth_explorer(static: bool = False):
    """A slider for the input norm and one for the layer's factor; shows depth and the norms.

    With ``static=True`` draws, without widgets, the depth for a range of input norms.
    """
    import matplotlib.pyplot as plt

    if static:
        fig, ax = plt.subplots()
        inputs = [0.5, 2, 5, 10, 50, 100, 500, 1000]
        ax.bar([str(v) for v in inputs], [len(norm_trajectory(v)) - 1 for v in inputs])
        ax.set_xlabel("input norm")
        ax.set_ylabel("layers applied (factor 0.5)")
        ax.set_title("The input decides how deep the network is")
        return fig

    norm = widgets.FloatLogSlider(value=10, base=10, min=-0.5, max=3, step=0.1,
                                  description="input ‖x‖")
    factor = widgets.FloatSlider(value=0.5, min=0.1, max=0.9, step=0.1, description="factor")
    out = widgets.Output()

    def update(_change=None) -> None:
        out.clear_output(wait=True)
        with out:
            depth = len(norm_trajectory(norm.value, factor.value)) - 1
            print(f"input norm {norm.value:.3g} → {depth} layer applications")
            fig, ax = plt.subplots(figsize=(5, 2.6))
            _plot(ax, norm.value, factor.value)
            plt.show()

    norm.observe(update, names="value")
    factor.observe(update, names="value")
    update()
    box = widgets.VBox([widgets.HBox([norm, factor]), out])
    return box

