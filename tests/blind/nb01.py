"""Blind answers for notebook 01, written from notebooks/01_tensors.ipynb only."""
from tests.blind import Answer

_RECURSIVE_OK = '''
    def to_device(batch, device):
        if isinstance(batch, torch.Tensor):
            return batch.to(device)
        if isinstance(batch, dict):
            return {k: to_device(v, device) for k, v in batch.items()}
        if isinstance(batch, tuple) and hasattr(batch, "_fields"):
            return type(batch)(*(to_device(v, device) for v in batch))
        if isinstance(batch, tuple):
            return tuple(to_device(v, device) for v in batch)
        if isinstance(batch, list):
            return [to_device(v, device) for v in batch]
        return batch
'''

ANSWERS = [
    # ------------------------------------------------------------------ 01.independent_copy
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr):
            return torch.tensor(arr)
    ''', label="torch.tensor copies"),
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr):
            return torch.from_numpy(arr).clone()
    ''', label="from_numpy(...).clone()"),
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr):
            return torch.from_numpy(arr.copy())
    ''', label="copy the array first"),
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr):
            return torch.as_tensor(arr).clone()
    ''', label="as_tensor(...).clone()"),
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr: np.ndarray) -> torch.Tensor:
            """A tensor with arr's values and dtype, in its own memory."""
            return torch.asarray(arr, copy=True)
    ''', label="torch.asarray(copy=True)"),
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr):
            shared = torch.from_numpy(np.ascontiguousarray(arr))
            out = torch.empty(shared.shape, dtype=shared.dtype)
            out.copy_(shared)
            return out
    ''', label="empty + copy_"),
    Answer("01.independent_copy", "ok", '''
        def independent_copy(arr):
            t = torch.tensor(arr)
            assert not np.shares_memory(arr, t.numpy())
            return t
    ''', label="torch.tensor with a shares_memory assertion"),

    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(arr)
    ''', label="from_numpy shares memory", words=("from_numpy",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.as_tensor(arr)
    ''', label="as_tensor shares memory", words=("memory",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.tensor(arr, dtype=torch.float32)
    ''', label="forces float32", words=("dtype",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(arr).float()
    ''', label=".float(): dtype changes, and float32 input still shares", words=("dtype",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.Tensor(arr)
    ''', label="torch.Tensor constructor (always float32)", words=("dtype",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.tensor(arr.tolist())
    ''', label="via tolist: dtype from Python numbers", words=("dtype",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(arr).detach()
    ''', label="detach() still shares memory", words=("memory",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(arr).contiguous()
    ''', label="contiguous() returns the same tensor when already contiguous", words=("memory",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(np.ascontiguousarray(arr))
    ''', label="ascontiguousarray does not copy a contiguous array", words=("memory",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            t = torch.tensor(arr)
    ''', label="forgets return", words=("return",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return arr.copy()
    ''', label="returns a NumPy array", words=("tensor",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(arr.view())
    ''', label="a NumPy view still shares memory", words=("memory",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.tensor(arr).to(torch.float64)
    ''', label="always float64", words=("dtype",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.tensor(arr.flatten())
    ''', label="flattens the array", words=("shape",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.as_tensor(arr, dtype=torch.float32)
    ''', label="as_tensor float32: shares for float32, converts otherwise", words=("dtype",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.tensor(arr.squeeze())
    ''', label="squeeze drops size-1 dims", words=("shape",)),
    Answer("01.independent_copy", "fail", '''
        def independent_copy(arr):
            return torch.from_numpy(arr).reshape(arr.shape)
    ''', label="reshape to the same shape is a view", words=("memory",)),

    # ------------------------------------------------------------------ 01.flatten_batch
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x):
            return torch.flatten(x, 1)
    ''', label="torch.flatten(x, 1)"),
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x):
            return x.reshape(x.size(0), -1)
    ''', label="reshape(N, -1)"),
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x):
            return x.contiguous().view(x.size(0), -1)
    ''', label="contiguous().view"),
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x):
            return nn.Flatten()(x)
    ''', label="nn.Flatten module"),
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x: torch.Tensor) -> torch.Tensor:
            """(N, *rest) -> (N, prod(rest)), also for non-contiguous x."""
            return x.reshape(x.shape[0], math.prod(x.shape[1:]))
    ''', label="reshape with math.prod (works for N = 0 too)"),
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x):
            return x.flatten(start_dim=1).clone()
    ''', label="flatten then clone"),
    Answer("01.flatten_batch", "ok", '''
        def flatten_batch(x):
            return torch.stack([sample.reshape(-1) for sample in x])
    ''', label="stack of flattened samples"),

    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.view(x.size(0), -1)
    ''', label="view fails on non-contiguous input", words=("contiguous",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.flatten()
    ''', label="flattens the batch dim too", words=("dim 0",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.reshape(-1, x.shape[-1])
    ''', label="keeps the last dim instead of dim 0", words=("dim 0",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.reshape(-1)
    ''', label="reshape(-1)", words=("shape",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return torch.flatten(x, 1).squeeze()
    ''', label="squeeze() collapses a batch of one", words=("squeeze",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.reshape(x.size(0), x.size(1) * x.size(2))
    ''', label="works only for 3-D inputs", words=("shape",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return torch.flatten(x, 2)
    ''', label="start_dim=2", words=("shape",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            dims = list(range(x.dim()))
            return x.permute(0, *reversed(dims[1:])).reshape(x.size(0), -1)
    ''', label="permutes before flattening (element order changes)", words=('wrong values',)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            x.data = x.reshape(x.size(0), -1)
            return x
    ''', label="rebinds x.data (changes the caller's tensor)", words=("in place",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return torch.cat([sample.flatten() for sample in x])
    ''', label="cat instead of stack (1-D result)", words=("shape",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            try:
                return x.view(x.size(0), -1)
            except RuntimeError:
                return x.flatten()
    ''', label="falls back to flattening everything", words=('batch dimension',)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            out = torch.flatten(x, 1)
    ''', label="forgets return", words=("return",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.contiguous().view(-1, x.size(0))
    ''', label="batch size as the last dim", words=("shape",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return torch.flatten(x, 1).float()
    ''', label="converts to float32", words=("dtype",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.numpy().reshape(x.shape[0], -1)
    ''', label="returns a NumPy array", words=("tensor",)),
    Answer("01.flatten_batch", "fail", '''
        def flatten_batch(x):
            return x.transpose(-1, -2).reshape(x.size(0), -1)
    ''', label="transposes the last two dims first", words=('wrong values',)),

    # ------------------------------------------------------------------ 01.to_device
    Answer("01.to_device", "ok", _RECURSIVE_OK, label="isinstance chain, _fields for namedtuples"),
    Answer("01.to_device", "ok", '''
        def to_device(batch, device):
            from torch.utils._pytree import tree_map
            return tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, batch)
    ''', label="torch.utils._pytree.tree_map"),
    Answer("01.to_device", "ok", '''
        def to_device(batch, device):
            match batch:
                case torch.Tensor():
                    return batch.to(device)
                case dict():
                    return {key: to_device(value, device) for key, value in batch.items()}
                case list():
                    return [to_device(item, device) for item in batch]
                case tuple() if hasattr(batch, "_fields"):
                    return batch._replace(**{f: to_device(getattr(batch, f), device) for f in batch._fields})
                case tuple():
                    return tuple(to_device(item, device) for item in batch)
                case _:
                    return batch
    ''', label="match/case with namedtuple._replace"),
    Answer("01.to_device", "ok", '''
        def to_device(batch, device):
            from collections.abc import Mapping, Sequence
            if isinstance(batch, torch.Tensor):
                return batch.to(device=device, non_blocking=True)
            if isinstance(batch, (str, bytes)):
                return batch
            if isinstance(batch, Mapping):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple):
                items = [to_device(v, device) for v in batch]
                return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
            if isinstance(batch, Sequence):
                return [to_device(v, device) for v in batch]
            return batch
    ''', label="collections.abc with a str guard"),
    Answer("01.to_device", "ok", '''
        def _move(obj, device):
            if torch.is_tensor(obj):
                return obj.to(device)
            if isinstance(obj, dict):
                out = {}
                for key in obj:
                    out[key] = _move(obj[key], device)
                return out
            if isinstance(obj, list):
                out = []
                for item in obj:
                    out.append(_move(item, device))
                return out
            if isinstance(obj, tuple):
                moved = [_move(item, device) for item in obj]
                if hasattr(type(obj), "_fields"):
                    return type(obj)(*moved)
                return tuple(moved)
            return obj

        def to_device(batch, device):
            return _move(batch, device)
    ''', label="helper with explicit loops", name="to_device"),
    Answer("01.to_device", "ok", '''
        def to_device(batch, device):
            device = torch.device(device)
            if isinstance(batch, torch.Tensor):
                return batch if batch.device == device else batch.to(device)
            if isinstance(batch, dict):
                return type(batch)((k, to_device(v, device)) for k, v in batch.items())
            if isinstance(batch, (list, tuple)):
                moved = [to_device(v, device) for v in batch]
                if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                    return type(batch)(*moved)
                return type(batch)(moved)
            return batch
    ''', label="keeps container types via type(batch)"),

    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple):
                return tuple(to_device(v, device) for v in batch)
            if isinstance(batch, list):
                return [to_device(v, device) for v in batch]
            return batch
    ''', label="namedtuple comes back as a plain tuple", words=("namedtuple",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="type(batch)(generator) breaks namedtuples", words=("namedtuple",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                for k in batch:
                    batch[k] = to_device(batch[k], device)
                return batch
            if isinstance(batch, list):
                for i in range(len(batch)):
                    batch[i] = to_device(batch[i], device)
                return batch
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, tuple):
                return tuple(to_device(v, device) for v in batch)
            return batch
    ''', label="modifies dicts and lists in place", words=('in place',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
            if isinstance(batch, (list, tuple)):
                moved = [v.to(device) if isinstance(v, torch.Tensor) else v for v in batch]
                if hasattr(batch, "_fields"):
                    return type(batch)(*moved)
                return type(batch)(moved)
            return batch
    ''', label="one level only (no recursion into nested containers)", words=('top level',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return torch.as_tensor(batch).to(device)
    ''', label="turns numbers and strings into tensors", words=('str',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()
                        if isinstance(v, (torch.Tensor, dict, list, tuple))}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch
                                   if isinstance(v, (torch.Tensor, dict, list, tuple)))
            return batch
    ''', label="drops non-tensor entries", words=('expected keys',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, (list, tuple)):
                return [to_device(v, device) for v in batch]
            return batch
    ''', label="every sequence becomes a list", words=("tuple",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.cuda()
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="hard-coded .cuda()", words=('cuda()',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple, dict)):
                return type(batch)(to_device(v, device) for v in batch) if not isinstance(batch, dict) \\
                    else [to_device(v, device) for v in batch]
            return batch
    ''', label="iterates a dict (gets its keys)", words=("dict",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            from collections.abc import Mapping, Sequence
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, Mapping):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, Sequence):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="abc.Sequence without a str guard (recurses into strings)", words=('strings',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                batch.data = batch.data.to(device)
                return batch
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="moves tensors by rebinding .data (changes the caller's tensors)", words=('set_data',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            def has_tensor(obj):
                if isinstance(obj, torch.Tensor):
                    return True
                if isinstance(obj, dict):
                    return any(has_tensor(v) for v in obj.values())
                if isinstance(obj, (list, tuple)):
                    return any(has_tensor(v) for v in obj)
                return False
            if not has_tensor(batch):
                return batch
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="returns tensor-free containers themselves, not new ones", words=("new",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, tuple):
                return tuple(to_device(v, device) for v in batch)
            return batch
    ''', label="forgets lists", words=("list",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            import copy
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return copy.deepcopy(batch)
    ''', label="deep-copies non-tensors instead of returning them as they were", words=("exactly",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, np.ndarray):
                return torch.from_numpy(batch).to(device)
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="converts NumPy arrays to tensors", words=("unchanged",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if type(batch) is torch.Tensor:
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="type(x) is torch.Tensor misses tensor subclasses", words=("tensor",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device, torch.float32)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="also converts to float32 (int labels change dtype)", words=('dtype changed',)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return list(to_device(v, device) for v in batch.values())
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return type(batch)(*(to_device(v, device) for v in batch))
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="dict becomes a list of its values", words=("dict",)),
    Answer("01.to_device", "fail", '''
        def to_device(batch, device):
            if isinstance(batch, torch.Tensor):
                return batch.to(device)
            if isinstance(batch, dict):
                return {k: to_device(v, device) for k, v in batch.items()}
            if isinstance(batch, tuple) and hasattr(batch, "_fields"):
                return batch
            if isinstance(batch, (list, tuple)):
                return type(batch)(to_device(v, device) for v in batch)
            return batch
    ''', label="returns namedtuples untouched", words=('namedtuple',)),
]
