"""A network guard for kernels that run the course's notebooks under test.

``install()`` wraps ``socket.socket.connect``/``connect_ex`` and ``socket.getaddrinfo``
so that any attempt to reach something other than this machine raises
:class:`NetworkBlockedError` (and is appended to ``$COURSE_NETGUARD_LOG`` when set).
Every kernel that executes a notebook for the course's tooling (tests, ``make notebooks``,
benchmarks) installs it at start-up: :func:`kernel_env` gives that kernel's environment.

Example:
    >>> is_local("127.0.0.1"), is_local("::1"), is_local("localhost"), is_local("8.8.8.8")
    (True, True, True, False)
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

_ORIGINAL: dict[str, Any] = {}


class NetworkBlockedError(OSError):
    """Raised when notebook code tries to reach a non-local address."""


def is_local(host: Any) -> bool:
    """True for loopback addresses, localhost and Unix socket paths."""
    if isinstance(host, (bytes, bytearray)):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    if host in ("", "localhost") or host.startswith("/") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == socket.gethostname()


def _refuse(what: str, host: Any) -> None:
    message = (f"network access blocked by the course's test guard: {what} {host!r}. "
               f"Notebooks must run offline: build data locally instead of downloading it.")
    log = os.environ.get("COURSE_NETGUARD_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(message + "\n")
    raise NetworkBlockedError(message)


def _address_host(address: Any) -> Any:
    if isinstance(address, tuple) and address:
        return address[0]
    return address  # AF_UNIX path


def install() -> None:
    """Patch the socket module (idempotent)."""
    if _ORIGINAL:
        return
    _ORIGINAL.update(connect=socket.socket.connect, connect_ex=socket.socket.connect_ex,
                     getaddrinfo=socket.getaddrinfo)

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family != getattr(socket, "AF_UNIX", None) and not is_local(_address_host(address)):
            _refuse("connect to", address)
        return _ORIGINAL["connect"](self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family != getattr(socket, "AF_UNIX", None) and not is_local(_address_host(address)):
            _refuse("connect to", address)
        return _ORIGINAL["connect_ex"](self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not is_local(host):
            _refuse("look up", host)
        return _ORIGINAL["getaddrinfo"](host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def installed() -> bool:
    """True when the guard is active in this process."""
    return bool(_ORIGINAL)


def uninstall() -> None:
    """Restore the original socket functions."""
    if not _ORIGINAL:
        return
    socket.socket.connect = _ORIGINAL["connect"]  # type: ignore[method-assign]
    socket.socket.connect_ex = _ORIGINAL["connect_ex"]  # type: ignore[method-assign]
    socket.getaddrinfo = _ORIGINAL["getaddrinfo"]  # type: ignore[assignment]
    _ORIGINAL.clear()


def kernel_env(ipython_dir: Path | None = None) -> dict[str, str]:
    """Environment variables for every kernel that executes a notebook (tests, authoring, benchmarks).

    The IPython dir holds a startup file that calls :func:`install`, so any attempt to reach a
    non-local address fails the cell, and one that forces the multiprocessing start method when
    ``COURSE_START_METHOD`` is set in the kernel's environment (``spawn``: as on macOS and Windows). The hash seed is fixed and progress bars refresh rarely,
    so saved outputs do not depend on the run.
    """
    if ipython_dir is None:
        ipython_dir = Path(tempfile.mkdtemp(prefix="course-ipython-"))
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-netguard.py").write_text(
        "import course_utils.netguard as _ng\n_ng.install()\ndel _ng\n")
    # COURSE_START_METHOD=spawn (set by the test that runs the worker notebooks as macOS and
    # Windows do) makes every DataLoader worker and DDP rank of the kernel start with that method.
    (startup / "01-start-method.py").write_text(
        "import os as _os\n"
        "if _os.environ.get('COURSE_START_METHOD'):\n"
        "    import multiprocessing as _mp\n"
        "    _mp.set_start_method(_os.environ['COURSE_START_METHOD'], force=True)\n"
        "    del _mp\n"
        "del _os\n")
    return {
        "IPYTHONDIR": str(ipython_dir),
        "PYTHONHASHSEED": "0",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "TQDM_MININTERVAL": "1000",
        "COURSE_NETGUARD": "1",
    }
