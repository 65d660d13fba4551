"""Checkers of notebook 05 (data pipeline), in notebook order: ``05.normalization_stats``,
``05.make_loaders``, ``05.pad_collate``.

Inputs come from seeded generators, never the global RNG. ``05.make_loaders`` inspects the returned
loaders (sampler, ``drop_last``, batch size) without iterating a shuffled one, which would draw from
the global RNG.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler, Subset,
                              SubsetRandomSampler, TensorDataset)

from course_utils.data import pad_collate
from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t


# --- shared by the 05 checkers --------------------------------------------------------------------
# Seeded generators.

def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- 05.normalization_stats -----------------------------------------------------------------------
# Per-channel mean and std over images and pixels.

def normalization_stats_reference(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3))


def _stats_global(images):
    channels = images.shape[1]
    return images.mean().repeat(channels), images.std().repeat(channels)


def _stats_wrong_axes(images):
    return images.mean(dim=(1, 2, 3)), images.std(dim=(1, 2, 3))  # one value per image


def _stats_mean_of_stds(images):
    return images.mean(dim=(0, 2, 3)), images.std(dim=(2, 3)).mean(dim=0)


def _stats_reshape(images):
    flat = images.reshape(images.shape[1], -1)     # mixes images and channels: dim 0 is N, not C
    return flat.mean(dim=1), flat.std(dim=1)


def _stats_swapped(images):
    return torch.std_mean(images, dim=(0, 2, 3))    # returns (std, mean)


def _stats_variance(images):
    return images.mean(dim=(0, 2, 3)), images.var(dim=(0, 2, 3))


def _stats_keepdim(images):
    return images.mean(dim=(0, 2, 3), keepdim=True), images.std(dim=(0, 2, 3), keepdim=True)


def _pair_close(out: Any, wrong: tuple[torch.Tensor, torch.Tensor], which: int | None = None) -> bool:
    pair = _as_pair(out)
    if pair is None or not all(isinstance(v, torch.Tensor) for v in pair):
        return False
    indices = (0, 1) if which is None else (which,)
    return all(pair[i].shape == wrong[i].shape and torch.allclose(pair[i].double(), wrong[i].double(), atol=1e-5,
                                                                   rtol=1e-4) for i in indices)


def _stats_cases():
    def make(seed: int, n: int, c: int, h: int, w: int, dtype: torch.dtype = torch.float32):
        g = _gen(seed)
        channel_mean = torch.linspace(0.2, 0.7, c).view(1, c, 1, 1)
        channel_std = torch.linspace(0.05, 0.3, c).view(1, c, 1, 1)
        brightness = 0.15 * torch.randn(n, 1, 1, 1, generator=g)  # images differ from each other
        images = channel_mean + brightness + channel_std * torch.randn(n, c, h, w, generator=g)
        return (images.to(dtype),), {}
    return [lambda: make(0, 6, 3, 8, 5), lambda: make(1, 4, 3, 6, 6), lambda: make(2, 5, 2, 7, 4),
            lambda: make(3, 3, 3, 4, 4, torch.float64)]


def _as_pair(out: Any) -> tuple[Any, Any] | None:
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out[0], out[1]
    return None


def _stats_verify(out, ref, args, kwargs):
    (images,) = args
    pair = _as_pair(out)
    if pair is None:
        return t("expected a tuple (mean, std) of two tensors, found {describe_out}", describe_out=describe(out))
    channels = images.shape[1]
    for name, value, expected in zip(("mean", "std"), pair, ref):
        if not isinstance(value, torch.Tensor):
            return t("expected {name} to be a tensor of shape ({channels},), found {describe_value}",
                     name=name, channels=channels, describe_value=describe(value))
        if value.shape != expected.shape:
            return t("expected {name} of shape ({channels},) (one value per channel) for images of shape "
                     "{images_shape}, found shape {value_shape}",
                     name=name, channels=channels, images_shape=tuple(images.shape), value_shape=tuple(value.shape))
    named = _stats_mistake(pair, ref, images)
    if named:
        return named
    problem = compare_tensors(pair[0], ref[0], atol=1e-5, name="mean")
    if problem:
        return problem
    # the task does not say which std: the unbiased one (torch's default) and the biased one both count
    biased = images.std(dim=(0, 2, 3), correction=0)
    if compare_tensors(pair[1], biased, atol=1e-5, name="std") is None:
        return None
    return compare_tensors(pair[1], ref[1], atol=1e-5, name="std")


def _stats_mistake(pair, ref, images: torch.Tensor) -> str | None:
    """Name the usual wrong statistics, when the returned pair is exactly one of them."""
    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.shape == b.shape and bool(torch.allclose(a.float(), b.float(), atol=1e-5))

    stds = (ref[1], images.std(dim=(0, 2, 3), correction=0))
    if len(images) > 1 and close(pair[0], images[0].mean(dim=(1, 2))) and not close(pair[0], ref[0]):
        return t("these are the statistics of the first image only: average over all {len_images} images and their "
                 "pixels, dim=(0, 2, 3)", len_images=len(images))
    if close(pair[0], ref[0] / 255) and any(close(pair[1], sd / 255) for sd in stds):
        return t("you divided by 255 again: the images are already floats in [0, 1], so their statistics are taken "
                 "as they are")
    if close(pair[0], ref[0]) and any(close(pair[1], sd.sqrt()) for sd in stds) \
            and not any(close(pair[1], sd) for sd in stds):
        return t("the std you returned is the square root (sqrt, ** 0.5) of the standard deviation: "
                 "images.std(dim=(0, 2, 3)) is already the standard deviation")
    return None


def _is_global(out, args, kwargs) -> bool:
    pair = _as_pair(out)
    if pair is None or not all(isinstance(v, torch.Tensor) for v in pair):
        return False
    images = args[0]
    return bool(torch.allclose(pair[0].float(), images.mean().expand_as(pair[0]), atol=1e-5))


def _is_wrong_axes(out, args, kwargs) -> bool:
    pair = _as_pair(out)
    if pair is None or not isinstance(pair[0], torch.Tensor):
        return False
    return tuple(pair[0].shape) not in ((args[0].shape[1],), ()) and pair[0].numel() > 1


def _is_mean_of_stds(out, args, kwargs) -> bool:
    pair = _as_pair(out)
    if pair is None or not isinstance(pair[1], torch.Tensor) or pair[1].shape != (args[0].shape[1],):
        return False
    return bool(torch.allclose(pair[1], args[0].std(dim=(2, 3)).mean(dim=0), atol=1e-4))


register(Exercise(
    "05.normalization_stats",
    "normalization_stats(images) takes a float tensor [N, C, H, W] (the TRAINING split) and "
    "returns (mean, std), two tensors of shape [C] in the images' dtype: one value per channel, computed "
    "over all images and all pixels.",
    normalization_stats_reference,
    _stats_cases(),
    _stats_verify,
    [
        Mistake("keepdim=True leaves shape [1, C, 1, 1]",
                "the task asks for shape [C]: drop keepdim=True (Normalize accepts a [C] mean and std).",
                _stats_keepdim, detect=lambda out, a, k: _pair_close(out, _stats_keepdim(a[0]), 0)),
        Mistake("mean and std in the wrong order",
                "torch.std_mean returns (std, mean), in that order; the task returns (mean, std).",
                _stats_swapped, detect=lambda out, a, k: _pair_close(out, _stats_swapped(a[0]))),
        Mistake("reshape(C, -1) mixes images and channels",
                "in memory, dim 0 is the image, not the channel: reshape(C, -1) cuts the tensor into C "
                "pieces that cross channels. Move the channel first: images.transpose(0, 1).reshape(C, -1), "
                "or reduce directly with images.mean(dim=(0, 2, 3)).",
                _stats_reshape, detect=lambda out, a, k: _pair_close(out, _stats_reshape(a[0]), 0)),
        Mistake("variance instead of std",
                "var() is the std squared; take .std() (or .var().sqrt()).",
                _stats_variance, detect=lambda out, a, k: _pair_close(out, _stats_variance(a[0]), 1)
                or _pair_close(out, (a[0].mean(dim=(0, 2, 3)), a[0].var(dim=(0, 2, 3), correction=0)), 1)),
        Mistake("global instead of per-channel statistics",
                "images.mean() mixes the channels into one number, not one value per channel; reduce over every dim except "
                "the channel: images.mean(dim=(0, 2, 3)) and images.std(dim=(0, 2, 3)).",
                _stats_global, detect=_is_global),
        Mistake("wrong axes (reduced over the wrong dimensions)",
                "for [N, C, H, W] the channel is dim 1: keep it and reduce over dims (0, 2, 3). "
                "Reducing over (1, 2, 3) gives one value per image, over 0 one per pixel.",
                _stats_wrong_axes, detect=_is_wrong_axes),
        Mistake("averages per-image stds",
                "the mean of each image's std misses how much images differ from each other; "
                "take the std over all images and pixels at once: images.std(dim=(0, 2, 3)).",
                _stats_mean_of_stds, detect=_is_mean_of_stds),
    ],
))


# --- 05.make_loaders ------------------------------------------------------------------------------
# Shuffled train loader without its last batch, ordered val loader.

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
        return t("expected a tuple (train_loader, val_loader), found {describe_out}", describe_out=describe(out))
    for name, loader in zip(("train_loader", "val_loader"), out):
        if not isinstance(loader, DataLoader):
            return t("expected {name} to be a torch.utils.data.DataLoader, found {describe_loader}",
                     name=name, describe_loader=describe(loader))
    return None


def _batching(loader: DataLoader) -> tuple[Any, int | None, bool]:
    """(sampler, batch size, drop_last) as the loader batches, also when it was given a batch_sampler."""
    batches = loader.batch_sampler
    if loader.batch_size is None and isinstance(batches, BatchSampler):
        return batches.sampler, batches.batch_size, batches.drop_last
    return loader.sampler, loader.batch_size, loader.drop_last


def _shuffles(sampler: Any, n: int) -> bool:
    """A sampler that draws every one of the n samples in a new random order each epoch."""
    if isinstance(sampler, RandomSampler):
        return not sampler.replacement and sampler.num_samples == n
    return isinstance(sampler, SubsetRandomSampler) and sorted(sampler.indices) == list(range(n))


def _loaders_verify(out, ref, args, kwargs):
    problem = _pair_of_loaders(out)
    if problem:
        return problem
    train_loader, val_loader = out
    train_ds, val_ds, batch_size = args
    if train_loader.dataset is val_ds and val_loader.dataset is train_ds:
        return t("the loaders are in the wrong order: return (train_loader, val_loader), the training loader first")
    subset = train_loader.dataset
    if isinstance(subset, Subset) and subset.dataset is train_ds and val_loader.dataset is val_ds:
        return t("the training loader reads a fixed Subset of {len_subset} of the {len_train_ds} training samples, "
                 "so the same samples are left out every epoch: give it train_ds itself with drop_last=True, which "
                 "drops a different remainder each epoch", len_subset=len(subset), len_train_ds=len(train_ds))
    if train_loader.dataset is not train_ds or val_loader.dataset is not val_ds:
        return t("expected the first loader to read train_ds and the second val_ds")
    train_sampler, train_batch, train_drop = _batching(train_loader)
    val_sampler, val_batch, val_drop = _batching(val_loader)
    if train_batch != batch_size:
        return t("expected train batch_size {batch_size}, found {train_batch}",
                 batch_size=batch_size, train_batch=train_batch)
    if isinstance(val_sampler, (RandomSampler, SubsetRandomSampler)):
        return t("the validation loader shuffles: its order changes every epoch")
    try:
        drawn = len(train_sampler)
    except TypeError:
        drawn = None
    if drawn is not None and drawn != len(train_ds):
        return t("the training loader draws {drawn} of the {len_train_ds} training samples per epoch: shuffle all of "
                 "them (shuffle=True)", drawn=drawn, len_train_ds=len(train_ds))
    if not _shuffles(train_sampler, len(train_ds)):
        return t("the training loader reads the samples in the same order every epoch")
    if not train_drop:
        last = len(train_ds) % batch_size
        if last:  # computed, not iterated: iterating a shuffled loader would consume RNG draws
            return t("the training loader keeps a last batch of {last} sample(s) ({len_train_ds} samples, batch_size "
                     "{batch_size})", last=last, len_train_ds=len(train_ds), batch_size=batch_size)
    if val_batch is not None and isinstance(val_sampler, SequentialSampler):  # arithmetic: no RNG draws
        seen = len(val_ds) - (len(val_ds) % val_batch if val_drop else 0)
    else:
        seen = sum(len(batch[0]) for batch in val_loader)
    if seen != len(val_ds):
        return t("the validation loader yields {seen} of the {len_val_ds} validation samples",
                 seen=seen, len_val_ds=len(val_ds))
    if not isinstance(val_sampler, SequentialSampler):
        return t("expected the validation loader to read in order, found a {val_sampler}",
                 val_sampler=type(val_sampler).__name__)
    return None


def _in_order(out, args) -> bool:
    return _pair_of_loaders(out) is None and out[0].dataset is args[0] and out[1].dataset is args[1]


def _val_shuffled(out, args, kwargs) -> bool:
    return _in_order(out, args) and isinstance(_batching(out[1])[0], (RandomSampler, SubsetRandomSampler))


def _train_unshuffled(out, args, kwargs) -> bool:
    if not _in_order(out, args):
        return False
    sampler = _batching(out[0])[0]
    return isinstance(sampler, SequentialSampler)


def _train_keeps_last(out, args, kwargs) -> bool:
    return _in_order(out, args) and not _batching(out[0])[2]


def _val_drops(out, args, kwargs) -> bool:
    return _in_order(out, args) and _batching(out[1])[2]


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


# --- 05.pad_collate -------------------------------------------------------------------------------
# Pad a batch of sequences to its longest, with lengths and labels.

#: the reference is the course's public helper (the notebook uses it too, without importing a checker)
pad_collate_reference = pad_collate


def _pad_time_major(batch):
    sequences = [seq for seq, _ in batch]
    return (pad_sequence(sequences), torch.tensor([len(s) for s in sequences]),
            torch.tensor([label for _, label in batch]))


def _pad_lengths_after(batch):
    padded, _, labels = pad_collate_reference(batch)
    return padded, torch.full((len(batch),), padded.shape[1]), labels


def _pad_fixed(batch):
    padded, lengths, labels = pad_collate_reference(batch)
    fixed = torch.zeros(len(batch), 16, dtype=padded.dtype)
    fixed[:, :padded.shape[1]] = padded
    return fixed, lengths, labels


def _pad_minus_one(batch):
    padded, lengths, labels = pad_collate_reference(batch)
    mask = torch.arange(padded.shape[1])[None, :] >= lengths[:, None]
    return padded.masked_fill(mask, -1), lengths, labels


def _pad_stack(batch):
    return (torch.stack([seq for seq, _ in batch]), torch.tensor([len(s) for s, _ in batch]),
            torch.tensor([label for _, label in batch]))


def _pad_swapped(batch):
    padded, lengths, labels = pad_collate_reference(batch)
    return padded, labels, lengths


def _pad_left(batch):
    padded, lengths, labels = pad_collate_reference([(seq.flip(0), y) for seq, y in batch])
    return padded.flip(1), lengths, labels


def _triple_close(out, wrong, index: int) -> bool:
    return (_triple(out) is None and out[index].shape == wrong[index].shape
            and bool(torch.equal(out[index].long(), wrong[index].long())))


def _pad_cases():
    def make(seed: int, lengths: list[int]):
        g = _gen(seed)
        batch = [(torch.randint(1, 30, (n,), generator=g), int(torch.randint(0, 3, (1,), generator=g)))
                 for n in lengths]
        return (batch,), {}
    return [lambda: make(0, [5, 2, 7]), lambda: make(1, [3, 9, 1, 4, 6]), lambda: make(2, [4, 4]),
            lambda: make(3, [6])]   # a batch of one


def _triple(out) -> str | None:
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        return t("expected a tuple (padded, lengths, labels), found {describe_out}", describe_out=describe(out))
    for name, value in zip(("padded", "lengths", "labels"), out):
        if not isinstance(value, torch.Tensor):
            return t("expected {name} to be a tensor, found {describe_value}",
                     name=name, describe_value=describe(value))
    return None


def _pad_verify(out, ref, args, kwargs):
    problem = _triple(out)
    if problem:
        return problem
    (batch,) = args
    padded, lengths, labels = out
    if padded.dim() == 2 and padded.shape[0] == ref[0].shape[0] and padded.shape[1] == ref[0].shape[1] + 1 \
            and torch.equal(padded[:, :-1].long(), ref[0]):
        return t("padded has one column too many: expected shape {ref_0_shape}, found {padded_shape}; T_max is the "
                 "longest length itself, max(len(t) for t in tokens), without + 1",
                 ref_0_shape=tuple(ref[0].shape), padded_shape=tuple(padded.shape))
    if padded.shape == ref[0].shape and not torch.equal(padded.long(), ref[0]) \
            and sorted(map(tuple, padded.long().tolist())) == sorted(map(tuple, ref[0].tolist())):
        return t("the rows of padded are the right sequences in another order than the batch: keep the samples in "
                 "the order they came (the DataLoader and the labels rely on it), without sorting")
    if padded.shape != ref[0].shape:
        return t("expected padded of shape {ref_0_shape} = (batch, longest sequence in this batch), found "
                 "{padded_shape}", ref_0_shape=tuple(ref[0].shape), padded_shape=tuple(padded.shape))
    return (compare_tensors(padded, ref[0], name="padded")
            or compare_tensors(lengths, ref[1], name="lengths")
            or compare_tensors(labels, ref[2], name="labels"))


def _is_time_major(out, args, kwargs) -> bool:
    if _triple(out):
        return False
    ref = pad_collate_reference(args[0])[0]
    return tuple(out[0].shape) == tuple(ref.shape[::-1]) and ref.shape[0] != ref.shape[1]


def _is_lengths_after(out, args, kwargs) -> bool:
    if _triple(out) or out[1].numel() != len(args[0]):
        return False
    return bool((out[1] == out[0].shape[-1]).all()) and len({len(s) for s, _ in args[0]}) > 1


def _is_fixed(out, args, kwargs) -> bool:
    if _triple(out) or out[0].dim() != 2:
        return False
    longest = max(len(s) for s, _ in args[0])
    return out[0].shape[0] == len(args[0]) and out[0].shape[1] > longest + 1


register(Exercise(
    "05.pad_collate",
    "pad_collate(batch) gets a list of (tokens: LongTensor[T_i], label: int) and returns "
    "(padded LongTensor[B, T_max] padded with 0, lengths LongTensor[B] before padding, "
    "labels LongTensor[B]), T_max being the longest sequence of THIS batch.",
    pad_collate_reference,
    _pad_cases(),
    _pad_verify,
    [
        Mistake("time-major output (batch_first missing)",
                "pad_sequence returns [T_max, B] by default; pass batch_first=True to get [B, T_max].",
                _pad_time_major, detect=_is_time_major),
        Mistake("lengths measured after padding",
                "after padding every row has length T_max; record len(seq) for each sequence "
                "before padding, so the model can ignore the padded positions.",
                _pad_lengths_after, detect=_is_lengths_after),
        Mistake("pads to a fixed length instead of the batch's longest",
                "padding every batch to one global length wastes compute on zeros; pad_sequence "
                "pads to the longest sequence of the batch.",
                _pad_fixed, detect=_is_fixed),
        Mistake("pads with a value other than 0",
                "token 0 is reserved for padding here: pad_sequence(..., padding_value=0) (the default).",
                _pad_minus_one, detect=lambda out, a, k: _triple(out) is None and out[0].shape
                == pad_collate_reference(a[0])[0].shape and not _triple_close(out, _pad_left(a[0]), 0)
                and not torch.equal(out[0].long(), pad_collate_reference(a[0])[0])
                and bool(torch.equal(out[0].masked_fill(out[0] != pad_collate_reference(a[0])[0], 0),
                                     pad_collate_reference(a[0])[0]))),
        Mistake("stacks sequences of different lengths",
                "torch.stack needs equal lengths; pad first: pad_sequence(seqs, batch_first=True).",
                _pad_stack, error_match="stack expects each tensor to be equal size"),
        Mistake("lengths and labels in the wrong order",
                "return them in the order (padded, lengths, labels).",
                _pad_swapped, detect=lambda out, a, k: _triple_close(out, _pad_swapped(a[0]), 1)
                and _triple_close(out, _pad_swapped(a[0]), 2)),
        Mistake("pads on the left",
                "keep each sequence at the start of its row and put the zeros AFTER it (pad_sequence's "
                "default), so position t is token t of every sequence.",
                _pad_left, detect=lambda out, a, k: len({len(s) for s, _ in a[0]}) > 1
                and _triple_close(out, _pad_left(a[0]), 0)),
    ],
))
