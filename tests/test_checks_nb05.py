"""Notebook 05 checkers: other right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from course_utils.exercises import check, get_exercise, list_exercises


def test_stats_accepts_biased_std_and_other_spellings() -> None:
    assert check("05.normalization_stats",
                 lambda im: (im.mean(dim=(0, 2, 3)), im.std(dim=(0, 2, 3), correction=0))).passed
    assert check("05.normalization_stats",
                 lambda im: (im.transpose(0, 1).flatten(1).mean(1), im.transpose(0, 1).flatten(1).std(1))).passed
    assert check("05.normalization_stats",
                 lambda im: [im.mean(dim=[0, 2, 3]), im.var(dim=[0, 2, 3]).sqrt()]).passed


def test_stats_wrong_answers_are_named() -> None:
    scalar = check("05.normalization_stats", lambda im: (im.mean(), im.std()))
    assert "Hint (global instead of per-channel" in scalar.message
    per_pixel = check("05.normalization_stats", lambda im: (im.mean(dim=0), im.std(dim=0)))
    assert "Hint (wrong axes" in per_pixel.message
    no_std = check("05.normalization_stats", lambda im: im.mean(dim=(0, 2, 3)))
    assert no_std.status == "fail" and "tuple (mean, std)" in no_std.message


def test_loaders_other_right_answers() -> None:
    def with_sampler(train_ds, val_ds, batch_size):
        g = torch.Generator().manual_seed(0)
        return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True, generator=g),
                DataLoader(val_ds, batch_size=2 * batch_size))
    assert check("05.make_loaders", with_sampler).passed


def test_loaders_swapped_and_wrong_batch_size() -> None:
    swapped = check("05.make_loaders", lambda t, v, b: (DataLoader(v, batch_size=b), DataLoader(t, batch_size=b)))
    assert swapped.status == "fail" and "train_ds" in swapped.message
    wrong_size = check("05.make_loaders", lambda t, v, b: (
        DataLoader(t, batch_size=32, shuffle=True, drop_last=True), DataLoader(v, batch_size=b)))
    assert "batch_size" in wrong_size.message


def test_pad_collate_other_right_answer_and_wrong_padding_value() -> None:
    def manual(batch):
        longest = max(len(s) for s, _ in batch)
        padded = torch.zeros(len(batch), longest, dtype=torch.long)
        for i, (s, _) in enumerate(batch):
            padded[i, :len(s)] = s
        return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([label for _, label in batch])
    assert check("05.pad_collate", manual).passed

    def pads_with_minus_one(batch):
        seqs = [s for s, _ in batch]
        return (pad_sequence(seqs, batch_first=True, padding_value=-1),
                torch.tensor([len(s) for s in seqs]), torch.tensor([label for _, label in batch]))
    result = check("05.pad_collate", pads_with_minus_one)
    assert result.status == "fail" and "padded has the right shape but wrong values" in result.message

    labels_list = check("05.pad_collate", lambda b: (*manual(b)[:2], [label for _, label in b]))
    assert labels_list.status == "fail" and "labels to be a tensor" in labels_list.message


def test_checking_does_not_touch_the_global_rng() -> None:
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    for exercise_id in [e for e in list_exercises() if e.startswith("05.")]:
        exercise = get_exercise(exercise_id)
        check(exercise_id, exercise.reference)
        for mistake in exercise.mistakes:
            check(exercise_id, mistake.example)
    assert torch.equal(torch.rand(3), expected)
