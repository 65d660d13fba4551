"""Offline datasets, identical for the same seed on every machine (nothing is downloaded).

* :class:`ShapesDataset`: a CIFAR-shaped image classification set. Each item is a
  32x32 RGB ``PIL.Image`` and an ``int`` label (10 classes: a shape drawn at a random
  place, size and colour on a noisy background), so ``torchvision.transforms.v2``
  pipelines apply exactly as they would to ``torchvision.datasets.CIFAR10``. It has
  the same attributes as CIFAR10 (``data`` uint8 ``[N, 32, 32, 3]``, ``targets``,
  ``classes``, ``class_to_idx``) and three splits drawn from independent streams.
  The shapes can sit anywhere near the centre, so a small CNN (translation-invariant
  filters) beats an MLP of similar size by a wide margin.
* :func:`regression_data`: a small tabular regression set with known true weights.
* :func:`toy_sequences`: variable-length token sequences (for padding / collate demos).

All drawing uses integer arithmetic only, so the pixels do not depend on the CPU's
floating-point details; ``tests/test_data.py`` pins a checksum.

Example:
    >>> from course_utils.data import ShapesDataset
    >>> train = ShapesDataset("train", size=8)
    >>> image, label = train[0]
    >>> image.size, image.mode, train.classes[label]
    ((32, 32), 'RGB', 'ring')
    >>> train.data.shape, train.data.dtype.name
    ((8, 32, 32, 3), 'uint8')
"""

from __future__ import annotations

from course_utils.i18n import t

import hashlib
from typing import Any, Callable

import numpy as np

#: Class names, index = label.
CLASSES: tuple[str, ...] = ("disk", "ring", "square", "frame", "triangle",
                            "plus", "cross", "diamond", "stripes", "checker")
#: Default number of images per split (small on purpose: notebooks train in seconds).
SPLIT_SIZES: dict[str, int] = {"train": 3000, "val": 1000, "test": 1000}
_SPLIT_IDS = {"train": 0, "val": 1, "test": 2}
IMAGE_SIZE = 32
_MIN_R, _MAX_R = 6, 9        # shape "radius" in pixels (inclusive)
_JITTER = 7                  # the centre moves up to this many pixels from the middle
_NOISE = 16                  # uniform pixel noise in [-_NOISE, _NOISE]


def _masks(label: int, dx: np.ndarray, dy: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Boolean masks ``[n, 32, 32]`` of shape ``label`` (all integer arithmetic)."""
    ax, ay = np.abs(dx), np.abs(dy)
    box = np.maximum(ax, ay)
    d2 = dx * dx + dy * dy
    if label == 0:   # disk
        return d2 <= r * r + r
    if label == 1:   # ring, 2 px thick
        return (d2 > (r - 2) * (r - 2) + (r - 2)) & (d2 <= r * r + r)
    if label == 2:   # filled square
        return box <= r - 1
    if label == 3:   # square outline
        return (box <= r - 1) & (box > r - 3)
    if label == 4:   # triangle pointing up
        return (2 * ax <= dy + r) & (dy <= r - 1)
    if label == 5:   # plus
        return ((ax <= 1) & (ay <= r)) | ((ay <= 1) & (ax <= r))
    if label == 6:   # diagonal cross
        return ((np.abs(dx - dy) <= 1) | (np.abs(dx + dy) <= 1)) & (box <= r)
    if label == 7:   # diamond
        return ax + ay <= r
    if label == 8:   # horizontal stripes in a square
        return (box <= r - 1) & ((dy % 4) < 2)
    return (box <= r - 1) & (((dx // 2) + (dy // 2)) % 2 == 0)  # 9: checkerboard


def make_shapes(n: int, seed: int = 0, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` images: ``(uint8 [n, 32, 32, 3], int64 labels [n])``.

    >>> images, labels = make_shapes(4, seed=1)
    >>> images.shape, labels.dtype.name
    ((4, 32, 32, 3), 'int64')
    """
    if split not in _SPLIT_IDS:
        raise ValueError(t("expected split to be one of {choices}, found {found}", choices=sorted(_SPLIT_IDS),
                           found=repr(split)))
    if n < 0:
        raise ValueError(t("expected a non-negative number of images, found n={n}", n=n))
    # One row of raw integers per image, then the noise from a second stream: image i is
    # the same whatever n is (a smaller split is a prefix of the bigger one).
    streams = np.random.SeedSequence([seed, _SPLIT_IDS[split]]).spawn(2)
    raw = np.random.default_rng(streams[0]).integers(0, 2**30, (n, 10))
    labels = raw[:, 0] % len(CLASSES)
    r = (_MIN_R + raw[:, 1] % (_MAX_R - _MIN_R + 1)).astype(np.int32)
    centre = (IMAGE_SIZE // 2 - _JITTER + raw[:, 2:4].T % (2 * _JITTER + 1)).astype(np.int32)
    fg, bg = raw[:, 4:7] % 256, raw[:, 7:10] % 256
    too_close = np.abs(fg - bg).sum(axis=1) < 150   # keep every shape visible
    bg[too_close] = (fg[too_close] + 128) % 256
    noise = np.random.default_rng(streams[1]).integers(
        -_NOISE, _NOISE + 1, (n, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.int16)

    yy, xx = np.mgrid[0:IMAGE_SIZE, 0:IMAGE_SIZE].astype(np.int32)
    mask = np.zeros((n, IMAGE_SIZE, IMAGE_SIZE), dtype=bool)
    for label in range(len(CLASSES)):
        idx = np.flatnonzero(labels == label)
        if idx.size:
            dx = xx[None] - centre[0, idx, None, None]
            dy = yy[None] - centre[1, idx, None, None]
            mask[idx] = _masks(label, dx, dy, r[idx, None, None])
    images = np.where(mask[..., None], fg[:, None, None, :], bg[:, None, None, :]).astype(np.int16)
    images += noise
    return np.clip(images, 0, 255).astype(np.uint8), labels.astype(np.int64)


try:  # a real torchvision dataset when torchvision is there (it is pinned for the course)
    from torchvision.datasets import VisionDataset as _Base
except ImportError:  # pragma: no cover - fallback keeps the module importable
    from torch.utils.data import Dataset as _Base  # type: ignore[assignment]


class ShapesDataset(_Base):  # type: ignore[misc, valid-type]
    """CIFAR-shaped offline image set: ``dataset[i] -> (PIL.Image 32x32 RGB, int)``.

    Args:
        split: ``"train"``, ``"val"`` or ``"test"`` (independent random streams).
        size: number of images (default :data:`SPLIT_SIZES` of the split).
        seed: the same seed gives the same images on every machine.
        transform, target_transform: applied in ``__getitem__``, as in torchvision.
    """

    def __init__(self, split: str = "train", size: int | None = None, seed: int = 0,
                 transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None) -> None:
        if split not in SPLIT_SIZES:
            raise ValueError(t("expected split 'train', 'val' or 'test', found {found}; "
                               "make a custom split with size=...", found=repr(split)))
        try:
            super().__init__(root=None, transform=transform, target_transform=target_transform)
        except TypeError:  # plain torch Dataset fallback
            self.transform, self.target_transform = transform, target_transform
        self.split, self.seed = split, seed
        n = SPLIT_SIZES[split] if size is None else size
        self.data, labels = make_shapes(n, seed=seed, split=split)
        self.targets: list[int] = labels.tolist()
        self.classes: list[str] = list(CLASSES)
        self.class_to_idx: dict[str, int] = {name: i for i, name in enumerate(CLASSES)}

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        image: Any = Image.fromarray(self.data[index])
        target: Any = self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def extra_repr(self) -> str:
        return f"Split: {self.split}\nSeed: {self.seed}\nClasses: {len(self.classes)}"


def checksum(images: np.ndarray, labels: Any) -> str:
    """First 16 hex digits of the SHA-256 of the image bytes and labels.

    >>> images, labels = make_shapes(2)
    >>> len(checksum(images, labels))
    16
    """
    digest = hashlib.sha256(np.ascontiguousarray(images, dtype=np.uint8).tobytes())
    digest.update(np.asarray(labels, dtype=np.int64).tobytes())
    return digest.hexdigest()[:16]


def regression_data(n: int = 256, n_features: int = 3, noise: float = 0.1, seed: int = 0):
    """A small tabular regression set ``y = X @ w + b + noise``; returns a TensorDataset.

    The true weights are attached as ``dataset.true_weight`` (``[n_features]``) and
    ``dataset.true_bias`` so a notebook can compare what a model learned.

    >>> ds = regression_data(n=10, n_features=2)
    >>> x, y = ds[0]
    >>> tuple(x.shape), tuple(y.shape), len(ds)
    ((2,), (1,), 10)
    """
    import torch
    from torch.utils.data import TensorDataset

    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    weight = rng.integers(-3, 4, n_features).astype(np.float32)
    bias = np.float32(0.5)
    x = (rng.integers(-1000, 1001, (n, n_features)) / 500).astype(np.float32)
    eps = (rng.integers(-1000, 1001, (n, 1)) / 1000 * noise * np.sqrt(3)).astype(np.float32)
    y = x @ weight[:, None] + bias + eps
    dataset = TensorDataset(torch.from_numpy(x), torch.from_numpy(y.astype(np.float32)))
    dataset.true_weight = torch.from_numpy(weight)  # type: ignore[attr-defined]
    dataset.true_bias = float(bias)  # type: ignore[attr-defined]
    return dataset


def toy_sequences(n: int = 64, vocab_size: int = 20, min_len: int = 2, max_len: int = 12,
                  seed: int = 0) -> list[tuple[Any, int]]:
    """``n`` pairs ``(tokens: LongTensor[T], label: int)`` with lengths in [min_len, max_len].

    Token 0 is reserved for padding; the label says whether the sequence contains token 1
    (a task that needs every position, padding excluded).

    >>> seqs = toy_sequences(n=3, seed=1)
    >>> [tuple(t.shape) for t, _ in seqs]
    [(11,), (6,), (6,)]
    """
    import torch

    if not 1 <= min_len <= max_len:
        raise ValueError(t("expected 1 <= min_len <= max_len, found min_len={min_len}, max_len={max_len}",
                           min_len=min_len, max_len=max_len))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
    out = []
    for _ in range(n):  # one sequence at a time: a smaller n gives a prefix of a bigger one
        length = rng.integers(min_len, max_len + 1)
        tokens = torch.from_numpy(rng.integers(1, vocab_size, int(length)).astype(np.int64))
        out.append((tokens, int((tokens == 1).any())))
    return out


def pad_collate(batch: list[tuple[Any, int]]) -> tuple[Any, Any, Any]:
    """A ``collate_fn`` for ``(tokens: LongTensor[T_i], label: int)`` pairs of different lengths.

    Returns ``(padded, lengths, labels)``: ``padded`` is ``[B, T_max]`` padded with 0 after each
    sequence (``T_max`` = the longest sequence of this batch), ``lengths`` the lengths before padding
    and ``labels`` the labels, both LongTensor ``[B]``.

    >>> import torch
    >>> padded, lengths, labels = pad_collate([(torch.tensor([3, 4, 5]), 1), (torch.tensor([7]), 0)])
    >>> padded.tolist(), lengths.tolist(), labels.tolist()
    ([[3, 4, 5], [7, 0, 0]], [3, 1], [1, 0])
    """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    sequences = [tokens for tokens, _ in batch]
    padded = pad_sequence(sequences, batch_first=True, padding_value=0)
    lengths = torch.tensor([len(tokens) for tokens in sequences])
    labels = torch.tensor([label for _, label in batch])
    return padded, lengths, labels
