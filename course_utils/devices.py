"""Device helpers: pick the best device, describe it, and skip GPU-only cells politely.

Example:
    >>> from course_utils.devices import pick_device, gpu_available, skip_unless_gpu
    >>> pick_device().type in {"cpu", "cuda", "mps"}
    True
    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()) as printed:
    ...     ok = skip_unless_gpu("fp16 autocast")
    >>> ok == gpu_available() and (ok or "Skipped" in printed.getvalue())
    True
"""

from __future__ import annotations

import torch


def pick_device(prefer: str | None = None) -> torch.device:
    """cuda if available, else mps, else cpu. ``prefer`` forces one (e.g. "cpu")."""
    if prefer is not None:
        return torch.device(prefer)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def gpu_available() -> bool:
    """True when a CUDA GPU can be used."""
    return torch.cuda.is_available()


def describe(device: torch.device | None = None) -> str:
    """One line naming the device (GPU name and memory when there is one).

    >>> describe(torch.device("cpu")).startswith("cpu")
    True
    """
    device = device or pick_device()
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"cuda: {props.name}, {props.total_memory / 2**30:.1f} GiB"
    if device.type == "mps":
        return "mps: Apple GPU"
    return f"cpu: {torch.get_num_threads()} thread(s) used by torch"


def skip_unless_gpu(what: str) -> bool:
    """Return True when a GPU is there; otherwise print why the cell skips and return False.

    Use it as ``if skip_unless_gpu("fp16 speed-up"): ...`` so the cell explains itself
    on a laptop and runs for real on a GPU machine.
    """
    if gpu_available():
        return True
    print(f"Skipped on this machine (no CUDA GPU): {what}. "
          f"On a GPU machine this cell runs and prints its measurements.")
    return False
