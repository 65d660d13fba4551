"""Learner-style answers for the checker tests: source text in, function out, and the two assertions
every such answer gets (a wrong answer is [FAIL] with a message that names the fix, a correct one is [OK]).

The source is registered with ``linecache`` under a fake file name, as a notebook cell's source is, so
a checker that reads the candidate's source (``inspect.getsource``) sees it as it would in Jupyter.
"""

from __future__ import annotations

import itertools
import linecache
import textwrap
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from course_utils.exercises import CheckResult, check

_COUNTER = itertools.count()


def define(source: str, name: str | None = None) -> Callable[..., Any]:
    """Execute ``source`` (one or more ``def``s) and return the last function it defines (or ``name``)."""
    source = textwrap.dedent(source).strip() + "\n"
    filename = f"<learner-cell-{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "np": np, "math": __import__("math"),
                            "DataLoader": DataLoader, "pad_sequence": pad_sequence}
    exec(compile(source, filename, "exec"), namespace)
    if name is None:
        name = [line.split("(")[0][4:] for line in source.splitlines() if line.startswith("def ")][-1]
    return namespace[name]


def assert_rejected(exercise_id: str, source: str, words: list[str]) -> CheckResult:
    """A wrong answer: [FAIL], no traceback, and every word of ``words`` in the message."""
    result = check(exercise_id, define(source))
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message, result.message
    lowered = result.message.lower()
    missing = [w for w in words if w.lower() not in lowered]
    assert not missing, (missing, result.message)
    return result


def assert_accepted(exercise_id: str, source: str) -> CheckResult:
    result = check(exercise_id, define(source))
    assert result.status == "ok", result.message
    return result
