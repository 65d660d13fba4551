"""09.fix_train_step: fix the broken training step from the training doctor's report."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 09.fix_train_step ----------------------------------------------------------------------------


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
