"""Helpers shared by the notebook 04 checkers: seeded case factories."""

from __future__ import annotations

from typing import Any, Callable

import torch


def _seeded(build: Callable[[], Any], seed: int) -> Callable[[], tuple[tuple, dict]]:
    """A case factory building identical objects on every call, leaving the global RNG alone."""
    def factory() -> tuple[tuple, dict]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            built = build()
        return (built if isinstance(built, tuple) else (built,)), {}
    return factory
