"""Notebook 06 checkers: the probes, other right/wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import pytest
import torch

from course_utils.checks import nb06
from course_utils.exercises import Mistake, check, get_exercise, list_exercises
from tests.learner_code import assert_accepted, assert_rejected


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
            loss = loss_fn(model(x.to(device)), y.to(device))
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
            accs = [(model(x.to(device)).argmax(1) == y.to(device)).float().mean().item() for x, y in loader]
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
            loss = loss_fn(torch.nn.functional.softmax(model(x.to(device)), dim=-1), y.to(device))
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
            loss = loss_fn(model(x.to(device)), y.to(device))
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


def test_running_sums_kept_as_tensors_pass() -> None:
    """The lesson's solutions: no .item() per batch, one conversion at the end."""
    def epoch_tensor_sum(model, loader, loss_fn, optimizer, device):
        model.train()
        total, count = torch.zeros((), device=device), 0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
            count += len(y)
        return total.item() / count

    def evaluate_tensor_count(model, loader, device):
        model.eval()
        correct, count = torch.zeros((), device=device, dtype=torch.long), 0
        with torch.inference_mode():
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                correct += (model(x).argmax(dim=1) == y).sum()
                count += len(y)
        return correct.item() / count
    assert check("06.train_one_epoch", epoch_tensor_sum).passed
    assert check("06.evaluate", evaluate_tensor_count).passed


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
    assert result.status == "fail" and "clip_grad_value_" in result.message, result.message


# --- learners' answers: wrong ones must FAIL with a message naming the fix, right ones must pass ---

def _epoch(*, zero="start", train="call", move="both", softmax=False, mean="weighted", grad=True,
           ret="float", step=True, backward=True):
    """A learner's train_one_epoch with one habit changed."""
    def train_one_epoch(model, loader, loss_fn, optimizer, device):
        if train == "call":
            model.train()
        elif train == "attribute":
            model.train  # noqa: B018 (forgot the parentheses)
        if zero == "before loop":
            optimizer.zero_grad()
        total, count, losses = 0.0, 0, []
        context = torch.enable_grad() if grad else torch.no_grad()
        with context:
            for x, y in loader:
                if move == "both":
                    x, y = x.to(device), y.to(device)
                elif move == "unassigned":
                    x.to(device)
                    y.to(device)
                elif move == "x only":
                    x = x.to(device)
                if zero == "start":
                    optimizer.zero_grad()
                out = model(x)
                loss = loss_fn(out.softmax(dim=1) if softmax else out, y)
                if backward:
                    loss.backward()
                if zero == "before step":
                    optimizer.zero_grad()
                if step:
                    optimizer.step()
                if zero == "end":
                    optimizer.zero_grad()
                total += loss.item() * len(y)
                count += len(y)
                losses.append(loss.detach())  # kept live, the graph probe would name that first
        if ret == "last":
            return losses[-1].item()
        if ret == "tensor":
            return torch.stack([v.detach() for v in losses]).mean()
        if ret == "none":
            return None
        if mean == "batches":
            return sum(v.item() for v in losses) / len(losses)
        if mean == "per batch count":
            return total / len(loader)
        return total / count
    return train_one_epoch


def _evaluate(*, mode="eval", grad="inference", dim=1, move="both", result="fraction", squeeze=False):
    def evaluate(model, loader, device):
        if mode == "eval":
            model.eval()
        elif mode == "attribute":
            model.eval  # noqa: B018
        if grad == "set off":
            torch.set_grad_enabled(False)
        correct, count, accuracies = 0, 0, []
        context = (torch.inference_mode() if grad == "inference" else torch.no_grad() if grad == "no_grad"
                   else torch.enable_grad())
        if grad == "called":
            torch.no_grad()  # creates the context manager and throws it away
        with context:
            for x, y in loader:
                if move == "both":
                    x, y = x.to(device), y.to(device)
                elif move == "x only":
                    x = x.to(device)
                out = model(x)
                if squeeze:
                    out = out.squeeze()
                hits = out.argmax(dim=dim) == y
                correct += hits.sum() if result == "tensor" else hits.sum().item()
                count += len(y)
                accuracies.append(hits.float().mean().item())
        if result == "percent":
            return 100 * correct / count
        if result == "batch mean":
            return sum(accuracies) / len(accuracies)
        if result == "none":
            return None
        return correct / count
    return evaluate


def _clipped(*, order="right", zero="optimizer", ret="before", how="norm"):
    def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
        if zero == "optimizer":
            optimizer.zero_grad()
        elif zero == "by hand":
            for p in model.parameters():
                p.grad.zero_()
        norm = None
        if order == "before backward":
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        loss = loss_fn(model(x), y)
        loss.backward()
        if order in ("right", "no step"):
            if how == "norm":
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            elif how == "value":
                norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
                torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
            elif how == "always scale":
                norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
                for p in model.parameters():
                    p.grad.mul_(max_norm / norm)
        if order != "no step":
            optimizer.step()
        if order == "after step":
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if ret == "after":
            return torch.nn.utils.get_total_norm([p.grad for p in model.parameters()]).item()
        if ret == "min":
            return min(norm.item(), max_norm)
        if ret == "tensor":
            return norm
        if ret == "none":
            return None
        return norm.item()
    return clipped_step


WRONG = [
    ("06.train_one_epoch", _epoch(zero="none"), ["zero_grad"]),
    ("06.train_one_epoch", _epoch(zero="before loop"), ["zero_grad"]),
    ("06.train_one_epoch", _epoch(zero="end"), ["zero_grad", "arrived with"]),
    ("06.train_one_epoch", _epoch(zero="before step"), ["never changed", "zero_grad"]),
    ("06.train_one_epoch", _epoch(train="none"), ["eval mode", "model.train()"]),
    ("06.train_one_epoch", _epoch(train="attribute"), ["eval mode", "model.train()"]),
    ("06.train_one_epoch", _epoch(softmax=True), ["logits"]),
    ("06.train_one_epoch", _epoch(ret="last"), ["mean loss", "total / number_of_samples"]),
    ("06.train_one_epoch", _epoch(ret="tensor"), ["Python float"]),
    ("06.train_one_epoch", _epoch(mean="batches"), ["sizes [16, 16, 3]", "len(y)"]),
    ("06.train_one_epoch", _epoch(mean="per batch count"), ["mean loss per sample"]),
    ("06.train_one_epoch", _epoch(move="none"), ["without moving it to `device`"]),
    ("06.train_one_epoch", _epoch(move="unassigned"), ["without moving it to `device`", "assign"]),
    ("06.train_one_epoch", _epoch(move="x only"), ["without moving it to `device`"]),
    ("06.train_one_epoch", _epoch(grad=False), ["no_grad"]),
    ("06.train_one_epoch", _epoch(step=False), ["never changed", "step()"]),
    ("06.train_one_epoch", _epoch(backward=False), ["never changed"]),
    ("06.train_one_epoch", _epoch(ret="none"), ["forget `return`"]),
    ("06.evaluate", _evaluate(mode="none"), ["training mode", "model.eval()"]),
    ("06.evaluate", _evaluate(mode="attribute"), ["training mode", "model.eval()"]),
    ("06.evaluate", _evaluate(grad="tracked"), ["gradient tracking", "inference_mode"]),
    ("06.evaluate", _evaluate(grad="called"), ["gradient tracking", "inference_mode"]),
    ("06.evaluate", _evaluate(grad="set off"), ["grad mode was left off"]),
    ("06.evaluate", _evaluate(dim=0), ["argmax(dim=1)"]),
    ("06.evaluate", _evaluate(result="percent"), ["between 0 and 1"]),
    ("06.evaluate", _evaluate(result="tensor"), ["Python float"]),
    ("06.evaluate", _evaluate(result="batch mean"), ["4 of 19", "divide once"]),
    ("06.evaluate", _evaluate(move="none"), ["without moving it to `device`"]),
    ("06.evaluate", _evaluate(move="x only"), ["without moving it to `device`"]),
    ("06.evaluate", _evaluate(squeeze=True), ["test case 5", "squeeze"]),
    ("06.evaluate", _evaluate(result="none"), ["forget `return`"]),
    ("06.clipped_step", _clipped(zero="none"), ["stale", "zero_grad()"]),
    ("06.clipped_step", _clipped(zero="by hand"), ["test case 4", "None"]),
    ("06.clipped_step", _clipped(order="before backward"), ["after loss.backward()"]),
    ("06.clipped_step", _clipped(order="after step"), ["between", "optimizer.step()"]),
    ("06.clipped_step", _clipped(how="value"), ["clip_grad_value_"]),
    ("06.clipped_step", _clipped(how="always scale"), ["below max_norm"]),
    ("06.clipped_step", _clipped(ret="after"), ["BEFORE clipping"]),
    ("06.clipped_step", _clipped(ret="min"), ["before clipping"]),
    ("06.clipped_step", _clipped(ret="tensor"), [".item()"]),
    ("06.clipped_step", _clipped(order="no step"), ["did not change", "optimizer.step()"]),
    ("06.clipped_step", _clipped(ret="none"), ["forget `return`"]),
]


@pytest.mark.parametrize(("exercise_id", "wrong", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_learners_wrong_answers_fail_with_a_message_naming_the_fix(exercise_id, wrong, words) -> None:
    result = check(exercise_id, wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


def _epoch_list_batches(model, loader, loss_fn, optimizer, device):
    model.train(True)
    running, seen = torch.zeros(()), 0
    for batch in loader:
        x, y = [t.to(device, non_blocking=True) for t in batch]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss.detach() * y.size(0)
        seen += y.size(0)
    return float(running / seen)


def _epoch_zero_twice(model, loader, loss_fn, optimizer, device):
    model.train()
    optimizer.zero_grad()
    losses, sizes = [], []
    for step, (inputs, labels) in enumerate(loader):
        inputs = inputs.to(device=device)
        labels = labels.to(device=device)
        outputs = model(inputs)
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        sizes.append(len(labels))
    return sum(v * n for v, n in zip(losses, sizes)) / sum(sizes)


def _evaluate_host_compare(model, loader, device):
    model.train(False)
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            _, predicted = torch.max(model(x.to(device)), 1)
            correct += (predicted.cpu() == y).sum().item()  # compared on the host: fine
    return correct / len(loader.dataset)


def _evaluate_softmax_then_argmax(model, loader, device):
    was_training = model.training
    model.eval()
    hits = []
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            hits.append(model(x).softmax(dim=-1).argmax(dim=-1) == y)
    model.train(was_training)  # restoring the caller's mode is fine too
    return torch.cat(hits).float().mean().item()


def _clipped_model_zero_grad(model, loss_fn, x, y, optimizer, max_norm):
    model.zero_grad()
    loss_fn(model(x), y).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
    optimizer.step()
    return float(norm)


def _clipped_by_hand(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad(set_to_none=False)
    loss_fn(model(x), y).backward()
    grads = [p.grad for p in model.parameters()]
    norm = torch.nn.utils.get_total_norm(grads)
    torch.nn.utils.clip_grads_with_norm_(model.parameters(), max_norm, norm)
    optimizer.step()
    return norm.item()


RIGHT = [
    ("06.train_one_epoch", _epoch_list_batches),
    ("06.train_one_epoch", _epoch_zero_twice),
    ("06.evaluate", _evaluate_host_compare),
    ("06.evaluate", _evaluate_softmax_then_argmax),
    ("06.evaluate", _evaluate(grad="no_grad")),
    ("06.clipped_step", _clipped_model_zero_grad),
    ("06.clipped_step", _clipped_by_hand),
]


@pytest.mark.parametrize(("exercise_id", "right"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_learners_right_answers_pass(exercise_id, right) -> None:
    result = check(exercise_id, right)
    assert result.passed, result.message


def test_clipped_step_without_optimizer_step_is_named() -> None:
    assert_rejected("06.clipped_step", """
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm).item()""",
                    ["did not change", "optimizer.step()"])


def test_clipped_step_zero_grad_set_to_none_and_keyword_max_norm_pass() -> None:
    assert_accepted("06.clipped_step", """
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            total = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm))
            optimizer.step()
            return total""")
