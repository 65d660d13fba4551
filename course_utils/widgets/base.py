"""What every explorer shares: a readout line and a picture, drawn without pyplot.

JupyterLab 4.6 with ipykernel 7 runs widget callbacks on a kernel *subshell*, a thread of its
own, possibly while a cell is plotting. pyplot's global state (current figure, ``plt.show``)
is not thread-safe, so a callback here never touches it: it draws on a fresh
:class:`matplotlib.figure.Figure`, renders it to PNG in memory, and replaces the contents of
the explorer's ``ipywidgets.Output`` in one assignment (``Output.outputs``), with no output
capture (``with out:``) and no ``clear_output``. The first picture is drawn in ``__init__``,
so the widget is complete the moment it is displayed.

An :class:`Explorer` keeps what it shows in ``text`` (the readout) and ``png``; its plain-text
form (what GitHub and static HTML show instead of the live widget) says it is interactive and
repeats the readout. :func:`readout` finds a live explorer by its widget ``model_id`` (the
browser test compares what the page shows with it).

Example:
    >>> from course_utils.widgets.base import Explorer, new_figure
    >>> class Demo(Explorer):
    ...     def render(self):
    ...         fig, ax = new_figure(2, 1)
    ...         ax.plot([0, 1], [0, 1])
    ...         return "slope 1", fig
    >>> demo = Demo([])
    >>> demo.text, demo.png[:4]
    ('slope 1', b'\\x89PNG')
    >>> print(repr(demo).splitlines()[0])
    Interactive widget: it needs a running kernel. The static picture next to this cell shows what it draws.
    >>> readout(demo.model_id) == demo.text
    True
"""

from __future__ import annotations

import base64
import io
import threading
import weakref
from typing import TYPE_CHECKING, Any, Sequence

import ipywidgets as w

from course_utils.i18n import N_, t

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: First line of every explorer's text/plain form (the browser test recognises explorers by it).
INTERACTIVE_NOTE = N_("Interactive widget: it needs a running kernel. "
                       "The static picture next to this cell shows what it draws.")

_LIVE: "weakref.WeakValueDictionary[str, Explorer]" = weakref.WeakValueDictionary()


def new_figure(width: float, height: float, **subplots: Any) -> "tuple[Figure, Any]":
    """A figure with its axes, made without pyplot (safe on any thread)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.subplots(**subplots)


def png_bytes(fig: "Figure") -> bytes:
    """The figure as PNG bytes (the Agg renderer, no pyplot)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight")
    return buffer.getvalue()


def readout(model_id: str) -> str | None:
    """The readout the live explorer with this ``model_id`` gives for its controls' current
    values, computed afresh (None if there is no such explorer)."""
    explorer = _LIVE.get(model_id)
    return None if explorer is None else explorer.render()[0]


class Explorer(w.VBox):
    """Controls above an Output that shows ``text`` and a PNG picture; subclasses define :meth:`render`.

    ``rows`` are the control rows; call :meth:`refresh` from every control's observer.
    """

    def __init__(self, rows: Sequence[w.Widget], **kwargs: Any) -> None:
        self.output = w.Output()
        self.text = ""
        self.png = b""
        self._lock = threading.Lock()
        super().__init__([*rows, self.output], **kwargs)
        _LIVE[self.model_id] = self
        self.refresh()

    def render(self) -> "tuple[str, Figure | None]":  # pragma: no cover - abstract
        """The readout text and the figure for the current control values."""
        raise NotImplementedError

    def refresh(self, _change: Any = None) -> None:
        """Recompute and replace the Output's contents in one assignment."""
        with self._lock:  # two callbacks at once (subshells) must not interleave their results
            text, fig = self.render()
            self.text = text
            outputs: list[dict] = [{"output_type": "stream", "name": "stdout", "text": text + "\n"}]
            if fig is not None:
                self.png = png_bytes(fig)
                outputs.append({"output_type": "display_data", "metadata": {},
                                "data": {"image/png": base64.b64encode(self.png).decode("ascii"),
                                         "text/plain": "<figure>"}})
            else:
                self.png = b""
            self.output.outputs = tuple(outputs)

    def __repr__(self) -> str:
        return t(INTERACTIVE_NOTE) + "\n" + t("It starts at: {text}", text=self.text)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        data = super()._repr_mimebundle_(**kwargs)  # the widget view, plain text cut at 110 chars
        data["text/plain"] = repr(self)
        return data


def draw_on(ax: "Axes | None", width: float, height: float) -> "tuple[Figure, Axes]":
    """``(ax.figure, ax)`` when an axes is given, else a new pyplot-free figure of that size."""
    if ax is not None:
        return ax.figure, ax
    return new_figure(width, height)
