"""Turn what the doctor's probes recorded into findings (see :mod:`course_utils.doctor`).

Example:
    >>> record = OverfitRecord(losses=[2.3, 2.0, 1.1], lrs=[0.1], step_calls=3, changed=0.2, samples=16, budget=30)
    >>> found, notes = overfit_findings(record, None, blocked=False, input_warning=False)
    >>> found, notes[0]
    ([], 'one-batch overfit (first 16 samples, at most 30 steps): the loss fell from 2.3 to 1.1 in 3 steps (48% of the start) at lr 0.1.')
    >>> divergence([2.3, 1.0, 0.9, 4.0, 30.0])  # halved first, then exploded
    'fell to 0.9, then rose to 4 (1.74x its start) at step 4, peaking at 30'
    >>> found, _ = overfit_findings(OverfitRecord([2.3, 9.0, float("nan")], [10.0], 3, 1.0, 8), None, False, False)
    >>> found[0].code, "became nan at step 3" in found[0].message
    ('LR_TOO_HIGH', True)
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .checks import leaves, loss_input_findings
from .graph import producer
from .probes import OverfitRecord, StepRecord
from .report import Finding, finding


def _names(ids: list[int], names: dict[int, str], limit: int = 4) -> str:
    items = [names.get(i, "?") for i in ids]
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _lr(lrs: list[float]) -> str:
    return " / ".join(f"{lr:.3g}" for lr in lrs)


def step_findings(record: StepRecord, loss_fn: Any, target: Any, standard: bool) -> list[Finding]:
    """Findings from :func:`probe_step`: loss inputs, NaN/Inf, gradient flow, zero_grad, eval mode."""
    found: list[Finding] = []
    if record.loss_calls:
        call = record.loss_calls[0]
        found += loss_input_findings(call.pred, call.target, loss_fn, call.autocast, call.producer,
                                     call.reshaped_same)
    elif record.model_outputs and isinstance(target, torch.Tensor):  # the step bypassed loss_fn
        out = record.model_outputs[0]
        if isinstance(out, torch.Tensor):
            found += loss_input_findings(out.detach(), target, loss_fn, autocast=True, made_by=producer(out))
    found += record.registration
    if record.error is not None:
        return found + [_explain_error(record)]
    if record.returned is not None:
        return found + [finding("STEP_FAILED", "error",
                                f"your train_step returned {record.returned}, not the loss, and never "
                                "called the loss_fn it was given.",
                                "the doctor (and your training log) needs each step's loss to see whether "
                                "training works.",
                                "compute the loss with the loss_fn argument and end the step with "
                                "`return loss.item()`.")]
    found += _nonfinite(record)
    found += _rnn_layout(record)
    found += _foreign_leaves(record)
    found += _gradient_flow(record)
    found += _zero_grad(record)
    found += _eval_mode(record, standard)
    return found


def _output_requires_grad(record: StepRecord) -> bool | None:
    if not record.model_outputs:
        return None
    return any(t.requires_grad for _, t in leaves(record.model_outputs[0]))


def _explain_error(record: StepRecord) -> Finding:
    """The step's error, made specific where the records say more than the exception."""
    error = record.error
    assert error is not None
    if error.code != "NO_GRAD_FLOW":
        return error
    call = record.loss_calls[0] if record.loss_calls else None
    out = record.model_outputs[0] if record.model_outputs else None
    out_int = isinstance(out, torch.Tensor) and not out.is_floating_point() and not out.is_complex()
    pred_cut = call is not None and not call.requires_grad and _output_requires_grad(record)
    if not (out_int or pred_cut):
        return error
    if out_int:
        seen = f"the model's output is {out.dtype} {tuple(out.shape)}: forward() ends in argmax / max indices / a comparison"
    else:
        seen = (f"the model's output carries a gradient, but the prediction given to the loss "
                f"({call.pred.dtype} {tuple(call.pred.shape)}) does not: an operation between them is not differentiable")
    observed, _, _ = error.parts()
    return finding("NON_DIFFERENTIABLE", "error", f"{observed.rstrip('.')}; {seen}.",
                   "argmax, max(...).indices, round, comparisons (>, ==), .long(), .item(), .numpy() and "
                   "torch.tensor(...) give values with no gradient (or a gradient of zero everywhere), so "
                   "backward() cannot reach the weights.",
                   "compute the loss on the model's continuous scores: CrossEntropyLoss on the logits "
                   "(not on argmax), BCEWithLogitsLoss on raw scores (not on rounded ones); use argmax / "
                   "round only for accuracy and predictions, outside the loss.")


def _rnn_layout(record: StepRecord) -> list[Finding]:
    """RNN_BATCH_FIRST: a time-first RNN (batch_first=False) fed (batch, time, features) inputs."""
    n = record.samples
    for label, batch_first, shape in record.rnn_inputs:
        if batch_first or len(shape) != 3 or n < 2 or shape[0] != n or shape[1] == n:
            continue
        return [finding("RNN_BATCH_FIRST", "error",
                        f"RNN layer {label} was built with batch_first=False, so it reads its input as (time, "
                        f"batch, features), but it received shape {shape} whose first dimension is the batch "
                        f"size {n}: it treats the {n} samples as {n} time steps of a batch of {shape[1]}.",
                        "the recurrence then runs across samples instead of along each sequence: every "
                        "sample's output depends on the samples before it in the batch, and the model learns "
                        "little or nothing.",
                        "build the layer with batch_first=True (nn.LSTM(..., batch_first=True)) for "
                        "(batch, time, features) inputs, or pass x.transpose(0, 1); take the last step as "
                        "out[:, -1] with batch_first=True (out[-1] without).")]
    return []


def _foreign_leaves(record: StepRecord) -> list[Finding]:
    """Tensors the loss depends on that get gradients but are parameters of neither the model nor
    the optimizer: layers created inside forward() or kept outside the module."""
    if record.graph is None or not record.graph.complete:
        return []
    copied = set(record.names) | record.optimizer_ids
    foreign = [t for t in record.graph.leaves if id(t) not in copied and t.requires_grad]
    if not foreign:
        return []
    shapes = ", ".join(str(tuple(t.shape)) for t in foreign[:4]) + (" ..." if len(foreign) > 4 else "")
    return [finding("PARAMS_NOT_REGISTERED", "error",
                    f"the loss depends on {len(foreign)} tensor(s) that receive gradients but are not parameters "
                    f"of the model or the optimizer (shapes {shapes}).",
                    "these are usually layers created inside forward() (a new random nn.Linear at every "
                    "call) or kept outside the model: the optimizer never updates them and they are not saved.",
                    "create every layer once in __init__ as an attribute (lists: nn.ModuleList), and build "
                    "the optimizer from model.parameters().")]


def _nonfinite(record: StepRecord) -> list[Finding]:
    bad_grads = [pid for pid, g in (record.step_grads[0].items() if record.step_grads else [])
                 if g is not None and not bool(torch.isfinite(g).all())]
    loss = record.losses[0] if record.losses else math.nan
    if record.nonfinite is None and math.isfinite(loss) and not bad_grads:
        return []
    if record.nonfinite is not None:
        observed = f"{record.nonfinite}; the loss is {loss:.4g}."
        fix = ("look at that layer's computation: log, sqrt or division of values that can be 0 or "
               "negative, exp of large numbers; add an epsilon (torch.log(x + 1e-8)), clamp, or use "
               "the stable built-ins (log_softmax, logsumexp, BCEWithLogitsLoss).")
    else:
        observed = (f"the loss is {loss:.4g} but {len(bad_grads)} gradient tensor(s) contain NaN/Inf: "
                    f"{_names(bad_grads, record.names)}.")
        fix = ("run the step once under torch.autograd.detect_anomaly(): it names the backward operation "
               "that produced the NaN and the forward line that created it (e.g. sqrt or norm at 0 has "
               "an infinite derivative: add an epsilon).")
    return [finding("NAN_OR_INF", "error", observed,
                    "after one optimizer step a single NaN spreads to every weight, and from then on "
                    "every output and every loss is NaN.", fix)]


def _gradient_flow(record: StepRecord) -> list[Finding]:
    if not record.trainable:
        return []
    never = [id(p) for p in record.trainable if record.accumulated.get(id(p), 0) == 0]
    total = len(record.trainable)
    if never:
        observed = (f"{len(never)} of {total} trainable parameter tensors never received a gradient "
                    f"during the step: {_names(never, record.names)}.")
        if len(never) == total:
            observed += " If your train_step uses a global model instead of its `model` argument, fix that first."
        return [finding("NO_GRAD_FLOW", "error", observed,
                        "backward() only reaches parameters that the loss depends on through "
                        "differentiable operations; the others keep their initial values forever.",
                        "look for .detach(), .item(), .numpy(), torch.tensor(...) re-wrapping or "
                        "torch.no_grad() inside forward, and for layers that forward() never uses.")]
    first = record.increments[0] if record.increments else {}
    if first and all(not bool(g.any()) for g in first.values()):
        ops = record.graph.zero_gradient_ops if record.graph is not None else []
        if ops:
            return [finding("NON_DIFFERENTIABLE", "error",
                            f"backward() reached all {total} parameter tensors, but every gradient is exactly "
                            f"zero: the loss goes through {', '.join(ops)}, whose derivative is 0 everywhere.",
                            "round, floor, sign and similar steps are flat almost everywhere: the loss "
                            "changes in jumps, so the gradient through them is zero and nothing learns.",
                            "compute the loss on the continuous values (e.g. BCEWithLogitsLoss on the raw "
                            "scores, not on rounded ones); round only for metrics and predictions.")]
        return [finding("NO_GRAD_FLOW", "error",
                        f"backward() reached all {total} parameter tensors, but every gradient is exactly zero.",
                        "a loss that does not change when the weights change (dead ReLUs everywhere, a "
                        "constant output, a multiplication by 0) gives nothing to learn from.",
                        "print the model's output for a few samples; check for all-zero activations "
                        "and for operations with a zero derivative between the model and the loss.")]
    if not record.step_grads:
        return []
    at_step = record.step_grads[0]
    empty = [pid for pid, g in at_step.items() if g is None or not bool(g.any())]
    if len(empty) == total:
        return [finding("NO_GRAD_FLOW", "error",
                        f"backward() computed gradients for all {total} parameter tensors, but when "
                        "optimizer.step() ran every gradient was None or zero.",
                        "zero_grad() is being called between loss.backward() and optimizer.step(), so "
                        "every update is empty and the parameters never change.",
                        "order the step as: optimizer.zero_grad(); loss = loss_fn(model(x), y); "
                        "loss.backward(); optimizer.step().")]
    return []


def _norm(tensors: Any) -> float:
    return math.sqrt(sum(float(t.double().pow(2).sum()) for t in tensors if t is not None))


def _zero_grad(record: StepRecord) -> list[Finding]:
    """Gradients left over from the first call when the second call's backward() starts."""
    if len(record.leftover) < 2 or len(record.increments) < 2:
        return []
    if record.updated and not record.updated[0]:
        return []  # the first call only accumulated (no update yet): gradient accumulation on purpose
    left, new = record.leftover[1], record.increments[1]
    left_norm, new_norm = _norm(left.values()), _norm(new.values())
    if not math.isfinite(left_norm) or new_norm == 0 or left_norm <= 1e-3 * new_norm:
        return []
    held = sum(1 for t in left.values() if t is not None)
    how = ("optimizer.step()" if record.step_grads else "your update")
    return [finding("ZERO_GRAD_MISSING", "error",
                    f"when the second step's backward() started, .grad of {held} of {len(left)} parameter "
                    f"tensors still held the previous step's gradient (norm {left_norm:.4g}); the new gradient "
                    f"(norm {new_norm:.4g}) was added to it, so {how} used the sum.",
                    "backward() adds to .grad instead of overwriting it; without zeroing, each update "
                    "uses the sum of all earlier gradients, so steps grow and point in stale directions.",
                    "call optimizer.zero_grad() once per step, before loss.backward() (a hand-written "
                    "update: w.grad.zero_() after updating w). Accumulating on purpose over micro-batches? "
                    "Then zero right after each optimizer.step().")]


def _eval_mode(record: StepRecord, standard: bool) -> list[Finding]:
    if not record.eval_layers:
        return []
    whole = record.root_training is False
    observed = (f"{len(record.eval_layers)} layer(s) ran in eval mode while gradients were computed: "
                f"{', '.join(record.eval_layers[:4])}{' ...' if len(record.eval_layers) > 4 else ''} "
                f"(model.training was {record.root_training}).")
    if standard:
        observed += " diagnose() runs the model in the mode you pass it in."
    return [finding("EVAL_MODE_LEFT_ON", "error" if whole else "warning", observed,
                    "in eval mode Dropout does nothing and BatchNorm uses (and stops updating) its "
                    "running statistics: the model trains without regularisation, on different "
                    "statistics than it will later be evaluated with.",
                    "call model.train() at the start of every training epoch (validation calls "
                    "model.eval(), so switch back). Freezing BatchNorm on purpose? Then ignore this.")]


def divergence(losses: list[float]) -> str | None:
    """How the loss diverged ("became nan at step 4", "rose to ... at step 2"), or None.

    Diverged: a non-finite loss, a loss above twice its start, or a loss that first halved and
    then climbed back above 1.5 times its start."""
    start = losses[0]
    best = math.inf
    for step, value in enumerate(losses, start=1):
        if not math.isfinite(value):
            low = f"after falling to {best:.4g}, " if start > 0 and best <= 0.5 * start else ""
            return f"{low}became {value} at step {step}"
        halved = start > 0 and best <= 0.5 * start
        if start > 0 and (value > 2 * start or (halved and value > 1.5 * start)):
            how = (f"fell to {best:.4g}, then rose to {value:.4g} ({value / start:.3g}x its start) at step {step}"
                   if halved else f"rose to {value:.4g} ({value / start:.3g}x its start) at step {step}")
            later = next(((n, v) for n, v in enumerate(losses, start=1) if not math.isfinite(v)), None)
            if later:
                return how + f" and became {later[1]} at step {later[0]}"
            peak = max(losses)
            return how + (f", peaking at {peak:.4g}" if peak > value else "")
        best = min(best, value)
    return None


def _summary(record: OverfitRecord) -> str:
    losses, lr = record.losses, _lr(record.lrs)
    start = losses[0]
    best = min((x for x in losses if math.isfinite(x)), default=math.nan)
    steps = f"{len(losses)} step{'s' * (len(losses) != 1)}"
    how = divergence(losses)
    if how:
        return f"starting at {start:.4g}, the loss {how} (lr {lr}, {steps} run)"
    if best <= 0.5 * start:
        return f"the loss fell from {start:.4g} to {best:.4g} in {steps} ({best / start:.0%} of the start) at lr {lr}"
    return f"the loss went from {start:.4g} to {best:.4g} at best in {steps} at lr {lr}"


def _outcome(record: OverfitRecord) -> str:
    how = divergence(record.losses)
    if how:
        return f"the loss still {how}"
    return f"the loss fell to {min(record.losses):.4g} in {len(record.losses)} steps"


def chance_level(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> tuple[float, float, str] | None:
    """(chance loss, largest spread of the predicted probabilities across samples, what chance is)
    for classification losses; None for other losses."""
    from .checks import class_index_shaped, is_cross_entropy
    p = pred.detach().double()
    if (is_cross_entropy(loss_fn) or not target.is_floating_point()) and class_index_shaped(p, target) \
            and not target.is_floating_point() and p.shape[1] >= 2:
        valid = target[target >= 0].reshape(-1)
        if valid.numel() < 2:
            return None
        counts = torch.bincount(valid, minlength=p.shape[1]).double()
        prior = counts[counts > 0] / counts.sum()
        chance = float(-(prior * prior.log()).sum())
        probs = (p.log_softmax(dim=1).exp() if not isinstance(loss_fn, torch.nn.NLLLoss) else p.exp())
        probs = probs.movedim(1, -1).reshape(-1, p.shape[1])
        spread = float((probs - probs.mean(dim=0)).abs().max())
        return chance, spread, f"the entropy of these {valid.numel()} labels over {p.shape[1]} classes"
    if isinstance(loss_fn, torch.nn.BCEWithLogitsLoss) and target.is_floating_point() and p.numel() == target.numel():
        rate = float(target.double().mean())
        if not 0 < rate < 1:
            return None
        chance = -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))
        spread = float((p.sigmoid() - p.sigmoid().mean()).abs().max())
        return chance, spread, f"the entropy of {target.numel()} binary labels ({rate:.0%} positive)"
    return None


def _stuck(main: OverfitRecord, loss_fn: Any) -> Finding | None:
    if main.last is None or len(main.losses) < 10:
        return None
    level = chance_level(*main.last, loss_fn)
    if level is None:
        return None
    chance, spread, what = level
    end, best = main.losses[-1], min(main.losses)
    moved = main.losses[0] >= 1.05 * end
    tail = main.losses[-10:]
    flat = max(tail) - min(tail) <= 0.02 * chance
    if chance <= 0 or not (moved and flat) or best < 0.9 * chance or abs(end - chance) > 0.1 * chance \
            or spread > 0.1:
        return None
    return finding("STUCK_AT_CHANCE", "error",
                   f"after {len(main.losses)} steps on {main.samples} samples the loss is {end:.4g}, the chance "
                   f"level ({chance:.4g}, {what}; started at {main.losses[0]:.4g}), and the predicted "
                   f"probabilities differ between samples by at most {spread:.3g}: the model gives every "
                   "sample the same answer.",
                   "a model that outputs the label frequencies whatever the input has stopped using its "
                   "input: typically dead ReLUs or saturated units after too large a step, inputs on a "
                   "huge scale (unscaled pixels), or a layer whose output does not depend on the sample.",
                   "lower the learning rate 10x, scale the inputs (x / 255, then normalise), check that "
                   "forward() really uses x (print model(x)[:4]), and look at the per-layer gradient norms.")


def overfit_findings(main: OverfitRecord, other: OverfitRecord | None, blocked: bool,
                     input_warning: bool, loss_fn: Any = None) -> tuple[list[Finding], list[str]]:
    """LR_TOO_HIGH / CANNOT_OVERFIT_BATCH / STUCK_AT_CHANCE from the one-batch probe (``other``: lr x10 or /10)."""
    if main.error is not None:
        return [main.error], []
    if not main.losses:
        return [], []
    summary, start = _summary(main), main.losses[0]
    notes = [f"one-batch overfit (first {main.samples} samples, at most {main.budget or len(main.losses)} steps): "
             f"{summary}."]
    if blocked:  # errors above already explain a bad result; report it only as a measurement
        notes[0] = notes[0][:-1] + " (explained by the errors above)."
        return [], notes
    if main.changed == 0:
        why = ("your step never called optimizer.step() and no parameter changed" if main.step_calls == 0 else
               f"optimizer.step() ran {main.step_calls} times but no parameter changed (lr {_lr(main.lrs)})")
        return [finding("CANNOT_OVERFIT_BATCH", "error", f"{summary}: {why}.",
                        "a model whose parameters never change cannot learn anything.",
                        "call optimizer.step() after loss.backward() in every step, with a "
                        "learning rate above 0.")], notes
    if main.step_calls == 0:
        notes.append("your step updates the parameters without optimizer.step() (a hand-written update), "
                     "so the learning-rate second opinion was not run.")
    if not start > 0:  # a loss that can be negative: no relative judgement
        return [], notes
    if divergence(main.losses):
        tail = f" With lr x0.1 ({_lr(other.lrs)}) {_outcome(other)}." if other is not None and other.losses else ""
        extra = (" The inputs are not normalised (see INPUT_NOT_NORMALIZED): normalising them often "
                 "fixes this without touching the learning rate." if input_warning else "")
        return [finding("LR_TOO_HIGH", "error", f"training a copy on {main.samples} samples, {summary}.{tail}{extra}",
                        "steps that are too large overshoot the minimum: the loss jumps up instead of "
                        "down, and repeated overshoots grow until the numbers overflow to Inf/NaN.",
                        "lower the learning rate 10x at a time until the loss falls steadily (typical: "
                        "Adam 1e-3, SGD 0.01-0.1); gradient clipping and warm-up help with spikes.")], notes
    stuck = _stuck(main, loss_fn) if loss_fn is not None else None
    if stuck is not None:
        return [stuck], notes
    best = min(main.losses)
    if best <= 0.9 * start:
        return [], notes
    flat = best > 0.99 * start
    helped = other is not None and other.losses and min(other.losses) < 0.9 * start
    tail = (f" With lr x10 ({_lr(other.lrs)}) {_outcome(other)}"
            f"{': the learning rate is probably too low' if helped else ', no better'}."
            if other is not None and other.losses else "")
    return [finding("CANNOT_OVERFIT_BATCH", "error" if flat or not helped else "warning",
                    f"training a copy on {main.samples} samples, {summary}: only {1 - best / start:.1%} lower.{tail}",
                    "a healthy setup can memorise a single batch quickly; if it cannot, full training "
                    "will not work either (the 'loss will not go down' checklist).",
                    "if lr x10 helped, raise the learning rate; otherwise check that the targets match "
                    "the inputs, that every layer gets gradients, and that the loss fits the task.")], notes
