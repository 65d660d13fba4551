"""Notebook 10 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn

from course_utils.checks.nb10 import fix_train_step_inputs
from course_utils.exercises import check
from tests.learner_code import assert_accepted, assert_rejected


# --- 10.seed_everything ----------------------------------------------------------------------------

def test_seed_everything_other_correct_answer_passes() -> None:
    def seed_everything(seed):
        torch.random.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        generator = torch.Generator()
        generator.manual_seed(seed)
        return generator

    assert check("10.seed_everything", seed_everything).passed


def test_seed_everything_default_rng_does_not_seed_numpys_global_generator() -> None:
    def seed_everything(seed):
        random.seed(seed)
        np.random.default_rng(seed)  # a new, separate generator: np.random.rand() is unaffected
        torch.manual_seed(seed)
        return torch.Generator().manual_seed(seed)

    result = check("10.seed_everything", seed_everything)
    assert result.status == "fail" and "Hint (numpy not seeded)" in result.message


def test_seed_everything_draws_are_taken_right_after_the_candidate() -> None:
    def seeds_then_draws(seed):  # seeds correctly, then consumes one number: no longer "fresh"
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.rand(1)
        return torch.Generator().manual_seed(seed)

    result = check("10.seed_everything", seeds_then_draws)
    assert result.status == "fail" and "torch's global generator" in result.message


# --- 10.nonfinite_layers --------------------------------------------------------------------------

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

    assert check("10.nonfinite_layers", nonfinite_layers).passed


# --- 10.fix_train_step ------------------------------------------------------------------------------

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

    assert check("10.fix_train_step", train_step).passed


def test_fix_train_step_broken_program_is_named() -> None:
    def all_three_bugs(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x).softmax(dim=1), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    result = check("10.fix_train_step", all_three_bugs)
    assert result.status == "fail" and "Hint (" in result.message


# --- learners' answers: wrong ones must FAIL with a message naming the fix, right ones must pass ---

_SHARED = torch.Generator()


def _seed(*, python=True, numpy="global", torch_seed="manual_seed", ret="new", value=None):
    def seed_everything(seed):
        s = seed if value is None else value
        if python == "Random":
            random.Random(s)
        elif python:
            random.seed(s)
        if numpy == "global":
            np.random.seed(s)
        elif numpy == "default_rng":
            np.random.default_rng(s)
        if torch_seed == "manual_seed":
            torch.manual_seed(s)
        elif torch_seed == "cuda only":
            torch.cuda.manual_seed_all(s)
        if ret == "global":
            return torch.manual_seed(s)
        if ret == "unseeded":
            return torch.Generator()
        if ret == "shared":
            return _SHARED.manual_seed(s)
        if ret == "none":
            return None
        if ret == "int":
            return s
        return torch.Generator().manual_seed(s)
    return seed_everything


def _nonfinite(*, where="leaves", test="isfinite", finally_=True, remove=True, order="run", dedupe=False,
               names="named"):
    def nonfinite_layers(model, x):
        found = []

        def hook(name):
            def record(module, inputs, output):
                bad = torch.isnan(output).any() if test == "nan" else not torch.isfinite(output).all()
                if bad and not (dedupe and name in found):
                    found.append(name if names == "named" else type(module).__name__)
            return record

        modules = [(n, m) for n, m in model.named_modules()
                   if where == "all" or (where == "children" and n and "." not in n)
                   or (where == "leaves" and not list(m.children()))]
        if where == "children":
            modules = list(model.named_children())
        handles = [m.register_forward_hook(hook(n)) for n, m in modules]
        if finally_:
            try:
                with torch.no_grad():
                    model(x)
            finally:
                for h in handles:
                    h.remove()
        else:
            with torch.no_grad():
                model(x)
            if remove:
                for h in handles:
                    h.remove()
        if order == "registration":
            return [n for n, _ in model.named_modules() if n in found]
        return found
    return nonfinite_layers


def _fix(*, train=True, zero="optimizer", softmax=False, ret="item", backward=True):
    def fix_train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        if train:
            model.train()
        if zero == "optimizer":
            optimizer.zero_grad()
        elif zero == "by hand":
            for p in model.parameters():
                p.grad.zero_()
        out = model(x)
        loss = loss_fn(out.softmax(dim=1) if softmax else out, y)
        if backward:
            loss.backward()
        if zero == "after backward":
            optimizer.zero_grad()
        optimizer.step()
        if zero == "end":
            optimizer.zero_grad()
        if ret == "tensor":
            return loss
        if ret == "none":
            return None
        return loss.item()
    return fix_train_step


WRONG = [
    ("10.seed_everything", _seed(python=False), ["Python's `random`", "random.seed(seed)"]),
    ("10.seed_everything", _seed(python="Random"), ["Python's `random`"]),
    ("10.seed_everything", _seed(numpy=None), ["NumPy", "np.random.seed(seed)"]),
    ("10.seed_everything", _seed(numpy="default_rng"), ["NumPy", "default_rng"]),
    ("10.seed_everything", _seed(torch_seed=None), ["torch's global generator", "torch.manual_seed"]),
    ("10.seed_everything", _seed(torch_seed="cuda only"), ["torch's global generator"]),
    ("10.seed_everything", _seed(ret="global"), ["global generator", "torch.Generator().manual_seed(seed)"]),
    ("10.seed_everything", _seed(ret="unseeded"), ["not seeded", ".manual_seed(3)"]),
    ("10.seed_everything", _seed(ret="shared"), ["same generator object", "NEW"]),
    ("10.seed_everything", _seed(ret="int"), ["torch.Generator"]),
    ("10.seed_everything", _seed(ret="none"), ["forget `return`"]),
    ("10.seed_everything", _seed(value=42), ["hard-coded", "`seed` parameter"]),
    ("10.nonfinite_layers", _nonfinite(finally_=False, remove=False), ["hook(s) were left", "finally"]),
    ("10.nonfinite_layers", _nonfinite(finally_=False), ["test case 4", "raised", "finally"]),
    ("10.nonfinite_layers", _nonfinite(test="nan"), ["misses Inf", "isfinite"]),
    ("10.nonfinite_layers", _nonfinite(order="registration"), ["registration order"]),
    ("10.nonfinite_layers", _nonfinite(where="all"), ["leaf modules"]),
    ("10.nonfinite_layers", _nonfinite(where="children"), ["body.1"]),
    ("10.nonfinite_layers", _nonfinite(dedupe=True), ["test case 3", "runs twice", "`act`"]),
    ("10.nonfinite_layers", _nonfinite(names="type"), ["expected ['1', '2', '3', '4']"]),
    ("10.fix_train_step", _fix(train=False), ["EVAL_MODE_LEFT_ON", "model.train()"]),
    ("10.fix_train_step", _fix(zero=None), ["ZERO_GRAD_MISSING"]),
    ("10.fix_train_step", _fix(zero="end"), ["test case 1", "START of the step"]),
    ("10.fix_train_step", _fix(zero="by hand"), ["test case 3", "optimizer.zero_grad()"]),
    ("10.fix_train_step", _fix(zero="after backward"), ["before backward()"]),
    ("10.fix_train_step", _fix(softmax=True), ["SOFTMAX_BEFORE_CE"]),
    ("10.fix_train_step", _fix(ret="tensor"), ["loss.item()"]),
    ("10.fix_train_step", _fix(ret="none"), ["forget `return`"]),
    ("10.fix_train_step", _fix(backward=False), ["no gradient reached", "loss.backward()"]),
]


@pytest.mark.parametrize(("exercise_id", "wrong", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_learners_wrong_answers_fail_with_a_message_naming_the_fix(exercise_id, wrong, words) -> None:
    result = check(exercise_id, wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


RIGHT = [
    ("10.seed_everything", _seed()),
    ("10.nonfinite_layers", _nonfinite()),
    ("10.fix_train_step", _fix()),
    ("10.fix_train_step", lambda model, batch, optimizer, loss_fn: _fix()(model, batch, optimizer, loss_fn)),
]


@pytest.mark.parametrize(("exercise_id", "right"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_learners_right_answers_pass(exercise_id, right) -> None:
    result = check(exercise_id, right)
    assert result.passed, result.message


# --- more answers written as a learner would (source text, as in a notebook cell) --------------------

_HOOK = "lambda mod, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None"

NONFINITE_WRONG = [
    (f"""
        def nonfinite_layers(model, x):
            found = []
            for name, m in model.named_modules():
                if not list(m.children()):
                    m.register_forward_hook({_HOOK})
            model(x)
            return found""", ["handle.remove()"]),
    (f"""
        def nonfinite_layers(model, x):
            found = []
            handles = [m.register_forward_hook({_HOOK}) for name, m in model.named_modules()]
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found""", ["not a leaf module", "whole model"]),
    (f"""
        def nonfinite_layers(model, x):
            found = []
            handles = [m.register_forward_hook({_HOOK}) for name, m in model.named_children()]
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found""", ["not a leaf module"]),
    (f"""
        def nonfinite_layers(model, x):
            found = []
            handles = [m.register_forward_hook({_HOOK})
                       for name, m in model.named_modules() if not list(m.children())]
            model(x)
            for h in handles:
                h.remove()
            return found""", ["finally"]),
    ("""
        def nonfinite_layers(model, x):
            found = set()
            handles = [m.register_forward_hook(
                           lambda mod, i, o, name=name: found.add(name) if not torch.isfinite(o).all() else None)
                       for name, m in model.named_modules() if not list(m.children())]
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return sorted(found)""", ["in the order they ran"]),
    (f"""
        def nonfinite_layers(model, x):
            found = []
            handles = [m.register_forward_hook({_HOOK})
                       for name, m in model.named_modules() if not list(m.children())]
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found[:1]""", ["found ['1']"]),
]


@pytest.mark.parametrize(("source", "words"), NONFINITE_WRONG, ids=[str(i) for i in range(len(NONFINITE_WRONG))])
def test_nonfinite_learner_wrong_answers_are_named(source, words) -> None:
    assert_rejected("10.nonfinite_layers", source, words)


def test_nonfinite_inference_mode_and_isnan_isinf_pass() -> None:
    assert_accepted("10.nonfinite_layers", """
        def nonfinite_layers(model, x):
            found = []
            handles = [m.register_forward_hook(
                           lambda mod, i, o, name=name: found.append(name) if (o.isnan() | o.isinf()).any() else None)
                       for name, m in model.named_modules() if len(list(m.children())) == 0]
            try:
                with torch.inference_mode():
                    model(x)
            finally:
                for h in handles:
                    h.remove()
            return found""")
