"""Blind answers for notebook 03, written from notebooks/03_autograd.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 03.accumulated_grads
    Answer("03.accumulated_grads", "ok", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="zero_grad, chunk, divide by k"),
    Answer("03.accumulated_grads", "ok", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            for p in model.parameters():
                p.grad = None
            for xb, yb in zip(torch.tensor_split(x, micro_batches), torch.tensor_split(y, micro_batches)):
                loss = loss_fn(model(xb), yb) * len(xb) / len(x)
                loss.backward()
            return [p.grad for p in model.parameters()]
    ''', label="grad = None by hand, weight by chunk size"),
    Answer("03.accumulated_grads", "ok", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            size = len(x) // micro_batches
            model.zero_grad(set_to_none=False)
            for xb, yb in zip(x.split(size), y.split(size)):
                loss_fn(model(xb), yb).div(micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="split by size, zero_grad(set_to_none=False)"),
    Answer("03.accumulated_grads", "ok", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                loss_fn(model(xb), yb).backward()
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad /= micro_batches
            return [p.grad for p in model.parameters()]
    ''', label="accumulate, then divide the .grad tensors by k"),
    Answer("03.accumulated_grads", "ok", '''
        def accumulated_grads(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor,
                              micro_batches: int) -> list[torch.Tensor]:
            """Sum of micro-batch gradients, each micro-batch loss divided by micro_batches."""
            model.zero_grad(set_to_none=True)
            step = len(x) // micro_batches
            for i in range(micro_batches):
                sl = slice(i * step, (i + 1) * step)
                torch.autograd.backward(loss_fn(model(x[sl]), y[sl]) / micro_batches)
            return [p.grad for p in model.parameters()]
    ''', label="index slices, torch.autograd.backward"),
    Answer("03.accumulated_grads", "ok", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                loss = loss_fn(model(xb), yb) / micro_batches
                loss.backward()
            return [None if p.grad is None else p.grad.clone() for p in model.parameters()]
    ''', label="returns clones"),

    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="no zero_grad: stale gradients added", words=("zero_grad",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                loss_fn(model(xb), yb).backward()
            return [p.grad for p in model.parameters()]
    ''', label="forgets to divide by k", words=("divide",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                model.zero_grad()
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="zero_grad inside the loop (keeps only the last chunk)", words=("zero_grad",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / len(x)).backward()
            return [p.grad for p in model.parameters()]
    ''', label="divides by the batch size instead of k", words=('divide',)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
                break
            return [p.grad for p in model.parameters()]
    ''', label="uses only the first micro-batch", words=('wrong values',)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            for p in model.parameters():
                p.grad.zero_()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="p.grad.zero_() crashes when .grad is None", words=("None",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.split(micro_batches), y.split(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="split(k) makes chunks of size k, not k chunks", words=("split",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            model.zero_grad()
            return [p.grad for p in model.parameters()]
    ''', label="zero_grad after the loop (returns None)", words=("None",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters() if p.grad is not None]
    ''', label="drops the None entries of frozen parameters", words=("None",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            total = sum(loss_fn(model(xb), yb) for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)))
            (total / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="one backward over the summed losses (not per micro-batch)", words=("backward",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            loss_fn(model(x), y).backward()
            return [p.grad for p in model.parameters()]
    ''', label="ignores micro_batches: one full-batch backward", words=("micro",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.grad /= micro_batches
            return [p.grad for p in model.parameters()]
    ''', label="divides twice (k squared)", words=('0.25 times',)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.eval()
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="switches the model to eval and leaves it there", words=("eval",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return list(model.parameters())
    ''', label="returns the parameters, not their gradients", words=('wrong values',)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb in x.chunk(micro_batches):
                (loss_fn(model(xb), y) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="does not split y", words=('must match',)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="gives frozen parameters a zero .grad instead of None", words=("None",)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) * micro_batches).backward()
            return [p.grad for p in model.parameters()]
    ''', label="multiplies by k instead of dividing", words=('16 times',)),
    Answer("03.accumulated_grads", "fail", '''
        def accumulated_grads(model, loss_fn, x, y, micro_batches):
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
    ''', label="forgets return", words=("return",)),

    # ------------------------------------------------------------------ 03.gradient_at
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x):
            leaf = x.detach().clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(f(leaf), leaf)
            return grad
    ''', label="own leaf + autograd.grad"),
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x):
            leaf = x.detach().requires_grad_()
            return torch.autograd.grad(f(leaf), [leaf])[0]
    ''', label="detach (shared memory) + requires_grad_"),
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x: torch.Tensor) -> torch.Tensor:
            """df/dx at x; x itself is left alone."""
            with torch.enable_grad():
                leaf = x.detach().clone()
                leaf.requires_grad = True
                f(leaf).backward()
            return leaf.grad
    ''', label="backward on a private leaf, enable_grad"),
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x):
            return torch.func.grad(f)(x.detach())
    ''', label="torch.func.grad"),
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x):
            return torch.autograd.functional.jacobian(f, x.detach().clone())
    ''', label="autograd.functional.jacobian"),
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x):
            leaf = torch.tensor(x.tolist(), dtype=x.dtype, requires_grad=True)
            (g,) = torch.autograd.grad(f(leaf), leaf)
            return g
    ''', label="new leaf from tolist with x's dtype"),
    Answer("03.gradient_at", "ok", '''
        def gradient_at(f, x):
            leaf = x.clone().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0]
    ''', label="clone (non-leaf when x requires grad) + autograd.grad"),

    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            x.requires_grad_(True)
            f(x).backward()
            return x.grad
    ''', label="backward on x itself", words=("grad",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            was = x.requires_grad
            x.requires_grad_(True)
            x.grad = None
            f(x).backward()
            g = x.grad
            x.grad = None
            x.requires_grad_(was)
            return g
    ''', label="restores requires_grad but wipes an existing .grad", words=(".grad",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            x.requires_grad_(True)
            (g,) = torch.autograd.grad(f(x), x)
            return g
    ''', label="autograd.grad but leaves requires_grad switched on", words=("requires_grad",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.clone().requires_grad_()
            f(leaf).backward()
            return leaf.grad
    ''', label="backward on a clone: non-leaf when x requires grad, x.grad accumulates", words=('non-leaf',)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().float().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0]
    ''', label="float32 leaf (float64 x gets a float32 gradient)", words=("dtype",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().double().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0]
    ''', label="always float64", words=("dtype",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            old = x.grad
            x.grad = None
            x.requires_grad_(True)
            f(x).backward()
            g = x.grad
            x.grad = old
            return g
    ''', label="restores .grad but leaves requires_grad=True", words=("requires_grad",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            if not x.requires_grad:
                x.requires_grad_()
            f(x).backward()
            return x.grad
    ''', label="returns x.grad that already held an old gradient", words=('stale',)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().clone().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)
    ''', label="returns the tuple from autograd.grad", words=("tuple",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            return torch.autograd.grad(f(x), x)[0]
    ''', label="autograd.grad on x without making it require grad", words=("requires_grad",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().clone().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0].sum()
    ''', label="sums the gradient", words=("shape",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().clone().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0].reshape(-1)
    ''', label="flattens the gradient", words=("shape",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().clone().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0].numpy()
    ''', label="returns a NumPy array", words=("tensor",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            was = x.requires_grad
            x.requires_grad_(True)
            f(x).backward()
            x.requires_grad_(was)
            return x.grad
    ''', label="backward on x leaves a .grad on it", words=(".grad",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            leaf = x.detach().clone().requires_grad_()
            y = f(leaf)
            y.backward()
    ''', label="forgets return", words=("return",)),
    Answer("03.gradient_at", "fail", '''
        def gradient_at(f, x):
            x.detach_()
            x.requires_grad_()
            (g,) = torch.autograd.grad(f(x), x)
            x.requires_grad_(False)
            return g
    ''', label="detach_() cuts x out of its graph in place", words=("requires_grad",)),

    # ------------------------------------------------------------------ 03.finite_difference_grad
    Answer("03.finite_difference_grad", "ok", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            flat = grad.view(-1)
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
            return grad
    ''', label="basis vector per element"),
    Answer("03.finite_difference_grad", "ok", '''
        def finite_difference_grad(f, x, eps=1e-6):
            out = []
            for i in range(x.numel()):
                plus = x.detach().clone()
                minus = x.detach().clone()
                plus.view(-1)[i] += eps
                minus.view(-1)[i] -= eps
                out.append((float(f(plus)) - float(f(minus))) / (2 * eps))
            return torch.tensor(out, dtype=torch.float64).reshape(x.shape)
    ''', label="clones, Python floats, tensor at the end"),
    Answer("03.finite_difference_grad", "ok", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.empty_like(x)
            for idx in np.ndindex(*x.shape):
                xp, xm = x.clone(), x.clone()
                xp[idx] += eps
                xm[idx] -= eps
                grad[idx] = (f(xp) - f(xm)) / (2 * eps)
            return grad
    ''', label="np.ndindex over multi-indices"),
    Answer("03.finite_difference_grad", "ok", '''
        def finite_difference_grad(f, x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
            """Central differences, one element at a time; float64 in, float64 out."""
            with torch.no_grad():
                n = x.numel()
                basis = torch.eye(n, dtype=torch.float64) * eps
                flat = x.detach().reshape(-1)
                vals = [(f((flat + basis[i]).reshape(x.shape)) - f((flat - basis[i]).reshape(x.shape))) / (2 * eps)
                        for i in range(n)]
            return torch.stack([torch.as_tensor(v, dtype=torch.float64) for v in vals]).reshape(x.shape)
    ''', label="identity-matrix basis, no_grad"),
    Answer("03.finite_difference_grad", "ok", '''
        def finite_difference_grad(f, x, eps=1e-6):
            work = x.detach().clone()
            flat = work.view(-1)
            grad = torch.zeros(x.numel(), dtype=torch.float64)
            for i in range(flat.numel()):
                orig = flat[i].item()
                flat[i] = orig + eps
                fp = f(work)
                flat[i] = orig - eps
                fm = f(work)
                flat[i] = orig
                grad[i] = (fp - fm) / (2 * eps)
            return grad.view(x.shape)
    ''', label="perturb one copy in place, restore the saved value"),
    Answer("03.finite_difference_grad", "ok", '''
        def finite_difference_grad(f, x, eps=1e-6):
            def partial(i):
                e = torch.zeros(x.numel(), dtype=x.dtype)
                e[i] = eps
                e = e.view(x.shape)
                return (f(x + e) - f(x - e)) / (2 * eps)
            return torch.stack([partial(i) for i in range(x.numel())]).reshape(x.shape).to(torch.float64)
    ''', label="helper per element, stack"),

    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + e) - f(x)) / eps
            return grad
    ''', label="forward difference", words=("central",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + e) - f(x - e)) / eps
            return grad
    ''', label="divides by eps instead of 2 eps", words=("2",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            return torch.full_like(x, ((f(x + eps) - f(x - eps)) / (2 * eps)).item())
    ''', label="perturbs all elements at once", words=('all elements at once',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            with torch.no_grad():
                for i in range(x.numel()):
                    x.view(-1)[i] += eps
                    fp = f(x)
                    x.view(-1)[i] -= 2 * eps
                    fm = f(x)
                    x.view(-1)[i] += eps
                    grad.view(-1)[i] = (fp - fm) / (2 * eps)
            return grad
    ''', label="perturbs x in place, restores by arithmetic (rounding changes x)", words=('changes x in place',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            with torch.no_grad():
                for i in range(x.numel()):
                    x.view(-1)[i] += eps
                    fp = f(x)
                    x.view(-1)[i] -= 2 * eps
                    fm = f(x)
                    grad.view(-1)[i] = (fp - fm) / (2 * eps)
            return grad
    ''', label="perturbs x in place, never restores", words=('changes x in place',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros(x.shape)
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * eps)
            return grad
    ''', label="torch.zeros(shape): float32 result", words=("float64",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            xp = x
            for i in range(x.numel()):
                xp.view(-1)[i] += eps
                fp = f(xp)
                xp.view(-1)[i] -= 2 * eps
                fm = f(xp)
                xp.view(-1)[i] += eps
                grad.view(-1)[i] = (fp - fm) / (2 * eps)
            return grad
    ''', label="xp = x is an alias, not a copy", words=('changes x in place',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = 1e-6
                grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * 1e-6)
            return grad
    ''', label="ignores the eps argument", words=("eps",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros(x.numel(), dtype=torch.float64)
            for i in range(x.numel()):
                e = torch.zeros(x.numel(), dtype=torch.float64)
                e[i] = eps
                grad[i] = (f(x + e.view(x.shape)) - f(x - e.view(x.shape))) / (2 * eps)
            return grad
    ''', label="returns the flat vector, not x's shape", words=("shape",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(len(x)):
                e = torch.zeros_like(x)
                e[i] = eps
                grad[i] = (f(x + e) - f(x - e)) / (2 * eps)
            return grad
    ''', label="x[i] perturbs whole rows of a 2-D x", words=('wrong values',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            leaf = x.detach().clone().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0]
    ''', label="autograd instead of finite differences", words=("finite",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                h = eps * abs(x.view(-1)[i].item())
                e = torch.zeros_like(x)
                e.view(-1)[i] = h
                grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * h)
            return grad
    ''', label="relative step (0 at x_i = 0)", words=('wrong values',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x - e) - f(x + e)) / (2 * eps)
            return grad
    ''', label="sign flipped", words=('wrong values',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            x32 = x.float()
            grad = torch.zeros_like(x32)
            for i in range(x32.numel()):
                e = torch.zeros_like(x32)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x32 + e) - f(x32 - e)) / (2 * eps)
            return grad
    ''', label="computes in float32", words=("float64",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel() - 1):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * eps)
            return grad
    ''', label="off by one: last element never computed", words=('wrong values',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.shape[0]):
                for j in range(x.shape[1]):
                    e = torch.zeros_like(x)
                    e[i, j] = eps
                    grad[i, j] = (f(x + e) - f(x - e)) / (2 * eps)
            return grad
    ''', label="works only for 2-D x", words=('IndexError',)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            out = []
            for i in range(x.numel()):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                out.append(((f(x + e) - f(x - e)) / (2 * eps)).item())
            return out
    ''', label="returns a Python list", words=("tensor",)),
    Answer("03.finite_difference_grad", "fail", '''
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            flat = x.view(-1)
            for i in range(len(x)):
                e = torch.zeros_like(x)
                e.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * eps)
            return grad
    ''', label="range(len(x)) covers only the first len(x) elements of a 2-D x", words=('wrong values',)),
]
