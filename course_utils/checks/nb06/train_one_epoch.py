"""``06.train_one_epoch``: train mode, zero_grad, logits into the loss, per-sample mean."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import ProbeNet, RecordingCrossEntropy, _classification_data, _is_number, _loader


def train_one_epoch_reference(model: nn.Module, loader, loss_fn, optimizer, device) -> float:
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        count += len(y)
    return total / count


def _epoch_no_zero_grad(model, loader, loss_fn, optimizer, device):
    model.train()
    losses = []
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _epoch_no_train(model, loader, loss_fn, optimizer, device):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _epoch_softmax(model, loader, loss_fn, optimizer, device):
    model.train()
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(torch.softmax(model(x.to(device)), dim=1), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _epoch_unweighted(model, loader, loss_fn, optimizer, device):
    model.train()
    losses = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)  # every batch counts the same, the short last one too


def _epoch_last_loss(model, loader, loss_fn, optimizer, device):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    return loss.item()


def _epoch_cases():
    def make(seed: int, n: int, batch_size: int, device: Any):
        x, y = _classification_data(seed, n)
        model = ProbeNet(seed)
        model.eval()  # left in eval mode, as after a validation pass
        loader = _loader(x, y, batch_size)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return (model, loader, RecordingCrossEntropy(), optimizer, device), {}
    # the last case has a short last batch (16, 16, 3): there the mean of the batch means is wrong
    return [lambda: make(0, 32, 8, torch.device("cpu")), lambda: make(1, 36, 12, "cpu"),
            lambda: make(2, 40, 10, torch.device("cpu")), lambda: make(3, 35, 16, "cpu")]


def _epoch_verify(out, ref, args, kwargs):
    model, loader, loss_fn, optimizer, device = args
    if isinstance(out, torch.Tensor):
        return f"expected a Python float (the mean loss), found {describe(out)}"
    if not _is_number(out):
        return f"expected a Python float (the mean loss), found {describe(out)}"
    if not model.calls:
        return "your function never called the model"
    if any(not training for training, _ in model.calls):
        return ("the model ran in eval mode during training (the case hands it over in eval mode, "
                "as after validation): Dropout was off and BatchNorm used running statistics")
    if loss_fn.saw_probabilities:
        return "CrossEntropyLoss received probabilities (every row sums to 1) instead of raw logits"
    if model.stale_backward:
        return ("backward() added each batch's gradients on top of the previous batch's: "
                "the gradients were never reset")
    if abs(float(out) - ref) > 1e-4 * max(1.0, abs(ref)):
        sizes = [len(y) for _, y in loader]
        return (f"expected the mean loss per sample over the epoch's {len(loss_fn.values)} batches "
                f"of sizes {sizes}, {ref:.4f}, found {float(out):.4f}")
    return None


def _ran_in_eval(out, args, kwargs) -> bool:
    return any(not training for training, _ in args[0].calls)


def _batch_sizes(loader) -> list[int]:
    return [len(y) for _, y in loader]


def _unweighted_mean(out, args, kwargs) -> bool:
    """The output is the plain mean of the batch losses, on a case where that is wrong."""
    sizes, values = _batch_sizes(args[1]), args[2].values
    if not _is_number(out) or len(set(sizes)) < 2 or len(values) != len(sizes):
        return False
    plain = sum(values) / len(values)
    weighted = sum(v * n for v, n in zip(values, sizes)) / sum(sizes)
    return abs(out - plain) < 1e-6 * max(1.0, abs(plain)) and abs(plain - weighted) > 1e-5


def _returned_last(out, args, kwargs) -> bool:
    values = args[2].values
    if isinstance(out, torch.Tensor):
        return True
    return _is_number(out) and bool(values) and abs(out - values[-1]) < 1e-6 and len(values) > 1


register(Exercise(
    "06.train_one_epoch",
    "train_one_epoch(model, loader, loss_fn, optimizer, device) runs one epoch of training "
    "(model in training mode; per batch: move to device, zero_grad, forward, loss, backward, "
    "step) and returns the mean loss over the epoch as a Python float.",
    train_one_epoch_reference,
    _epoch_cases(),
    _epoch_verify,
    [
        Mistake("missing zero_grad",
                "gradients accumulate across backward() calls: call optimizer.zero_grad() at the "
                "start of every step, before loss.backward().",
                _epoch_no_zero_grad, detect=lambda out, a, k: a[0].stale_backward),
        Mistake("missing model.train()",
                "a model comes back from validation in eval mode; call model.train() at the start "
                "of the epoch so Dropout drops and BatchNorm uses batch statistics.",
                _epoch_no_train, detect=_ran_in_eval),
        Mistake("softmax before CrossEntropyLoss",
                "nn.CrossEntropyLoss applies log-softmax itself and expects raw logits; pass "
                "model(x) directly, without torch.softmax.",
                _epoch_softmax, detect=lambda out, a, k: a[2].saw_probabilities),
        Mistake("returns last loss or a tensor",
                "add up loss.item() * batch_size over the epoch and return total / number_of_samples "
                "as a Python float, not the last batch's loss and not a tensor.",
                _epoch_last_loss, detect=_returned_last),
        Mistake("unweighted mean of batch losses",
                "loss.item() is the mean over one batch, and the last batch can be shorter: add up "
                "loss.item() * len(y) and divide by the number of samples, not by the number of batches.",
                _epoch_unweighted, detect=_unweighted_mean),
    ],
))
