"""``05.normalization_stats``: per-channel mean and std over images and pixels."""

from __future__ import annotations

from typing import Any

import torch

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register

from ._common import _gen


def normalization_stats_reference(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3))


def _stats_global(images):
    channels = images.shape[1]
    return images.mean().repeat(channels), images.std().repeat(channels)


def _stats_wrong_axes(images):
    return images.mean(dim=(1, 2, 3)), images.std(dim=(1, 2, 3))  # one value per image


def _stats_mean_of_stds(images):
    return images.mean(dim=(0, 2, 3)), images.std(dim=(2, 3)).mean(dim=0)


def _stats_cases():
    def make(seed: int, n: int, c: int, h: int, w: int):
        g = _gen(seed)
        channel_mean = torch.linspace(0.2, 0.7, c).view(1, c, 1, 1)
        channel_std = torch.linspace(0.05, 0.3, c).view(1, c, 1, 1)
        brightness = 0.15 * torch.randn(n, 1, 1, 1, generator=g)  # images differ from each other
        images = channel_mean + brightness + channel_std * torch.randn(n, c, h, w, generator=g)
        return (images,), {}
    return [lambda: make(0, 6, 3, 8, 5), lambda: make(1, 4, 3, 6, 6), lambda: make(2, 5, 2, 7, 4)]


def _as_pair(out: Any) -> tuple[Any, Any] | None:
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out[0], out[1]
    return None


def _stats_verify(out, ref, args, kwargs):
    (images,) = args
    pair = _as_pair(out)
    if pair is None:
        return f"expected a tuple (mean, std) of two tensors, found {describe(out)}"
    channels = images.shape[1]
    for name, value, expected in zip(("mean", "std"), pair, ref):
        if not isinstance(value, torch.Tensor):
            return f"expected {name} to be a tensor of shape ({channels},), found {describe(value)}"
        if value.shape != expected.shape:
            return (f"expected {name} of shape ({channels},) (one value per channel) for images of "
                    f"shape {tuple(images.shape)}, found shape {tuple(value.shape)}")
    # unbiased (torch default) and biased std differ by < 1 % here: both are accepted
    return (compare_tensors(pair[0], ref[0], atol=1e-5, name="mean")
            or compare_tensors(pair[1], ref[1], atol=1e-4, rtol=2e-2, name="std"))


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
    "returns (mean, std), two tensors of shape [C]: one value per channel, computed over all "
    "images and all pixels.",
    normalization_stats_reference,
    _stats_cases(),
    _stats_verify,
    [
        Mistake("global instead of per-channel statistics",
                "images.mean() mixes the channels into one number; reduce over every dim except "
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
