"""``06.evaluate``: eval mode, no gradient tracking, accuracy over all samples."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import ProbeNet, _classification_data, _is_number, _loader


def evaluate_reference(model: nn.Module, loader, device) -> float:
    model.eval()
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum().item()
            count += len(y)
    return correct / count


def _eval_no_eval(model, loader, device):
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(dim=1) == y.to(device)).sum().item()
            count += len(y)
    return correct / count


def _eval_grad(model, loader, device):
    model.eval()
    correct, count = 0, 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(dim=1) == y.to(device)).sum().item()
        count += len(y)
    return correct / count


def _eval_wrong_dim(model, loader, device):
    model.eval()
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(dim=0) == y.to(device)).sum().item()
            count += len(y)
    return correct / count


def _eval_batch_mean(model, loader, device):
    model.eval()
    accuracies = []
    with torch.inference_mode():
        for x, y in loader:
            accuracies.append((model(x.to(device)).argmax(dim=1) == y.to(device)).float().mean().item())
    return sum(accuracies) / len(accuracies)  # the short last batch weighs as much as a full one


def _eval_percent(model, loader, device):
    return 100 * evaluate_reference(model, loader, device)


def _eval_cases():
    def make(seed: int, n: int, batch_size: int):
        x, y = _classification_data(seed + 10, n)
        model = ProbeNet(seed)
        with torch.no_grad():  # a few training-mode passes: BatchNorm running stats move
            for start in range(0, n, batch_size):
                model(x[start:start + batch_size])
        model.forget()
        model.train()  # handed over in training mode, as right after an epoch
        return (model, _loader(x, y, batch_size), torch.device("cpu")), {}
    # batch 6 != 4 classes: argmax over dim 0 raises; batch 4 == 4 classes: it silently miscounts;
    # the last case ends with a short batch (8, 8, 3): a mean of batch accuracies is wrong there
    return [lambda: make(0, 30, 6), lambda: make(1, 24, 4), lambda: make(2, 35, 7),
            lambda: make(3, 19, 8)]


def _wrong_dim_accuracy(model: ProbeNet, loader) -> float | None:
    labels = [y for _, y in loader]
    if len(labels) != len(model.outputs):
        return None
    correct, count = 0, 0
    for out, y in zip(model.outputs, labels):
        if out.shape[1] != len(y):
            return None
        correct += int((out.argmax(dim=0) == y).sum())
        count += len(y)
    return correct / count


def _eval_verify(out, ref, args, kwargs):
    model, loader, device = args
    if not _is_number(out):
        return f"expected the accuracy as a Python float between 0 and 1, found {describe(out)}"
    if not model.calls:
        return "your function never called the model"
    if any(training for training, _ in model.calls):
        return ("the model was still in training mode (the case hands it over right after training): "
                "Dropout dropped units and BatchNorm used batch statistics")
    if any(grad for _, grad in model.calls):
        return "the forward passes ran with gradient tracking on: autograd recorded a graph for nothing"
    if abs(float(out) - ref) > 1e-6:
        n = len(loader.dataset)
        return f"expected accuracy {ref:.4f} ({round(ref * n)} of {n} correct), found {float(out):.4g}"
    return None


def _argmax_wrong_dim(out, args, kwargs) -> bool:
    wrong = _wrong_dim_accuracy(args[0], args[1])
    return _is_number(out) and wrong is not None and abs(out - wrong) < 1e-6


def _mean_of_batch_accuracies(out, args, kwargs) -> bool:
    model, loader = args[0], args[1]
    labels = [y for _, y in loader]
    if not _is_number(out) or len({len(y) for y in labels}) < 2 or len(labels) != len(model.outputs):
        return False
    accuracies = [float((o.argmax(dim=1) == y).float().mean()) for o, y in zip(model.outputs, labels)]
    return abs(out - sum(accuracies) / len(accuracies)) < 1e-6


def _percent_or_tensor(out, args, kwargs) -> bool:
    return isinstance(out, torch.Tensor) or (_is_number(out) and out > 1)


register(Exercise(
    "06.evaluate",
    "evaluate(model, loader, device) returns the accuracy (a Python float in [0, 1]) of the "
    "model on the loader: eval mode, no gradient tracking, predicted class = argmax over classes.",
    evaluate_reference,
    _eval_cases(),
    _eval_verify,
    [
        Mistake("missing eval()",
                "call model.eval() before evaluating: otherwise Dropout keeps dropping and BatchNorm "
                "normalises with the batch's statistics (and updates its running ones).",
                _eval_no_eval, detect=lambda out, a, k: any(t for t, _ in a[0].calls)),
        Mistake("gradients tracked (no inference_mode/no_grad)",
                "wrap the loop in `with torch.inference_mode():` (or torch.no_grad()): evaluation "
                "needs no graph, and building one costs time and memory.",
                _eval_grad, detect=lambda out, a, k: any(g for _, g in a[0].calls)),
        Mistake("argmax over the wrong dim",
                "logits have shape [batch, classes]: the predicted class of each sample is "
                "logits.argmax(dim=1); dim=0 picks, for each class, the sample with the highest score.",
                _eval_wrong_dim, detect=_argmax_wrong_dim, error_match="must match the size of tensor"),
        Mistake("returns a percentage or a tensor",
                "return correct / total as a Python float between 0 and 1 (use .item() on tensor counts).",
                _eval_percent, detect=_percent_or_tensor),
        Mistake("mean of per-batch accuracies",
                "the last batch can be shorter, so averaging the batch accuracies over-weights it: "
                "add up the correct predictions and the samples over all batches, then divide once.",
                _eval_batch_mean, detect=_mean_of_batch_accuracies),
    ],
))
