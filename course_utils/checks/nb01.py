"""Checkers of notebook 01 (tensors), in notebook order: ``01.independent_copy``, ``01.flatten_batch``,
``01.to_device``.

``01.independent_copy`` changes the (fresh) NumPy array after the call to see whether the tensor
follows it; ``01.flatten_batch`` includes non-contiguous inputs; ``01.to_device`` moves batches to the
``meta`` device (shapes, no data), so it runs on any machine.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Iterator

import numpy as np
import torch

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t

# --- 01.independent_copy -------------------------------------------------------------------


def independent_copy_reference(arr: np.ndarray) -> torch.Tensor:
    return torch.tensor(arr)


def _copy_shared(arr):
    return torch.from_numpy(arr)


def _copy_float32(arr):
    return torch.tensor(arr, dtype=torch.float32)


def _copy_cases():
    def make(seed, dtype, shape):
        rng = np.random.default_rng(seed)
        return (rng.normal(size=shape).astype(dtype) if dtype != np.int64
                else rng.integers(0, 10, size=shape).astype(dtype),), {}
    return [lambda: make(0, np.float64, (3,)), lambda: make(1, np.int64, (2, 3)),
            lambda: make(2, np.float32, (4, 2)), lambda: make(3, np.float64, (1, 3, 1))]   # size-1 dims stay


def _copy_verify(out, ref, args, kwargs):
    (arr,) = args
    if not isinstance(out, torch.Tensor):
        return t("expected a torch.Tensor, found {got}", got=describe(out))
    if out.dtype != ref.dtype:
        return t("expected dtype {want} (the array's dtype is {array}), found {got}", want=ref.dtype, array=arr.dtype,
                 got=out.dtype)
    if out.shape != ref.shape:
        return t("expected a tensor of the array's shape {want}, found shape {got}", want=arr.shape,
                 got=tuple(out.shape))
    problem = compare_tensors(out, ref)
    if problem:
        return problem
    before = out.clone()
    arr += 1  # the test owns this fresh array: change it and see if the tensor follows
    if not torch.equal(out, before):
        return t("your tensor changed when the NumPy array was modified: it shares memory with it")
    return None


register(Exercise(
    "01.independent_copy",
    "independent_copy(arr) returns a tensor with the same values and dtype as the NumPy array "
    "that does NOT share memory with it.",
    independent_copy_reference,
    _copy_cases(),
    _copy_verify,
    [
        Mistake("returns torch.from_numpy (shares memory)",
                "torch.from_numpy, torch.as_tensor and torch.asarray wrap the array's memory (no copy); "
                "use torch.tensor(arr) or torch.from_numpy(arr).clone() to get your own copy.",
                _copy_shared),
        Mistake("wrong dtype",
                "keep the array's dtype: float64 stays float64 and int64 labels stay int64. "
                "torch.Tensor(arr) (capital T), .float() and dtype=torch.float32 all give float32; "
                "torch.tensor(arr) keeps the dtype.",
                _copy_float32,
                detect=lambda out, a, k: isinstance(out, torch.Tensor)
                and out.dtype != torch.from_numpy(a[0]).dtype),
        Mistake("squeeze() drops size-1 dims",
                "squeeze() removes EVERY size-1 dim, so the tensor no longer has the array's shape; "
                "copy the array as it is: torch.tensor(arr).",
                lambda arr: torch.tensor(arr.squeeze()),
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and a[0].squeeze().shape != a[0].shape
                and tuple(out.shape) == a[0].squeeze().shape),
    ],
))


# --- 01.flatten_batch ----------------------------------------------------------------------


def flatten_batch_reference(x: torch.Tensor) -> torch.Tensor:
    return torch.flatten(x, start_dim=1)


def _flatten_view(x):
    return x.view(x.size(0), -1)


def _flatten_all(x):
    return x.flatten()


def _flatten_squeeze(x):
    return torch.flatten(x.squeeze(), 1)


def _flatten_two_dims(x):
    return x.flatten(start_dim=1, end_dim=2)


def _flatten_cases():
    def g(seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)
    return [lambda: ((torch.randn(4, 3, 2, 2, generator=g(5)),), {}),
            lambda: ((torch.randn(3, 2, 5, generator=g(6)).transpose(1, 2),), {}),
            lambda: ((torch.randn(2, 6, generator=g(7)).t(),), {}),
            lambda: ((torch.randn(1, 3, 1, 2, generator=g(8)),), {}),          # a batch of one
            lambda: ((torch.randn(1, 2, 3, generator=g(9)).permute(0, 2, 1),), {}),
            lambda: ((torch.randn(3, 2, 2, generator=g(10), dtype=torch.float64),), {}),   # float64 stays float64
            lambda: ((torch.randint(0, 9, (2, 3, 2), generator=g(11)),), {})]               # int64 stays int64


def _batch_of_one_lost(out, args, kwargs) -> bool:
    x = args[0]
    return x.shape[0] == 1 and isinstance(out, torch.Tensor) and (out.dim() != 2 or out.shape[0] != 1)


def _flatten_verify(out, ref, args, kwargs):
    x = args[0]
    if isinstance(out, torch.Tensor) and out.shape != ref.shape:
        return t("for x of shape {shape} expected shape {want} (dim 0 kept, every other "
                 "dim flattened into one), found shape {got}", shape=tuple(x.shape), want=tuple(ref.shape),
                 got=tuple(out.shape))
    return compare_tensors(out, ref)


register(Exercise(
    "01.flatten_batch",
    "flatten_batch(x) keeps dim 0 (the batch) and flattens everything else into one dim, "
    "and works for non-contiguous inputs such as x.transpose(1, 2).",
    flatten_batch_reference,
    _flatten_cases(),
    _flatten_verify,
    [
        Mistake("uses .view on a non-contiguous tensor",
                "view() needs compatible strides and fails on a transposed/permuted x; "
                "torch.flatten(x, 1) (or x.reshape(x.size(0), -1)) copies when it has to.",
                _flatten_view, error_match="view size is not compatible"),
        Mistake("flattens the batch dimension too",
                "keep dim 0: torch.flatten(x, start_dim=1).",
                _flatten_all, detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.dim() == 1
                and a[0].shape[0] > 1),
        Mistake("squeeze() drops the batch dim of a batch of one",
                "squeeze() without a dim removes EVERY size-1 dim, the batch dim of a batch of one "
                "included; flatten from dim 1 directly: torch.flatten(x, start_dim=1).",
                _flatten_squeeze, detect=_batch_of_one_lost, error_match="Dimension out of range"),
        Mistake("hard-codes the number of dims",
                "x can have any number of dims: flatten every dim after the first, "
                "torch.flatten(x, 1) or x.reshape(x.size(0), -1), instead of naming x.shape[1], x.shape[2].",
                _flatten_two_dims, error_match="is invalid for input of size",
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.dim() > 2),
        Mistake("changes the dtype",
                "flattening only changes the shape: no .float() (or dtype=...), so a float64 or integer "
                "x keeps its dtype.",
                lambda x: torch.flatten(x, 1).float(),
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.shape == torch.flatten(a[0], 1).shape
                and out.dtype != a[0].dtype),
    ],
))


# --- 01.to_device --------------------------------------------------------------------------


#: What a DataLoader returns for namedtuple samples: default_collate keeps the namedtuple type.
Batch = namedtuple("Batch", ["images", "labels", "names"])


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def to_device_reference(batch: Any, device: torch.device | str) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device_reference(value, device) for key, value in batch.items()}
    if _is_namedtuple(batch):  # its constructor takes one argument per field
        return type(batch)(*(to_device_reference(value, device) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device_reference(value, device) for value in batch)
    return batch


def _to_device_namedtuple_generator(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_namedtuple_generator(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_namedtuple_generator(v, device) for v in batch)
    return batch


def _namedtuple_lost(out: Any, args: tuple, kwargs: dict) -> bool:
    return _is_namedtuple(args[0]) and not _is_namedtuple(out)


def _to_device_top_level(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    return type(batch)(v.to(device) if isinstance(v, torch.Tensor) else v for v in batch)


def _to_device_tensorify(batch, device):
    if isinstance(batch, dict):
        return {k: _to_device_tensorify(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_tensorify(v, device) for v in batch)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, (int, float)):
        return torch.tensor(batch, device=device)
    return batch


def _diff_kind(out: Any, args: tuple) -> str | None:
    found = _structure_diff(out, to_device_reference(args[0], args[1]), args[0])
    return found[0] if found else None


def _non_tensor_changed(out: Any, args: tuple, kwargs: dict) -> bool:
    return _diff_kind(out, args) == "non-tensor"


def _container_changed(out: Any, args: tuple, kwargs: dict) -> bool:
    return _diff_kind(out, args) == "container"


def _dtype_changed(out: Any, args: tuple, kwargs: dict) -> bool:
    return _diff_kind(out, args) == "dtype"


def _non_tensor_copied(out: Any, args: tuple, kwargs: dict) -> bool:
    return _diff_kind(out, args) == "copy"


def _to_device_lists(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_lists(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_to_device_lists(v, device) for v in batch]
    return batch


def _to_device_to_everything(batch, device):
    return batch.to(device)


def _to_device_unassigned(batch, device):
    if isinstance(batch, torch.Tensor):
        batch.to(device)  # returns a moved copy, which is dropped
        return batch
    if isinstance(batch, dict):
        return {k: _to_device_unassigned(v, device) for k, v in batch.items()}
    if _is_namedtuple(batch):
        return type(batch)(*(_to_device_unassigned(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_unassigned(v, device) for v in batch)
    return batch


def _to_device_sequence(batch, device):
    from collections.abc import Sequence

    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_sequence(v, device) for k, v in batch.items()}
    if isinstance(batch, Sequence):  # a str is a Sequence of strs: endless recursion
        return type(batch)([_to_device_sequence(v, device) for v in batch])
    return batch


def _to_device_namedtuple_as_is(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_namedtuple_as_is(v, device) for k, v in batch.items()}
    if _is_namedtuple(batch):
        return batch
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_namedtuple_as_is(v, device) for v in batch)
    return batch


def _to_device_exact_type(batch, device):
    if type(batch) is torch.Tensor:
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_exact_type(v, device) for k, v in batch.items()}
    if _is_namedtuple(batch):
        return type(batch)(*(_to_device_exact_type(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_exact_type(v, device) for v in batch)
    return batch


def _to_device_float32(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, torch.float32)
    if isinstance(batch, dict):
        return {k: _to_device_float32(v, device) for k, v in batch.items()}
    if _is_namedtuple(batch):
        return type(batch)(*(_to_device_float32(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_float32(v, device) for v in batch)
    return batch


def _to_device_deepcopy(batch, device):
    import copy

    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_deepcopy(v, device) for k, v in batch.items()}
    if _is_namedtuple(batch):
        return type(batch)(*(_to_device_deepcopy(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device_deepcopy(v, device) for v in batch)
    return copy.deepcopy(batch)


def _to_device_shares_plain(batch, device):
    if not _leaves(batch):
        return batch          # nothing to move here: the very container comes back
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device_shares_plain(v, device) for k, v in batch.items()}
    if _is_namedtuple(batch):
        return type(batch)(*(_to_device_shares_plain(v, device) for v in batch))
    return type(batch)(_to_device_shares_plain(v, device) for v in batch)


def _leaves(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _leaves(v)]
    return []


def _nothing_moved(out: Any, args: tuple, kwargs: dict) -> bool:
    leaves = _leaves(out)
    device = torch.device(args[1])
    return (_structure_diff(out, to_device_reference(args[0], args[1]), args[0]) is None and bool(leaves)
            and all(t.device != device for t in leaves))


def _pairs(out: Any, inp: Any, path: str = "batch") -> Iterator[tuple[Any, Any, str]]:
    """(output item, input item, path) for every item of a result whose structure matches the input's."""
    yield out, inp, path
    if isinstance(inp, dict) and isinstance(out, dict):
        for key in inp:
            if key in out:
                yield from _pairs(out[key], inp[key], f"{path}[{key!r}]")
    elif isinstance(inp, (list, tuple)) and isinstance(out, (list, tuple)) and not isinstance(inp, torch.Tensor):
        for index, (a, b) in enumerate(zip(out, inp)):
            yield from _pairs(a, b, f"{path}[{index}]")


def _same_container(out: Any, inp: Any) -> str | None:
    """A container of the result that is the very container of the batch (the task: build new containers)."""
    for got, given, path in _pairs(out, inp):
        if isinstance(given, (list, tuple, dict)) and got is given and given != ():
            kind = f"namedtuple ({type(given).__name__})" if _is_namedtuple(given) else type(given).__name__
            return t("{path} is the very {kind} you were given, not a new one: build a new container at every "
                     "level (even one without tensors), so the result shares nothing with the batch",
                     path=path, kind=kind)
    return None


def _namedtuple_returned(out: Any, args: tuple, kwargs: dict) -> bool:
    return any(_is_namedtuple(given) and got is given for got, given, _ in _pairs(out, args[0]))


def _subclass_left(out: Any, args: tuple, kwargs: dict) -> bool:
    return any(isinstance(given, torch.Tensor) and type(given) is not torch.Tensor and got is given
               for got, given, _ in _pairs(out, args[0]))


def _tensor_leaves_on(value: Any, device: torch.device, path: str = "batch") -> str | None:
    if isinstance(value, torch.Tensor):
        kind = t("tensor") if type(value) is torch.Tensor else \
            t("tensor (a {cls}, a tensor subclass)", cls=type(value).__name__)
        return None if value.device == device else t("the {kind} {path} is still on {where}, not on "
                                                     "`device` ({device}): move it with `.to(device)`",
                                                     kind=kind, path=path, where=value.device, device=device)
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _tensor_leaves_on(item, device, f"{path}[{key!r}]")
            if problem:
                return problem
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problem = _tensor_leaves_on(item, device, f"{path}[{index}]")
            if problem:
                return problem
    return None


_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def _structure_diff(out: Any, ref: Any, inp: Any, path: str = "batch") -> tuple[str, str] | None:
    """The first difference between the result and the expected structure, as (kind, sentence).

    ``ref`` is the reference's result, ``inp`` the batch the candidate was given (non-tensors must come
    back as the very objects they were, which only ``inp`` holds)."""
    if isinstance(ref, torch.Tensor):
        if not isinstance(out, torch.Tensor):
            return "tensor", t("{path}: expected a tensor, found {got}", path=path, got=describe(out))
        if out.shape == ref.shape and out.dtype != ref.dtype:
            return "dtype", t("{path}: dtype changed from {want} to {got}; `.to(device)` moves a "
                              "tensor and keeps its dtype", path=path, want=ref.dtype, got=out.dtype)
        if out.shape != ref.shape:
            return "tensor", t("{path}: expected {want}, found {got}", path=path, want=describe(ref), got=describe(out))
        return None
    if isinstance(ref, (list, tuple, dict)):
        if type(out) is not type(ref):
            return "container", t("{path}: expected {want} (the same container type), found {got}", path=path,
                                  want=describe(ref), got=describe(out))
        if isinstance(ref, dict):
            if list(out) != list(ref):
                return "keys", t("{path}: expected keys {want}, found {got}", path=path, want=list(ref), got=list(out))
            for key in ref:
                found = _structure_diff(out[key], ref[key], inp[key], f"{path}[{key!r}]")
                if found:
                    return found
            return None
        if len(out) != len(ref):
            return "length", t("{path}: expected length {want}, found {got}", path=path, want=len(ref), got=len(out))
        for index, (a, b, c) in enumerate(zip(out, ref, inp)):
            found = _structure_diff(a, b, c, f"{path}[{index}]")
            if found:
                return found
        return None
    # a non-tensor: returned exactly as it was
    if out is inp or (isinstance(inp, _PLAIN) and type(out) is type(inp) and out == inp):
        return None
    if type(out) is type(inp) and not isinstance(inp, _PLAIN):
        return "copy", t("{path}: expected the very {cls} you were given, returned exactly as it "
                         "was, found a copy of it", path=path, cls=type(inp).__name__)
    return "non-tensor", t("{path}: expected {want} returned unchanged (only tensors move), "
                           "found {got}", path=path, want=describe(inp), got=describe(out))


def _to_device_verify(out, ref, args, kwargs):
    device = torch.device(args[1])
    found = _structure_diff(out, ref, args[0])
    return (found[1] if found else None) or _tensor_leaves_on(out, device) or _same_container(out, args[0])


class _Image(torch.Tensor):
    """A tensor subclass, like torchvision's tv_tensors.Image: still a torch.Tensor, so it moves too."""


def _to_device_cases():
    # The "meta" device stands in for a GPU: tensors there have shapes but no data,
    # so moving to it works on any machine.
    def tensor():
        return (torch.arange(6.0).reshape(2, 3), "meta"), {}

    def nested():
        batch = {"image": torch.zeros(2, 3, 4, 4), "label": torch.tensor([1, 0]),
                 "meta": {"ids": [torch.tensor([7]), torch.tensor([9])], "name": "batch-0", "size": 2}}
        return (batch, "meta"), {}

    def pair():
        return ((torch.ones(3), (torch.zeros(2), torch.ones(1)), "note", 3.5), torch.device("meta")), {}

    def named():
        batch = Batch(images=torch.zeros(2, 3), labels=[torch.tensor([1]), torch.tensor([0])],
                      names=("a.png", "b.png"))
        return (batch, "meta"), {}

    def mixed():
        # a tensor subclass (like torchvision's tv_tensors.Image), a NumPy array (not a tensor: it stays as it
        # is, the very same object), a list and a tuple without tensors (new containers all the same)
        batch = {"image": torch.zeros(2, 3).as_subclass(_Image), "mask": np.ones((2, 3), dtype=bool),
                 "tags": ["cat", "dog"], "size": (2, 3), "label": torch.tensor([1, 0])}
        return (batch, "meta"), {}

    return [tensor, nested, pair, named, mixed]


register(Exercise(
    "01.to_device",
    "to_device(batch, device) returns the same structure (tensor, or nested tuple/list/dict, "
    "namedtuples included) with every tensor moved to `device` and every non-tensor left exactly as it was.",
    to_device_reference,
    _to_device_cases(),
    _to_device_verify,
    [
        Mistake("moves only the top level",
                "a dict or list can contain more dicts/lists: call to_device recursively on "
                "each item instead of only calling .to() on direct children.",
                _to_device_top_level),
        Mistake("namedtuple not rebuilt field by field",
                "a namedtuple (DataLoader keeps them) must come back as the same namedtuple, and "
                "its constructor takes one argument per field: type(batch)(*items), not "
                "type(batch)(generator) or tuple(...); recognise it with hasattr(batch, '_fields').",
                _to_device_namedtuple_generator, error_match="required positional argument",
                detect=_namedtuple_lost),
        Mistake("namedtuple returned as it was",
                "a namedtuple is a tuple: walk it like the others and rebuild it field by field, "
                "type(batch)(*(to_device(v, device) for v in batch)); returning it as it is leaves its "
                "tensors where they were.",
                _to_device_namedtuple_as_is, detect=_namedtuple_returned),
        Mistake("tensor subclasses not recognised (type(x) is torch.Tensor)",
                "test isinstance(batch, torch.Tensor), not type(batch) is torch.Tensor: tensor subclasses "
                "(torchvision's tv_tensors.Image, nn.Parameter) are tensors too and must move.",
                _to_device_exact_type, detect=_subclass_left),
        Mistake("tensor dtype changed",
                "move tensors with .to(device) alone: .to(device, torch.float32) or .float() also changes "
                "integer labels and float64 data.",
                _to_device_float32, detect=_dtype_changed),
        Mistake("non-tensors copied",
                "return every non-tensor as the very object it was (no copy.deepcopy, no np.copy): only "
                "tensors are replaced by moved ones.",
                _to_device_deepcopy, detect=_non_tensor_copied),
        Mistake("container without tensors returned as it was",
                "build a new container at every level, also for a list, tuple or dict holding no tensor "
                "(type(batch)(...), a new dict); the result must share no container with the batch.",
                _to_device_shares_plain, detect=lambda out, a, k: _same_container(out, a[0]) is not None
                and not _namedtuple_returned(out, a, k)),
        Mistake("strings treated as sequences",
                "a str is a sequence of one-character strs, so recursing into it never ends; test "
                "for list/tuple (or exclude str) before treating something as a container.",
                _to_device_sequence, error_match="maximum recursion depth",
                detect=lambda out, a, k: any(isinstance(given, str) and isinstance(got, str) and got != given
                                             for got, given, _ in _pairs(out, a[0]))),
        Mistake("returns non-tensors changed",
                "strings, numbers and other non-tensors must come back untouched: only call "
                ".to(device) on torch.Tensor values and return anything else as it is.",
                _to_device_tensorify, detect=_non_tensor_changed),
        Mistake("containers changed type (list became tuple or tuple became list)",
                "rebuild each container as the type it was: type(batch)(...) for lists and tuples "
                "(a namedtuple with type(batch)(*items)), a dict for a dict.",
                _to_device_lists, detect=_container_changed),
        Mistake("calls .to() on a container",
                "only tensors have .to(); a tuple, list or dict must be walked: call to_device "
                "recursively on each item and rebuild the container.",
                _to_device_to_everything, error_match="object has no attribute 'to'"),
        Mistake("result of .to() not kept",
                "tensor.to(device) does not move the tensor in place: it returns a moved copy. "
                "Return it (return batch.to(device)) or assign it (batch = batch.to(device)).",
                _to_device_unassigned, detect=_nothing_moved),
    ],
))
