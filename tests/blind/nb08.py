"""Blind answers for notebook 08, written from notebooks/08_amp_and_gpu_memory.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 08.training_memory
    Answer("08.training_memory", "ok", '''
        def training_memory(model, optimizer, dtype):
            size = torch.tensor([], dtype=dtype).element_size()
            all_params = sum(p.numel() for p in model.parameters())
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": all_params * size, "grads": trainable * size,
                    "optimizer_state": copies * trainable * size}
    ''', label="generator sums, copies table"),
    Answer("08.training_memory", "ok", '''
        def training_memory(model, optimizer, dtype):
            nbytes = dtype.itemsize
            params = grads = 0
            for p in model.parameters():
                params += p.numel() * nbytes
                if p.requires_grad:
                    grads += p.numel() * nbytes
            if optimizer == "sgd":
                state = 0
            elif optimizer == "momentum":
                state = grads
            elif optimizer in ("adam", "adamw"):
                state = 2 * grads
            else:
                raise ValueError(f"unknown optimizer {optimizer!r}; expected sgd, momentum, adam or adamw")
            return {"params": params, "grads": grads, "optimizer_state": state}
    ''', label="loop, dtype.itemsize, if/elif with error"),
    Answer("08.training_memory", "ok", '''
        def training_memory(model: nn.Module, optimizer: str, dtype: torch.dtype) -> dict[str, int]:
            """Bytes of parameters, gradients and optimizer state (step counters ignored)."""
            bytes_per = torch.finfo(dtype).bits // 8
            n_all = sum(p.numel() for _, p in model.named_parameters())
            n_train = sum(p.numel() for _, p in model.named_parameters() if p.requires_grad)
            match optimizer:
                case "sgd":
                    k = 0
                case "momentum":
                    k = 1
                case "adam" | "adamw":
                    k = 2
                case _:
                    raise ValueError(optimizer)
            return dict(params=n_all * bytes_per, grads=n_train * bytes_per, optimizer_state=k * n_train * bytes_per)
    ''', label="finfo bits, match statement"),
    Answer("08.training_memory", "ok", '''
        def _count(params):
            return sum(p.numel() for p in params)

        def training_memory(model, optimizer, dtype):
            each = torch.empty(0, dtype=dtype).element_size()
            params = list(model.parameters())
            trainable = [p for p in params if p.requires_grad]
            per_param_state = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}
            return {
                "params": int(_count(params) * each),
                "grads": int(_count(trainable) * each),
                "optimizer_state": int(per_param_state[optimizer.lower()] * _count(trainable) * each),
            }
    ''', label="helper, lists", name="training_memory"),
    Answer("08.training_memory", "ok", '''
        import copy as _copy

        def training_memory(model, optimizer, dtype):
            twin = _copy.deepcopy(model).to(dtype)
            params = sum(p.numel() * p.element_size() for p in twin.parameters())
            grads = sum(p.numel() * p.element_size() for p in twin.parameters() if p.requires_grad)
            moments = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": params, "grads": grads, "optimizer_state": moments * grads}
    ''', label="converts a deep copy to dtype and reads element_size"),
    Answer("08.training_memory", "ok", '''
        def training_memory(model, optimizer, dtype):
            b = torch.zeros((), dtype=dtype).element_size()
            counts = torch.tensor([[p.numel(), int(p.requires_grad)] for p in model.parameters()] or [[0, 0]])
            total = int(counts[:, 0].sum())
            train = int((counts[:, 0] * counts[:, 1]).sum())
            extra = 2 if optimizer.startswith("adam") else (1 if optimizer == "momentum" else 0)
            return {"params": total * b, "grads": train * b, "optimizer_state": extra * train * b}
    ''', label="vectorised counts in a tensor"),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            total = sum(t.numel() for t in model.state_dict().values())
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": total * size, "grads": trainable * size, "optimizer_state": copies * trainable * size}
    ''', label="counts buffers via state_dict", words=('buffer', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n * size, "grads": n * size, "optimizer_state": copies * n * size}
    ''', label="frozen parameters get gradients and state", words=("frozen",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * n * size}
    ''', label="frozen parameters get optimizer state", words=("frozen",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": t * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="leaves frozen parameters out of params", words=("frozen",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 1, "adamw": 1}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="Adam keeps one moment", words=("adam",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 0, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="momentum keeps nothing", words=("momentum",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            n = sum(p.numel() * p.element_size() for p in model.parameters())
            t = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n, "grads": t, "optimizer_state": copies * t}
    ''', label="uses the model's current element size, ignores dtype", words=("dtype",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": 4 * n, "grads": 4 * t, "optimizer_state": 4 * copies * t}
    ''', label="always 4 bytes per element", words=("dtype",)),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            params = list(model.parameters())
            n = sum(p.numel() for p in params)
            t = sum(p.numel() for p in params if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            steps = 4 * sum(p.requires_grad for p in params) if optimizer.startswith("adam") else 0
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size + steps}
    ''', label="counts Adam's step tensors (the task says to ignore them)", words=('step', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n, "grads": t, "optimizer_state": copies * t}
    ''', label="returns element counts, not bytes", words=('element', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n * size / 2**20, "grads": t * size / 2**20, "optimizer_state": copies * t * size / 2**20}
    ''', label="returns MiB floats", words=('MiB', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"parameters": n * size, "gradients": t * size, "optimizer": copies * t * size}
    ''', label="wrong dict keys", words=('expected keys', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="forgets adamw (KeyError)", words=('adamw', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = t = 0
            for module in model.modules():
                for p in module.parameters(recurse=False):
                    n += p.numel()
                    t += p.numel() if p.requires_grad else 0
            for module in model.modules():
                if hasattr(module, "shared"):
                    pass
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="per-module recurse=False counts a shared (tied) parameter twice", words=('counted twice', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = torch.finfo(dtype).bits
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="bits instead of bytes per element", words=('bits', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            size = dtype.itemsize
            n = sum(p.numel() for p in model.parameters())
            t = sum(p.numel() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 1, "momentum": 2, "adam": 3, "adamw": 3}[optimizer]
            return {"params": n * size, "grads": t * size, "optimizer_state": copies * t * size}
    ''', label="one copy too many for every optimizer (counts the gradient as state)", words=('one copy', )),
    Answer("08.training_memory", "fail", '''
        def training_memory(model, optimizer, dtype):
            model.to(dtype)
            n = sum(p.numel() * p.element_size() for p in model.parameters())
            t = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
            copies = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
            return {"params": n, "grads": t, "optimizer_state": copies * t}
    ''', label="converts the caller's model to dtype in place", words=('in place', )),
    # ------------------------------------------------------------------ 08.saved_activation_bytes
    Answer("08.saved_activation_bytes", "ok", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="dict of storage -> nbytes"),
    Answer("08.saved_activation_bytes", "ok", '''
        from torch.autograd.graph import saved_tensors_hooks

        def saved_activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
            """Bytes of the distinct non-parameter storages autograd saves for backward."""
            exclude = set()
            for p in model.parameters():
                exclude.add(p.untyped_storage().data_ptr())
            saved = []

            def pack(t):
                saved.append(t.untyped_storage())
                return t.detach()

            def unpack(t):
                return t

            with saved_tensors_hooks(pack, unpack):
                out = model(x)
            del out
            sizes = {s.data_ptr(): s.nbytes() for s in saved if s.data_ptr() not in exclude}
            return int(sum(sizes.values()))
    ''', label="collects storages, dedups afterwards"),
    Answer("08.saved_activation_bytes", "ok", '''
        class _Meter:
            def __init__(self, model):
                self.skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
                self.sizes = {}

            def pack(self, t):
                s = t.untyped_storage()
                if s.data_ptr() not in self.skip:
                    self.sizes.setdefault(s.data_ptr(), s.nbytes())
                return t.detach()

            @staticmethod
            def unpack(t):
                return t

        def saved_activation_bytes(model, x):
            meter = _Meter(model)
            with torch.autograd.graph.saved_tensors_hooks(meter.pack, meter.unpack):
                model(x)
            return sum(meter.sizes.values())
    ''', label="a meter class with bound methods", name="saved_activation_bytes"),
    Answer("08.saved_activation_bytes", "ok", '''
        def saved_activation_bytes(model, x):
            param_ptrs = frozenset(p.untyped_storage().data_ptr() for p in model.parameters())
            total = 0
            counted = set()

            def pack(t):
                nonlocal total
                storage = t.untyped_storage()
                ptr = storage.data_ptr()
                if ptr not in param_ptrs and ptr not in counted:
                    counted.add(ptr)
                    total += storage.size()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return total
    ''', label="nonlocal running total, untyped_storage().size()"),
    Answer("08.saved_activation_bytes", "ok", '''
        import contextlib

        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            storages = {}

            def pack(t):
                storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
                return t.detach()

            with contextlib.ExitStack() as stack:
                stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
                model(x)
            return sum(n for ptr, n in storages.items() if ptr not in params)
    ''', label="ExitStack, filter params at the end"),
    Answer("08.saved_activation_bytes", "ok", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            records = []

            def pack(t):
                records.append((t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()))
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(dict(r for r in records if r[0] not in params).values())
    ''', label="list of records, dict() dedup"),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            total = 0

            def pack(t):
                nonlocal total
                if t.untyped_storage().data_ptr() not in params:
                    total += t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return total
    ''', label="counts every save (no dedup of storages)", words=('once', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            seen = {}

            def pack(t):
                seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="includes the parameters", words=("parameter",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.numel() * t.element_size()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="numel * element_size of the view instead of the storage", words=("storage",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="pack returns t itself (reference cycle)", words=("detach",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="pack returns None (backward breaks)", words=("backward",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = list(model.parameters())
            seen = {}

            def pack(t):
                if not any(t is p for p in params):
                    seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="excludes parameters by identity (misses the transposed weight view)", words=("parameter",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.no_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="runs the model under no_grad (nothing is saved)", words=("no_grad",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            model.eval()
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="switches the model to eval mode", words=("eval",)),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.data_ptr()
                if t.untyped_storage().data_ptr() not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="dedups by t.data_ptr() (views at an offset counted again)", words=('offset', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values()) / 2**20
    ''', label="returns MiB", words=('MiB', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
            skip.add(x.untyped_storage().data_ptr())
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in skip:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="leaves out the input x", words=('input x', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
            hooks.__enter__()
            model(x)
            return sum(seen.values())
    ''', label="enters the hooks and never leaves them (global state changed)", words=('hook', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params and t.is_floating_point():
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="only floating-point saves (misses int64 pooling indices)", words=('int64', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.numel() * 4
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return sum(seen.values())
    ''', label="assumes 4 bytes per element", words=('4 bytes', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                out = model(x)
            return sum(seen.values()) + out.untyped_storage().nbytes()
    ''', label="adds the output's storage", words=('output', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x)
            return len(seen)
    ''', label="returns the number of storages", words=('number of storages', )),
    Answer("08.saved_activation_bytes", "fail", '''
        def saved_activation_bytes(model, x):
            params = {p.untyped_storage().data_ptr() for p in model.parameters()}
            seen = {}

            def pack(t):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in params:
                    seen[ptr] = t.untyped_storage().nbytes()
                return t.detach()

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                model(x[:1])
            return sum(seen.values())
    ''', label="measures one sample only", words=('whole batch', )),
    # ------------------------------------------------------------------ 08.amp_train_step
    Answer("08.amp_train_step", "ok", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            optimizer.zero_grad()
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="textbook"),
    Answer("08.amp_train_step", "ok", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            dtype = {"cpu": torch.bfloat16, "cuda": torch.float16}[device_type]
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type, dtype=dtype):
                out = model(x)
                loss = loss_fn(out, y)
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
            return float(loss.detach())
    ''', label="dict dtype, explicit unscale_ before step"),
    Answer("08.amp_train_step", "ok", '''
        def amp_train_step(model: nn.Module, x, y, loss_fn, optimizer, scaler, device_type: str) -> float:
            """One AMP step: zero_grad, autocast forward + loss, scaled backward, scaler step + update."""
            if device_type not in ("cpu", "cuda"):
                raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")
            model.zero_grad(set_to_none=True)
            amp_dtype = torch.bfloat16 if device_type == "cpu" else torch.float16
            with torch.autocast(device_type=device_type, dtype=amp_dtype, enabled=True):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.detach().float().item()
    ''', label="model.zero_grad, validation, float() before item"),
    Answer("08.amp_train_step", "ok", '''
        def _autocast_dtype(device_type):
            return torch.float16 if device_type == "cuda" else torch.bfloat16

        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad(set_to_none=False)
            with torch.autocast(device_type=device_type, dtype=_autocast_dtype(device_type)):
                logits = model(x)
                loss = loss_fn(logits, y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            value = loss.item()
            return value
    ''', label="helper for the dtype, zero_grad(set_to_none=False)", name="amp_train_step"),
    Answer("08.amp_train_step", "ok", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            dtype = torch.get_autocast_dtype(device_type)
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return float(loss)
    ''', label="torch.get_autocast_dtype (default per device), grads cleared by hand"),
    Answer("08.amp_train_step", "ok", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            with torch.autocast(device_type=device_type,
                                dtype=torch.bfloat16 if device_type == "cpu" else torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            return loss.item()
    ''', label="also clears the gradients after the step"),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="no zero_grad", words=("zero_grad",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            return loss.item()
    ''', label="zero_grad only after the step (old inf gradients on entry)", words=("zero_grad",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            with torch.autocast(device_type=device_type, dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="float16 on the CPU too", words=("bfloat16",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="bfloat16 on CUDA too", words=("float16",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="hard-codes device_type='cpu'", words=("device_type",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                out = model(x)
            loss = loss_fn(out, y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="loss computed outside autocast", words=('autocast', )),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            loss.backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="backward on the unscaled loss", words=("scale(loss)",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            optimizer.step()
            scaler.update()
            return loss.item()
    ''', label="optimizer.step() instead of scaler.step(optimizer)", words=("scaler.step",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            return loss.item()
    ''', label="forgets scaler.update()", words=("update",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.update()
            scaler.step(optimizer)
            return loss.item()
    ''', label="update before step", words=('before', )),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.step(optimizer)
            scaler.update()
            return scaled.item()
    ''', label="returns the scaled loss", words=('before scaling', )),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.detach()
    ''', label="returns a tensor", words=("float",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="steps twice", words=('already been called', )),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            with torch.cuda.amp.autocast():
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="deprecated torch.cuda.amp.autocast (off on the CPU)", words=("autocast",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype, enabled=device_type == "cuda"):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="autocast enabled only on CUDA", words=("autocast",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            grads_ok = all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
            if grads_ok:
                scaler.step(optimizer)
                scaler.update()
            return loss.item()
    ''', label="skips step AND update on overflow (scale never lowered)", words=("update",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            model.to(dtype)
            loss = loss_fn(model(x.to(dtype)), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="converts the model to 16 bits instead of autocast", words=("autocast",)),
    Answer("08.amp_train_step", "fail", '''
        def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
            optimizer.zero_grad()
            dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            optimizer.step()
            scaler.step(optimizer)
            scaler.update()
            return loss.item()
    ''', label="optimizer.step() and scaler.step() both", words=('optimizer.step()', )),
]
