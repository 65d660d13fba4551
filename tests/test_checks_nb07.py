"""Notebook 07 checkers: every typical wrong answer gets a [FAIL] whose hint names the fix, other right
answers pass, and the framework's own checks (forgotten return, endless loop, input changed in place)
give their specific messages (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import copy
import io
import math
import time

import pytest
import torch
from torch import nn

from course_utils.checks import nb07
from course_utils.exercises import check, get_exercise

IDS = ["07.param_groups", "07.early_stopping", "07.warmup_cosine"]

# (exercise, mistake name, words the message must contain: the fix, in the learner's terms)
WRONG_ANSWERS = [
    ("07.param_groups", "returns a dict, not a list of groups", ["list of parameter-group dicts"]),
    ("07.param_groups", "parameter names instead of parameters", ["(a str)", "parameter itself"]),
    ("07.param_groups", "params in a set", ["set", "use a list"]),
    ("07.param_groups", "copies instead of the parameters", ["not one of the model's parameters", "p.detach()"]),
    ("07.param_groups", "no-decay group without weight_decay 0.0", ["default", "0.01", "'weight_decay': 0.0"]),
    ("07.param_groups", "groups swapped", ["not the other way round"]),
    ("07.param_groups", "frozen parameters included", ["requires_grad=False", "`pos`"]),
    ("07.param_groups", "tied parameters listed twice", ["`emb.weight` and `head.weight`", "id(p)"]),
    ("07.param_groups", "parameters listed once per enclosing module", ["recurse=False"]),
    ("07.param_groups", "parameters missing (only some layer types visited)", ["in none", "model.modules()"]),
    ("07.param_groups", "norm layer tested by its exact type (a subclass missed)", ["subclass", "`post.weight`"]),
    ("07.param_groups", "an incomplete list of norm layer types", ["NORM_LAYERS", "GroupNorm"]),
    ("07.param_groups", "named_parameters() without recurse=False", ["recurse=False", "dotted"]),
    ("07.param_groups", "bias found by a name pattern (`*bias`)", ["name == 'bias'", "rel_bias"]),
    ("07.param_groups", "norm layer found by its name", ["isinstance(module, NORM_LAYERS)", "`gn.weight`"]),
    ("07.param_groups", "rule by shape (p.ndim < 2)", ["`gain`", "p.ndim < 2"]),
    ("07.param_groups", "embedding excluded from decay", ["`emb.weight`", "embedding"]),
    ("07.param_groups", "biases decayed", ["`fc1.bias` is a bias", "weight_decay=0.0 group"]),
    ("07.param_groups", "norm weights decayed", ["`norm.weight`", "LayerNorm", "NORM_LAYERS"]),
    ("07.early_stopping", "state_dict() kept without a copy", ["shared memory", "copy.deepcopy"]),
    ("07.early_stopping", "best state loaded back only when patience runs out", ["max_epochs", "after the loop"]),
    ("07.early_stopping", "best state never loaded back", ["load_state_dict(best_state)"]),
    ("07.early_stopping", "only the parameters saved (buffers not restored)", ["running_mean", "whole state_dict"]),
    ("07.early_stopping", "patience off by one (`>` instead of `>=`)", ["stop after epoch 6", "bad_epochs >= patience"]),
    ("07.early_stopping", "counter not reset after an improvement", ["in a row", "back to 0"]),
    ("07.early_stopping", "compares with the previous epoch, not the best", ["best loss so far"]),
    ("07.early_stopping", "min_delta ignored", ["min_delta"]),
    ("07.early_stopping", "min_delta added the wrong way", ["subtract"]),
    ("07.early_stopping", "a tie counted as an improvement (`<=`)", ["`<`, not `<=`"]),
    ("07.early_stopping", "returns the last epoch, not the best", ["expected the best epoch to be epoch 3"]),
    ("07.early_stopping", "epochs counted from 0", ["range(1, max_epochs + 1)"]),
    ("07.early_stopping", "one epoch too few (range(1, max_epochs))", ["max_epochs + 1"]),
    ("07.warmup_cosine", "start_factor=0", ["Starting multiplicative factor", "start_factor=1/warmup_steps"]),
    ("07.warmup_cosine", "milestones as an int", ["milestones=[warmup_steps]"]),
    ("07.warmup_cosine", "returns a list of schedulers", ["SequentialLR(optimizer, [warmup, cosine]"]),
    ("07.warmup_cosine", "a new optimizer inside", ["another optimizer", "the optimizer you were given"]),
    ("07.warmup_cosine", "ChainedScheduler instead of SequentialLR", ["both schedulers at every step"]),
    ("07.warmup_cosine", "no warm-up", ["at step 0 to be", "LinearLR warm-up"]),
    ("07.warmup_cosine", "cosine T_max counts the warm-up steps", ["total_steps - warmup_steps"]),
    ("07.warmup_cosine", "milestone one step early", ["milestones=[warmup_steps]"]),
    ("07.warmup_cosine", "milestone one step late", ["not warmup_steps + 1"]),
    ("07.warmup_cosine", "warm-up length differs from the milestone", ["total_iters"]),
    ("07.warmup_cosine", "start factor not 1/warmup_steps", ["base_lr / warmup_steps"]),
    ("07.warmup_cosine", "schedulers in the wrong order", ["[warmup, cosine]"]),
    ("07.warmup_cosine", "scheduler stepped inside the function", ["unstepped"]),
]


def _mistake(exercise_id: str, name: str):
    return next(m for m in get_exercise(exercise_id).mistakes if m.name == name)


def test_every_listed_mistake_is_covered_here() -> None:
    listed = {(e, m.name) for e in IDS for m in get_exercise(e).mistakes}
    assert listed == {(e, name) for e, name, _ in WRONG_ANSWERS}
    assert all(len(get_exercise(e).mistakes) >= 10 for e in IDS)


@pytest.mark.parametrize(("exercise_id", "name", "words"), WRONG_ANSWERS, ids=[n for _, n, _ in WRONG_ANSWERS])
def test_wrong_answer_fails_and_names_the_fix(exercise_id: str, name: str, words: list[str]) -> None:
    result = check(exercise_id, _mistake(exercise_id, name).example)
    assert result.status == "fail", result.message
    assert f"Hint ({name})" in result.message and result.message.count("Hint (") == 1, result.message
    for word in words:
        assert word in result.message, (word, result.message)


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_ok_and_fast(exercise_id: str) -> None:
    reference = get_exercise(exercise_id).reference
    check(exercise_id, reference)  # the first optimizer built in a process imports torch._dynamo (seconds)
    start = time.perf_counter()
    result = check(exercise_id, reference)
    assert result.status == "ok", result.message
    assert time.perf_counter() - start < 3.0


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_is_todo(exercise_id: str) -> None:
    def stub(*args, **kwargs):
        raise NotImplementedError("your code here")
    result = check(exercise_id, stub)
    assert result.status == "todo" and "Task:" in result.message


def test_forgotten_return_is_named() -> None:
    def groups(model, weight_decay):
        nb07.param_groups_reference(model, weight_decay)

    def stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
        nb07.early_stopping_reference(model, train_epoch, validate, max_epochs, patience, min_delta)

    def schedule(optimizer, warmup_steps, total_steps):
        nb07.warmup_cosine_reference(optimizer, warmup_steps, total_steps)

    for exercise_id, candidate in zip(IDS, (groups, stopping, schedule)):
        result = check(exercise_id, candidate)
        assert result.status == "fail" and "did you forget `return`?" in result.message, result.message


@pytest.mark.parametrize("exercise_id", IDS)
def test_endless_loop_is_stopped(exercise_id: str) -> None:
    def endless(*args, **kwargs):
        while True:
            pass
    start = time.perf_counter()
    result = check(exercise_id, endless)
    assert result.status == "fail" and "did not finish within" in result.message, result.message
    assert time.perf_counter() - start < get_exercise(exercise_id).time_limit + 5


def test_param_groups_changing_the_model_is_named() -> None:
    def freezes_the_biases(model, weight_decay):
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.requires_grad_(False)  # "no decay" done by freezing: changes the learner's model
        return nb07.param_groups_reference(model, weight_decay)

    def zeroes_the_biases(model, weight_decay):
        with torch.no_grad():
            for name, param in model.named_parameters():
                if name.endswith("bias"):
                    param.zero_()
        return nb07.param_groups_reference(model, weight_decay)

    for candidate in (freezes_the_biases, zeroes_the_biases):
        result = check("07.param_groups", candidate)
        assert result.status == "fail", result.message
        assert "modified its input `model` in place (`fc1.bias`" in result.message, result.message


def test_param_groups_other_right_answers() -> None:
    def by_module_map(model, weight_decay):
        owner = {}
        for module in model.modules():
            for name, param in module.named_parameters(recurse=False):
                owner.setdefault(id(param), (module, name))
        decay, no_decay = [], []
        for param in model.parameters():  # each parameter once, tied ones too
            if not param.requires_grad:
                continue
            module, name = owner[id(param)]
            (no_decay if isinstance(module, nb07.NORM_LAYERS) or name == "bias" else decay).append(param)
        # the task's two groups in its order, [decay, no_decay], the second one empty when nothing is exempt
        return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]

    def tuple_params_extra_keys(model, weight_decay):
        decay, no_decay = nb07.param_groups_reference(model, weight_decay)
        return [{"params": tuple(decay["params"]), "weight_decay": weight_decay, "lr": 1e-3},
                {"params": tuple(no_decay["params"]), "weight_decay": 0}]

    for candidate in (by_module_map, tuple_params_extra_keys):
        result = check("07.param_groups", candidate)
        assert result.status == "ok", result.message


def test_param_groups_cases_cover_the_traps() -> None:
    """The models the task text promises: odd norm names, no biases, tied and frozen parameters, a 1-d gain."""
    models = [factory()[0][0] for factory in get_exercise("07.param_groups").cases]
    names = [{n for n, _ in m.named_parameters()} for m in models]
    assert any("scale_layer.weight" in n and "body.1.weight" in n and "gain" in n for n in names)
    assert any(not any(n.endswith("bias") for n in group) for group in names)  # a bias-free model
    tied = [m for m in models if len(list(m.named_parameters(remove_duplicate=False))) > len(list(m.parameters()))]
    assert tied and any(not p.requires_grad for m in tied for p in m.parameters())
    kinds = {type(mod) for m in models for mod in m.modules()}
    assert {nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm, nn.RMSNorm, nn.Embedding} <= kinds


def test_early_stopping_other_right_answers() -> None:
    def clone_dict(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
        best, best_epoch, state, waited = None, None, None, 0
        for epoch in range(1, max_epochs + 1):
            train_epoch(model)
            loss = validate(model)
            if best is None or loss < best - min_delta:
                best, best_epoch, waited = loss, epoch, 0
                state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                waited += 1
                if waited == patience:
                    break
        model.load_state_dict(state)
        return best_epoch

    def through_a_buffer(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
        best, best_epoch, saved, waited, epoch = math.inf, 1, io.BytesIO(), 0, 0
        while epoch < max_epochs and waited < patience:
            epoch += 1
            train_epoch(model)
            loss = validate(model)
            if loss < best - min_delta:
                best, best_epoch, waited = loss, epoch, 0
                saved = io.BytesIO()
                torch.save(model.state_dict(), saved)
            else:
                waited += 1
        saved.seek(0)
        model.load_state_dict(torch.load(saved, weights_only=True))
        return best_epoch

    def deepcopy_model(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
        best, best_epoch, best_model, waited = math.inf, 0, None, 0
        for epoch in range(1, max_epochs + 1):
            train_epoch(model)
            loss = validate(model)
            if best - loss > min_delta:
                best, best_epoch, best_model, waited = loss, epoch, copy.deepcopy(model), 0
            elif (waited := waited + 1) >= patience:
                break
        model.load_state_dict(best_model.state_dict())
        return best_epoch

    for candidate in (clone_dict, through_a_buffer, deepcopy_model):
        result = check("07.early_stopping", candidate)
        assert result.status == "ok", (candidate.__name__, result.message)


def test_early_stopping_cpu_copy_is_the_aliasing_mistake() -> None:
    def cpu_copy(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
        best, best_epoch, state, waited = math.inf, 0, None, 0
        for epoch in range(1, max_epochs + 1):
            train_epoch(model)
            loss = validate(model)
            if loss < best - min_delta:
                best, best_epoch, waited = loss, epoch, 0
                state = {k: v.cpu() for k, v in model.state_dict().items()}  # no copy on the CPU
            else:
                waited += 1
                if waited >= patience:
                    break
        model.load_state_dict(state)
        return best_epoch
    result = check("07.early_stopping", cpu_copy)
    assert result.status == "fail" and "Hint (state_dict() kept without a copy)" in result.message
    assert ".cpu()" in result.message


def test_warmup_cosine_other_right_answers() -> None:
    def keyword_style(optimizer, warmup_steps, total_steps):
        lr = torch.optim.lr_scheduler
        return lr.SequentialLR(
            optimizer,
            schedulers=[lr.LinearLR(optimizer, start_factor=1.0 / warmup_steps, end_factor=1.0,
                                    total_iters=warmup_steps),
                        lr.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=0.0)],
            milestones=[warmup_steps])

    def lambda_lr(optimizer, warmup_steps, total_steps):
        def factor(step):
            if step < warmup_steps:
                return (1 + (warmup_steps - 1) * step / warmup_steps) / warmup_steps
            return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
        return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    assert check("07.warmup_cosine", keyword_style).status == "ok"
    result = check("07.warmup_cosine", lambda_lr)  # the same curve, written by hand, is accepted
    assert result.status == "ok", result.message


def test_detectors_do_not_fire_on_right_answers() -> None:
    for exercise_id in IDS:
        exercise = get_exercise(exercise_id)
        for factory in exercise.cases:
            args, kwargs = factory()
            out = exercise.reference(*args, **kwargs)
            for mistake in exercise.mistakes:
                if mistake.detect is not None:
                    assert not mistake.detect(out, args, kwargs), (exercise_id, mistake.name)


def test_checking_does_not_touch_the_global_rng() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for exercise_id in IDS:
        check(exercise_id, get_exercise(exercise_id).reference)
        check(exercise_id, get_exercise(exercise_id).mistakes[-1].example)
    assert torch.equal(torch.rand(3), expected)


def _sequential(eta_min: float = 0.0, t_max_short: int = 0):
    def warmup_cosine(optimizer, warmup_steps, total_steps):
        lr = torch.optim.lr_scheduler
        warm = lr.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
        cos = lr.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps - t_max_short, eta_min=eta_min)
        return lr.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
    return warmup_cosine


def _lambda_returning_lr(optimizer, warmup_steps, total_steps):
    base = optimizer.param_groups[0]["lr"]

    def lr_at(step):
        if step < warmup_steps:
            return base * (1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps)
        return base * 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)


@pytest.mark.parametrize(("candidate", "words"), [
    (_sequential(eta_min=1e-6), ["eta_min must stay 0", "difference 3.81e-08"]),
    (_sequential(eta_min=1e-3), ["eta_min must stay 0"]),
    (_sequential(t_max_short=1), ["T_max is one step short"]),
    (_lambda_returning_lr, ["lr_lambda must return a factor"]),
], ids=["eta_min tiny", "eta_min", "T_max short", "lambda returns a rate"])
def test_warmup_cosine_curve_fingerprints_are_named(candidate, words) -> None:
    result = check("07.warmup_cosine", candidate)
    assert result.status == "fail", result.message
    for word in words:
        assert word in result.message, result.message


def test_warmup_cosine_never_prints_the_same_number_twice() -> None:
    message = check("07.warmup_cosine", _sequential(eta_min=1e-7)).message
    expected, found = message.split("to be ", 1)[1].split(", found ", 1)
    assert expected != found.split(" ", 1)[0], message
