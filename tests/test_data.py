"""course_utils.data and course_utils.workers: offline datasets, deterministic to the byte."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from course_utils.data import (CLASSES, SPLIT_SIZES, ShapesDataset, checksum, make_shapes,
                               regression_data, toy_sequences)
from course_utils.workers import SlowDataset, time_one_epoch

# Pinned: the same seed must give the same bytes on every machine and every run.
CHECKSUMS = {"train": "50768c05d33f7b78", "val": "fd35deaad9adf867", "test": "3cf6bb5a43927b15"}


@pytest.mark.parametrize("split", sorted(CHECKSUMS))
def test_checksum_is_pinned(split: str) -> None:
    ds = ShapesDataset(split)
    assert len(ds) == SPLIT_SIZES[split]
    assert checksum(ds.data, ds.targets) == CHECKSUMS[split]


def test_same_seed_same_data_other_seed_other_data() -> None:
    a, la = make_shapes(50, seed=3)
    b, lb = make_shapes(50, seed=3)
    c, _ = make_shapes(50, seed=4)
    v, _ = make_shapes(50, seed=3, split="val")
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    assert not np.array_equal(a, c) and not np.array_equal(a, v)


def test_smaller_split_is_a_prefix() -> None:
    big, big_labels = make_shapes(300)
    small, small_labels = make_shapes(20)
    assert np.array_equal(big[:20], small) and np.array_equal(big_labels[:20], small_labels)


def test_generation_is_fast() -> None:
    start = time.process_time()
    make_shapes(SPLIT_SIZES["train"])
    assert time.process_time() - start < 2.0


def test_items_are_pil_images_like_cifar10() -> None:
    ds = ShapesDataset("val", size=30)
    image, label = ds[0]
    assert isinstance(image, Image.Image) and image.size == (32, 32) and image.mode == "RGB"
    assert isinstance(label, int) and 0 <= label < 10
    assert ds.data.shape == (30, 32, 32, 3) and ds.data.dtype == np.uint8
    assert ds.classes == list(CLASSES) and ds.class_to_idx["ring"] == 1
    assert "Split: val" in repr(ds)


def test_balanced_classes() -> None:
    counts = np.bincount(ShapesDataset("train").targets, minlength=10)
    assert counts.min() > 0.08 * counts.sum() and counts.max() < 0.12 * counts.sum()


def test_transforms_v2_pipeline_applies() -> None:
    pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                           v2.Normalize([0.5] * 3, [0.25] * 3)])
    ds = ShapesDataset("test", size=8, transform=pipeline, target_transform=lambda t: t * 10)
    x, y = ds[1]
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32
    assert y == ShapesDataset("test", size=8).targets[1] * 10
    batch_x, batch_y = next(iter(DataLoader(ds, batch_size=4)))
    assert batch_x.shape == (4, 3, 32, 32) and batch_y.shape == (4,)


def test_shapes_are_centred_and_visible() -> None:
    images, _ = make_shapes(100)
    spread = images.astype(np.int16).std(axis=(1, 2)).mean(axis=1)  # a shape on a background
    assert (spread > 15).all()


def test_bad_arguments_say_what_to_try() -> None:
    with pytest.raises(ValueError, match="split"):
        ShapesDataset("validation")
    with pytest.raises(ValueError, match="non-negative"):
        make_shapes(-1)
    with pytest.raises(ValueError, match="min_len"):
        toy_sequences(min_len=5, max_len=2)


def test_regression_data_recovers_true_weights() -> None:
    ds = regression_data(n=200, n_features=3, noise=0.05, seed=2)
    x, y = ds.tensors
    design = torch.cat([x, torch.ones(len(x), 1)], dim=1)
    solution = torch.linalg.lstsq(design, y).solution.squeeze(1)
    assert torch.allclose(solution[:3], ds.true_weight, atol=0.05)
    assert abs(solution[3].item() - ds.true_bias) < 0.05


def test_toy_sequences() -> None:
    seqs = toy_sequences(n=40, min_len=3, max_len=9, seed=5)
    assert len(seqs) == 40
    assert all(3 <= len(t) <= 9 and t.dtype == torch.int64 and (t > 0).all() for t, _ in seqs)
    assert all(label == int((t == 1).any()) for t, label in seqs)
    assert len({len(t) for t, _ in seqs}) > 3
    assert [t.tolist() for t, _ in toy_sequences(n=5, min_len=3, max_len=9, seed=5)] == [t.tolist() for t, _ in seqs[:5]]


def test_slow_dataset_modes() -> None:
    base = list(range(6))
    assert [SlowDataset(base, 0.0, mode)[i] for mode in ("wait", "compute") for i in (0, 5)] == [0, 5, 0, 5]
    with pytest.raises(ValueError, match="mode"):
        SlowDataset(base, mode="sleep")
    start = time.perf_counter()
    _ = SlowDataset(base, delay_s=0.01, mode="compute")[0]
    assert time.perf_counter() - start >= 0.01


def test_compute_mode_is_a_fixed_amount_of_cpu_work() -> None:
    # Wall-clock spinning would count time the process spent descheduled on a busy machine, and
    # "compute" would then scale with workers like "wait". CPU time of the thread must advance by delay_s.
    before = time.thread_time()
    _ = SlowDataset([0], delay_s=0.05, mode="compute")[0]
    assert time.thread_time() - before >= 0.05


@pytest.mark.slow
def test_workers_can_import_the_dataset_under_spawn() -> None:
    # The notebook caveat: under spawn, workers unpickle the dataset by importing its class.
    ds = SlowDataset(ShapesDataset("val", size=16, transform=v2.PILToTensor()), delay_s=0.0)
    loader = DataLoader(ds, batch_size=8, num_workers=1, multiprocessing_context="spawn")
    seconds, count = time_one_epoch(loader)
    assert count == 16 and seconds > 0
