"""Memory calculator for notebook 08: parameters, batch size, precision and optimizer -> breakdown.

The model of memory is the one the notebook measures:

* parameters and gradients: one copy each, at the weights' dtype;
* optimizer state: 0 (SGD), 1 (momentum) or 2 (Adam/AdamW) more copies (Adam's 4-byte
  ``step`` counters are left out: a few bytes per tensor);
* activations: ``batch_size x activation_bytes_per_sample`` (measured in float32), halved when
  the forward runs in 16 bits; under autocast the 16-bit copies of the weights that autograd
  saves (2 bytes per parameter) are added, as the notebook's measurement shows.

Example:
    >>> from course_utils.widgets.memory_calculator import calculator_breakdown, memory_calculator
    >>> b = calculator_breakdown(1000, 8, "float32", "adam", activation_bytes_per_sample=100)
    >>> b.as_dict()
    {'params': 4000, 'grads': 4000, 'optimizer_state': 8000, 'activations': 800}
    >>> calculator_breakdown(1000, 8, "amp", "sgd", 100).activations   # 8*100/2 + 2*1000
    2400
    >>> box = memory_calculator(100, n_params=545_098)
    >>> box.params.value, box.text.split(":")[0]      # exactly the count given, never snapped
    (545098, 'Adam, float32 everywhere, 545,098 parameters, batch 64')
"""

from __future__ import annotations

import ipywidgets as w

from course_utils.i18n import N_, t
from course_utils.memory import STATE_COPIES, MemoryBreakdown, format_bytes
from course_utils.widgets.base import Explorer, new_figure

#: key -> (label, bytes per weight element, activation factor, 16-bit weight copies saved?)
PRECISIONS: dict[str, tuple[str, int, float, bool]] = {
    "float32": (N_("float32 everywhere"), 4, 1.0, False),
    "amp": (N_("AMP: fp32 weights, 16-bit autocast"), 4, 0.5, True),
    "bf16": (N_("bfloat16 everywhere (pure 16-bit)"), 2, 0.5, False),
}
OPTIMIZER_LABELS = {"sgd": "SGD", "momentum": "SGD+momentum", "adam": "Adam", "adamw": "AdamW"}


def calculator_breakdown(n_params: int, batch_size: int, precision: str, optimizer: str,
                         activation_bytes_per_sample: float) -> MemoryBreakdown:
    """The breakdown the calculator shows (see the module docstring for the model)."""
    if precision not in PRECISIONS:
        raise ValueError(t("expected precision in {choices}, found {found}", choices=sorted(PRECISIONS),
                           found=repr(precision)))
    if optimizer not in STATE_COPIES:
        raise ValueError(t("expected optimizer in {choices}, found {found}", choices=sorted(STATE_COPIES),
                           found=repr(optimizer)))
    if n_params < 0 or batch_size < 0 or activation_bytes_per_sample < 0:
        raise ValueError(t("expected non-negative n_params, batch_size and activation_bytes_per_sample, "
                           "found {n_params}, {batch_size}, {per_sample}", n_params=n_params,
                           batch_size=batch_size, per_sample=activation_bytes_per_sample))
    _, width, act_factor, weight_copies = PRECISIONS[precision]
    weights = int(n_params) * width
    activations = batch_size * activation_bytes_per_sample * act_factor
    if weight_copies:
        activations += 2 * n_params
    return MemoryBreakdown(weights, weights, STATE_COPIES[optimizer] * weights, int(round(activations)))


#: The breakdown's parts as the readout names them.
_PART_NAMES = {"params": N_("params"), "grads": N_("grads"), "optimizer_state": N_("optimizer state"),
               "activations": N_("activations")}


def _summary(b: MemoryBreakdown) -> str:
    parts = ", ".join(t("{part} {size}", part=t(_PART_NAMES.get(k, k.replace("_", " "))), size=format_bytes(v))
                      for k, v in b.as_dict().items())
    return t("total {total} = {parts}", total=format_bytes(b.total), parts=parts)


def calculator_readout(n_params: int, batch_size: int, precision: str, optimizer: str,
                       activation_bytes_per_sample: float) -> str:
    """The line the calculator shows: the exact settings, then the breakdown."""
    b = calculator_breakdown(n_params, batch_size, precision, optimizer, activation_bytes_per_sample)
    return t("{opt}, {precision}, {n_params} parameters, batch {batch_size}: {summary}",
             opt=OPTIMIZER_LABELS[optimizer], precision=t(PRECISIONS[precision][0]), n_params=f"{n_params:,}",
             batch_size=batch_size, summary=_summary(b))


def parameter_choices(n_params: int) -> list[int]:
    """Slider stops: 1, 2 and 5 times the powers of ten from 10^4 to 10^10, and ``n_params`` exactly."""
    return sorted({m * 10**k for k in range(4, 10) for m in (1, 2, 5)} | {10**10, int(n_params)})


def memory_calculator(activation_bytes_per_sample: float, n_params: int = 1_000_000, batch_size: int = 64,
                      model_name: str = "the model", static: bool = False):
    """Sliders for parameters and batch size, menus for precision and optimizer; bars update live.

    ``activation_bytes_per_sample`` is measured once on a real model (float32 forward) and
    stays fixed while you move the parameter slider, which starts at ``n_params`` exactly.
    ``static=True`` prints the line the widget starts with (Adam, float32) and returns a figure
    comparing every optimizer and precision at the given size.
    """
    if static:
        import matplotlib.pyplot as plt

        from course_utils.viz.memory import plot_memory_breakdown

        print(calculator_readout(n_params, batch_size, "float32", "adam", activation_bytes_per_sample))
        configs = {f"{OPTIMIZER_LABELS[o]}, float32": calculator_breakdown(
            n_params, batch_size, "float32", o, activation_bytes_per_sample) for o in STATE_COPIES}
        for p, label in (("amp", "AMP (16-bit autocast)"), ("bf16", "pure bfloat16")):
            configs[f"Adam, {label}"] = calculator_breakdown(n_params, batch_size, p, "adam",
                                                             activation_bytes_per_sample)
        _, ax = plt.subplots(figsize=(6.5, 0.55 * len(configs) + 1.4))
        plot_memory_breakdown(configs, ax=ax, title=f"{n_params:,} parameters, batch {batch_size} "
                                                    f"({model_name}'s activations)")
        return ax.figure
    return MemoryCalculator(activation_bytes_per_sample, n_params, batch_size)


class MemoryCalculator(Explorer):
    """The live calculator; ``text`` is the line it shows (see :func:`calculator_readout`)."""

    def __init__(self, activation_bytes_per_sample: float, n_params: int = 1_000_000,
                 batch_size: int = 64) -> None:
        self.activation_bytes_per_sample = activation_bytes_per_sample
        self.params = w.SelectionSlider(options=[(f"{n:,}", n) for n in parameter_choices(n_params)],
                                        value=int(n_params), description=t("parameters"))
        sizes = sorted({2**k for k in range(11)} | {batch_size})
        self.batch = w.SelectionSlider(options=sizes, value=batch_size, description=t("batch size"))
        self.precision = w.Dropdown(options=[(t(v[0]), k) for k, v in PRECISIONS.items()], value="float32",
                                    description=t("precision"))
        self.optimizer = w.ToggleButtons(options=[(v, k) for k, v in OPTIMIZER_LABELS.items()], value="adam",
                                         description=t("optimizer"))
        super().__init__([w.HBox([self.params, self.batch]), w.HBox([self.precision]), self.optimizer])
        for control in (self.params, self.batch, self.precision, self.optimizer):
            control.observe(self.refresh, names="value")

    def render(self):
        from course_utils.viz.memory import plot_memory_breakdown

        args = (self.params.value, self.batch.value, self.precision.value, self.optimizer.value,
                self.activation_bytes_per_sample)
        fig, ax = new_figure(6.5, 1.8)
        plot_memory_breakdown({OPTIMIZER_LABELS[self.optimizer.value]: calculator_breakdown(*args)}, ax=ax,
                              title=f"{self.params.value:,} params, batch {self.batch.value}, "
                                    f"{PRECISIONS[self.precision.value][0]}")
        return calculator_readout(*args), fig
