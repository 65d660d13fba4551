"""Blind answers for notebook 10, written from notebooks/10_debugging_and_reproducibility.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    Answer('10.seed_everything', 'ok', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="three seeds, manual_seed returns the generator"),
    Answer('10.seed_everything', 'ok', r'''
        def seed_everything(seed):
            import random
            import os
            os.environ["PYTHONHASHSEED"] = str(seed)
            random.seed(seed)
            np.random.seed(seed % 2**32)
            torch.random.manual_seed(seed)
            generator = torch.Generator()
            generator.manual_seed(seed)
            return generator
    ''', label="PYTHONHASHSEED for children, torch.random.manual_seed"),
    Answer('10.seed_everything', 'ok', r'''
        def seed_everything(seed: int) -> torch.Generator:
            """Seed random, NumPy's global generator and torch; return a fresh seeded Generator."""
            import random
            if not isinstance(seed, int):
                raise TypeError(f"seed must be an int, got {type(seed).__name__}")
            torch.manual_seed(seed)
            np.random.seed(seed)
            random.seed(seed)
            g = torch.Generator(device="cpu")
            g.manual_seed(seed)
            return g
    ''', label="validation, reversed order, explicit cpu generator"),
    Answer('10.seed_everything', 'ok', r'''
        def _seed_libraries(seed):
            import random
            for fn in (random.seed, np.random.seed, torch.manual_seed):
                fn(seed)

        def seed_everything(seed):
            _seed_libraries(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="loop over the seeding functions", name='seed_everything'),
    Answer('10.seed_everything', 'ok', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="also seeds CUDA when present"),
    Answer('10.seed_everything', 'ok', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            gen = torch.Generator()
            gen.set_state(torch.Generator().manual_seed(seed).get_state())
            return gen
    ''', label="copies the state of a seeded generator"),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            np.random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="forgets Python's random", words=('random',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="forgets NumPy", words=('numpy',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="forgets torch's global seed", words=('torch.manual_seed',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            return torch.manual_seed(seed)
    ''', label="returns torch's global generator (what manual_seed returns)", words=('global',)),
    Answer('10.seed_everything', 'fail', r'''
        _GEN = torch.Generator()

        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            return _GEN.manual_seed(seed)
    ''', label="one shared generator object for every call", words=('new',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator()
    ''', label="returns an unseeded generator", words=('seed',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
    ''', label="returns nothing", words=('return', )),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed + 1)
    ''', label="generator seeded with seed + 1", words=('not seeded with', )),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            rng = np.random.default_rng(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="np.random.default_rng(seed) does not seed the global generator", words=('np.random.seed',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            rng = random.Random(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="random.Random(seed) does not seed the module-level random", words=('random.seed',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.cuda.manual_seed_all(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="seeds only CUDA generators", words=('torch.manual_seed',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            g = torch.Generator().manual_seed(seed)
            print("first draw:", torch.randint(0, 10, (1,), generator=g).item())
            return g
    ''', label="draws from the generator before returning it (sanity print)", words=('advanced', )),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            print("check:", torch.rand(1).item())
            return torch.Generator().manual_seed(seed)
    ''', label="draws from torch's global generator after seeding", words=('advanced', )),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(42)
            np.random.seed(42)
            torch.manual_seed(42)
            return torch.Generator().manual_seed(42)
    ''', label="hard-coded 42", words=('hard-coded', )),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.RandomState(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed)
    ''', label="np.random.RandomState(seed) creates a new object, global NumPy unseeded", words=('numpy',)),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            return torch.Generator().manual_seed(seed), seed
    ''', label="returns a tuple", words=('torch.Generator', )),
    Answer('10.seed_everything', 'fail', r'''
        def seed_everything(seed):
            import random
            random.seed(seed)
            np.random.seed(seed)
            g = torch.Generator().manual_seed(seed)
            torch.set_rng_state(g.get_state())
            torch.rand(1)
            return g
    ''', label="copies state into torch then consumes one draw", words=('advanced', )),
    Answer('10.nonfinite_layers', 'ok', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []

            def make_hook(name):
                def hook(module, inputs, output):
                    if not torch.isfinite(output).all():
                        found.append(name)
                return hook

            for name, module in model.named_modules():
                if next(module.children(), None) is None:
                    handles.append(module.register_forward_hook(make_hook(name)))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="closure per name, try/finally"),
    Answer('10.nonfinite_layers', 'ok', r'''
        def nonfinite_layers(model, x):
            import functools
            found = []

            def hook(name, module, inputs, output):
                tensors = output if isinstance(output, (tuple, list)) else (output,)
                if any(torch.is_tensor(t) and not torch.isfinite(t).all() for t in tensors):
                    found.append(name)

            leaves = [(n, m) for n, m in model.named_modules() if len(list(m.children())) == 0]
            handles = [m.register_forward_hook(functools.partial(hook, n)) for n, m in leaves]
            try:
                with torch.no_grad():
                    model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="functools.partial, handles tuple outputs, no_grad"),
    Answer('10.nonfinite_layers', 'ok', r'''
        import contextlib

        def nonfinite_layers(model: nn.Module, x: torch.Tensor) -> list[str]:
            """Leaf modules whose output is not finite, in the order they ran."""
            bad: list[str] = []
            with contextlib.ExitStack() as stack:
                for name, module in model.named_modules():
                    if list(module.children()):
                        continue
                    handle = module.register_forward_hook(
                        lambda m, i, o, name=name: bad.append(name) if (o.isnan() | o.isinf()).any() else None)
                    stack.callback(handle.remove)
                model(x)
            return bad
    ''', label="ExitStack callbacks, isnan | isinf"),
    Answer('10.nonfinite_layers', 'ok', r'''
        class _Watcher:
            def __init__(self):
                self.names = []
                self.handles = []

            def attach(self, model):
                for name, module in model.named_modules():
                    if not module._modules:
                        self.handles.append(module.register_forward_hook(self._hook(name)))

            def _hook(self, name):
                def hook(module, args, output):
                    if (~torch.isfinite(output)).any().item():
                        self.names.append(name)
                return hook

            def detach(self):
                while self.handles:
                    self.handles.pop().remove()

        def nonfinite_layers(model, x):
            watcher = _Watcher()
            watcher.attach(model)
            try:
                model(x)
            finally:
                watcher.detach()
            return list(watcher.names)
    ''', label="a watcher class", name='nonfinite_layers'),
    Answer('10.nonfinite_layers', 'ok', r'''
        def nonfinite_layers(model, x):
            names = {m: n for n, m in model.named_modules()}
            order = []
            handles = []
            try:
                for module in model.modules():
                    if not list(module.children()):
                        handles.append(module.register_forward_hook(
                            lambda m, inp, out: order.append(names[m]) if not bool(torch.isfinite(out).all()) else None))
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return order
    ''', label="module -> name dict, hooks registered inside try"),
    Answer('10.nonfinite_layers', 'ok', r'''
        def nonfinite_layers(model, x):
            found = []
            hooks = []
            for name, module in model.named_modules():
                if sum(1 for _ in module.children()) == 0:
                    def check_output(mod, inputs, output, _name=name):
                        if output.isfinite().logical_not().any():
                            found.append(_name)
                    hooks.append(module.register_forward_hook(check_output))
            try:
                model.forward(x) if False else model(x)
            finally:
                [h.remove() for h in hooks]
            return found
    ''', label="default-argument binding, isfinite().logical_not()"),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                handles.append(module.register_forward_hook(
                    lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="hooks on every module, containers included", words=('leaf', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_children():
                handles.append(module.register_forward_hook(
                    lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="named_children only (nested leaves missed)", words=('leaf',)),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found = []
            for name, module in model.named_modules():
                if not list(module.children()):
                    module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None)
            model(x)
            return found
    ''', label="never removes the hooks", words=('remove',)),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            model(x)
            for h in handles:
                h.remove()
            return found
    ''', label="removes the hooks only when the forward pass succeeds (no finally)", words=('finally',)),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = set(), []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.add(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return sorted(found)
    ''', label="a set, sorted: shared layer listed once and order lost", words=('order they ran', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            order = [n for n, _ in model.named_modules()]
            return sorted(found, key=order.index)
    ''', label="sorted in named_modules order instead of run order", words=('order',)),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if name not in found and not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="lists a shared layer only once", words=('twice', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if torch.isnan(o).any() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="checks NaN only (misses Inf)", words=('inf',)),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if torch.isinf(o).any() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="checks Inf only (misses NaN)", words=('misses nan', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found[:1]
    ''', label="returns only the first name", words=("found ['1']", )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o: found.append(type(m).__name__) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="returns class names instead of module names", words=("found ['Log'", )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not all(torch.isfinite(t).all() for t in i) else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="checks the inputs instead of the output", words=('inputs', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if isinstance(module, (nn.Linear, nn.Conv2d, nn.ReLU, nn.BatchNorm1d, nn.BatchNorm2d)):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="hooks only on a list of known layer types (custom leaves missed)", words=('not hooked', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="runs the model twice", words=("'4', '1'", )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            model.eval()
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_hook(
                        lambda m, i, o, name=name: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="switches the model to eval mode", words=('eval',)),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            for name, module in model.named_modules():
                if not list(module.children()):
                    handles.append(module.register_forward_pre_hook(
                        lambda m, i, name=name: found.append(name) if not all(torch.isfinite(t).all() for t in i) else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="forward pre-hooks (inputs) instead of forward hooks", words=('pre_hook', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            out = model(x)
            return [] if torch.isfinite(out).all() else [list(dict(model.named_modules()))[-1]]
    ''', label="only checks the model's final output", words=('final output', )),
    Answer('10.nonfinite_layers', 'fail', r'''
        def nonfinite_layers(model, x):
            found, handles = [], []
            leaves = [(n, m) for n, m in model.named_modules() if not list(m.children())]
            for name, module in leaves:
                handles.append(module.register_forward_hook(
                    lambda m, i, o: found.append(name) if not torch.isfinite(o).all() else None))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return found
    ''', label="late-binding closure: every hook reports the last name", words=('name=name', )),
    Answer('10.fix_train_step', 'ok', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="canonical"),
    Answer('10.fix_train_step', 'ok', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train(True)
            inputs, targets = batch[0], batch[1]
            model.zero_grad(set_to_none=True)
            logits = model(inputs)
            loss = loss_fn(logits, targets)
            loss.backward()
            optimizer.step()
            return float(loss.detach())
    ''', label="model.zero_grad, indexing the batch"),
    Answer('10.fix_train_step', 'ok', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            x, y = batch
            optimizer.zero_grad(set_to_none=False)
            model.train()
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            optimizer.step()
            return loss.detach().item()
    ''', label="zero_grad(set_to_none=False) first, train() before forward"),
    Answer('10.fix_train_step', 'ok', r'''
        def fix_train_step(model: nn.Module, batch, optimizer: torch.optim.Optimizer, loss_fn) -> float:
            """train mode, fresh gradients, logits to the loss."""
            if not model.training:
                model.train()
            x, y = batch
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="clears p.grad by hand, train() only when needed"),
    Answer('10.fix_train_step', 'ok', r'''
        def _forward_loss(model, x, y, loss_fn):
            return loss_fn(model(x), y)

        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            optimizer.zero_grad()
            loss = _forward_loss(model, *batch, loss_fn)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="helper for the forward and loss", name='fix_train_step'),
    Answer('10.fix_train_step', 'ok', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss.item()
    ''', label="also clears gradients after the step"),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x).softmax(dim=1), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="keeps the softmax", words=('softmax',)),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="no zero_grad", words=('zero_grad',)),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="no model.train()", words=('model.train()', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
            return loss.item()
    ''', label="zero_grad between backward and step", words=('zero_grad',)),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss
    ''', label="returns a tensor", words=('float',)),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            model.train()
            return loss.item()
    ''', label="model.train() only after the step", words=('first', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="ignores loss_fn (hand-written NLL of log_softmax)", words=('loss_fn', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.step()
            return loss.item()
    ''', label="steps twice", words=('twice', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="model.train without parentheses", words=('model.train()', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return loss.item()
    ''', label="adds gradient clipping (changes the update)", words=('clip', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.training = True
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="model.training = True only flips the top module (BatchNorm child stays in eval)", words=('model.train()', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x).sigmoid(), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="sigmoid instead of softmax before the loss", words=('sigmoid', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            y, x = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="unpacks the batch as (y, x)", words=('swapped', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
            return loss.item()
    ''', label="hand-written SGD update instead of optimizer.step()", words=('optimizer.step()', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            loss = loss_fn(model(x), y) * len(y)
            loss.backward()
            optimizer.step()
            return loss.item() / len(y)
    ''', label="scales the loss by the batch size (update too large)", words=('scaled', )),
    Answer('10.fix_train_step', 'fail', r'''
        def fix_train_step(model, batch, optimizer, loss_fn):
            model.train()
            x, y = batch
            optimizer.zero_grad()
            with torch.no_grad():
                logits = model(x)
            loss = loss_fn(logits.requires_grad_(), y)
            loss.backward()
            optimizer.step()
            return loss.item()
    ''', label="forward under no_grad (no gradient reaches the parameters)", words=('torch.no_grad', )),
]
