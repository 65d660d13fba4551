"""Blind answers for notebook 00, written from notebooks/00_welcome.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 00.double
    Answer("00.double", "ok", '''
        def double(x):
            return 2 * x
    ''', label="2 * x"),
    Answer("00.double", "ok", '''
        def double(x):
            return x + x
    ''', label="x + x"),
    Answer("00.double", "ok", '''
        def double(x: torch.Tensor) -> torch.Tensor:
            """Return a new tensor, twice x."""
            return torch.mul(x, 2)
    ''', label="torch.mul with docstring"),
    Answer("00.double", "ok", '''
        def double(x):
            out = x.clone()
            out.mul_(2)
            return out
    ''', label="clone then in-place on the copy"),
    Answer("00.double", "ok", '''
        def double(x):
            return x.mul(2)
    ''', label="Tensor.mul (functional)"),
    Answer("00.double", "ok", '''
        def double(x):
            return torch.add(x, x)
    ''', label="torch.add(x, x)"),
    Answer("00.double", "ok", '''
        def double(x):
            out = torch.empty_like(x)
            torch.mul(x, 2, out=out)
            return out
    ''', label="out= into a fresh empty_like"),

    Answer("00.double", "fail", '''
        def double(x):
            x.mul_(2)
            return x
    ''', label="mul_ in place", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            x *= 2
            return x
    ''', label="augmented assignment *= (in place)", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            return x ** 2
    ''', label="squares instead of doubling", words=('wrong values',)),
    Answer("00.double", "fail", '''
        def double(x):
            return x + 2
    ''', label="adds 2 instead of doubling", words=('wrong values',)),
    Answer("00.double", "fail", '''
        def double(x):
            y = 2 * x
    ''', label="forgets return", words=("return",)),
    Answer("00.double", "fail", '''
        def double(x):
            return x
    ''', label="returns x unchanged", words=('wrong values',)),
    Answer("00.double", "fail", '''
        def double(x):
            x.add_(x)
            return x
    ''', label="add_ in place", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            return (2 * x).sum()
    ''', label="sums the result (wrong shape)", words=("shape",)),
    Answer("00.double", "fail", '''
        def double(x):
            return (2 * x).tolist()
    ''', label="returns a Python list", words=("list",)),
    Answer("00.double", "fail", '''
        def double(x):
            return torch.mul(x, 2, out=x)
    ''', label="out=x writes into the input", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            flat = x.view(-1)
            flat.mul_(2)
            return x
    ''', label="in place through a view", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            x[...] = 2 * x
            return x
    ''', label="writes with x[...] = (in place via indexing)", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            x.data = x.data * 2
            return x
    ''', label="rebinds x.data (changes the caller's tensor)", words=("in place",)),
    Answer("00.double", "fail", '''
        def double(x):
            return 2 * x.squeeze()
    ''', label="squeeze() drops size-1 dims", words=("shape",)),
    Answer("00.double", "fail", '''
        def double(x):
            return (2 * x).float()
    ''', label="converts to float32 (dtype changes for float64/int input)", words=("dtype",)),
    Answer("00.double", "fail", '''
        def double(x):
            return 2 * x.flatten()
    ''', label="flattens the result", words=("shape",)),

    # ------------------------------------------------------------------ 00.shrink_until_small
    Answer("00.shrink_until_small", "ok", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="while loop like ShrinkNet"),
    Answer("00.shrink_until_small", "ok", '''
        def shrink_until_small(x, layer, max_steps=10):
            for steps in range(max_steps):
                if x.norm() <= 1:
                    return x, steps
                x = layer(x)
            return x, max_steps
    ''', label="for loop with early return"),
    Answer("00.shrink_until_small", "ok", '''
        def shrink_until_small(x, layer, max_steps=10):
            if max_steps <= 0 or x.norm() <= 1:
                return x, 0
            y, n = shrink_until_small(layer(x), layer, max_steps - 1)
            return y, n + 1
    ''', label="recursive"),
    Answer("00.shrink_until_small", "ok", '''
        def shrink_until_small(x: torch.Tensor, layer: nn.Module, max_steps: int = 10):
            """Apply layer while the norm is above 1, at most max_steps times."""
            applied = 0
            while applied < max_steps and torch.linalg.vector_norm(x).item() > 1.0:
                x = layer(x)
                applied += 1
            return (x, applied)
    ''', label="linalg.vector_norm + item, type hints"),
    Answer("00.shrink_until_small", "ok", '''
        def shrink_until_small(x, layer, max_steps=10):
            import itertools
            for steps in itertools.count():
                if steps == max_steps or float(x.pow(2).sum().sqrt()) <= 1:
                    return x, steps
                x = layer(x)
    ''', label="itertools.count, norm by hand"),
    Answer("00.shrink_until_small", "ok", '''
        def shrink_until_small(x, layer, max_steps=10):
            def too_big(t):
                return bool(t.norm() > 1)
            count = 0
            while too_big(x):
                if count == max_steps:
                    break
                x = layer(x)
                count += 1
            return x, count
    ''', label="helper predicate, break"),

    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() >= 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label=">= 1 instead of > 1 (norm exactly 1 gets shrunk)", words=("norm",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while True:
                x = layer(x)
                steps += 1
                if x.norm() <= 1 or steps >= max_steps:
                    break
            return x, steps
    ''', label="do-while: always applies once (small input not unchanged)", words=("0",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="ignores max_steps (endless for a layer that does not shrink)", words=("max_steps",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps <= max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="steps <= max_steps: one application too many", words=("max_steps",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x
    ''', label="returns only x, not (x, count)", words=("tuple",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return steps, x
    ''', label="returns (count, x) swapped", words=("order",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() < 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="inverted condition (< 1)", words=("norm",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.abs().max() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="largest entry instead of the norm", words=("norm",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.sum() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="sum instead of norm", words=("norm",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                layer(x)
                steps += 1
            return x, steps
    ''', label="calls layer but never reassigns x", words=("layer",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            with torch.no_grad():
                while x.norm() > 1 and steps < max_steps:
                    x = layer(x)
                    steps += 1
            return x, steps
    ''', label="under no_grad: no gradient flows back through the steps", words=("grad",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm(dim=-1).max() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="largest row norm instead of the whole tensor's norm", words=("norm",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < 10:
                x = layer(x)
                steps += 1
            return x, steps
    ''', label="hard-codes 10 instead of max_steps", words=("max_steps",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            if x.norm() > 1:
                x = layer(x)
                steps = 1
            return x, steps
    ''', label="if instead of while (applies at most once)", words=("while",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while steps < max_steps:
                y = layer(x)
                if y.norm() <= 1:
                    break
                x = y
                steps += 1
            return x, steps
    ''', label="looks ahead: stops before the step that makes it small", words=("norm",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1:
                x = layer(x)
                steps += 1
                if steps >= max_steps:
                    break
            if steps == 0 and max_steps == 0:
                pass
            return x, steps
    ''', label="max_steps=0 still applies the layer once", words=("max_steps",)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x.data = layer(x).data
                steps += 1
            return x, steps
    ''', label="overwrites x.data (modifies the caller's tensor)", words=('in place',)),
    Answer("00.shrink_until_small", "fail", '''
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps + 1
    ''', label="count off by one", words=("applications",)),

    # ------------------------------------------------------------------ 00.layer_shapes
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
            return shapes
    ''', label="for loop over the Sequential"),
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model, x):
            return [tuple((x := layer(x)).shape) for layer in model]
    ''', label="comprehension with walrus"),
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model, x):
            shapes = []
            handles = [m.register_forward_hook(lambda m, i, o: shapes.append(tuple(o.shape)))
                       for m in model.children()]
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return shapes
    ''', label="forward hooks on the children, removed in finally"),
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model: nn.Sequential, x: torch.Tensor) -> list[tuple[int, ...]]:
            out = []
            for i in range(len(model)):
                x = model[i](x)
                out.append(tuple(x.size()))
            return out
    ''', label="index loop, x.size()"),
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model, x):
            shapes = []
            with torch.no_grad():
                for _, layer in model.named_children():
                    x = layer(x)
                    shapes.append(tuple(int(s) for s in x.shape))
            return shapes
    ''', label="no_grad, named_children, ints"),
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model, x):
            import functools
            def step(acc, layer):
                shapes, h = acc
                h = layer(h)
                return shapes + [tuple(h.shape)], h
            return functools.reduce(step, model, ([], x))[0]
    ''', label="functools.reduce"),

    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                shapes.append(tuple(x.shape))
                x = layer(x)
            return shapes
    ''', label="records input shapes instead of output shapes", words=("output",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(list(x.shape))
            return shapes
    ''', label="lists instead of tuples", words=("tuple",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            return [tuple(model(x).shape)]
    ''', label="only the final shape", words=("layer",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = [tuple(x.shape)]
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
            return shapes
    ''', label="includes the input shape first", words=('input',)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            return [tuple(layer(x).shape) for layer in model]
    ''', label="feeds the original x to every layer", words=('original x',)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model.modules():
                x = layer(x)
                shapes.append(tuple(x.shape))
            return shapes
    ''', label="model.modules() includes the Sequential itself", words=("modules",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            model.eval()
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
            return shapes
    ''', label="switches the model to eval mode and leaves it there", words=("eval",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for m in model.children():
                m.register_forward_hook(lambda m, i, o: shapes.append(tuple(o.shape)))
            model(x)
            return shapes
    ''', label="hooks never removed", words=("hook",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape[1:]))
            return shapes
    ''', label="drops the batch dim", words=('expected [(2, 5)',)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
    ''', label="forgets return", words=("return",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            out = model(x)
            return [tuple(out.shape)] * len(model)
    ''', label="repeats the final shape for every layer", words=("expected",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for name, m in model.named_modules():
                if name and not list(m.children()):
                    x = m(x)
                    shapes.append(tuple(x.shape))
            return shapes
    ''', label="recurses into nested Sequentials (leaf modules, not the layers)", words=("layer",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
            return tuple(shapes)
    ''', label="returns a tuple of shapes instead of a list", words=("list",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            return {name: tuple((x := layer(x)).shape) for name, layer in model.named_children()}
    ''', label="returns a dict keyed by name", words=("list",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            model.train()
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
            return shapes
    ''', label="calls model.train() (an eval-mode model is left in training mode)", words=("train",)),
    Answer("00.layer_shapes", "fail", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                if list(layer.parameters()):
                    shapes.append(tuple(x.shape))
            return shapes
    ''', label="skips layers without parameters (ReLU, Flatten...)", words=("layer",)),
    Answer("00.layer_shapes", "ok", '''
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(x.shape)
            return shapes
    ''', label="torch.Size (a tuple subclass) instead of tuple()"),
]
