"""Turn what the doctor's probes recorded into findings (see :mod:`course_utils.doctor`).

Example:
    >>> record = OverfitRecord(losses=[2.3, 2.0, 1.1], lrs=[0.1], step_calls=3, changed=0.2, samples=16)
    >>> found, notes = overfit_findings(record, None, blocked=False, input_warning=False)
    >>> found, notes[0]
    ([], 'one-batch overfit (first 16 samples): the loss fell from 2.3 to 1.1 in 3 steps (48% of the start) at lr 0.1.')
    >>> found, _ = overfit_findings(OverfitRecord([2.3, 9.0, float("nan")], [10.0], 3, 1.0, 8), None, False, False)
    >>> found[0].code, "became nan at step 3" in found[0].message
    ('LR_TOO_HIGH', True)
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .checks import loss_input_findings
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
    if record.loss_inputs:
        pred, tgt, autocast = record.loss_inputs[0]
        found += loss_input_findings(pred, tgt, loss_fn, autocast)
    elif record.model_outputs and isinstance(target, torch.Tensor):  # the step bypassed loss_fn
        found += loss_input_findings(record.model_outputs[0], target, loss_fn, autocast=True)
    if record.error is not None:
        return found + [record.error]
    if record.returned is not None:
        return found + [finding("STEP_FAILED", "error",
                                f"your train_step returned {record.returned}, not the loss, and never "
                                "called the loss_fn it was given.",
                                "the doctor (and your training log) needs each step's loss to see whether "
                                "training works.",
                                "compute the loss with the loss_fn argument and end the step with "
                                "`return loss.item()`.")]
    found += _nonfinite(record)
    found += _gradient_flow(record)
    found += _zero_grad(record)
    found += _eval_mode(record, standard)
    return found


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


def _zero_grad(record: StepRecord) -> list[Finding]:
    if len(record.step_grads) < 2:
        return []
    first, second = record.step_grads[0], record.step_grads[1]
    pairs = [(first[i], second[i]) for i in first if first[i] is not None and second.get(i) is not None]
    norm1 = math.sqrt(sum(float(a.double().pow(2).sum()) for a, _ in pairs))
    if not pairs or norm1 == 0 or not math.isfinite(norm1):
        return []
    diff = math.sqrt(sum(float((b.double() - a.double()).pow(2).sum()) for a, b in pairs))
    norm2 = math.sqrt(sum(float(b.double().pow(2).sum()) for _, b in pairs))
    if diff / norm1 <= 1e-3:
        return []
    return [finding("ZERO_GRAD_MISSING", "error",
                    f"the same parameters, batch and random numbers were used twice, yet the gradient at the "
                    f"second optimizer.step() had norm {norm2:.4g}, {norm2 / norm1:.2f}x the first "
                    f"({norm1:.4g}): the first step's gradient was still in .grad.",
                    "backward() adds to .grad instead of overwriting it; without zero_grad() each update "
                    "uses the sum of all earlier gradients, so steps grow and point in stale directions.",
                    "call optimizer.zero_grad() once per step, before loss.backward(). (Accumulating on "
                    "purpose over micro-batches? Then zero right after each optimizer.step().)")]


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
    """How the loss diverged ("became nan at step 4", "rose to ... at step 2"), or None."""
    start = losses[0]
    for step, value in enumerate(losses, start=1):
        if not math.isfinite(value):
            return f"became {value} at step {step}"
        if start > 0 and value > 2 * start:
            how = f"rose to {value:.4g} ({value / start:.3g}x its start) at step {step}"
            later = next(((n, v) for n, v in enumerate(losses, start=1) if not math.isfinite(v)), None)
            if later:
                return how + f" and became {later[1]} at step {later[0]}"
            peak = max(losses)
            return how + (f", peaking at {peak:.4g}" if peak > value else "")
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


def overfit_findings(main: OverfitRecord, other: OverfitRecord | None, blocked: bool,
                     input_warning: bool) -> tuple[list[Finding], list[str]]:
    """LR_TOO_HIGH / CANNOT_OVERFIT_BATCH from the one-batch probe (``other``: lr x10 or /10)."""
    if main.error is not None:
        return [main.error], []
    if not main.losses:
        return [], []
    summary, start = _summary(main), main.losses[0]
    notes = [f"one-batch overfit (first {main.samples} samples): {summary}."]
    if blocked:  # errors above already explain a bad result; report it only as a measurement
        notes[0] = notes[0][:-1] + " (explained by the errors above)."
        return [], notes
    if main.step_calls == 0 or main.changed == 0:
        why = ("your step never called optimizer.step()" if main.step_calls == 0 else
               f"optimizer.step() ran {main.step_calls} times but no parameter changed (lr {_lr(main.lrs)})")
        return [finding("CANNOT_OVERFIT_BATCH", "error", f"{summary}: {why}.",
                        "a model whose parameters never change cannot learn anything.",
                        "call optimizer.step() after loss.backward() in every step, with a "
                        "learning rate above 0.")], notes
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
