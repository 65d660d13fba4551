"""Notebook 06 checkers: the probes, other right/wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch

from course_utils.checks import nb06
from course_utils.exercises import Mistake, check, get_exercise, list_exercises


def _mistake(exercise_id: str, name: str) -> Mistake:
    return next(m for m in get_exercise(exercise_id).mistakes if m.name == name)


def test_checking_does_not_touch_the_global_rng() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for exercise_id in [e for e in list_exercises() if e.startswith("06.")]:
        check(exercise_id, get_exercise(exercise_id).reference)
    assert torch.equal(torch.rand(3), expected)


def test_train_one_epoch_other_right_answers() -> None:
    def model_zero_grad_and_sum_reduction(model, loader, loss_fn, optimizer, device):
        model.train()
        total = 0.0
        for x, y in loader:
            model.zero_grad(set_to_none=False)
            loss = loss_fn(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            total += loss.item() * y.shape[0]
        return total / len(loader.dataset)
    assert check("06.train_one_epoch", model_zero_grad_and_sum_reduction).passed


def test_unweighted_means_fail_on_the_short_last_batch() -> None:
    def batch_mean(model, loader, loss_fn, optimizer, device):
        model.train()
        losses = []
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return sum(losses) / len(losses)  # right only when every batch has the same size
    result = check("06.train_one_epoch", batch_mean)
    assert result.status == "fail" and "on test case 4" in result.message
    assert "Hint (unweighted mean of batch losses)" in result.message

    def mean_of_accuracies(model, loader, device):
        model.eval()
        with torch.no_grad():
            accs = [(model(x).argmax(1) == y).float().mean().item() for x, y in loader]
        return sum(accs) / len(accs)
    result = check("06.evaluate", mean_of_accuracies)
    assert result.status == "fail" and "Hint (mean of per-batch accuracies)" in result.message
    # the detectors do not fire on a right answer
    for exercise_id, name in [("06.train_one_epoch", "unweighted mean of batch losses"),
                              ("06.evaluate", "mean of per-batch accuracies")]:
        exercise = get_exercise(exercise_id)
        args, kwargs = exercise.cases[3]()
        right = exercise.reference(*args, **kwargs)
        assert not _mistake(exercise_id, name).detect(right, args, kwargs)


def test_train_one_epoch_functional_softmax_and_tensor_return() -> None:
    def f_softmax(model, loader, loss_fn, optimizer, device):
        model.train()
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(torch.nn.functional.softmax(model(x), dim=-1), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        return total / len(loader)
    assert "Hint (softmax before CrossEntropyLoss)" in check("06.train_one_epoch", f_softmax).message

    def tensor_mean(model, loader, loss_fn, optimizer, device):
        model.train()
        losses = []
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        return torch.stack(losses).mean()
    assert "Hint (returns last loss or a tensor)" in check("06.train_one_epoch", tensor_mean).message


def test_evaluate_other_right_answers() -> None:
    def no_grad_max(model, loader, device):
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in loader:
                _, predicted = torch.max(model(x.to(device)), 1)
                correct += int((predicted == y.to(device)).sum())
                total += y.size(0)
        return correct / total
    assert check("06.evaluate", no_grad_max).passed


def test_argmax_over_dim_0_is_named_even_when_shapes_happen_to_fit() -> None:
    case = get_exercise("06.evaluate").cases[1]  # batch size 4 == 4 classes: no error, wrong count
    mistake = _mistake("06.evaluate", "argmax over the wrong dim")
    args, kwargs = case()
    model, loader, device = args
    wrong = mistake.example(model, loader, device)
    right = nb06.evaluate_reference(*case()[0])
    assert wrong != right
    assert mistake.detect(wrong, args, kwargs)
    assert not mistake.detect(right, args, kwargs)


def test_probe_flags() -> None:
    model = nb06.ProbeNet(0)
    x = torch.randn(8, nb06.N_FEATURES)
    model(x).sum().backward()
    assert not model.stale_backward
    model(x).sum().backward()
    assert model.stale_backward
    assert model.calls == [(True, True), (True, True)]
    loss_fn = nb06.RecordingCrossEntropy()
    loss_fn(torch.randn(4, 3), torch.tensor([0, 1, 2, 0]))
    assert not loss_fn.saw_probabilities
    loss_fn(torch.randn(4, 3).softmax(dim=1), torch.tensor([0, 1, 2, 0]))
    assert loss_fn.saw_probabilities and len(loss_fn.values) == 2


def test_clipped_step_with_clip_grad_value_is_not_ok() -> None:
    def value_clip(model, loss_fn, x, y, optimizer, max_norm):
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
        torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
        optimizer.step()
        return norm.item()
    result = check("06.clipped_step", value_clip)
    assert result.status == "fail" and "parameters after the step differ" in result.message
