"""07.training_memory: bytes of parameters, gradients and optimizer state for training a model."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import _number_problem


_COPIES = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}


# --- 07.training_memory ----------------------------------------------------------------------

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

    return [lambda: ((mlp(0), "adam", torch.float32), {}),
            lambda: ((frozen(1), "momentum", torch.bfloat16), {}),
            lambda: ((tied(2), "adamw", torch.float16), {}),
            lambda: ((conv(3), "sgd", torch.float64), {}),
            lambda: ((mlp(4), "adam", torch.bfloat16), {})]


def _tm_step_bytes(model) -> int:
    return 4 * sum(1 for p in model.parameters() if p.requires_grad)


def _tm_describe(model, optimizer, dtype) -> str:
    n_all = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = f", {n_all - n_train:,} of them frozen" if n_train != n_all else ""
    return f"({n_all:,} parameters{frozen}, optimizer {optimizer!r}, {dtype})"


def _tm_verify(out, ref, args, kwargs):
    if not isinstance(out, dict):
        return f"expected a dict with keys 'params', 'grads', 'optimizer_state', found {describe(out)}"
    missing = [k for k in ref if k not in out]
    if missing:
        return f"expected keys {list(ref)}, found {list(out)} (missing {missing})"
    for key in ref:
        problem = _number_problem(out[key], f"out[{key!r}]")
        if problem:
            return problem
    model, optimizer, dtype = args
    where = _tm_describe(model, optimizer, dtype)
    for key in ("params", "grads"):
        if out[key] != ref[key]:
            return f"{where}: expected {key} = {ref[key]:,} bytes, found {out[key]:,}"
    state = out["optimizer_state"]
    if state != ref["optimizer_state"]:
        if optimizer in ("adam", "adamw") and state == ref["optimizer_state"] + _tm_step_bytes(model):
            return None  # counting Adam's 4-byte `step` tensors too is also right
        return f"{where}: expected optimizer_state = {ref['optimizer_state']:,} bytes, found {state:,}"
    return None


def _tm_field(out, key):
    return out.get(key) if isinstance(out, dict) else None


register(Exercise(
    "07.training_memory",
    "training_memory(model, optimizer, dtype) returns {'params', 'grads', 'optimizer_state'} in bytes "
    "for training `model` in `dtype` with optimizer 'sgd', 'momentum', 'adam' or 'adamw'. Frozen "
    "parameters (requires_grad=False) have no gradient and no optimizer state; ignore Adam's tiny "
    "`step` counters.",
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
        Mistake("shared parameters counted twice",
                "a tied weight is one tensor used by two modules; model.parameters() lists it once, "
                "summing over model.modules() counts it twice.",
                _tm_per_module,
                detect=lambda out, a, k: _tm_field(out, "params") == _tm_per_module(*a)["params"]
                != training_memory_reference(*a)["params"]),
    ],
))
