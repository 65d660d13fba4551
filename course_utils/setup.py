"""``setup()``: the first cell of every notebook.

Seeds every random generator, fixes the thread count (so printed numbers are identical on
every run), sets print precision and plot defaults, and prints the versions once. Warns, once
per kernel, when the installed torch is not the version the course's outputs were made with, and
says what to install when it is older than the oldest supported one (:data:`MIN_TORCH`).

Example:
    >>> from course_utils.setup import setup, version_warning
    >>> info = setup(seed=0, verbose=False)
    >>> info["threads"], info["seed"]
    (1, 0)
    >>> version_warning("2.14.1+cpu") is None, version_warning("2.10.0")[:40]
    (True, 'This course was tested with torch 2.14.1')
"""

from __future__ import annotations

import os
import random
import re
import warnings
from typing import Any

from course_utils.i18n import t

#: Digits printed for tensors and arrays: enough to teach, few enough to be identical
#: across CPUs whose float rounding differs in the last bits.
PRINT_PRECISION = 4

#: The torch version every saved output was produced with (requirements.txt pins it).
TESTED_TORCH = "2.14.1"
#: The oldest torch every notebook runs on, top to bottom (`make test-oldest-torch` runs them all
#: on exactly this release, with the torchvision released with it).
MIN_TORCH = "2.9.1"
MIN_TORCHVISION = "0.24.1"
_warned: set[str] = set()


def _release(version: str) -> tuple[int, ...]:
    """``"2.9.1+cu128"`` -> ``(2, 9, 1)``; a pre-release (``2.15.0a0``) counts as its release."""
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    return tuple(int(part or 0) for part in found.groups()) if found else (0,)


def version_warning(version: str) -> str | None:
    """The warning for a torch ``version`` other than :data:`TESTED_TORCH` (build suffix ignored).

    Below :data:`MIN_TORCH` it is one line saying what to run; within the supported range, a
    gentle note that printed details may differ from the saved outputs.

    >>> print(version_warning("2.5.0"))  # doctest: +NORMALIZE_WHITESPACE
    torch 2.5.0 is older than this course supports (2.9.1 or newer): run
    pip install --upgrade "torch>=2.9.1" "torchvision>=0.24.1" (in a notebook: %pip install ...), then restart the kernel.
    """
    if version.split("+")[0] == TESTED_TORCH:
        return None
    if _release(version) < _release(MIN_TORCH):
        return t('torch {version} is older than this course supports ({minimum} or newer): run '
                 'pip install --upgrade "torch>={minimum}" "torchvision>={minimum_vision}" '
                 '(in a notebook: %pip install ...), then restart the kernel.', version=version,
                 minimum=MIN_TORCH, minimum_vision=MIN_TORCHVISION)
    return t("This course was tested with torch {tested}; this kernel has torch {version}. "
             "Most cells still work, but some printed numbers, messages or warnings may differ "
             "from the saved outputs.", tested=TESTED_TORCH, version=version)


def setup(seed: int = 0, threads: int = 1, verbose: bool = True) -> dict[str, Any]:
    """Seed python/numpy/torch, fix threads, set print and plot defaults; return a summary."""
    import numpy as np
    import torch

    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # can only be set once per process, before parallel work starts
        pass
    torch.set_printoptions(precision=PRINT_PRECISION, sci_mode=False)
    np.set_printoptions(precision=PRINT_PRECISION, suppress=True)
    _plot_defaults()
    # torch.compile/export on exactly Python 3.13.0 warns once that its guards run slower there;
    # it says nothing about the code, and would make the first compiling cell differ by patch release.
    warnings.filterwarnings("ignore", message=r"Guards may run slower on Python 3\.13\.0",
                            category=RuntimeWarning)
    message = version_warning(torch.__version__)
    if message and message not in _warned:
        _warned.add(message)
        warnings.warn(message, UserWarning, stacklevel=2)

    from course_utils.devices import pick_device

    device = pick_device()
    info: dict[str, Any] = {
        "seed": seed,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "device": str(device),
    }
    if verbose:
        import platform

        said = bootstrap_line()
        if said:
            print(said)
        import torchvision

        # Versions without the build suffix (+cpu, +cu130): the same course runs on either build.
        print(f"Python {platform.python_version()} | torch {torch.__version__.split('+')[0]} | "
              f"torchvision {torchvision.__version__.split('+')[0]} | numpy {np.__version__}")
        print(f"device: {device} | threads: {info['threads']} | seed: {seed}")
    return info


def bootstrap_line(record: str | None = None) -> str:
    """What the notebook's bootstrap did (``$COURSE_BOOTSTRAP``), as one line; "" if it did not run.

    The bootstrap runs before ``course_utils`` is importable, so it only records what it did; this
    says it, in the learner's language, and forgets it (a second ``setup()`` prints nothing).

    >>> bootstrap_line("installed")
    'course_utils: already installed, nothing to do'
    >>> bootstrap_line("folder:/hub/course")
    'course_utils: using the course folder /hub/course'
    >>> bootstrap_line("pip:git+https://example.org/course")
    'course_utils: installed from git+https://example.org/course (--no-deps: torch and the rest left as they are)'
    """
    if record is None:
        record = os.environ.pop("COURSE_BOOTSTRAP", "")
    kind, _, where = record.partition(":")
    if kind == "installed":
        return t("course_utils: already installed, nothing to do")
    if kind == "folder":
        return t("course_utils: using the course folder {here}", here=where)
    if kind == "pip":
        return t("course_utils: installed from {source} (--no-deps: torch and the rest left as they are)",
                 source=where)
    return ""


def _plot_defaults() -> None:
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # plots are optional outside notebooks
        return

    plt.rcParams.update({
        "figure.figsize": (5.5, 3.2),
        "figure.dpi": 80,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "font.size": 9,
    })
    warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")
