"""Helpers shared by the notebook 05 checkers: seeded generators."""

from __future__ import annotations

import torch


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)
