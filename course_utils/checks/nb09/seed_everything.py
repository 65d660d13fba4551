"""09.seed_everything: seed Python's `random`, NumPy and torch, and return a seeded generator."""

from __future__ import annotations

import random

import numpy as np
import torch

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 09.seed_everything --------------------------------------------------------------------------


def seed_everything_reference(seed: int) -> torch.Generator:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds the CPU generator and every CUDA device's
    return torch.Generator().manual_seed(seed)


def _seed_no_numpy(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def _seed_no_random(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def _seed_no_torch(seed):
    random.seed(seed)
    np.random.seed(seed)
    return torch.Generator().manual_seed(seed)


def _seed_generator_unseeded(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator()


def _seed_fixed(seed):
    return seed_everything_reference(42)


_RNG_NAMES = ("Python's `random`", "NumPy's global generator (np.random)", "torch's global generator")
#: The next draw of each global generator, taken right after the candidate returned. The
#: framework builds the reference's inputs (calls the case factory) immediately after running the
#: candidate, so the factory is the one place that sees the candidate's effect on the generators.
_AFTER_CANDIDATE: dict[str, tuple[float, float, float]] = {}


def _global_draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def _expected_draws(seed: int) -> tuple[float, float, float]:
    return (random.Random(seed).random(), float(np.random.RandomState(seed).rand()),
            float(torch.rand(1, generator=torch.Generator().manual_seed(seed))))


def _seed_case(seed: int):
    def make():
        _AFTER_CANDIDATE["draws"] = _global_draws()
        return (seed,), {}
    return make


def _seed_verify(out, ref, args, kwargs):
    (seed,) = args
    if not isinstance(out, torch.Generator):
        return (f"expected seed_everything to return a torch.Generator (for DataLoader(generator=...)), "
                f"found {describe(out)}")
    got, expected = _AFTER_CANDIDATE.get("draws"), _expected_draws(seed)
    for name, value, wanted in zip(_RNG_NAMES, got or (), expected):
        if value != wanted:
            return (f"after seed_everything({seed}) the next number from {name} should be {wanted:.6f} "
                    f"(the first draw after seeding with {seed}); it was not seeded with `seed`")
    if float(torch.rand(1, generator=out)) != expected[2]:
        return f"the returned generator is not seeded: call .manual_seed({seed}) on it"
    return None


def _fixed_seed(out, args, kwargs) -> bool:
    got = _AFTER_CANDIDATE.get("draws")
    return got is not None and any(got == _expected_draws(s) for s in (0, 1, 42, 123, 1234, 2024) if s != args[0])


register(Exercise(
    "09.seed_everything",
    "seed_everything(seed) seeds Python's `random`, NumPy's global generator and torch (CPU and CUDA) "
    "with `seed`, and returns a torch.Generator seeded with `seed` to pass to DataLoader(generator=...).",
    seed_everything_reference,
    [_seed_case(s) for s in (3, 2024, 7)],
    _seed_verify,
    [
        Mistake("hard-coded seed instead of the argument",
                "use the `seed` parameter everywhere (random.seed(seed), ...), not a constant.",
                _seed_fixed, detect=_fixed_seed),
        Mistake("python `random` not seeded",
                "the standard library has its own generator (used by random.shuffle, many augmentations): "
                "add random.seed(seed).",
                _seed_no_random),
        Mistake("numpy not seeded",
                "NumPy's global generator is separate from torch's: add np.random.seed(seed).",
                _seed_no_numpy),
        Mistake("torch not seeded",
                "torch.manual_seed(seed) seeds torch's CPU generator and every GPU's.",
                _seed_no_torch),
        Mistake("returned generator not seeded",
                "torch.Generator() starts from a fixed default seed, not yours: return "
                "torch.Generator().manual_seed(seed).",
                _seed_generator_unseeded),
    ],
))
