"""Small measuring helpers for notebook 11 (performance, compile, export).

* :func:`time_it` - mean seconds per call after a warm-up, synchronising asynchronous
  devices before reading the clock (the same contract as exercise ``11.time_it``).
* :func:`device_sync` - the right "wait for queued work" function for a device.
* :class:`Captured` / :func:`capture_messages` - run code and keep its warnings and the
  text it writes to stderr (torch's log lines included), so a notebook can *show* a
  deprecation warning or an export diagnostic on purpose instead of spilling it.
* :func:`quiet_backend_logs` - silence log lines that a CUDA build of torch prints on a
  machine without a GPU (profiler backend start/stop, "no CUDA runtime").

Example:
    >>> import torch, warnings
    >>> from course_utils.profiling import time_it, capture_messages
    >>> x = torch.randn(100)
    >>> time_it(lambda: x * 2, warmup=1, repeats=3) > 0
    True
    >>> with capture_messages() as captured:
    ...     warnings.warn("old API", FutureWarning)
    >>> captured.warnings
    ['FutureWarning: old API']
"""

from __future__ import annotations

from course_utils.i18n import t

import contextlib
import io
import logging
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch


def time_it(fn: Callable[[], Any], warmup: int = 2, repeats: int = 10,
            sync: Callable[[], None] | None = None,
            clock: Callable[[], float] = time.perf_counter) -> float:
    """Mean seconds per call of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls.

    ``sync`` (e.g. ``torch.cuda.synchronize``) is called after the warm-up and after the
    timed calls, so queued asynchronous work is inside the measurement and warm-up work
    is not.
    """
    if repeats < 1:
        raise ValueError(t("expected repeats >= 1, found {repeats}", repeats=repeats))
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / repeats


def device_sync(device: torch.device | str) -> Callable[[], None] | None:
    """``torch.cuda.synchronize`` (or mps) for an accelerator, ``None`` for the CPU.

    >>> device_sync("cpu") is None
    True
    """
    device = torch.device(device)
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return None


@dataclass
class Captured:
    """What ran inside :func:`capture_messages`: its warnings and the text sent to stderr."""

    warnings: list[str] = field(default_factory=list)
    stderr: str = ""


@contextlib.contextmanager
def capture_messages() -> Iterator[Captured]:
    """Collect warnings and everything written to ``sys.stderr`` (torch's log lines included).

    Nothing reaches the real stderr while the block runs; print what you want to show.
    torch's loggers write to whatever ``sys.stderr`` is at the time, so they are caught too.
    """
    captured = Captured()
    buffer = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(buffer):
            warnings.simplefilter("always")
            yield captured
    finally:
        captured.stderr = buffer.getvalue()
        seen: set[str] = set()
        for item in caught:
            text = f"{item.category.__name__}: {item.message}"
            if text not in seen:  # the same warning from several call sites: show it once
                seen.add(text)
                captured.warnings.append(text)


def quiet_backend_logs() -> None:
    """Silence start-up chatter of a CUDA build running on a machine without a GPU.

    Sets ``KINETO_LOG_LEVEL=6`` (the profiler backend's C++ start/stop lines; read when a
    profile starts) and hides the "No CUDA runtime is found" notice that
    ``torch.utils.cpp_extension`` logs when ``torch.compile`` looks for compilers.
    Real warnings from your own code are not affected.
    """
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
