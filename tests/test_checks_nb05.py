"""Notebook 05 checkers: other right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

import textwrap

import pytest

from course_utils.exercises import check, get_exercise, list_exercises
from tests.learner_code import assert_accepted, assert_rejected

def _pad(body: str) -> str:
    """A pad_collate whose body starts with seqs = [s for s, _ in batch]."""
    return ("def pad_collate(batch):\n    seqs = [s for s, _ in batch]\n"
            + textwrap.indent(textwrap.dedent(body).strip(), "    "))

WRONG = [
    # --- 05.normalization_stats
    ("05.normalization_stats", "def normalization_stats(images):\n    return images.mean(), images.std()", ["per channel"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            c = images.shape[1]
            return images.mean().repeat(c), images.std().repeat(c)""", ["mixes the channels"]),
    ("05.normalization_stats", "def normalization_stats(images):\n    return images.mean(dim=(1, 2, 3)), images.std(dim=(1, 2, 3))",
     ["(0, 2, 3)"]),
    ("05.normalization_stats", "def normalization_stats(images):\n    return images.mean(dim=0), images.std(dim=0)",
     ["(0, 2, 3)"]),
    ("05.normalization_stats", "def normalization_stats(images):\n    return images.mean(dim=(2, 3)), images.std(dim=(2, 3))",
     ["(0, 2, 3)"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)), images.std(dim=(2, 3)).mean(dim=0)""", ["differ from each other"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            flat = images.reshape(images.shape[1], -1)
            return flat.mean(dim=1), flat.std(dim=1)""", ["transpose"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            return torch.std_mean(images, dim=(0, 2, 3))""", ["order"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)), images.var(dim=(0, 2, 3))""", ["variance"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)).tolist(), images.std(dim=(0, 2, 3)).tolist()""", ["tensor"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            return images.float().mean(dim=(0, 2, 3)), images.float().std(dim=(0, 2, 3))""", ["dtype"]),
    ("05.normalization_stats", """
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3), keepdim=True), images.std(dim=(0, 2, 3), keepdim=True)""",
     ["keepdim"]),
    # --- 05.make_loaders
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size, shuffle=True))""", ["shuffle=False"]),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size))""", ["shuffle=True"]),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True),
                    DataLoader(val_ds, batch_size=batch_size))""", ["drop_last=True"]),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size, drop_last=True))""", ["every sample"]),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(val_ds, batch_size=batch_size), DataLoader(train_ds, batch_size=batch_size,
                    shuffle=True, drop_last=True))""", ["train_ds"]),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=64, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size))""", ["batch_size"]),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size, shuffle=True, drop_last=True))""", ["shuffle=False"]),
    # --- 05.pad_collate
    ("05.pad_collate", _pad("""
            return (pad_sequence(seqs), torch.tensor([len(s) for s in seqs]),
                torch.tensor([label for _, label in batch]))"""), ["batch_first=True"]),
    ("05.pad_collate", _pad("""
            padded = pad_sequence(seqs, batch_first=True)
            return padded, torch.tensor([len(s) for s in padded]), torch.tensor([label for _, label in batch])"""),
     ["before padding"]),
    ("05.pad_collate", _pad("""
            padded = torch.zeros(len(seqs), 16, dtype=torch.long)
            for i, s in enumerate(seqs):
                padded[i, :len(s)] = s
            return padded, torch.tensor([len(s) for s in seqs]), torch.tensor([label for _, label in batch])"""),
     ["longest"]),
    ("05.pad_collate", _pad("""
            return (pad_sequence(seqs, batch_first=True, padding_value=-1),
                torch.tensor([len(s) for s in seqs]), torch.tensor([label for _, label in batch]))"""),
     ["padding_value=0"]),
    ("05.pad_collate", _pad("""
            return (torch.stack(seqs), torch.tensor([len(s) for s in seqs]),
                torch.tensor([label for _, label in batch]))"""), ["pad_sequence"]),
    ("05.pad_collate", _pad("""
            return (pad_sequence(seqs, batch_first=True), torch.tensor([label for _, label in batch]),
                torch.tensor([len(s) for s in seqs]))"""), ["order"]),
    ("05.pad_collate", _pad("""
            return (pad_sequence(seqs, batch_first=True), [len(s) for s in seqs],
                torch.tensor([label for _, label in batch]))"""), ["lengths to be a tensor"]),
    ("05.pad_collate", _pad("""
            return (pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs], dtype=torch.int32),
                torch.tensor([label for _, label in batch]))"""), ["int64"]),
    ("05.pad_collate", _pad("""
            return (pad_sequence(seqs, batch_first=True).float(), torch.tensor([len(s) for s in seqs]),
                torch.tensor([label for _, label in batch]))"""), ["dtype"]),
    ("05.pad_collate", _pad("""
            padded = pad_sequence([s.flip(0) for s in seqs], batch_first=True).flip(1)
            return padded, torch.tensor([len(s) for s in seqs]), torch.tensor([label for _, label in batch])"""),
     ["left"]),
    # --- a finished function that forgets `return`
    ("05.normalization_stats", "def normalization_stats(images):\n    mean, std = images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3))", ["return"]),
]

RIGHT = [
    ("05.normalization_stats", """
        def normalization_stats(images):
            flat = images.permute(1, 0, 2, 3).reshape(images.shape[1], -1)
            return flat.mean(1), flat.std(1)"""),
    ("05.normalization_stats", """
        def normalization_stats(images):
            std, mean = torch.std_mean(images, dim=(0, 2, 3))
            return mean, std"""),
    ("05.normalization_stats", """
        def normalization_stats(images):
            mean = images.mean(dim=(0, 2, 3))
            var = ((images - mean[None, :, None, None]) ** 2).mean(dim=(0, 2, 3))
            return mean, var.sqrt()"""),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            train = DataLoader(train_ds, batch_size, shuffle=True, drop_last=True)
            val = DataLoader(val_ds, batch_size)
            return train, val"""),
    ("05.make_loaders", """
        def make_loaders(train_ds, val_ds, batch_size):
            return [DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True, num_workers=0),
                    DataLoader(val_ds, batch_size=2 * batch_size, shuffle=False, drop_last=False)]"""),
    ("05.pad_collate", """
        def pad_collate(batch):
            seqs, labels = zip(*batch)
            lengths = torch.tensor([s.numel() for s in seqs], dtype=torch.long)
            padded = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
            for i, s in enumerate(seqs):
                padded[i, :len(s)] = s
            return padded, lengths, torch.LongTensor(labels)"""),
    ("05.pad_collate", """
        def pad_collate(batch):
            longest = max(len(s) for s, _ in batch)
            padded = torch.stack([F.pad(s, (0, longest - len(s))) for s, _ in batch])
            return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_wrong_answer_is_rejected_with_what_to_fix(exercise_id: str, source: str, words: list[str]) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_correct_alternative_is_accepted(exercise_id: str, source: str) -> None:
    assert_accepted(exercise_id, source)


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


# --- more answers written as a learner would ----------------------------------------------------------

PAD_WRONG = [
    ("""
        def pad_collate(batch):
            tokens = [t for t, _ in batch]
            lengths = torch.tensor([len(t) for t in tokens])
            return pad_sequence(tokens, padding_value=0), lengths, torch.tensor([label for _, label in batch])""",
     ["(batch, longest sequence"]),
    ("""
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(tokens, batch_first=True)
            return padded, torch.tensor([padded.shape[1]] * len(tokens)), torch.tensor(labels)""", ["lengths"]),
    ("""
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(tokens, batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens]), list(labels)""", ["labels to be a tensor"]),
]


@pytest.mark.parametrize("source, words", PAD_WRONG, ids=[str(i) for i in range(len(PAD_WRONG))])
def test_pad_collate_more_wrong_answers(source, words) -> None:
    assert_rejected("05.pad_collate", source, words)


def test_pad_collate_by_hand_passes() -> None:
    assert_accepted("05.pad_collate", """
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            lengths = torch.tensor([t.numel() for t in tokens], dtype=torch.long)
            padded = torch.zeros(len(tokens), int(lengths.max()), dtype=torch.long)
            for i, t in enumerate(tokens):
                padded[i, :len(t)] = t
            return padded, lengths, torch.tensor(labels, dtype=torch.long)""")
