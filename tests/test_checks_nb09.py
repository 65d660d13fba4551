"""Notebook 09 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import random

import numpy as np
import torch
from torch import nn

from course_utils.checks.nb09 import fix_train_step_inputs
from course_utils.exercises import check


# --- 09.seed_everything ----------------------------------------------------------------------------

def test_seed_everything_other_correct_answer_passes() -> None:
    def seed_everything(seed):
        torch.random.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        generator = torch.Generator()
        generator.manual_seed(seed)
        return generator

    assert check("09.seed_everything", seed_everything).passed


def test_seed_everything_default_rng_does_not_seed_numpys_global_generator() -> None:
    def seed_everything(seed):
        random.seed(seed)
        np.random.default_rng(seed)  # a new, separate generator: np.random.rand() is unaffected
        torch.manual_seed(seed)
        return torch.Generator().manual_seed(seed)

    result = check("09.seed_everything", seed_everything)
    assert result.status == "fail" and "Hint (numpy not seeded)" in result.message


def test_seed_everything_draws_are_taken_right_after_the_candidate() -> None:
    def seeds_then_draws(seed):  # seeds correctly, then consumes one number: no longer "fresh"
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.rand(1)
        return torch.Generator().manual_seed(seed)

    result = check("09.seed_everything", seeds_then_draws)
    assert result.status == "fail" and "torch's global generator" in result.message


# --- 09.nonfinite_layers --------------------------------------------------------------------------

def test_nonfinite_layers_other_correct_answer_passes() -> None:
    def nonfinite_layers(model, x):
        names, handles = [], []
        for name, module in model.named_modules():
            if len(list(module.children())) == 0:
                handles.append(module.register_forward_hook(
                    lambda m, i, o, name=name: names.append(name) if (~torch.isfinite(o)).any() else None))
        try:
            model(x)
        finally:
            for handle in handles:
                handle.remove()
        return names

    assert check("09.nonfinite_layers", nonfinite_layers).passed


# --- 09.fix_train_step ------------------------------------------------------------------------------

def test_fix_inputs_start_broken() -> None:
    model, (x, y), optimizer, loss_fn = fix_train_step_inputs(0)
    assert not model.training, "the model arrives in eval mode"
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert isinstance(loss_fn, nn.CrossEntropyLoss) and y.dtype == torch.int64


def test_fix_train_step_other_correct_answer_passes() -> None:
    def train_step(model, batch, optimizer, loss_fn):
        inputs, labels = batch
        model.train()
        model.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = loss_fn(logits, labels)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    assert check("09.fix_train_step", train_step).passed


def test_fix_train_step_broken_program_is_named() -> None:
    def all_three_bugs(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x).softmax(dim=1), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    result = check("09.fix_train_step", all_three_bugs)
    assert result.status == "fail" and "Hint (" in result.message
