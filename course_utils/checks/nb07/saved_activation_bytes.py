"""07.saved_activation_bytes: bytes of the distinct storages autograd saves for backward."""

from __future__ import annotations

import gc
import weakref

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, register

from ._common import _number_problem


# --- 07.saved_activation_bytes ---------------------------------------------------------------

def saved_activation_bytes_reference(model: nn.Module, x: torch.Tensor) -> int:
    param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    sizes: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in param_storages:
            sizes[storage.data_ptr()] = storage.nbytes()
        return t.detach()  # returning t itself would keep the graph alive forever

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())


def _saved(model: nn.Module, x: torch.Tensor) -> list[tuple[int, int, int, bool]]:
    """(storage ptr, storage bytes, numel, is_parameter) for every tensor autograd saves."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    found: list[tuple[int, int, int, bool]] = []
    keep: list[torch.Tensor] = []

    def pack(t):
        keep.append(t.detach())
        ptr = t.untyped_storage().data_ptr()
        found.append((ptr, t.untyped_storage().nbytes(), t.numel(), ptr in params))
        return keep[-1]

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return found


def _sab_every_save(model, x):
    return sum(nbytes for _, nbytes, _, is_param in _saved(model, x) if not is_param)


def _sab_with_params(model, x):
    return sum({ptr: nbytes for ptr, nbytes, _, _ in _saved(model, x)}.values())


def _sab_numel(model, x):
    return sum({ptr: numel for ptr, _, numel, is_param in _saved(model, x) if not is_param}.values())


def _sab_no_grad(model, x):
    sizes = {}

    def pack(t):
        sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t.detach()

    with torch.no_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())


def _sab_returns_t(model, x):
    param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    sizes = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in param_storages:
            sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())


class _Watched(nn.Sequential):
    """Records a weak reference to every layer's output, to see whether the graph was freed."""

    def __init__(self, *layers: nn.Module) -> None:
        super().__init__(*layers)
        self.outputs: list[weakref.ref] = []  # from every forward, so checks cannot mask a leak

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self:
            x = layer(x)
            self.outputs.append(weakref.ref(x))
        return x


def _graph_kept_alive(model: nn.Module) -> bool:
    def alive() -> bool:
        return any(ref() is not None for ref in getattr(model, "outputs", []))
    if not alive():
        return False
    gc.collect()  # only when needed: a full collection is slow in a big process
    return alive()


class _Square(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x  # autograd saves x twice (as self and as other): one storage


def _sab_cases():
    def mlp():
        torch.manual_seed(10)
        model = _Watched(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
        return (model, torch.randn(5, 8, generator=torch.Generator().manual_seed(11))), {}

    def square():
        torch.manual_seed(12)
        model = _Watched(nn.Linear(6, 12), _Square(), nn.Tanh(), nn.Linear(12, 2))
        return (model, torch.randn(7, 6, generator=torch.Generator().manual_seed(13))), {}

    def cnn():
        torch.manual_seed(14)
        model = _Watched(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 5))
        return (model, torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(15))), {}

    return [mlp, square, cnn]


def _sab_verify(out, ref, args, kwargs):
    problem = _number_problem(out, "the byte count")
    if problem:
        return problem
    if out != ref:
        model, x = args
        return (f"for input of shape {tuple(x.shape)} through {len(list(model.children()))} layers "
                f"expected {ref:,} bytes saved for backward, found {out:,}")
    if _graph_kept_alive(args[0]):
        return ("the count is right, but the layer outputs were still alive after your function "
                "returned: the forward graph was never freed")
    return None


register(Exercise(
    "07.saved_activation_bytes",
    "saved_activation_bytes(model, x) runs model(x) under torch.autograd.graph.saved_tensors_hooks "
    "and returns the bytes of the distinct storages autograd saves for backward, leaving out the "
    "model's parameters.",
    saved_activation_bytes_reference,
    _sab_cases(),
    _sab_verify,
    [
        Mistake("shared tensors counted twice",
                "the same tensor is often saved by two operations (a ReLU output is saved by the ReLU "
                "and by the next Linear): key a dict by t.untyped_storage().data_ptr() and count each "
                "storage once.",
                _sab_every_save,
                detect=lambda out, a, k: out == _sab_every_save(*a) != saved_activation_bytes_reference(*a)),
        Mistake("parameters counted",
                "a Linear saves its weight for backward, but the weight exists anyway: skip storages "
                "that belong to model.parameters().",
                _sab_with_params,
                detect=lambda out, a, k: out == _sab_with_params(*a)),
        Mistake("element count instead of bytes",
                "numel() counts elements; memory is bytes: use untyped_storage().nbytes() "
                "(or numel() * element_size()).",
                _sab_numel,
                detect=lambda out, a, k: out == _sab_numel(*a)),
        Mistake("pack hook returns the tensor itself (graph never freed)",
                "return t.detach() from the pack hook, not t: a saved output handed back unchanged "
                "points to its own grad_fn, which owns it; that cycle runs through C++ and is never "
                "freed when no backward() follows.",
                _sab_returns_t,
                detect=lambda out, a, k: _graph_kept_alive(a[0])),
        Mistake("forward run under no_grad (nothing saved)",
                "inside torch.no_grad() autograd records nothing, so the hooks never fire: run the "
                "forward with gradients enabled.",
                _sab_no_grad,
                detect=lambda out, a, k: out == 0),
    ],
))
