"""An image grid with labels (and predictions) for a batch from a DataLoader.

Accepts what a pipeline produces: a float tensor ``[B, C, H, W]`` (optionally
normalised: pass the ``mean``/``std`` you normalised with to undo it), a uint8 tensor,
or a list of PIL images.

Example:
    >>> import torch
    >>> from course_utils.viz.images import show_images
    >>> batch = torch.rand(4, 3, 8, 8)
    >>> fig = show_images(batch, labels=[0, 1, 2, 1], classes=["a", "b", "c"], ncols=2)
    >>> [text.get_text() for text in fig.axes[0].texts]
    ['a', 'b', 'c', 'b']
"""

from __future__ import annotations

from course_utils.i18n import t

from typing import Any, Sequence


def _as_hwc(images: Any, mean: Sequence[float] | None, std: Sequence[float] | None) -> Any:
    import numpy as np
    import torch

    if isinstance(images, (list, tuple)) and images and not isinstance(images[0], torch.Tensor):
        arrays = [np.asarray(im.convert("RGB"), dtype=np.float32) / 255 for im in images]
        return np.stack(arrays)
    x = torch.stack(list(images)) if isinstance(images, (list, tuple)) else images
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        raise ValueError(t("expected a [B, C, H, W] tensor or a list of PIL images, found {kind} with shape "
                           "{shape}", kind=type(x).__name__, shape=tuple(getattr(x, 'shape', ()))))
    x = x.detach().cpu()
    x = x.float() / 255 if x.dtype == torch.uint8 else x.float()
    if std is not None:
        x = x * torch.as_tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    if mean is not None:
        x = x + torch.as_tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    return x.clamp(0, 1).permute(0, 2, 3, 1).numpy()


def show_images(images: Any, labels: Sequence[int] | Any = None, classes: Sequence[str] | None = None,
                predictions: Sequence[int] | Any = None, mean: Sequence[float] | None = None,
                std: Sequence[float] | None = None, ncols: int = 8, size: float = 1.1,
                title: str | None = None) -> Any:
    """A grid of images, each titled with its label; with ``predictions`` the title shows
    ``pred (label)`` in green when right and red when wrong.

    The grid is one mosaic drawn on a single axes (fast even for a large batch).
    """
    import math

    import matplotlib.pyplot as plt
    import numpy as np

    arr = _as_hwc(images, mean, std)
    n = len(arr)
    if n == 0:
        raise ValueError(t("expected at least one image, found an empty batch"))
    if arr.shape[-1] == 1:
        arr = np.repeat(arr, 3, axis=-1)
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    h, w = arr.shape[1:3]
    pad_x, pad_y = max(2, w // 8), max(2, h // 8) + (h // 3 if labels is not None else 0)
    mosaic = np.ones((nrows * (h + pad_y), ncols * (w + pad_x), 3), dtype=np.float32)
    for k in range(n):
        row, col = divmod(k, ncols)
        top, left = row * (h + pad_y) + pad_y, col * (w + pad_x)
        mosaic[top:top + h, left:left + w] = arr[k]
    fig, ax = plt.subplots(figsize=(size * ncols, (size + 0.25) * nrows))
    ax.imshow(mosaic, interpolation="nearest")
    ax.axis("off")
    names = (lambda i: classes[int(i)]) if classes is not None else (lambda i: str(int(i)))
    for k in range(n if labels is not None else 0):
        row, col = divmod(k, ncols)
        x, y = col * (w + pad_x) + w / 2, row * (h + pad_y) + pad_y - 1
        if predictions is not None:
            right = int(predictions[k]) == int(labels[k])
            text, colour = f"{names(predictions[k])} ({names(labels[k])})", "green" if right else "red"
        else:
            text, colour = names(labels[k]), "black"
        ax.text(x, y, text, ha="center", va="bottom", fontsize=7, color=colour)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
