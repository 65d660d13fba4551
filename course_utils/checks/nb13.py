"""Checkers of notebook 13 (distributed data parallel), in notebook order: ``13.average_gradients``,
``13.shard_indices``, ``13.should_save``, ``13.unwrapped_state_dict``.

No process group is needed: gradient averaging is list arithmetic over per-rank gradients, sharding is
compared with ``DistributedSampler(shuffle=False)``'s padded, interleaved order, and unwrapping runs on
wrapper shells that only wrap (``_shell``: ``DistributedDataParallel``, ``nn.DataParallel`` and a subclass)
and on plain models with a layer named ``module`` or layers whose names start with letters of ``module.``.
``13.should_save``'s inspection records the candidate's answers on a small table, so an inverted rank test is
told apart from an off-by-one epoch (one case alone cannot).
"""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any, Callable

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t, tn


# --- 13.average_gradients -------------------------------------------------------------------------
# What every rank holds after all_reduce(SUM) and a division by world_size.

def average_gradients_reference(per_rank: list[list[torch.Tensor]]) -> list[list[torch.Tensor]]:
    world_size = len(per_rank)
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]  # all_reduce(SUM)
    return [[g / world_size for g in summed] for _ in range(world_size)]


def _avg_sum_only(per_rank):
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]
    return [[g.clone() for g in summed] for _ in per_rank]


def _avg_no_communication(per_rank):
    return [[g.clone() for g in grads] for grads in per_rank]


def _avg_single_list(per_rank):
    return [torch.stack(grads).mean(dim=0) for grads in zip(*per_rank)]


def _avg_within_rank(per_rank):
    return [[g / len(grads) for g in grads] for grads in per_rank]


def _avg_within_rank_mean(per_rank):
    return [[sum(grads) / len(grads) for _ in grads] for grads in per_rank]


def _avg_by_gradient_count(per_rank):
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]
    return [[g / len(per_rank[0]) for g in summed] for _ in per_rank]


def _avg_two_ranks(per_rank):
    means = [(grads[0] + grads[1]) / 2 for grads in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]


def _avg_floor(per_rank):
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]
    return [[g // len(per_rank) for g in summed] for _ in per_rank]


def _avg_skips_rank_0(per_rank):
    world_size = len(per_rank)
    summed = [torch.stack(grads[1:]).sum(dim=0) for grads in zip(*per_rank)]
    return [[g / world_size for g in summed] for _ in per_rank]


def _avg_skips_rank_0_mean(per_rank):
    means = [torch.stack(grads[1:]).mean(dim=0) for grads in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]


def _avg_max(per_rank):
    maxima = [torch.stack(grads).amax(dim=0) for grads in zip(*per_rank)]
    return [[m.clone() for m in maxima] for _ in per_rank]


def _avg_one_rank_broadcast(per_rank):
    return [[g.clone() for g in per_rank[0]] for _ in per_rank]


def _avg_close(out: Any, expected: list[list[torch.Tensor]]) -> bool:
    """``out`` has the layout of ``expected`` (a list per rank) and the same values."""
    if not isinstance(out, (list, tuple)) or len(out) != len(expected):
        return False
    for grads, wanted in zip(out, expected):
        if not isinstance(grads, (list, tuple)) or len(grads) != len(wanted):
            return False
        for g, w in zip(grads, wanted):
            if (not isinstance(g, torch.Tensor) or g.shape != w.shape
                    or not torch.allclose(g.detach().double(), w.double(), rtol=1e-3, atol=1e-3, equal_nan=True)):
                return False
    return True


def _avg_like(*variants: Callable[..., Any]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate returned what one of these wrong versions returns on the same gradients
    (and that differs from the right answer, so a coincidence on this case names nothing)."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        (per_rank,) = args
        right = average_gradients_reference(per_rank)
        for variant in variants:
            try:
                wrong = variant(per_rank)
            except Exception:  # noqa: BLE001 - the variant does not apply to this case
                continue
            if _avg_close(out, wrong) and not _avg_close(wrong, right):
                return True
        return False
    return detect


def _avg_every_rank_unchanged(out: Any, args: tuple, kwargs: dict) -> bool:
    """Each returned gradient is one rank's own gradient, unchanged: nothing was combined across ranks."""
    (per_rank,) = args
    if not isinstance(out, (list, tuple)) or len(out) != len(per_rank) or len(per_rank) < 2:
        return False
    if all(torch.equal(rank[0], per_rank[0][0]) for rank in per_rank):
        return False  # the inputs were overwritten with one value (reported as a change of per_rank)
    for grads in out:
        if not isinstance(grads, (list, tuple)) or len(grads) != len(per_rank[0]):
            return False
        for i, g in enumerate(grads):
            if not any(isinstance(g, torch.Tensor) and g.shape == rank[i].shape and torch.equal(g, rank[i])
                       for rank in per_rank):
                return False
    return True


def _avg_cases():
    def make(seed, world_size, shapes, dtype=torch.float32):
        def factory():
            gen = torch.Generator().manual_seed(seed)
            return ([[torch.randn(*s, generator=gen, dtype=torch.float64).to(dtype) for s in shapes]
                     for _ in range(world_size)],), {}
        return factory
    # (2, 3) and (3,) broadcast against each other: averaging within a rank runs and is caught by value;
    # world_size 2 with 2 gradients, then 4 ranks with 3 gradients (counts differ), 3 ranks, a float64 and
    # a float16 model (the gradients keep their dtype), and a single rank
    return [make(0, 2, [(2, 3), (3,)]), make(1, 4, [(2, 2), (2,), (1,)]), make(2, 3, [(5,)]),
            make(3, 3, [(4,), (2, 2)], torch.float64), make(4, 2, [(3,), (2,)], torch.float16),
            make(5, 1, [(3,)])]


def _avg_verify(out, ref, args, kwargs):
    (per_rank,) = args
    world_size = len(per_rank)
    setting = t("with world_size={world_size} ({ranks}, {grads} each, {dtype})", world_size=world_size,
                ranks=tn("{n} rank", "{n} ranks", world_size),
                grads=tn("{n} gradient", "{n} gradients", len(per_rank[0])), dtype=per_rank[0][0].dtype)
    if not isinstance(out, (list, tuple)) or len(out) != len(ref):
        return t("{setting} expected a list with one gradient list per rank ({n} lists), found {got}",
                 setting=setting, n=len(ref), got=describe(out))
    for rank, (grads, expected) in enumerate(zip(out, ref)):
        if not isinstance(grads, (list, tuple)) or len(grads) != len(expected):
            return t("{setting} expected rank {rank} to hold a list of {n} gradients, found {got}",
                     setting=setting, rank=rank, n=len(expected), got=describe(grads))
        for index, (g, e) in enumerate(zip(grads, expected)):
            tolerance = {"atol": 1e-3, "rtol": 1e-3} if e.dtype in (torch.float16, torch.bfloat16) else {}
            problem = compare_tensors(g, e, name=t("rank {rank}'s gradient {index}", rank=rank, index=index),
                                      **tolerance)
            if problem:
                return t("{setting}: {problem}", setting=setting, problem=problem)
    return None


register(Exercise(
    "13.average_gradients",
    "average_gradients(per_rank) takes per_rank[r][i] = gradient i computed on rank r and returns "
    "what every rank holds after all_reduce(SUM) and a division by world_size: a list with, for "
    "every rank, the list of averaged gradients, in the gradients' dtype. It leaves per_rank and "
    "its tensors unchanged.",
    average_gradients_reference,
    _avg_cases(),
    _avg_verify,
    [
        Mistake("sums without dividing by world_size",
                "all_reduce with ReduceOp.SUM adds the ranks' gradients; divide by world_size so "
                "the step matches one big batch (DDP does this for you).",
                _avg_sum_only, detect=_avg_like(_avg_sum_only)),
        Mistake("keeps each rank's own gradients (no all-reduce)",
                "combine gradient i ACROSS ranks (zip(*per_rank)); without that the replicas "
                "drift apart after the first optimizer step.",
                _avg_no_communication, detect=_avg_every_rank_unchanged),
        Mistake("returns a single list instead of one per rank",
                "after an all-reduce EVERY rank holds the result: return one list per rank.",
                _avg_single_list,
                detect=lambda out, a, k: isinstance(out, (list, tuple)) and len(out) > 0
                and isinstance(out[0], torch.Tensor)),
        Mistake("averages within a rank instead of across ranks",
                "gradient i is combined ACROSS ranks: sum per_rank[r][i] over the ranks r and divide by the "
                "number of ranks, len(per_rank); do not mix a rank's different gradients.",
                _avg_within_rank, detect=_avg_like(_avg_within_rank, _avg_within_rank_mean)),
        Mistake("divides by the number of gradients instead of the number of ranks",
                "world_size is the number of ranks, len(per_rank); len(per_rank[0]) counts the gradients "
                "each rank holds.",
                _avg_by_gradient_count, detect=_avg_like(_avg_by_gradient_count)),
        Mistake("hard-codes two ranks",
                "the message shows this case's world_size: sum over all len(per_rank) ranks and divide by "
                "len(per_rank), not by 2.",
                _avg_two_ranks, detect=_avg_like(_avg_two_ranks)),
        Mistake("floor division (//) instead of division",
                "`//` is floor division: it rounds every averaged gradient down to a whole number. "
                "Divide with `/`.",
                _avg_floor, detect=_avg_like(_avg_floor)),
        Mistake("leaves rank 0 out of the sum",
                "the sum must include every rank's gradient, rank 0 too: range(world_size) starts at 0 "
                "(or sum over zip(*per_rank)).",
                _avg_skips_rank_0, detect=_avg_like(_avg_skips_rank_0, _avg_skips_rank_0_mean)),
        Mistake("element-wise maximum (ReduceOp.MAX) instead of the mean",
                "the ranks' gradients are averaged: all_reduce with ReduceOp.SUM, then divide by "
                "world_size, which gives the mean over ranks, not their element-wise maximum.",
                _avg_max, detect=_avg_like(_avg_max)),
    ],
))


# --- 13.shard_indices -----------------------------------------------------------------------------
# The dataset indices one rank uses, like DistributedSampler(shuffle=False).

def shard_indices_reference(n: int, rank: int, world_size: int) -> list[int]:
    per_rank = math.ceil(n / world_size)
    total = per_rank * world_size
    indices = list(range(n))
    while len(indices) < total:  # pad by repeating from the start, like DistributedSampler
        indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]


def _shard_same_for_all(n, rank, world_size):
    return list(range(0, n, world_size))


def _shard_drop_remainder(n, rank, world_size):
    usable = n - n % world_size
    return list(range(rank, usable, world_size))


def _shard_unequal(n, rank, world_size):
    return list(range(rank, n, world_size))


def _shard_pad_once(n, rank, world_size):
    indices = list(range(n))
    indices += indices[: (world_size - n % world_size) % world_size]
    return indices[rank::world_size]


def _shard_blocks(n, rank, world_size):
    per_rank = math.ceil(n / world_size)
    padded = [i % n for i in range(per_rank * world_size)]
    return padded[rank * per_rank:(rank + 1) * per_rank]


def _shard_cases():
    return [lambda n=n, r=r, w=w: ((n, r, w), {})
            for n, r, w in [(8, 1, 2), (10, 1, 4), (10, 3, 4), (3, 3, 4), (2, 4, 5), (7, 2, 3), (5, 0, 1)]]


def _shard_verify(out, ref, args, kwargs):
    n, rank, world_size = args
    if not isinstance(out, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in out):
        return t("expected a list of ints (list[int]), found {got}", got=describe(out))
    if out != ref:
        return t("for n={n}, rank={rank}, world_size={world_size} expected {ref} ({count}), found {out}",
                 n=n, rank=rank, world_size=world_size, ref=ref, out=out,
                 count=tn("{n} index on every rank", "{n} indices on every rank", len(ref)))
    return None


def _shard_like(variant: Callable[..., list[int]]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate returned what this wrong version returns, and that is wrong on this case."""
    return lambda out, a, k: out == variant(*a) != shard_indices_reference(*a)


register(Exercise(
    "13.shard_indices",
    "shard_indices(n, rank, world_size) returns the dataset indices rank `rank` uses, as a list of "
    "ints, like DistributedSampler(shuffle=False): pad range(n) by repeating from its start (more than "
    "once if needed) until its length divides by world_size, then take every world_size-th index "
    "starting at rank.",
    shard_indices_reference,
    _shard_cases(),
    _shard_verify,
    [
        Mistake("ignores rank (every rank gets the same samples: overlap)",
                "start at `rank`: indices[rank::world_size]. Otherwise all ranks train on the same "
                "samples and the extra processes add nothing.",
                _shard_same_for_all, detect=_shard_like(_shard_same_for_all)),
        Mistake("drops the remainder without padding",
                "samples past the last multiple of world_size are never seen; pad the index list by "
                "repeating its first entries instead (DistributedSampler's default, drop_last=False).",
                _shard_drop_remainder,
                detect=lambda out, a, k: _shard_like(_shard_drop_remainder)(out, a, k)
                and a[1] < a[0] % a[2]),
        Mistake("pads by repeating the start only once",
                "when world_size is much larger than n, one copy of the start is not enough: n=2, "
                "world_size=5 needs 0, 1, 0, 1, 0. Repeat the list more than once (while the padded list "
                "is shorter than the total, add more of it).",
                _shard_pad_once, detect=_shard_like(_shard_pad_once)),
        Mistake("unequal shard sizes (no padding)",
                "every rank must get the same number of indices, or one rank runs an extra step and "
                "waits forever in an all-reduce the others never join: pad first, then shard.",
                _shard_unequal, detect=_shard_like(_shard_unequal)),
        Mistake("contiguous blocks instead of every world_size-th index",
                "DistributedSampler interleaves: rank r takes positions r, r + world_size, ... of the "
                "padded list, not one contiguous block.",
                _shard_blocks, detect=_shard_like(_shard_blocks)),
    ],
))


# --- 13.should_save -------------------------------------------------------------------------------
# Only rank 0 saves, after every n-th epoch.

def should_save_reference(rank: int, epoch: int, every: int) -> bool:
    return rank == 0 and (epoch + 1) % every == 0


def _save_every_rank(rank, epoch, every):
    return (epoch + 1) % every == 0


def _save_off_by_one(rank, epoch, every):
    return rank == 0 and epoch % every == 0


def _save_rank_inverted(rank, epoch, every):
    return rank != 0 and (epoch + 1) % every == 0


#: A small table of (rank, epoch, every). One case alone cannot tell an inverted rank test from an off-by-one
#: epoch (both say False for rank 0 after epoch 1), so the inspection records the candidate's answers on the
#: whole table, and a mistake is named when they equal that mistake's answers on all of it.
_SAVE_TABLE = [(rank, epoch, every) for every in (1, 2, 3) for epoch in range(6) for rank in (0, 1, 2)]
_save_recorded: dict[str, Any] = {"answers": None}


def _save_answers(fn: Callable[..., Any]) -> list[Any] | None:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return [fn(*point) for point in _SAVE_TABLE]
    except Exception:  # noqa: BLE001 - the normal run reports the error on a case
        return None


def _save_record(candidate: Callable[..., Any]) -> None:
    """Inspection: record the candidate's answers on ``_SAVE_TABLE`` (the cases run right after it)."""
    _save_recorded["answers"] = None
    _save_recorded["answers"] = _save_answers(candidate)
    return None


def _save_like(variant: Callable[..., bool], on_this_case: bool) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate answers like ``variant`` on the whole table, or (``on_this_case``) on the
    failing case (the cases before it passed)."""
    table = [variant(*point) for point in _SAVE_TABLE]

    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        answers = _save_recorded["answers"]
        if answers is not None and all(type(a) is bool for a in answers) and answers == table:
            return True
        return on_this_case and out == variant(*args) != should_save_reference(*args)
    return detect


def _save_cases():
    # (2, 3, 1): every=1 on a rank other than 0 (only rank 0 saves, even when every epoch is saved)
    return [lambda r=r, e=e, v=v: ((r, e, v), {})
            for r, e, v in [(0, 1, 2), (1, 1, 2), (0, 0, 2), (3, 5, 3), (0, 4, 1), (0, 2, 3),
                            (0, 3, 3), (0, 2, 2), (0, 0, 1), (2, 3, 1)]]


def _save_verify(out, ref, args, kwargs):
    rank, epoch, every = args
    if not isinstance(out, bool):
        return t("expected True or False, found {got}", got=describe(out))
    if out != ref:
        return t("for rank={rank}, epoch={epoch}, every={every} expected {ref}, found {out}",
                 rank=rank, epoch=epoch, every=every, ref=ref, out=out)
    return None


register(Exercise(
    "13.should_save",
    "should_save(rank, epoch, every) is True only on rank 0, after every `every`-th epoch "
    "(epochs count from 0, so with every=2 it saves after epochs 1, 3, 5, ...).",
    should_save_reference,
    _save_cases(),
    _save_verify,
    [
        Mistake("rank test inverted (every rank but rank 0 saves)",
                "rank 0 is the one that writes: test `rank == 0`, not `rank != 0`.",
                _save_rank_inverted, detect=_save_like(_save_rank_inverted, on_this_case=False)),
        Mistake("every rank saves",
                "all ranks hold identical weights; if each one writes the same file they race "
                "and can leave a corrupt checkpoint. Only rank 0 writes: test `rank == 0`.",
                _save_every_rank, detect=_save_like(_save_every_rank, on_this_case=True)),
        Mistake("off by one epoch",
                "epochs count from 0: after epoch `epoch`, epoch + 1 epochs are done, so test "
                "(epoch + 1) % every == 0.",
                _save_off_by_one, detect=_save_like(_save_off_by_one, on_this_case=True)),
    ],
    inspect=_save_record,
    inspect_time_limit=10.0,
))


# --- 13.unwrapped_state_dict ----------------------------------------------------------------


def _shell(wrapper: type[nn.Module], module: nn.Module) -> nn.Module:
    """A wrapper object of type ``wrapper`` that only wraps: no process group (DistributedDataParallel) and
    no device move (nn.DataParallel moves the model to a GPU when one is present) needed to test saving."""
    shell = wrapper.__new__(wrapper)
    nn.Module.__init__(shell)
    shell.module = module
    return shell


def _ddp_shell(module: nn.Module) -> nn.Module:
    """A DistributedDataParallel object that only wraps (no process group needed to test saving)."""
    return _shell(DistributedDataParallel, module)


class SubclassedDDP(DistributedDataParallel):
    """A subclass of DistributedDataParallel, as projects write to add a method: still a wrapper."""


def unwrapped_state_dict_reference(model: nn.Module) -> dict[str, torch.Tensor]:
    inner = model.module if isinstance(model, (DistributedDataParallel, nn.DataParallel)) else model
    return inner.state_dict()


def _unwrap_keeps_prefix(model):
    return model.state_dict()


def _unwrap_always(model):
    return model.module.state_dict()


def _unwrap_by_attribute(model):
    return getattr(model, "module", model).state_dict()


def _unwrap_ddp_only(model):
    return (model.module if isinstance(model, DistributedDataParallel) else model).state_dict()


def _unwrap_exact_type(model):
    return (model.module if type(model) in (DistributedDataParallel, nn.DataParallel) else model).state_dict()


def _unwrap_lstrip(model):
    if isinstance(model, (DistributedDataParallel, nn.DataParallel)):
        return {k.lstrip("module."): v for k, v in model.state_dict().items()}
    return model.state_dict()


def _unwrap_replace(model):
    if isinstance(model, (DistributedDataParallel, nn.DataParallel)):
        return {k.replace("module.", ""): v for k, v in model.state_dict().items()}
    return model.state_dict()


def _unwrap_parameters_only(model):
    inner = model.module if isinstance(model, (DistributedDataParallel, nn.DataParallel)) else model
    return dict(inner.named_parameters())


class NetWithModuleLayer(nn.Module):
    """A plain (unwrapped) model that happens to have a layer named ``module``."""

    def __init__(self) -> None:
        super().__init__()
        self.module = nn.Linear(3, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.module(x)))


class EncoderDecoder(nn.Module):
    """Layer names that start with letters of 'module.' (str.lstrip('module.') eats them)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(3, 4)
        self.decoder = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(torch.relu(self.encoder(x)))


def _unwrap_cases():
    def make(seed, wrapper, inner=None):
        def factory():
            torch.manual_seed(seed)
            model = (inner or (lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))))()
            return ((_shell(wrapper, model) if wrapper else model),), {}
        return factory
    # DDP, plain, nn.DataParallel, a subclass of DDP, layers named encoder/decoder inside DDP, a plain model
    # with a layer named `module`, and that model inside DDP (keys module.module.*)
    return [make(0, DistributedDataParallel), make(1, None), make(2, nn.DataParallel), make(4, SubclassedDDP),
            make(5, DistributedDataParallel, EncoderDecoder), make(3, None, NetWithModuleLayer),
            make(6, DistributedDataParallel, NetWithModuleLayer)]


def _keys_like(variant: Callable[[nn.Module], Any]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's keys are this wrong version's keys, and those are wrong on this case."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        if not isinstance(out, dict):
            return False
        try:
            wrong = list(variant(args[0]))
        except Exception:  # noqa: BLE001 - the variant does not apply to this case
            return False
        return list(out) == wrong != list(unwrapped_state_dict_reference(args[0]))
    return detect


def _unwrap_verify(out, ref, args, kwargs):
    model = args[0]
    what = (t("for {wrapper}({inner}(...))", wrapper=type(model).__name__, inner=type(model.module).__name__)
            if isinstance(model, (DistributedDataParallel, nn.DataParallel))
            else t("for a plain (unwrapped) {name}", name=type(model).__name__))
    if isinstance(out, nn.Module):
        return t("{what}: expected a state dict (a dict of tensors), found the module itself ({kind})",
                 what=what, kind=type(out).__name__)
    if not isinstance(out, dict):
        return t("{what}: expected a state dict (a dict of tensors), found {got}", what=what, got=describe(out))
    if list(out) != list(ref):
        missing = [k for k in ref if k not in out]
        extra = [k for k in out if k not in ref]
        if not missing and not extra:
            return t("{what}: expected the keys in the order {ref}, found {out}", what=what, ref=list(ref),
                     out=list(out))
        parts = []
        if missing:
            inner = model.module if isinstance(model, (DistributedDataParallel, nn.DataParallel)) else model
            buffers = {name for name, _ in inner.named_buffers()}
            kind = t(" (buffers)") if all(k in buffers for k in missing) else ""
            parts.append(t("missing{kind} {keys}", kind=kind, keys=missing))
        if extra:
            parts.append(t("unexpected {keys}", keys=extra))
        return t("{what}: expected the keys {ref}, found {out}: {parts}", what=what, ref=list(ref), out=list(out),
                 parts=", ".join(parts))
    for key in ref:
        problem = compare_tensors(out[key], ref[key], name=t("entry {key}", key=repr(key)))
        if problem:
            return t("{what}: {problem}", what=what, problem=problem)
    return None


register(Exercise(
    "13.unwrapped_state_dict",
    "unwrapped_state_dict(model) returns the state dict of the model inside a "
    "DistributedDataParallel or nn.DataParallel wrapper (a subclass of one too: keys without the leading "
    "'module.' prefix), and the plain state dict when the model is not wrapped (even when it has a layer "
    "named 'module').",
    unwrapped_state_dict_reference,
    _unwrap_cases(),
    _unwrap_verify,
    [
        Mistake("unwraps DistributedDataParallel only (not nn.DataParallel)",
                "nn.DataParallel prefixes every key with 'module.' too: unwrap both, "
                "isinstance(model, (DistributedDataParallel, nn.DataParallel)).",
                _unwrap_ddp_only, detect=lambda out, a, k: type(a[0]) is nn.DataParallel
                and _keys_like(_unwrap_keeps_prefix)(out, a, k)),
        Mistake("tests the exact type (a subclass of a wrapper is not unwrapped)",
                "type(model) in (...) misses a subclass of DistributedDataParallel (projects subclass it "
                "to add methods); isinstance(model, (DistributedDataParallel, nn.DataParallel)) accepts "
                "subclasses too.",
                _unwrap_exact_type, detect=lambda out, a, k: type(a[0]) is SubclassedDDP
                and _keys_like(_unwrap_keeps_prefix)(out, a, k)),
        Mistake("keeps the 'module.' prefix",
                "ddp_model.state_dict() names every key 'module.<name>', which a plain model cannot "
                "load: save ddp_model.module.state_dict() instead.",
                _unwrap_keeps_prefix, detect=_keys_like(_unwrap_keeps_prefix)),
        Mistake("fails on an unwrapped model",
                "a plain nn.Module has no .module: unwrap only a wrapper, model.module if "
                "isinstance(model, (DistributedDataParallel, nn.DataParallel)) else model.",
                _unwrap_always, error_match="has no attribute 'module'"),
        Mistake("unwraps by attribute name (getattr(model, 'module', model))",
                "getattr(model, 'module', model) also 'unwraps' a plain model that has a layer "
                "named module, and returns only that layer's weights: test the type instead, "
                "model.module if isinstance(model, (DistributedDataParallel, nn.DataParallel)) "
                "else model.",
                _unwrap_by_attribute, detect=_keys_like(_unwrap_by_attribute)),
        Mistake("replace('module.', '') removes every 'module.' in a key",
                "k.replace('module.', '') also removes the name of an inner layer called module "
                "('module.module.weight' becomes 'weight'): remove only the leading prefix, "
                "k.removeprefix('module.'), or save model.module.state_dict().",
                _unwrap_replace, detect=_keys_like(_unwrap_replace)),
        Mistake("str.lstrip('module.') strips characters, not the prefix",
                "k.lstrip('module.') removes every leading m, o, d, u, l, e and '.', so 'module.encoder.weight' "
                "becomes 'ncoder.weight': remove the prefix with k.removeprefix('module.'), or save "
                "model.module.state_dict().",
                _unwrap_lstrip, detect=_keys_like(_unwrap_lstrip)),
        Mistake("parameters only (buffers missing)",
                "a state dict holds buffers as well as parameters (BatchNorm's running_mean, running_var, "
                "num_batches_tracked): return inner.state_dict(), not dict(inner.named_parameters()).",
                _unwrap_parameters_only, detect=_keys_like(_unwrap_parameters_only)),
    ],
))
