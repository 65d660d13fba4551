"""Shared test configuration: every kernel started by the tests gets the authoring environment."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

from course_utils.netguard import kernel_env

ROOT = Path(__file__).resolve().parent
# tools/nbgrader_stubs.py subclasses nbgrader's ClearSolutions: its doctest needs the instructors'
# extra (requirements-instructor.txt), which `make unit` alone does not install.
collect_ignore = [] if importlib.util.find_spec("nbgrader") else ["tools/nbgrader_stubs.py"]


def pytest_configure(config: pytest.Config) -> None:
    # Same environment as `make notebooks`, so nbval kernels behave like the authoring run:
    # fixed hash seed and the network guard installed at kernel start-up.
    os.environ.update(kernel_env())
    # Two xdist workers share two cores: one torch thread each keeps the tiny models of the
    # checker tests from oversubscribing the machine (and matches the notebooks' setup()).
    import torch

    torch.set_num_threads(1)
    if not hasattr(config, "workerinput"):  # controller (or a run without xdist)
        log = Path(tempfile.mkdtemp(prefix="course-netguard-")) / "attempts.log"
        log.touch()
        os.environ["COURSE_NETGUARD_LOG"] = str(log)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    log = os.environ.get("COURSE_NETGUARD_LOG")
    if log and Path(log).exists() and Path(log).read_text().strip():
        print("\nNetwork access attempted by a notebook (blocked):\n" + Path(log).read_text())
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
