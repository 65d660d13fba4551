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

from course_utils.i18n import N_, t

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
    return t("cpu: {n} thread(s) used by torch", n=torch.get_num_threads())


GPU_RESULTS = "benchmarks/GPU_RESULTS.md"
"""Where numbers measured by the GPU cells are recorded once a GPU run has produced them."""

GPU_RUN_RECORDED = False
"""Whether GPU_RESULTS holds measurements yet. Set it to True in the commit that records a GPU run,
so that the skip message stops saying that none is recorded."""


def skip_unless_gpu(what: str, expect: str | None = None) -> bool:
    """Return True when a GPU is there; otherwise say what the cell would show, and return False.

    Use it as ``if skip_unless_gpu("fp16 speed-up", expect="..."): ...`` so the cell runs for
    real on a GPU machine and, on a laptop, says honestly what it would have measured. ``expect``
    is the typical result on a recent NVIDIA GPU, in one sentence; it is printed as such, never
    as a measurement of this machine.

    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()) as printed:
    ...     ran = skip_unless_gpu("pinned copies", expect="pinned copies about 2x faster")
    >>> ran or "What you would see on a GPU: pinned copies about 2x faster" in printed.getvalue()
    True
    >>> skip_unless_gpu("")
    Traceback (most recent call last):
    ...
    ValueError: skip_unless_gpu(what=...) needs a short description of what the cell measures, found ''
    """
    if not isinstance(what, str) or not what.strip():
        raise ValueError(t("skip_unless_gpu(what=...) needs a short description of what the cell measures, "
                           "found {found}", found=repr(what)))
    if gpu_available():
        return True
    print(t("Skipped on this machine (no CUDA GPU): {what}.", what=what))
    if expect:
        print(t("What you would see on a GPU: {expect}", expect=expect.strip()))
        if GPU_RUN_RECORDED:
            print(t("(typical figures, not measured here; what this cell measured on a GPU is recorded in {path})",
                    path=GPU_RESULTS))
        else:
            print(t("(typical figures, not measurements: no GPU run of this course is recorded yet, so {path} "
                    "lists this cell without numbers)", path=GPU_RESULTS))
    else:
        print(t("On a GPU machine this cell runs and prints its measurements."))
    return False


#: What to install for ``torch.compile`` on the CPU, per platform (``sys.platform`` prefix).
COMPILER_INSTALL = {
    "linux": N_("a C++ compiler: g++ (Debian/Ubuntu: `sudo apt install g++`; Fedora: `sudo dnf install gcc-c++`)"),
    "darwin": N_("Apple's command line tools (`xcode-select --install`), which provide clang++"),
    "win32": N_("Visual Studio Build Tools with the 'Desktop development with C++' workload, then start "
                "Jupyter from a 'Developer PowerShell for VS' so that `cl` is on PATH"),
}


def cpp_compiler() -> str | None:
    """The C++ compiler ``torch.compile`` (Inductor) would use here, or None when it finds none.

    Inductor looks for ``$CXX``, else ``g++`` (``clang++`` on macOS, ``cl`` on Windows).

    >>> cpp_compiler() is None or isinstance(cpp_compiler(), str)
    True
    """
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return str(get_cpp_compiler())
    except Exception:  # InvalidCxxCompiler, or a torch without this (internal) function
        import os
        import shutil
        import sys

        default = "cl" if sys.platform == "win32" else "clang++" if sys.platform == "darwin" else "g++"
        found = shutil.which(os.environ.get("CXX") or default)
        return found if found and _runs(found) else None


def _runs(compiler: str) -> bool:
    import subprocess

    try:
        subprocess.run([compiler, "--version"], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def compiler_help() -> str:
    """One sentence: what to install on this platform so that ``torch.compile`` finds a compiler."""
    import sys

    for prefix, what in COMPILER_INSTALL.items():
        if sys.platform.startswith(prefix):
            return t("To run it, install {what}, then restart the kernel.", what=t(what))
    return t("To run it, install a C++ compiler (g++ or clang++) and put it on PATH, then restart the kernel.")


def skip_unless_compiler(what: str) -> bool:
    """Return True when ``torch.compile`` can build code here; otherwise say why not and what to install.

    ``torch.compile`` generates C++ (on the CPU) and needs a C++ compiler to build it. Use it as
    ``if skip_unless_compiler("the compiled training step"): ...``: the cell runs where a compiler
    exists and, elsewhere, prints one line naming what was skipped and one saying what to install.

    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()) as printed:
    ...     ran = skip_unless_compiler("the compiled step")
    >>> ran or "install" in printed.getvalue()
    True
    >>> skip_unless_compiler(" ")
    Traceback (most recent call last):
    ...
    ValueError: skip_unless_compiler(what=...) needs a short description of what the cell compiles, found ' '
    """
    if not isinstance(what, str) or not what.strip():
        raise ValueError(t("skip_unless_compiler(what=...) needs a short description of what the cell compiles, "
                           "found {found}", found=repr(what)))
    if cpp_compiler() is not None:
        return True
    print(t("Skipped on this machine (torch.compile found no C++ compiler): {what}.", what=what))
    print(compiler_help())
    return False
