"""Checkers of notebook 09 (debugging and reproducibility), in notebook order: ``09.seed_everything``,
``09.nonfinite_layers``, ``09.fix_train_step``.

``09.seed_everything`` reads the next draw of every global generator right after the candidate ran
(in the case factory the framework calls next). ``09.nonfinite_layers`` runs the candidate on models
with a NaN or an Inf layer (and one without) and checks that no hook is left behind.
``09.fix_train_step`` compares one step with the reference's on identical inputs; its mistakes are
named by the training doctor (:func:`course_utils.doctor.diagnose`) run on the candidate.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 09.seed_everything ---------------------------------------------------------------------------
# Seed Python's `random`, NumPy and torch, and return a seeded generator.

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


# --- 09.nonfinite_layers --------------------------------------------------------------------------
# Find the leaf modules whose output has NaN or Inf, with forward hooks.

def nonfinite_layers_reference(model: nn.Module, x: torch.Tensor) -> list[str]:
    found: list[str] = []

    def make_hook(name: str):
        def hook(module, inputs, output):
            if isinstance(output, torch.Tensor) and not torch.isfinite(output).all():
                found.append(name)
        return hook

    leaves = [(name, m) for name, m in model.named_modules() if not list(m.children())]
    handles = [m.register_forward_hook(make_hook(name)) for name, m in leaves]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return found


def _nonfinite_hooks_left(model, x):
    found = []
    for name, m in model.named_modules():
        if not list(m.children()):
            m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                    if not torch.isfinite(o).all() else None)
    with torch.no_grad():
        model(x)
    return found


def _nonfinite_nan_only(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if torch.isnan(o).any() else None)
               for name, m in model.named_modules() if not list(m.children())]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


def _nonfinite_registration_order(model, x):
    bad = set(nonfinite_layers_reference(model, x))
    return [name for name, m in model.named_modules() if name in bad]


def _nonfinite_all_modules(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if not torch.isfinite(o).all() else None)
               for name, m in model.named_modules()]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


class Log(nn.Module):
    """log(x): NaN for negative inputs, -inf at 0 (the kind of layer that breaks training)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class Exp(nn.Module):
    """exp(x): overflows to inf in float32 above about 88."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


class _OutOfOrder(nn.Module):
    """Registers `head` before `body` but runs body first: execution order != registration order."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 2)
        self.scale = Exp()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.scale(self.body(x)))


def _nonfinite_cases():
    def log_chain():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), Log(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        return (model, torch.randn(5, 3, generator=torch.Generator().manual_seed(1))), {}

    def overflow():
        torch.manual_seed(1)
        model = _OutOfOrder()
        with torch.no_grad():
            model.body[0].weight.fill_(30.0)
        return (model, torch.full((2, 3), 2.0)), {}

    def finite():
        torch.manual_seed(2)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        return (model, torch.randn(4, 3, generator=torch.Generator().manual_seed(3))), {}

    return [log_chain, overflow, finite]


def _nonfinite_verify(out, ref, args, kwargs):
    model = args[0]
    if any(m._forward_hooks for m in model.modules()):
        return "your hooks are still registered on the model after the function returned"
    if not isinstance(out, list) or not all(isinstance(n, str) for n in out):
        return f"expected a list of module names (str), found {describe(out)}"
    if out != ref:
        return f"expected {ref} (leaf modules whose output has NaN or Inf, in the order they ran), found {out}"
    return None


register(Exercise(
    "09.nonfinite_layers",
    "nonfinite_layers(model, x) runs model(x) once with forward hooks on every leaf module and returns "
    "the names (from named_modules) of the modules whose output contains NaN or Inf, in the order they "
    "ran; the hooks are removed afterwards.",
    nonfinite_layers_reference,
    _nonfinite_cases(),
    _nonfinite_verify,
    [
        Mistake("hooks not removed",
                "register_forward_hook returns a handle: keep them and call handle.remove() in a "
                "`finally:` block, or every later forward pass keeps running your hook.",
                _nonfinite_hooks_left,
                detect=lambda out, a, k: any(m._forward_hooks for m in a[0].modules())),
        Mistake("checks only NaN, misses Inf",
                "exp overflow and division by zero give inf, not nan: test ~torch.isfinite(out).all().",
                _nonfinite_nan_only),
        Mistake("reports registration order instead of execution order",
                "append the name inside the hook, as the modules run; named_modules() lists them in the "
                "order __init__ created them, which forward() need not follow.",
                _nonfinite_registration_order),
        Mistake("hooks on container modules too",
                "only leaf modules (no children): a Sequential's output is its last layer's output, so it "
                "would be reported twice; keep modules with `not list(m.children())`.",
                _nonfinite_all_modules),
    ],
))


# --- 09.fix_train_step ----------------------------------------------------------------------------
# Fix the broken training step from the training doctor's report.

def fix_train_step_reference(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer,
                             loss_fn: Any) -> float:
    x, y = batch
    model.train()                       # EVAL_MODE_LEFT_ON
    optimizer.zero_grad()               # ZERO_GRAD_MISSING
    loss = loss_fn(model(x), y)         # SOFTMAX_BEFORE_CE: logits straight into the loss
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_no_zero_grad(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_softmax(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(x).softmax(dim=1), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_no_train(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_zero_after_backward(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()


def _step_tensor(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def fix_train_step_inputs(seed: int) -> tuple[nn.Module, tuple, torch.optim.Optimizer, nn.Module]:
    """A small classifier in eval mode with stale gradients (as the notebook's broken program leaves it)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(32, 6, generator=gen)
        y = (x[:, :4] * 3).argmax(dim=1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        nn.functional.cross_entropy(model(x + 1), y).backward()   # last step's gradients, never cleared
    model.eval()                                                   # left over from a validation pass
    return model, (x, y), optimizer, nn.CrossEntropyLoss()


def _fix_case(seed: int):
    def make():
        model, batch, optimizer, loss_fn = fix_train_step_inputs(seed)
        model._case_seed = seed  # lets verify rebuild identical inputs for the reference
        return (model, batch, optimizer, loss_fn), {}
    return make


def _fix_verify(out, ref, args, kwargs):
    if isinstance(out, torch.Tensor) or not isinstance(out, (int, float)):
        return f"expected the loss as a Python float (loss.item()), found {describe(out)}"
    if abs(out - ref) > 1e-5 * max(1.0, abs(ref)):
        return f"returned loss {out:.4f}, expected {ref:.4f} (this batch's cross-entropy before the update)"
    model = args[0]
    expected_model, batch, optimizer, loss_fn = fix_train_step_inputs(model._case_seed)
    fix_train_step_reference(expected_model, batch, optimizer, loss_fn)
    with torch.no_grad():
        diff = max(float((p - q).abs().max()) for p, q in zip(model.parameters(), expected_model.parameters()))
    if diff > 1e-5:
        return f"after one step the parameters differ from the expected ones (largest difference {diff:.3g})"
    return None


def _doctor_says(code: str):
    def detect(out, args, kwargs) -> bool:
        from course_utils.doctor import diagnose

        model, batch, optimizer, loss_fn = fix_train_step_inputs(args[0]._case_seed)
        candidate = _CANDIDATE.get("fn")
        if candidate is None or not isinstance(out, (int, float)):
            return False  # wrong return types are reported by verify, not blamed on a training bug
        return code in diagnose(model, loss_fn, optimizer, batch, train_step=candidate, max_steps=3).codes
    return detect


#: The candidate under check, so the mistake detectors can hand it to the training doctor.
_CANDIDATE: dict[str, Any] = {}


def _remember(candidate: Any) -> None:
    _CANDIDATE["fn"] = candidate
    return None


register(Exercise(
    "09.fix_train_step",
    "train_step(model, batch, optimizer, loss_fn) does one correct training step on batch = (x, y) and "
    "returns the loss as a float: fix the three problems in the doctor's report of the broken step.",
    fix_train_step_reference,
    [_fix_case(s) for s in (0, 1)],
    _fix_verify,
    [
        Mistake("returns a tensor instead of a float",
                "return loss.item(): a tensor keeps the graph (and, on a GPU, the device) alive.",
                _step_tensor, detect=lambda out, a, k: isinstance(out, torch.Tensor)),
        Mistake("zero_grad missing (ZERO_GRAD_MISSING)",
                "the model arrives with last step's gradients in .grad: call optimizer.zero_grad() "
                "before loss.backward().",
                _step_no_zero_grad, detect=_doctor_says("ZERO_GRAD_MISSING")),
        Mistake("softmax before CrossEntropyLoss (SOFTMAX_BEFORE_CE)",
                "pass the model's logits straight to the loss: CrossEntropyLoss applies log_softmax itself.",
                _step_softmax, detect=_doctor_says("SOFTMAX_BEFORE_CE")),
        Mistake("model.train() not called (EVAL_MODE_LEFT_ON)",
                "the model arrives in eval mode (from validation): call model.train() first, so "
                "BatchNorm uses the batch's statistics.",
                _step_no_train, detect=_doctor_says("EVAL_MODE_LEFT_ON")),
        Mistake("zero_grad between backward and step (NO_GRAD_FLOW)",
                "zero the gradients before backward(), not between backward() and step(): the update "
                "would be empty.",
                _step_zero_after_backward, detect=_doctor_says("NO_GRAD_FLOW")),
    ],
    inspect=_remember,
))
