"""10.mean_epoch_loss: average the per-step losses on the device, without host-device syncs."""

from __future__ import annotations

import torch

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


# --- 10.mean_epoch_loss ----------------------------------------------------------------------

_SYNCING = (torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__float__, torch.Tensor.__int__)


class _SyncCounter(torch.Tensor):
    """A tensor that counts device -> host copies (.item(), float(), .tolist()).

    Every test case makes its own subclass, so its count cannot be reset by the next case.
    """

    syncs = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _SYNCING:
            cls.syncs += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _syncs(args: tuple) -> int:
    return type(args[0][0]).syncs


def mean_epoch_loss_reference(step_losses: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack([loss.detach() for loss in step_losses]).mean()


def _loss_items(step_losses):
    return torch.tensor(sum(loss.item() for loss in step_losses) / len(step_losses))


def _loss_graph(step_losses):
    return sum(step_losses) / len(step_losses)


def _loss_sum(step_losses):
    return torch.stack([loss.detach() for loss in step_losses]).sum()


def _loss_cases():
    def make(seed, steps):
        def factory():
            counting = type("SyncCountingTensor", (_SyncCounter,), {"syncs": 0})
            gen = torch.Generator().manual_seed(seed)
            w = torch.randn(3, generator=gen, requires_grad=True)
            x = torch.randn(steps, 3, generator=gen)
            losses = [((x[i] * w).sum() ** 2).as_subclass(counting) for i in range(steps)]
            return (losses,), {}
        return factory
    return [make(0, 4), make(1, 7), make(2, 1)]


def _loss_verify(out, ref, args, kwargs):
    if _syncs(args):
        return (f"expected no device -> host copies, found {_syncs(args)} "
                f"(.item()/float()/.tolist() calls) for {len(args[0])} steps")
    if not isinstance(out, torch.Tensor):
        return f"expected a 0-dim tensor, found {describe(out)}"
    out = out.as_subclass(torch.Tensor)
    if out.requires_grad:
        return "expected a detached tensor (requires_grad=False), found one that still holds the graph"
    return compare_tensors(out, ref.as_subclass(torch.Tensor), name="mean loss")


register(Exercise(
    "10.mean_epoch_loss",
    "mean_epoch_loss(step_losses) returns the mean of the per-step loss tensors as a detached "
    "0-dim tensor, without any .item()/float()/.tolist() (each one is a host-device sync).",
    mean_epoch_loss_reference,
    _loss_cases(),
    _loss_verify,
    [
        Mistake("calls .item() every step (a host-device sync each time)",
                "keep the values on the device: torch.stack([l.detach() for l in step_losses]).mean(), "
                "and call .item() once, when you really print.",
                _loss_items, detect=lambda out, a, k: _syncs(a) > 0),
        Mistake("keeps the autograd graph (no detach)",
                "summing the loss tensors themselves keeps every step's graph (and its activations) "
                "alive: detach each loss before accumulating.",
                _loss_graph,
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.requires_grad),
        Mistake("sums instead of averaging",
                "divide by the number of steps (or use .mean()).",
                _loss_sum),
    ],
))
