"""``05.pad_collate``: pad a batch of sequences to its longest, with lengths and labels."""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import pad_sequence

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register

from ._common import _gen


def pad_collate_reference(batch: list[tuple[torch.Tensor, int]]
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    sequences = [seq for seq, _ in batch]
    padded = pad_sequence(sequences, batch_first=True, padding_value=0)
    lengths = torch.tensor([len(seq) for seq in sequences])
    labels = torch.tensor([label for _, label in batch])
    return padded, lengths, labels


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


def _pad_cases():
    def make(seed: int, lengths: list[int]):
        g = _gen(seed)
        batch = [(torch.randint(1, 30, (n,), generator=g), int(torch.randint(0, 3, (1,), generator=g)))
                 for n in lengths]
        return (batch,), {}
    return [lambda: make(0, [5, 2, 7]), lambda: make(1, [3, 9, 1, 4, 6]), lambda: make(2, [4, 4])]


def _triple(out) -> str | None:
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        return f"expected a tuple (padded, lengths, labels), found {describe(out)}"
    for name, value in zip(("padded", "lengths", "labels"), out):
        if not isinstance(value, torch.Tensor):
            return f"expected {name} to be a tensor, found {describe(value)}"
    return None


def _pad_verify(out, ref, args, kwargs):
    problem = _triple(out)
    if problem:
        return problem
    (batch,) = args
    padded, lengths, labels = out
    if padded.shape != ref[0].shape:
        return (f"expected padded of shape {tuple(ref[0].shape)} = (batch, longest sequence in "
                f"this batch), found {tuple(padded.shape)}")
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
    return out[0].shape[0] == len(args[0]) and out[0].shape[1] > longest


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
    ],
))
