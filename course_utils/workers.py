"""Datasets for ``DataLoader(num_workers=...)`` experiments, importable by worker processes.

With ``num_workers > 0`` the DataLoader starts worker processes and hands each one the
dataset. Where processes are started with *spawn* (the default on Windows and macOS) the
dataset is pickled, and a class defined in a notebook cell lives in ``__main__``, which
the new process cannot import: the workers die with ``AttributeError: Can't get attribute
'MyDataset' on <module '__main__'>``. Classes defined in an importable module, like the
ones here, work with every start method (:class:`JitterDataset` and :func:`reseed_worker_rng`
are notebook 10's worker-seeding example, here so that it runs the same on every platform).

:class:`SlowDataset` wraps any dataset and makes each ``__getitem__`` slow on purpose:
``mode="wait"`` sleeps (like reading a file from a slow disk or the network),
``mode="compute"`` does a fixed amount of CPU work (like heavy decoding or augmentation): it
spins until *this thread* has used ``delay_s`` seconds of CPU time. On a busy machine such an item
takes longer in wall-clock time, because the process only gets part of a core, but the work per
item stays the same. So "compute" cannot go faster than the free cores allow, while "wait" can.

Example:
    >>> from course_utils.workers import SlowDataset
    >>> slow = SlowDataset(list(range(5)), delay_s=0.001)
    >>> len(slow), slow[3]
    (5, 3)
    >>> from course_utils.workers import JitterDataset
    >>> JitterDataset()[3][:2]   # (index, worker id: -1 in the main process)
    (3, -1)
"""

from __future__ import annotations

from course_utils.i18n import t

import time
from typing import Any, Sequence

import numpy as np
from torch.utils.data import Dataset, get_worker_info


class SlowDataset(Dataset):
    """``base[i]`` after ``delay_s`` seconds of waiting (``"wait"``) or of CPU time (``"compute"``)."""

    def __init__(self, base: Sequence[Any], delay_s: float = 0.002, mode: str = "wait") -> None:
        if mode not in ("wait", "compute"):
            raise ValueError(t("expected mode 'wait' or 'compute', found {found}", found=repr(mode)))
        if delay_s < 0:
            raise ValueError(t("expected delay_s >= 0, found {delay_s}", delay_s=delay_s))
        self.base, self.delay_s, self.mode = base, delay_s, mode

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, index: int) -> Any:
        if self.mode == "wait":
            time.sleep(self.delay_s)
        else:
            # CPU time of this thread, not wall-clock time: a fixed amount of work per item,
            # however many other processes share the core meanwhile.
            end = time.thread_time() + self.delay_s
            while time.thread_time() < end:
                pass
        return self.base[index]


def time_one_epoch(loader: Any) -> tuple[float, int]:
    """Seconds to iterate ``loader`` once (worker start-up included) and the samples seen.

    >>> from torch.utils.data import DataLoader
    >>> seconds, n = time_one_epoch(DataLoader(list(range(10)), batch_size=4))
    >>> n
    10
    """
    start = time.perf_counter()
    count = 0
    for batch in loader:
        first = batch[0] if isinstance(batch, (list, tuple)) else batch
        count += len(first)
    return time.perf_counter() - start, count


class JitterDataset(Dataset):
    """Eight items; each ``__getitem__`` draws one 'augmentation' from the dataset's own generator.

    Item ``i`` is ``(i, worker id or -1 in the main process, jitter)``. The generator is a NumPy
    generator stored in the dataset, which PyTorch does not re-seed per worker: every worker
    gets a copy in the same state (fork copies it, spawn unpickles it).
    """

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> tuple[int, int, float]:
        info = get_worker_info()
        return index, -1 if info is None else info.id, float(self.rng.random())


def reseed_worker_rng(worker_id: int) -> None:
    """A ``worker_init_fn``: give this worker's dataset its own generator, seeded from ``info.seed``.

    ``get_worker_info().seed`` is the worker's ``base_seed + worker_id``, so the streams are
    distinct per worker and repeatable when the loader has a seeded ``generator``.
    """
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)   # this worker's own, distinct stream
