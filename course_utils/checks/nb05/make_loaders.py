"""``05.make_loaders``: shuffled train loader without its last batch, ordered val loader."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import _gen


def make_loaders_reference(train_ds, val_ds, batch_size: int) -> tuple[DataLoader, DataLoader]:
    train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=batch_size, shuffle=False)
    return train_loader, val_loader


def _loaders_shuffle_val(train_ds, val_ds, batch_size):
    return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
            DataLoader(val_ds, batch_size=batch_size, shuffle=True))


def _loaders_no_shuffle(train_ds, val_ds, batch_size):
    return (DataLoader(train_ds, batch_size=batch_size, drop_last=True),
            DataLoader(val_ds, batch_size=batch_size))


def _loaders_keep_last(train_ds, val_ds, batch_size):
    return (DataLoader(train_ds, batch_size=batch_size, shuffle=True),
            DataLoader(val_ds, batch_size=batch_size))


def _loaders_drop_val(train_ds, val_ds, batch_size):
    return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
            DataLoader(val_ds, batch_size=batch_size, drop_last=True))


def _loader_cases():
    def make(n_train: int, n_val: int, batch_size: int):
        def ds(n: int, seed: int) -> TensorDataset:
            return TensorDataset(torch.randn(n, 3, generator=_gen(seed)), torch.arange(n))
        return (ds(n_train, 0), ds(n_val, 1), batch_size), {}
    # n_train % batch_size == 1: a loader that keeps the last batch ends with a batch of one
    return [lambda: make(33, 21, 8), lambda: make(61, 10, 4)]


def _pair_of_loaders(out) -> str | None:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return f"expected a tuple (train_loader, val_loader), found {describe(out)}"
    for name, loader in zip(("train_loader", "val_loader"), out):
        if not isinstance(loader, DataLoader):
            return f"expected {name} to be a torch.utils.data.DataLoader, found {describe(loader)}"
    return None


def _loaders_verify(out, ref, args, kwargs):
    problem = _pair_of_loaders(out)
    if problem:
        return problem
    train_loader, val_loader = out
    train_ds, val_ds, batch_size = args
    if train_loader.dataset is not train_ds or val_loader.dataset is not val_ds:
        return "expected the first loader to read train_ds and the second val_ds"
    if train_loader.batch_size != batch_size:
        return f"expected train batch_size {batch_size}, found {train_loader.batch_size}"
    if isinstance(val_loader.sampler, RandomSampler):
        return "the validation loader shuffles: its order changes every epoch"
    if not isinstance(train_loader.sampler, RandomSampler):
        return "the training loader reads the samples in the same order every epoch"
    if not train_loader.drop_last:
        last = len(train_ds) % batch_size
        if last:  # computed, not iterated: iterating a shuffled loader would consume RNG draws
            return (f"the training loader keeps a last batch of {last} sample(s) "
                    f"({len(train_ds)} samples, batch_size {batch_size})")
    if val_loader.batch_size is not None:  # arithmetic: iterating would draw from the global RNG
        seen = len(val_ds) - (len(val_ds) % val_loader.batch_size if val_loader.drop_last else 0)
    else:
        seen = sum(len(batch[0]) for batch in val_loader)
    if seen != len(val_ds):
        return f"the validation loader yields {seen} of the {len(val_ds)} validation samples"
    if not isinstance(val_loader.sampler, SequentialSampler):
        return f"expected the validation loader to read in order, found a {type(val_loader.sampler).__name__}"
    return None


def _val_shuffled(out, args, kwargs) -> bool:
    return _pair_of_loaders(out) is None and isinstance(out[1].sampler, RandomSampler)


def _train_unshuffled(out, args, kwargs) -> bool:
    return _pair_of_loaders(out) is None and not isinstance(out[0].sampler, RandomSampler)


def _train_keeps_last(out, args, kwargs) -> bool:
    return _pair_of_loaders(out) is None and not out[0].drop_last


def _val_drops(out, args, kwargs) -> bool:
    return _pair_of_loaders(out) is None and out[1].drop_last


register(Exercise(
    "05.make_loaders",
    "make_loaders(train_ds, val_ds, batch_size) returns (train_loader, val_loader): the training "
    "loader shuffles and drops the last incomplete batch (the model uses BatchNorm); the "
    "validation loader keeps the order and every sample.",
    make_loaders_reference,
    _loader_cases(),
    _loaders_verify,
    [
        Mistake("shuffles the validation set",
                "shuffling validation data changes nothing in the metric but makes per-sample "
                "results impossible to compare between runs: use shuffle=False there.",
                _loaders_shuffle_val, detect=_val_shuffled),
        Mistake("training set not shuffled",
                "without shuffle=True every epoch sees the batches in the same order (often sorted "
                "by class), which hurts SGD: pass shuffle=True to the training loader.",
                _loaders_no_shuffle, detect=_train_unshuffled),
        Mistake("drop_last missing on train: a batch of one reaches BatchNorm",
                "with len(train_ds) % batch_size == 1 the last batch holds one sample and BatchNorm "
                "in training mode fails on it: pass drop_last=True to the training loader.",
                _loaders_keep_last, detect=_train_keeps_last),
        Mistake("drop_last on validation loses samples",
                "validation must see every sample, or the metric depends on the batch size: "
                "keep drop_last=False for the validation loader.",
                _loaders_drop_val, detect=_val_drops),
    ],
))
