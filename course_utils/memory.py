"""Where training memory goes: parameters, gradients, optimizer state and activations.

* **Predict** the bytes of parameters, gradients and optimizer state from the model alone
  (:func:`predict_training_memory`), and **measure** them on the real objects after a step
  (:func:`measure_training_memory`): the two agree to the byte.
* **Measure activations** with :class:`SavedTensorsMeter`: a ``saved_tensors_hooks`` context
  that sees every tensor autograd keeps for backward. It works on the CPU, counts each
  storage once (a ReLU output saved by the ReLU *and* by the next Linear is one buffer) and
  leaves out parameters and buffers, which exist whether or not you train.
* **CUDA counters** (:func:`cuda_memory`, :func:`cuda_peak`) when a GPU is present.

Pack hooks return ``t.detach()``, never ``t``: a saved *output* handed back unchanged points
to its own ``grad_fn``, which owns it; without a backward, not even ``gc.collect()`` frees that
C++ cycle (a caveat in PyTorch's saved-tensor-hooks docs).

Adam's ``step`` counters: since torch 2.0 each parameter's Adam/AdamW state holds a 0-dim
``step`` tensor next to ``exp_avg`` and ``exp_avg_sq``: 4 bytes (float32; 8 if the default
dtype is float64). They are real memory, so :func:`predict_training_memory` counts them
(``include_step=True``); with ``include_step=False`` you get the textbook "2 copies of the
parameters" figure.

Example:
    >>> import torch
    >>> from torch import nn
    >>> from course_utils.memory import (measure_training_memory, make_optimizer,
    ...                                  predict_training_memory, activation_bytes)
    >>> model = nn.Linear(10, 5)                           # 55 float32 parameters, 2 tensors
    >>> predict_training_memory(model, "adam").as_dict()   # 2*220 moments + 2*4 step bytes
    {'params': 220, 'grads': 220, 'optimizer_state': 448, 'activations': 0}
    >>> opt = make_optimizer("adam", model.parameters())
    >>> model(torch.randn(3, 10)).sum().backward(); opt.step()
    >>> measure_training_memory(model, opt) == predict_training_memory(model, "adam")
    True
    >>> activation_bytes(model, torch.randn(3, 10))        # Linear saves its 3x10 input
    120
"""

from __future__ import annotations

from course_utils.i18n import t

import weakref
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

import torch
from torch import nn

#: Copies of the trainable parameters each optimizer keeps (per element).
STATE_COPIES: dict[str, int] = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}


def _check_optimizer_name(name: str) -> str:
    key = str(name).lower().replace("+", "_").replace(" ", "_").replace("sgd_momentum", "momentum")
    if key not in STATE_COPIES:
        raise ValueError(t("expected an optimizer name in {choices}, found {found}; try 'adam'",
                           choices=sorted(STATE_COPIES), found=repr(name)))
    return key


def dtype_bytes(dtype: torch.dtype) -> int:
    """Bytes per element: ``dtype_bytes(torch.bfloat16) == 2``."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"expected a torch.dtype such as torch.float32, found {dtype!r}")
    return dtype.itemsize


def format_bytes(n: float) -> str:
    """Human-readable size with binary units.

    >>> format_bytes(1536), format_bytes(3 * 2**20), format_bytes(12)
    ('1.50 KiB', '3.00 MiB', '12 B')
    """
    step = 0
    while abs(n) >= 1024 and step < 4:
        n, step = n / 1024, step + 1
    return f"{int(n)} B" if step == 0 else f"{n:.2f} {('KiB', 'MiB', 'GiB', 'TiB')[step - 1]}"


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per category of training memory."""

    params: int
    grads: int
    optimizer_state: int
    activations: int = 0

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer_state + self.activations

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def with_activations(self, activations: int) -> "MemoryBreakdown":
        return MemoryBreakdown(self.params, self.grads, self.optimizer_state, int(activations))

    def __str__(self) -> str:
        rows = [f"{name:<16}{format_bytes(value):>12}" for name, value in self.as_dict().items()]
        return "\n".join(rows + [f"{'total':<16}{format_bytes(self.total):>12}"])


def _storage(t: torch.Tensor) -> tuple[tuple[str, int], int]:
    """(a key identifying t's storage, the storage's bytes)."""
    try:
        storage = t.untyped_storage()
        return (str(t.device), storage.data_ptr()), storage.nbytes()
    except (RuntimeError, NotImplementedError):  # tensor subclasses without a plain storage
        return ("id", id(t)), t.numel() * t.element_size()


def unique_storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (views and repeats counted once).

    >>> w = torch.zeros(4, 4)
    >>> unique_storage_bytes([w, w.t(), w[0]])
    64
    """
    seen: dict[tuple[str, int], int] = {}
    for tensor in tensors:
        key, nbytes = _storage(tensor)
        seen[key] = nbytes
    return sum(seen.values())


def make_optimizer(name: str, params: Iterable[Any], lr: float = 1e-3) -> torch.optim.Optimizer:
    """'sgd', 'momentum' (SGD, momentum 0.9), 'adam' or 'adamw'."""
    key = _check_optimizer_name(name)
    if key in ("sgd", "momentum"):
        return torch.optim.SGD(params, lr=lr, momentum=0.9 if key == "momentum" else 0.0)
    return (torch.optim.Adam if key == "adam" else torch.optim.AdamW)(params, lr=lr)


def _step_bytes() -> int:
    return 8 if torch.get_default_dtype() == torch.float64 else 4


def predict_training_memory(model: nn.Module, optimizer: str = "adam", dtype: torch.dtype | None = None,
                            *, include_step: bool = True) -> MemoryBreakdown:
    """Bytes of parameters, gradients and optimizer state, computed before any step.

    ``dtype`` prices every element at that dtype ("if this model were trained in bf16");
    ``None`` uses each parameter's own dtype. Frozen parameters cost parameter memory only.
    """
    key = _check_optimizer_name(optimizer)
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, found {type(model).__name__}")

    def size(p: torch.Tensor) -> int:
        return p.numel() * (dtype_bytes(dtype) if dtype is not None else p.element_size())

    params = sum(size(p) for p in model.parameters())
    trainable = [p for p in model.parameters() if p.requires_grad]
    grads = sum(size(p) for p in trainable)
    state = STATE_COPIES[key] * grads
    if key in ("adam", "adamw") and include_step:
        state += _step_bytes() * len(trainable)
    return MemoryBreakdown(params, grads, state)


def measure_training_memory(model: nn.Module, optimizer: torch.optim.Optimizer) -> MemoryBreakdown:
    """Bytes actually held by the parameters, their ``.grad`` tensors and the optimizer's state."""
    params = list(model.parameters())
    grads = [p.grad for p in params if p.grad is not None]
    state = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return MemoryBreakdown(unique_storage_bytes(params), unique_storage_bytes(grads),
                           unique_storage_bytes(state))


@dataclass(frozen=True)
class SavedRecord:
    """One tensor autograd saved: its shape, dtype, storage bytes and whether it was counted."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    counted: str  # "new", "already counted" or "parameter/buffer"


class SavedTensorsMeter:
    """Context manager counting the bytes autograd saves for backward (unique storages).

    ``exclude``: a module (its parameters and buffers) or tensors not to count. After the
    block, :meth:`alive_bytes` tells how many of those bytes are still held (by a graph you
    kept a reference to, e.g. a loss summed as a tensor).

    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> with SavedTensorsMeter(exclude=net) as meter:
    ...     out = net(torch.randn(5, 4))
    >>> meter.bytes       # the 5x4 input and the 5x8 ReLU output (saved twice, counted once)
    240
    >>> [r.counted for r in meter.records]
    ['new', 'new', 'already counted', 'parameter/buffer']
    >>> meter.alive_bytes()   # `out` still holds its graph
    240
    >>> del out
    >>> meter.alive_bytes()
    0
    """

    def __init__(self, exclude: nn.Module | Iterable[torch.Tensor] = ()) -> None:
        if isinstance(exclude, nn.Module):
            exclude = list(exclude.parameters()) + list(exclude.buffers())
        self._excluded = {_storage(t)[0] for t in exclude}
        self._bytes: dict[tuple[str, int], int] = {}
        self._alive: list[Any] = []  # storages kept alive while measuring: no address reuse
        self._weak: dict[tuple[str, int], list[Any]] = {}  # weakrefs to what the graph holds
        self.records: list[SavedRecord] = []
        self._hooks: Any = None

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        key, nbytes = _storage(t)
        packed = t.detach()  # never `t` itself: see the module docstring
        if key in self._excluded:
            counted = "parameter/buffer"
        else:
            counted = "already counted" if key in self._bytes else "new"
            self._bytes[key] = nbytes
            self._alive.append(packed)
            self._weak.setdefault(key, []).append(weakref.ref(packed))
        self.records.append(SavedRecord(tuple(t.shape), t.dtype, nbytes, counted))
        return packed

    def __enter__(self) -> "SavedTensorsMeter":
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hooks.__exit__(*exc)
        self._alive.clear()

    @property
    def bytes(self) -> int:
        return sum(self._bytes.values())

    def alive_bytes(self) -> int:
        """Counted bytes that a graph still holds now (call it after the block)."""
        return sum(self._bytes[key] for key, refs in self._weak.items() if any(r() is not None for r in refs))

    def by_dtype(self) -> dict[str, int]:
        """Counted bytes per dtype, e.g. ``{'float32': 1024, 'int64': 64}``."""
        out: dict[str, int] = {}
        for r in self.records:
            if r.counted == "new":
                name = str(r.dtype).replace("torch.", "")
                out[name] = out.get(name, 0) + r.nbytes
        return out


def activation_bytes(model: nn.Module, x: torch.Tensor, loss_fn: Callable[..., torch.Tensor] | None = None,
                     target: torch.Tensor | None = None) -> int:
    """Bytes autograd saves for one forward pass (and loss, if given), parameters excluded.

    Runs with gradients enabled and restores the model's buffers afterwards (BatchNorm's
    running statistics are not changed by measuring).
    """
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    try:
        with torch.enable_grad(), SavedTensorsMeter(exclude=model) as meter:
            out = model(x)
            if loss_fn is not None:
                loss_fn(out, target)
    finally:
        with torch.no_grad():
            for name, b in model.named_buffers():
                b.copy_(buffers[name])
    return meter.bytes


# --- CUDA allocator counters (GPU only) -----------------------------------------------------

def _cuda_device(device: torch.device | str | None) -> torch.device:
    if not torch.cuda.is_available():
        raise RuntimeError(t("CUDA memory counters need a CUDA GPU and none is available here; "
                             "guard the cell with course_utils.devices.skip_unless_gpu(...)"))
    device = torch.device(device if device is not None else "cuda")
    if device.type != "cuda":
        raise ValueError(t("expected a cuda device, found {device}", device=device))
    return device


def cuda_memory(device: torch.device | str | None = None) -> dict[str, int]:
    """Allocated / reserved bytes now and their peaks since the last reset (CUDA only)."""
    d, cuda = _cuda_device(device), torch.cuda
    return {"allocated": cuda.memory_allocated(d), "reserved": cuda.memory_reserved(d),
            "peak_allocated": cuda.max_memory_allocated(d), "peak_reserved": cuda.max_memory_reserved(d)}


def cuda_peak(fn: Callable[[], Any], device: torch.device | str | None = None) -> tuple[Any, int]:
    """Run ``fn()`` and return (its result, peak allocated bytes above what was allocated before)."""
    device = _cuda_device(device)
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    result = fn()
    torch.cuda.synchronize(device)
    return result, torch.cuda.max_memory_allocated(device) - start
