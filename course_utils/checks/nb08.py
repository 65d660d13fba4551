"""Checkers of notebook 08 (AMP and GPU memory), in notebook order: ``08.training_memory``,
``08.saved_activation_bytes``, ``08.amp_train_step``.

The memory checkers compare exact byte counts (Python ints). The saved-activation models keep weak
references to their layer outputs, so a pack hook that keeps the graph alive is seen. The AMP step is
checked on the CPU with a real ``torch.amp.GradScaler("cpu")`` whose method calls are recorded
(:class:`SpyScaler`) and a model that records whether its forward ran under autocast and with which
dtype (a run with ``device_type='cuda'`` shows a hard-coded dtype without a GPU), so every typical
mistake is visible without a GPU.
"""

from __future__ import annotations

import copy
import gc
import math
import weakref
from typing import Any

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.i18n import N_, t


# --- shared by the 07 checkers --------------------------------------------------------------------
# Byte counts must be Python numbers.

def _number_problem(value: Any, what: str) -> str | None:
    if isinstance(value, torch.Tensor):
        return t("expected {what} as a Python int, found a tensor ({describe_value}); use int(...) or .item()",
                 what=what, describe_value=describe(value))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return t("expected {what} as a Python int, found {describe_value}", what=what, describe_value=describe(value))
    return None


# --- 08.training_memory ---------------------------------------------------------------------------
# Bytes of parameters, gradients and optimizer state for training a model.

_COPIES = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}



def training_memory_reference(model: nn.Module, optimizer: str, dtype: torch.dtype) -> dict[str, int]:
    size = torch.tensor([], dtype=dtype).element_size()
    n_all = sum(p.numel() for p in model.parameters())
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
    return {"params": n_all * size, "grads": n_trainable * size, "optimizer_state": copies * n_trainable * size}


def _tm_adam_once(model, optimizer, dtype):
    out = training_memory_reference(model, optimizer, dtype)
    if optimizer in ("adam", "adamw"):
        out["optimizer_state"] //= 2
    return out


def _tm_no_grads(model, optimizer, dtype):
    out = training_memory_reference(model, optimizer, dtype)
    out["grads"] = 0
    return out


def _tm_float32_always(model, optimizer, dtype):
    return training_memory_reference(model, optimizer, torch.float32)


def _tm_no_momentum(model, optimizer, dtype):
    return training_memory_reference(model, "sgd" if optimizer == "momentum" else optimizer, dtype)


def _tm_frozen_trained(model, optimizer, dtype):
    size = torch.tensor([], dtype=dtype).element_size()
    n = sum(p.numel() for p in model.parameters())
    return {"params": n * size, "grads": n * size, "optimizer_state": _COPIES[optimizer] * n * size}


def _tm_state_dict(model, optimizer, dtype):
    size = torch.tensor([], dtype=dtype).element_size()
    n = sum(v.numel() for v in model.state_dict().values())
    out = training_memory_reference(model, optimizer, dtype)
    out["params"] = n * size
    return out


def _tm_per_module(model, optimizer, dtype):
    size = torch.tensor([], dtype=dtype).element_size()
    n = sum(p.numel() for m in model.modules() for p in m.parameters(recurse=False))
    n_train = sum(p.numel() for m in model.modules() for p in m.parameters(recurse=False) if p.requires_grad)
    return {"params": n * size, "grads": n_train * size, "optimizer_state": _COPIES[optimizer] * n_train * size}


class _TiedLM(nn.Module):
    """Embedding and output layer share one weight matrix (weight tying)."""

    def __init__(self, vocab: int = 50, dim: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.hidden = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(self.embed(tokens))))


def _tm_cases():
    def mlp(seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))

    def frozen(seed):
        model = mlp(seed)
        model[0].requires_grad_(False)
        return model

    def tied(seed):
        torch.manual_seed(seed)
        return _TiedLM()

    def conv(seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 5))

    def batchnorm(seed):  # buffers (running mean/var, a counter) are not parameters
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(10, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))

    return [lambda: ((mlp(0), "adam", torch.float32), {}),
            lambda: ((batchnorm(5), "momentum", torch.float32), {}),
            lambda: ((frozen(1), "momentum", torch.bfloat16), {}),
            lambda: ((tied(2), "adamw", torch.float16), {}),
            lambda: ((conv(3), "sgd", torch.float64), {}),
            lambda: ((mlp(4), "adam", torch.bfloat16), {})]


def _tm_step_bytes(model) -> int:
    return 4 * sum(1 for p in model.parameters() if p.requires_grad)


def _tm_describe(model, optimizer, dtype) -> str:
    n_all = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = t(", {n_frozen:,} of them frozen", n_frozen=n_all - n_train) if n_train != n_all else ""
    return t("({n_all:,} parameters{frozen}, optimizer {optimizer!r}, {dtype})",
             n_all=n_all, frozen=frozen, optimizer=optimizer, dtype=dtype)


def _tm_verify(out, ref, args, kwargs):
    if not isinstance(out, dict):
        return t("expected a dict with keys 'params', 'grads', 'optimizer_state', found {describe_out}",
                 describe_out=describe(out))
    missing = [k for k in ref if k not in out]
    if missing:
        return t("expected keys {list_ref}, found {list_out} (missing {missing})",
                 list_ref=list(ref), list_out=list(out), missing=missing)
    for key in ref:
        problem = _number_problem(out[key], f"out[{key!r}]")
        if problem:
            return problem
    model, optimizer, dtype = args
    where = _tm_describe(model, optimizer, dtype)
    size = torch.tensor([], dtype=dtype).element_size()
    for key in ("params", "grads", "optimizer_state"):
        if out[key] != ref[key]:
            named = _tm_unit_mistake(out[key], ref[key], size)
            if named:
                return t("{where}: expected {key} = {ref_key:,} bytes, found {out_key:,}: {named}",
                         where=where, key=key, ref_key=ref[key], out_key=out[key], named=named)
            if key != "optimizer_state":
                return t("{where}: expected {key} = {ref_key:,} bytes, found {out_key:,}",
                         where=where, key=key, ref_key=ref[key], out_key=out[key])
    state = out["optimizer_state"]
    if state != ref["optimizer_state"]:
        n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
        if optimizer in ("adam", "adamw") and state == ref["optimizer_state"] + _tm_step_bytes(model):
            return t("{where}: expected optimizer_state = {ref_optimizer_state:,} bytes, found {state:,}: you "
                     "counted Adam's `step` counters too (4 bytes per parameter tensor); the task leaves them out",
                     where=where, ref_optimizer_state=ref['optimizer_state'], state=state)
        if state == ref["optimizer_state"] + n_train * size:
            return t("{where}: expected optimizer_state = {ref_optimizer_state:,} bytes, found {state:,}: one copy "
                     "of the trainable parameters too many ({copies_optimizer} for {optimizer!r}); the gradients are "
                     "counted under 'grads', not as optimizer state",
                     where=where, ref_optimizer_state=ref['optimizer_state'], state=state,
                     copies_optimizer=_COPIES[optimizer], optimizer=optimizer)
        return t("{where}: expected optimizer_state = {ref_optimizer_state:,} bytes, found {state:,}",
                 where=where, ref_optimizer_state=ref['optimizer_state'], state=state)
    return None


def _tm_unit_mistake(value: Any, expected: int, size: int) -> str | None:
    """Name a count in the wrong unit (elements, MiB, bits) when the value is exactly that."""
    if expected == 0:
        return None
    if size != 1 and value * size == expected:
        return t("that is the element count: multiply by the bytes per element ({size} for this dtype)", size=size)
    if math.isclose(value, expected / 2**20, rel_tol=1e-9) and value != expected:
        return t("that is MiB (bytes / 2**20): return bytes, as a Python int")
    if value == expected * 8:
        return t("that counts bits per element (torch.finfo(dtype).bits): bytes per element is torch.tensor([], "
                 "dtype=dtype).element_size() or dtype.itemsize")
    return None


def _tm_field(out, key):
    return out.get(key) if isinstance(out, dict) else None


register(Exercise(
    "08.training_memory",
    "training_memory(model, optimizer, dtype) returns {'params', 'grads', 'optimizer_state'} in bytes "
    "for training `model` in `dtype` with optimizer 'sgd', 'momentum', 'adam' or 'adamw'. Frozen "
    "parameters (requires_grad=False) have no gradient and no optimizer state; buffers are not "
    "parameters; ignore Adam's tiny `step` counters.",
    training_memory_reference,
    _tm_cases(),
    _tm_verify,
    [
        Mistake("Adam counted once",
                "Adam and AdamW keep TWO tensors per parameter (exp_avg and exp_avg_sq): optimizer "
                "state is 2 x the trainable parameter bytes.",
                _tm_adam_once,
                detect=lambda out, a, k: a[1] in ("adam", "adamw") and _tm_field(out, "optimizer_state")
                == training_memory_reference(*a)["optimizer_state"] // 2),
        Mistake("grads forgotten",
                "backward() stores a .grad tensor as large as each trainable parameter: count it.",
                _tm_no_grads,
                detect=lambda out, a, k: isinstance(out, dict) and not out.get("grads")),
        Mistake("dtype size ignored",
                "bytes = elements x bytes per element: 4 for float32, 2 for bfloat16/float16, 8 for "
                "float64 (torch.tensor([], dtype=dtype).element_size() or dtype.itemsize).",
                _tm_float32_always,
                detect=lambda out, a, k: a[2] != torch.float32 and isinstance(out, dict)
                and out.get("params") == training_memory_reference(a[0], a[1], torch.float32)["params"]),
        Mistake("momentum buffer forgotten",
                "SGD with momentum keeps one momentum buffer per parameter (1 copy); plain SGD keeps none.",
                _tm_no_momentum,
                detect=lambda out, a, k: a[1] == "momentum" and _tm_field(out, "optimizer_state") == 0),
        Mistake("frozen parameters given grads and optimizer state",
                "parameters with requires_grad=False still take memory, but get no .grad and the "
                "optimizer keeps no state for them: count only trainable ones for grads and state.",
                _tm_frozen_trained,
                detect=lambda out, a, k: _tm_field(out, "grads") == _tm_frozen_trained(*a)["grads"]
                != training_memory_reference(*a)["grads"]),
        Mistake("buffers counted as parameters",
                "model.state_dict() also holds buffers (BatchNorm's running mean/var and its counter), "
                "which are not parameters: count model.parameters().",
                _tm_state_dict,
                detect=lambda out, a, k: any(True for _ in a[0].buffers())
                and _tm_field(out, "params") == _tm_state_dict(*a)["params"]
                != training_memory_reference(*a)["params"]),
        Mistake("shared parameters counted twice",
                "a tied weight is one tensor used by two modules; model.parameters() lists it once, "
                "summing over model.modules() counts it twice.",
                _tm_per_module,
                detect=lambda out, a, k: _tm_field(out, "params") == _tm_per_module(*a)["params"]
                != training_memory_reference(*a)["params"]),
    ],
))


# --- 08.saved_activation_bytes --------------------------------------------------------------------
# Bytes of the distinct storages autograd saves for backward.

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


def _sab_by_id(model, x):
    """Deduplicated by the Python object, not the storage."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    sizes: dict[int, int] = {}
    keep: list[torch.Tensor] = []  # the keyed objects, alive until the end: no id() is reused mid-forward

    def pack(t):
        if t.untyped_storage().data_ptr() not in params:
            sizes[id(t)] = t.untyped_storage().nbytes()
            keep.append(t)
        return t.detach()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    keep.clear()  # an output kept here would look like a graph kept alive to the checks below
    return sum(sizes.values())


def _over_counted(out: Any, args: tuple) -> bool:
    """More than the distinct storages, at most every save, and none of the other mistakes' numbers: a
    storage counted more than once because the answer keys by something else than the storage (id(t),
    whose values Python may even reuse mid-forward, so its exact total varies from run to run)."""
    if not isinstance(out, int) or isinstance(out, bool):
        return False
    reference = saved_activation_bytes_reference(*args)
    others = (_sab_with_params(*args), _sab_numel(*args), _sab_view_bytes(*args), _sab_view_bytes(*args, key="data_ptr"))
    return reference < out <= _sab_every_save(*args) and out not in others


def _sab_view_bytes(model, x, key: str = "storage"):
    """Sized with the saved view's own bytes, not its storage's (keyed by storage or by t.data_ptr())."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    sizes: dict[int, int] = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in params:
            sizes[t.untyped_storage().data_ptr() if key == "storage" else t.data_ptr()] = t.nbytes
        return t.detach()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())


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


class _KeepsOutput(nn.Sequential):
    """Keeps its last output (as a training step would, to call backward on it later)."""

    last: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.last = super().forward(x)
        return self.last


def _backward_problem(model: nn.Module, x: torch.Tensor) -> str | None:
    """None when backward through the graph built under the candidate's hooks gives the right gradients."""
    out = getattr(model, "last", None)
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return None
    try:
        got = torch.autograd.grad(out.sum(), list(model.parameters()))
    except Exception as exc:  # noqa: BLE001 - the candidate's hooks broke backward: say how
        return t("backward through the graph built under your hooks failed ({error}: {exc}): the pack hook's return "
                 "value is what autograd keeps for backward, so return `t.detach()` from it (and return it unchanged "
                 "from the unpack hook)", error=type(exc).__name__, exc=exc)
    with torch.enable_grad():
        expected = torch.autograd.grad(nn.Sequential.forward(model, x).sum(), list(model.parameters()))
    if any(not torch.allclose(g, e, atol=1e-6) for g, e in zip(got, expected)):
        return t("backward through the graph built under your hooks gives wrong gradients: return `t.detach()` from "
                 "the pack hook and the packed value unchanged from the unpack hook")
    return None


def _graph_kept_alive(model: nn.Module) -> bool:
    def alive() -> bool:
        return any(ref() is not None for ref in getattr(model, "outputs", []))
    if not alive():
        return False
    gc.collect()  # only when needed: a full collection is slow in a big process
    return alive()


class _ChunkMul(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=1)
        return a * b  # saves a and b: two view objects of ONE storage (different id(), data_ptr())


class _SliceLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x[:, : self.in_features])  # saves a view of part of x's storage


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

    def views():
        torch.manual_seed(16)
        model = _Watched(nn.Linear(6, 12), _ChunkMul(), nn.Tanh(), _SliceLinear(3, 2))
        return (model, torch.randn(4, 6, generator=torch.Generator().manual_seed(17))), {}

    def kept():  # the output is kept for a backward later: the hooks' values must serve it
        torch.manual_seed(18)
        model = _KeepsOutput(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
        return (model, torch.randn(3, 5, generator=torch.Generator().manual_seed(19))), {}

    return [mlp, square, cnn, views, kept]


def _hooks_left_active() -> bool:
    """True when saved-tensor hooks are still installed (entered without `with`); removes them."""
    autograd = torch._C._autograd
    left = False
    while autograd._top_saved_tensors_default_hooks(False) is not None:
        autograd._pop_saved_tensors_default_hooks()
        left = True
    return left


def _sab_alternatives(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    """What the usual wrong ways of counting give on this case (run on a copy of the model)."""
    model = copy.deepcopy(model)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    x_ptr = x.untyped_storage().data_ptr()
    saves: list[tuple[int, int, int, int, bool]] = []  # storage ptr, storage bytes, data_ptr, numel, float
    keep: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saves.append((storage.data_ptr(), storage.nbytes(), t.data_ptr(), t.numel(), t.is_floating_point()))
        keep.append(t.detach())
        return keep[-1]

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = model(x)
    by_storage = {ptr: size for ptr, size, _, _, _ in saves}
    by_data_ptr = {dptr: size for _, size, dptr, _, _ in saves}
    four: dict[int, int] = {}
    for ptr, _, _, numel, _ in saves:
        four[ptr] = 4 * numel
    total = sum(by_storage.values())
    return {"offset": sum(by_data_ptr.values()),
            "input x": total - by_storage.get(x_ptr, 0),
            "int64": sum({ptr: size for ptr, size, _, _, f in saves if f}.values()),
            "4 bytes": sum(four.values()),
            "output": total + output.untyped_storage().nbytes(),
            "number of storages": len(by_storage)}


_SAB_NAMES = {
    "offset": N_("you told storages apart by t.data_ptr(): a view that starts at an offset has another data_ptr "
               "but the same storage, counted again; key by t.untyped_storage().data_ptr()"),
    "input x": N_("the input x is saved for backward too (the first layer needs it): count its storage as well"),
    "int64": N_("you counted only floating-point saves: integer ones count too (max-pool saves int64 indices, "
              "8 bytes each)"),
    "4 bytes": N_("you assumed 4 bytes per element and counted elements: use the storage's own size, "
                "t.untyped_storage().nbytes() (int64 indices take 8 bytes, a view's storage is larger than the view)"),
    "output": N_("you added the output's storage: count only what autograd saves for backward"),
    "number of storages": N_("you returned the number of storages, not their bytes: add up storage.nbytes()"),
}


def _sab_verify(out, ref, args, kwargs):
    if _hooks_left_active():
        return t("your saved-tensor hook was left active after the function returned (entered with __enter__ and "
                 "never left), so it keeps packing every tensor autograd saves in the session: use `with "
                 "torch.autograd.graph.saved_tensors_hooks(pack, unpack):`")
    problem = _number_problem(out, t("the byte count"))
    if problem:
        return problem
    if out != ref:
        model, x = args
        where = t("for input of shape {shape} through {layers} layers expected {ref:,} bytes saved for backward, "
                  "found {out:,}", shape=tuple(x.shape), layers=len(list(model.children())), ref=ref, out=out)
        if ref and math.isclose(out, ref / 2**20, rel_tol=1e-9):
            return t("{where}: that is MiB (bytes / 2**20); return bytes, as a Python int", where=where)
        try:
            alternatives = _sab_alternatives(model, x)
        except Exception:  # noqa: BLE001 - a fingerprint only
            alternatives = {}
        named = [key for key, value in alternatives.items() if value == out and value != ref]
        if len(named) == 1:
            return t("{where}: {problem}", where=where, problem=t(_SAB_NAMES[named[0]]))
        if len(x) > 1:
            try:
                one = saved_activation_bytes_reference(copy.deepcopy(model), x[:1])
            except Exception:  # noqa: BLE001
                one = None
            if one is not None and out == one:
                return t("{where}: that is what one sample saves; measure the whole batch x, as given (activations "
                         "grow with the batch size)", where=where)
        return where
    if _graph_kept_alive(args[0]):
        return t("the count is right, but the layer outputs were still alive after your function returned: the "
                 "forward graph was never freed")
    return _backward_problem(*args)


register(Exercise(
    "08.saved_activation_bytes",
    "saved_activation_bytes(model, x) runs model(x) under torch.autograd.graph.saved_tensors_hooks "
    "and returns the bytes of the distinct storages autograd saves for backward (a storage counted "
    "once, with its full untyped_storage().nbytes()), leaving out the model's parameters. The pack hook "
    "returns what autograd keeps for backward (backward must still work on that graph).",
    saved_activation_bytes_reference,
    _sab_cases(),
    _sab_verify,
    [
        Mistake("shared tensors counted twice",
                "the same tensor is often saved by two operations (a ReLU output is saved by the ReLU "
                "and by the next Linear): key a dict by t.untyped_storage().data_ptr() and count each "
                "storage once.",
                _sab_every_save,
                # Where deduplicating by id() gives the same number (views handed to the hook as new
                # objects), the more specific id() hint below names it.
                detect=lambda out, a, k: (out == _sab_every_save(*a) != saved_activation_bytes_reference(*a)
                                          and out != _sab_by_id(*a))),
        Mistake("deduplicated by the tensor object instead of its storage",
                "two saved tensors can be different views (different id() and data_ptr()) of ONE storage, "
                "as x.chunk(2) gives: key by t.untyped_storage().data_ptr(), the storage's address.",
                _sab_by_id, detect=lambda out, a, k: _over_counted(out, a)),
        Mistake("sized with the view's nbytes instead of the storage's",
                "a saved slice keeps its whole storage alive: count t.untyped_storage().nbytes(), not "
                "t.nbytes or t.numel() * t.element_size() of the view.",
                _sab_view_bytes,
                detect=lambda out, a, k: out in (_sab_view_bytes(*a), _sab_view_bytes(*a, key="data_ptr"))
                and out != saved_activation_bytes_reference(*a)),
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


# --- 08.amp_train_step ----------------------------------------------------------------------------
# One mixed-precision training step with autocast and a GradScaler (a recording SpyScaler).

class SpyScaler(torch.amp.GradScaler):
    """A real ``GradScaler`` that records which of its methods were called, in order."""

    def __init__(self, recipe: str, init_scale: float, growth_interval: int = 1) -> None:
        super().__init__("cpu", init_scale=init_scale, growth_interval=growth_interval)
        self.recipe = recipe
        self.initial_scale = init_scale
        self.calls: list[str] = []

    def scale(self, outputs):  # type: ignore[override]
        self.calls.append("scale")
        return super().scale(outputs)

    def step(self, optimizer, *args, **kwargs):  # type: ignore[override]
        self.calls.append("step")
        self.inside_step = True
        try:
            return super().step(optimizer, *args, **kwargs)
        finally:
            self.inside_step = False

    def watch(self, optimizer: torch.optim.Optimizer) -> None:
        """Record a direct optimizer.step() (one not made by scaler.step) as "optimizer.step"."""
        self.inside_step = False
        optimizer.register_step_pre_hook(
            lambda *_: None if self.inside_step else self.calls.append("optimizer.step"))

    def update(self, new_scale=None) -> None:  # type: ignore[override]
        self.calls.append("update")
        if "step" not in self.calls:
            raise RuntimeError("scaler.update() ran before any scaler.step(optimizer) (the scaler has no "
                               "inf check to update from)")
        super().update(new_scale)


class _RecordingMSE(nn.MSELoss):
    """MSELoss that records whether it ran under autocast (the task puts the loss inside it)."""

    def __init__(self) -> None:
        super().__init__()
        self.autocast_seen: list[bool] = []

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        self.autocast_seen.append(torch.is_autocast_enabled(input.device.type))
        return super().forward(input, target)


class _RecordingCE(nn.CrossEntropyLoss):
    """CrossEntropyLoss that records whether it ran under autocast."""

    def __init__(self) -> None:
        super().__init__()
        self.autocast_seen: list[bool] = []

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        self.autocast_seen.append(torch.is_autocast_enabled(input.device.type))
        return super().forward(input, target)


class _AutocastRecorder(nn.Module):
    """Wraps a network and records whether each forward ran under autocast."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.autocast_seen: list[bool] = []
        self.dtypes: list[dict[str, torch.dtype]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.autocast_seen.append(torch.is_autocast_enabled(x.device.type))
        # what autocast would use on each device type (set by `with torch.autocast(...)` even where
        # that device is absent and autocast is disabled)
        self.dtypes.append({d: torch.get_autocast_dtype(d) for d in ("cpu", "cuda")})
        return self.net(x)


def _amp_build(recipe: str, device_type: str = "cpu") -> tuple:
    gen = torch.Generator().manual_seed(20)
    torch.manual_seed(21)
    if recipe == "regression":
        model = _AutocastRecorder(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
        x, y = torch.randn(32, 6, generator=gen), torch.randn(32, 1, generator=gen)
        loss_fn, optimizer = _RecordingMSE(), torch.optim.SGD(model.parameters(), lr=0.1)
        scale = 2.0 ** 10
    elif recipe == "classification":
        model = _AutocastRecorder(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
        x, y = torch.randn(24, 8, generator=gen), torch.randint(0, 4, (24,), generator=gen)
        loss_fn, optimizer = _RecordingCE(), torch.optim.Adam(model.parameters(), lr=1e-2)
        scale = 2.0 ** 12
    elif recipe == "overflow":  # the scaled loss overflows: the step must be skipped, the scale halved
        model = _AutocastRecorder(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
        x, y = torch.randn(32, 6, generator=gen), 10 * torch.randn(32, 1, generator=gen)
        loss_fn, optimizer = _RecordingMSE(), torch.optim.SGD(model.parameters(), lr=0.1)
        scale = 2.0 ** 126
    elif recipe in ("stale", "stale_inf"):
        # the previous step's gradients were never cleared: scaled ones, or the inf ones an
        # overflowed step leaves behind (scaler.step skipped it, .grad still holds inf)
        model = _AutocastRecorder(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
        x, y = torch.randn(32, 6, generator=gen), torch.randn(32, 1, generator=gen)
        loss_fn, optimizer = _RecordingMSE(), torch.optim.SGD(model.parameters(), lr=0.1)
        scale = 2.0 ** 10
        for p in model.parameters():
            p.grad = torch.full_like(p, float("inf") if recipe == "stale_inf" else scale)
    else:
        raise ValueError(recipe)
    scaler = SpyScaler(recipe, scale)
    scaler.watch(optimizer)
    return model, x, y, loss_fn, optimizer, scaler, device_type


def amp_train_step_reference(model, x, y, loss_fn, optimizer, scaler, device_type) -> float:
    optimizer.zero_grad(set_to_none=True)
    amp_dtype = torch.bfloat16 if device_type == "cpu" else torch.float16
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def _amp_expected(recipe: str) -> dict[str, Any]:
    args = _amp_build(recipe)
    model, scaler = args[0], args[5]
    before = [p.detach().clone() for p in model.parameters()]
    loss = amp_train_step_reference(*args)
    return {"loss": loss, "scale": scaler.get_scale(), "before": before,
            "after": [p.detach().clone() for p in model.parameters()],
            "grads": [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / (b.norm() + 1e-30))


def _grad_ratio(args: tuple) -> float | None:
    """norm(your .grad) / norm(expected .grad), or None when the expected step overflowed."""
    model, scaler = args[0], args[5]
    expected = _amp_expected(scaler.recipe)
    if any(g is None or not torch.isfinite(g).all() for g in expected["grads"]):
        return None  # a skipped step: what is left in .grad is not meaningful
    mine, ref = 0.0, 0.0
    for p, g in zip(model.parameters(), expected["grads"]):
        if p.grad is None or not torch.isfinite(p.grad).all():
            continue
        mine += float(p.grad.norm()) ** 2
        ref += float(g.norm()) ** 2
    # no gradients left (zero_grad() after the step is a fine habit): nothing to compare
    return math.sqrt(mine / ref) if ref > 0 and mine > 0 else None


def _close_ratio(ratio: float | None, target: float) -> bool:
    return ratio is not None and ratio > 0 and abs(math.log(ratio / target)) < 0.5


def _amp_verify(out, ref, args, kwargs):
    model, x, y, loss_fn, optimizer, scaler, device_type = args
    if isinstance(out, torch.Tensor):
        return t("expected the loss as a Python float (loss.item()), found a tensor ({describe_out})",
                 describe_out=describe(out))
    if isinstance(out, bool) or not isinstance(out, (int, float)):
        return t("expected the loss as a Python float, found {describe_out}", describe_out=describe(out))
    if not any(model.autocast_seen):
        return t("your forward pass ran without autocast (torch.is_autocast_enabled was False inside model.forward)")
    used = next((d["cpu"] for d in model.dtypes), None)
    if used is not None and used != torch.bfloat16:
        return t("with device_type='cpu' your forward ran under autocast with {used}; the task says bfloat16 on "
                 "'cpu' (float16 is for 'cuda'): choose the dtype from device_type", used=used)
    calls = scaler.calls
    if getattr(loss_fn, "autocast_seen", None) and not any(loss_fn.autocast_seen):
        return t("the loss was computed outside autocast: compute loss_fn(model(x), y) inside the `with "
                 "torch.autocast(...)` block too, where autocast runs it in float32")
    if "scale" not in calls:
        return t("scaler.scale(loss) was never called, so backward ran on the unscaled loss")
    if "step" not in calls:
        return t("scaler.step(optimizer) was never called, so nothing unscaled the gradients or checked them for inf")
    if "optimizer.step" in calls:
        return t("optimizer.step() was called directly as well as scaler.step(optimizer): scaler.step calls "
                 "optimizer.step() itself (after unscaling, and only when no gradient overflowed); the extra call "
                 "applies the scaled gradients. Remove optimizer.step()")
    expected = _amp_expected(scaler.recipe)
    if "update" not in calls:
        return t("scaler.update() was never called: the loss scale stayed {scaler_get_scale:g}, expected "
                 "{expected_scale:g} after this step",
                 scaler_get_scale=scaler.get_scale(), expected_scale=expected['scale'])
    if not math.isclose(out, expected["loss"], rel_tol=0.05, abs_tol=1e-6):
        times = out / expected["loss"] if expected["loss"] else float("nan")
        return t("expected the returned loss ≈ {expected_loss:.4g}, found {out:.4g} ({times:.3g}x)",
                 expected_loss=expected['loss'], out=out, times=times)
    stale = scaler.recipe in ("stale", "stale_inf")
    if stale and any(not torch.equal(p.detach(), p1) for p, p1 in zip(model.parameters(), expected["after"])):
        unchanged = all(torch.equal(p.detach(), p0) for p, p0 in zip(model.parameters(), expected["before"]))
        model.stale_problem = True
        if scaler.recipe == "stale_inf" and unchanged:
            return t("the model arrived with the inf gradients of an overflowed step still in .grad; backward added "
                     "to them, so this step overflowed too and was skipped (and so would every later one): clear the "
                     "gradients first")
        return t("the model arrived with the previous step's gradients still in .grad; backward added this step's to "
                 "them, so the update is wrong: clear the gradients first")
    if scaler.get_scale() != expected["scale"]:
        return t("expected the loss scale {expected_scale:g} after this step, found {scaler_get_scale:g}",
                 expected_scale=expected['scale'], scaler_get_scale=scaler.get_scale())
    for (name, p), p0, p1 in zip(model.named_parameters(), expected["before"], expected["after"]):
        if not torch.isfinite(p).all():
            return t("parameter {name} contains inf/NaN after your step: a step with inf gradients must be skipped "
                     "(scaler.step does that)", name=name)
        if torch.equal(p1, p0):
            if not torch.equal(p.detach(), p0):
                return t("parameter {name} changed, but this step's gradients overflowed: the update must be skipped",
                         name=name)
            continue
        if _rel(p.detach() - p0, p1 - p0) > 0.1:
            return t("the update of parameter {name} differs from the expected one (relative difference "
                     "{rel_p_detach_p0_p1_p0:.3g})", name=name, rel_p_detach_p0_p1_p0=_rel(p.detach() - p0, p1 - p0))
    ratio = _grad_ratio(args)
    if ratio is not None and not _close_ratio(ratio, 1.0):
        return t("the gradients left in .grad are {ratio:.3g}x the expected (unscaled) ones; the loss scale was "
                 "{scaler_initial_scale:g}", ratio=ratio, scaler_initial_scale=scaler.initial_scale)
    return None


def _amp_variant(*, scaled_backward: bool = True, scaler_step: bool = True, update: bool = True,
                 autocast: bool = True, return_scaled: bool = False, zero_grad: bool = True,
                 dtype: torch.dtype | None = None):
    """A wrong amp_train_step: the reference with one part left out or changed."""
    def step(model, x, y, loss_fn, optimizer, scaler, device_type):
        if zero_grad:
            optimizer.zero_grad()
        amp_dtype = dtype or (torch.bfloat16 if device_type == "cpu" else torch.float16)
        with torch.autocast(device_type=device_type, dtype=amp_dtype, enabled=autocast):
            loss = loss_fn(model(x), y)
        scaled = scaler.scale(loss) if scaled_backward or return_scaled else loss
        scaled.backward()
        scaler.step(optimizer) if scaler_step else optimizer.step()
        if update:
            scaler.update()
        return (scaled if return_scaled else loss).item()
    return step


def _amp_on_cuda(candidate) -> str | None:
    """Run the candidate once with device_type='cuda' and read which autocast dtype it chose.

    Without a GPU, ``torch.autocast('cuda', ...)`` is disabled (with a warning, silenced here), but it
    still sets the CUDA autocast dtype the model reads, so a hard-coded bfloat16 shows without a GPU.
    Anything else that goes wrong is left to the normal run on the CPU cases.
    """
    import warnings

    from course_utils.exercises import time_limit

    args = _amp_build("regression", "cuda")
    model = args[0]
    try:
        with warnings.catch_warnings(), time_limit(3.0):
            warnings.simplefilter("ignore")
            candidate(*args)
    except BaseException:  # noqa: BLE001 - the CPU cases report what went wrong
        return None
    if not model.dtypes:
        return None
    seen = model.dtypes[0]
    if seen["cuda"] != torch.float16:
        return t("with device_type='cuda' your autocast used {seen_cuda}: the task says float16 on 'cuda' (bfloat16 "
                 "on 'cpu'); choose the dtype from device_type instead of hard-coding it\n  Hint (wrong "
                 "low-precision dtype for the device): torch.bfloat16 if device_type == 'cpu' else torch.float16.",
                 seen_cuda=seen['cuda'])
    if any(model.autocast_seen):
        return t("called with device_type='cuda', your forward ran under CPU autocast: pass the argument on, "
                 "torch.autocast(device_type=device_type, ...), instead of a fixed 'cpu'")
    return None


def _calls(args: tuple) -> list[str]:
    return getattr(args[5], "calls", [])


register(Exercise(
    "08.amp_train_step",
    "amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type) does one mixed-precision "
    "step: clear the gradients (the model may hold stale or inf ones), forward + loss under "
    "torch.autocast(device_type=device_type, dtype=bfloat16 "
    "on 'cpu' / float16 on 'cuda'), backward on scaler.scale(loss), scaler.step(optimizer), "
    "scaler.update(); returns the (unscaled) loss as a Python float.",
    amp_train_step_reference,
    [lambda: (_amp_build("regression"), {}), lambda: (_amp_build("classification"), {}),
     lambda: (_amp_build("overflow"), {}), lambda: (_amp_build("stale"), {}),
     lambda: (_amp_build("stale_inf"), {})],
    _amp_verify,
    [
        Mistake("no `zero_grad` (stale or inf gradients)",
                "call optimizer.zero_grad() at the start of the step: backward() adds to whatever is in "
                ".grad, and after an overflowed step that is inf, so every later step is skipped too.",
                _amp_variant(zero_grad=False), detect=lambda out, a, k: getattr(a[0], "stale_problem", False)),
        Mistake("wrong low-precision dtype for the device",
                "pick the dtype from device_type: torch.bfloat16 if device_type == 'cpu' else "
                "torch.float16 (CPU autocast is made for bfloat16; float16 on a GPU needs the scaler).",
                _amp_variant(dtype=torch.float16),
                detect=lambda out, a, k: any(d["cpu"] != torch.bfloat16 for d in getattr(a[0], "dtypes", []))),
        Mistake("backward on unscaled loss",
                "call scaler.scale(loss).backward(): scaling the loss before backward is what keeps "
                "small fp16 gradients from flushing to zero (scaler.step divides the scale back out).",
                _amp_variant(scaled_backward=False),
                detect=lambda out, a, k: "scale" not in _calls(a)
                or _close_ratio(_grad_ratio(a), 1.0 / a[5].initial_scale),
                error_match="did not use scaler.scale"),
        Mistake("`optimizer.step()` instead of `scaler.step`",
                "call scaler.step(optimizer), not optimizer.step(), and before scaler.update(): it "
                "unscales the gradients, checks them for inf/NaN and skips the update when they overflowed.",
                _amp_variant(scaler_step=False),
                detect=lambda out, a, k: "step" not in _calls(a),
                error_match="before any scaler.step"),
        Mistake("no `scaler.update()`",
                "end every step with scaler.update(): it halves the scale after an overflow and grows "
                "it after a run of good steps; without it the scale never adapts (and the next "
                "scaler.step raises).",
                _amp_variant(update=False),
                detect=lambda out, a, k: "update" not in _calls(a)),
        Mistake("returns the scaled loss",
                "return loss.item(), the loss before scaling; scaler.scale(loss) is only for backward.",
                _amp_variant(return_scaled=True),
                detect=lambda out, a, k: isinstance(out, float) and any(math.isclose(
                    out, _amp_expected(a[5].recipe)["loss"] * scale, rel_tol=0.05)
                    for scale in (a[5].initial_scale, a[5].get_scale()))),
        Mistake("no autocast",
                "run the forward pass and the loss inside `with torch.autocast(device_type=device_type, "
                "dtype=...)`; without it everything stays float32.",
                _amp_variant(autocast=False),
                detect=lambda out, a, k: not any(getattr(a[0], "autocast_seen", [True]))),
    ],
    inspect=_amp_on_cuda,
))
