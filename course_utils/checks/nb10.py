"""Checkers of notebook 10 (debugging and reproducibility), in notebook order: ``10.seed_everything``,
``10.nonfinite_layers``, ``10.fix_train_step``.

``10.seed_everything`` reads the next draw of every global generator right after the candidate ran
(its ``inspect`` calls the candidate once per seed and draws at once). ``10.nonfinite_layers`` runs the
candidate on models with a NaN or an Inf layer, a shared layer that runs twice, one without, and one
that raises midway, and checks that no hook is left behind.
``10.fix_train_step`` compares one step with the reference's on identical inputs; its mistakes are
named by the training doctor (:func:`course_utils.doctor.diagnose`) run on the candidate.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.i18n import N_, t


# --- 10.seed_everything ---------------------------------------------------------------------------
# Seed Python's `random`, NumPy and torch, and return a seeded generator.

def seed_everything_reference(seed: int) -> torch.Generator:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds the CPU generator and every CUDA device's
    return torch.Generator().manual_seed(seed)


def _seed_no_numpy(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def _seed_no_random(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def _seed_no_torch(seed):
    random.seed(seed)
    np.random.seed(seed)
    return torch.Generator().manual_seed(seed)


def _seed_generator_unseeded(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator()


def _seed_fixed(seed):
    return seed_everything_reference(42)


def _seed_global_generator(seed):
    random.seed(seed)
    np.random.seed(seed)
    return torch.manual_seed(seed)  # seeds torch, but returns torch's global generator itself


_SHARED = torch.Generator()


def _seed_reused_generator(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return _SHARED.manual_seed(seed)  # the same object every call


_RNG_NAMES = (N_("Python's `random`"), N_("NumPy's global generator (np.random)"), N_("torch's global generator"))
_SEEDS = (3, 2024, 7)
#: seed -> (the next draw of each global generator right after the candidate returned, its output).
#: Filled by ``inspect``, which calls the candidate itself once per seed: that is the one place that
#: sees the generators before any other code (the reference, the framework) touches them.
_AFTER_CANDIDATE: dict[int, tuple[tuple[float, float, float], Any]] = {}


def _global_draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def _expected_draws(seed: int) -> tuple[float, float, float]:
    return (random.Random(seed).random(), float(np.random.RandomState(seed).rand()),
            float(torch.rand(1, generator=torch.Generator().manual_seed(seed))))


def _scramble(seed: int) -> None:
    """Seed every global generator with something else first (an earlier run may have used `seed`)."""
    random.seed(10_000 + seed)
    np.random.seed(10_000 + seed)
    torch.manual_seed(10_000 + seed)


def _seed_case(seed: int):
    def make():
        _scramble(seed)
        return (seed,), {}
    return make


def _seed_watch(candidate: Any) -> None:
    from course_utils.exercises import time_limit

    _AFTER_CANDIDATE.clear()
    for seed in _SEEDS:
        _scramble(seed)
        try:
            with time_limit(3.0):
                out = candidate(seed)
        except BaseException:  # noqa: BLE001 - the normal run reports it
            return None
        _AFTER_CANDIDATE[seed] = (_global_draws(), out)
    return None


def _seed_verify(out, ref, args, kwargs):
    (seed,) = args
    if not isinstance(out, torch.Generator):
        return t("expected seed_everything to return a torch.Generator (for DataLoader(generator=...)), "
                 "found {got}", got=describe(out))
    if out is torch.default_generator:
        return t("you returned torch's global generator (torch.manual_seed(seed) returns it): a DataLoader "
                 "given it shares its stream with dropout and every other draw; return a new one, "
                 "torch.Generator().manual_seed(seed)")
    outputs = [o for _, o in _AFTER_CANDIDATE.values()]
    if any(a is b for i, a in enumerate(outputs) for b in outputs[i + 1:]):
        return t("two calls returned the same generator object: each call must return a NEW "
                 "torch.Generator().manual_seed(seed), or two loaders would share one stream")
    got, expected = _AFTER_CANDIDATE.get(seed, (None, None))[0], _expected_draws(seed)
    for index, (name, value, wanted) in enumerate(zip(_RNG_NAMES, got or (), expected)):
        skipped = _advanced_by(seed, index, value)
        if value != wanted and skipped:
            return t("after seed_everything({seed}) the next number from {name} is draw number {number} "
                     "after seeding with {seed}: the generator was seeded, then advanced by {skipped} draw(s) "
                     "inside your function; draw nothing after seeding",
                     seed=seed, name=t(name), number=skipped + 1, skipped=skipped)
        if value != wanted:
            return t("after seed_everything({seed}) the next number from {name} should be {wanted:.6f} "
                     "(the first draw after seeding with {seed}); it was not seeded with `seed`",
                     seed=seed, name=t(name), wanted=wanted)
    if float(torch.rand(1, generator=out)) != expected[2]:
        if out.initial_seed() != seed and out.initial_seed() != torch.Generator().initial_seed():
            return t("the returned generator is not seeded with `seed` ({seed}): its seed is {found}; "
                     "return torch.Generator().manual_seed(seed)", seed=seed, found=out.initial_seed())
        if out.initial_seed() == seed:
            return t("the returned generator was seeded with {seed} but then advanced: something drew from it "
                     "before it was returned, so the loader would not start at the first draw after seeding",
                     seed=seed)
        return t("the returned generator is not seeded: call .manual_seed({seed}) on it", seed=seed)
    return None


def _advanced_by(seed: int, index: int, value: float) -> int:
    """How many draws generator ``index`` (random, numpy, torch) made after being seeded (0: none or unknown)."""
    if index == 0:
        gen = random.Random(seed)
        draws = [gen.random() for _ in range(4)]
    elif index == 1:
        state = np.random.RandomState(seed)
        draws = [float(state.rand()) for _ in range(4)]
    else:
        gen = torch.Generator().manual_seed(seed)
        draws = [float(torch.rand(1, generator=gen)) for _ in range(4)]
    return next((k for k in range(1, 4) if draws[k] == value), 0)


def _first_unseeded(args: tuple) -> int | None:
    """Index (random, numpy, torch) of the first global generator the candidate left unseeded."""
    got = _AFTER_CANDIDATE.get(args[0], (None,))[0]
    if got is None:
        return None
    return next((i for i, (v, w) in enumerate(zip(got, _expected_draws(args[0]))) if v != w), None)


def _unseeded(index: int):
    def detect(out, args, kwargs) -> bool:
        if _fixed_seed(out, args, kwargs) or _first_unseeded(args) != index:
            return False
        return not _advanced_by(args[0], index, _AFTER_CANDIDATE[args[0]][0][index])
    return detect


def _shared_generator(out, args, kwargs) -> bool:
    outputs = [o for _, o in _AFTER_CANDIDATE.values()]
    return any(a is b for i, a in enumerate(outputs) for b in outputs[i + 1:])


def _fixed_seed(out, args, kwargs) -> bool:
    got = _AFTER_CANDIDATE.get(args[0], (None,))[0]
    return got is not None and any(got == _expected_draws(s) for s in (0, 1, 42, 123, 1234, 2024) if s != args[0])


register(Exercise(
    "10.seed_everything",
    "seed_everything(seed) seeds Python's `random`, NumPy's global generator and torch (CPU and CUDA) "
    "with `seed`, and returns a new torch.Generator seeded with `seed` to pass to "
    "DataLoader(generator=...).",
    seed_everything_reference,
    [_seed_case(s) for s in _SEEDS],
    _seed_verify,
    [
        Mistake("global generator returned instead of a fresh seeded one",
                "torch.manual_seed(seed) returns torch's global generator; the loader needs its own: "
                "return torch.Generator().manual_seed(seed), a new one on every call.",
                _seed_global_generator,
                detect=lambda out, a, k: out is torch.default_generator),
        Mistake("hard-coded seed instead of the argument",
                "use the `seed` parameter everywhere (random.seed(seed), ...), not a constant.",
                _seed_fixed, detect=_fixed_seed),
        Mistake("same generator object returned by every call",
                "build the generator inside the function: `return torch.Generator().manual_seed(seed)`; "
                "one shared object would tie every loader's shuffling together.",
                _seed_reused_generator, detect=_shared_generator),
        Mistake("python `random` not seeded",
                "the standard library has its own generator (used by random.shuffle, many augmentations): "
                "add random.seed(seed).",
                _seed_no_random, detect=_unseeded(0)),
        Mistake("numpy not seeded",
                "NumPy's global generator is separate from torch's: add np.random.seed(seed) "
                "(np.random.default_rng(seed) makes a new generator and leaves the global one alone).",
                _seed_no_numpy, detect=_unseeded(1)),
        Mistake("torch not seeded",
                "torch.manual_seed(seed) seeds torch's CPU generator and every GPU's.",
                _seed_no_torch, detect=_unseeded(2)),
        Mistake("returned generator not seeded",
                "torch.Generator() starts from a fixed default seed, not yours: return "
                "torch.Generator().manual_seed(seed).",
                _seed_generator_unseeded,
                detect=lambda out, a, k: isinstance(out, torch.Generator) and _first_unseeded(a) is None
                and out.initial_seed() == torch.Generator().initial_seed() != a[0]),
    ],
    inspect=_seed_watch,
))


# --- 10.nonfinite_layers --------------------------------------------------------------------------
# Find the leaf modules whose output has NaN or Inf, with forward hooks.

def nonfinite_layers_reference(model: nn.Module, x: torch.Tensor) -> list[str]:
    found: list[str] = []

    def make_hook(name: str):
        def hook(module, inputs, output):
            if isinstance(output, torch.Tensor) and not torch.isfinite(output).all():
                found.append(name)
        return hook

    leaves = [(name, m) for name, m in model.named_modules() if not list(m.children())]
    handles = [m.register_forward_hook(make_hook(name)) for name, m in leaves]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return found


def _nonfinite_hooks_left(model, x):
    found = []
    for name, m in model.named_modules():
        if not list(m.children()):
            m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                    if not torch.isfinite(o).all() else None)
    with torch.no_grad():
        model(x)
    return found


def _nonfinite_nan_only(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if torch.isnan(o).any() else None)
               for name, m in model.named_modules() if not list(m.children())]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


def _nonfinite_registration_order(model, x):
    bad = set(nonfinite_layers_reference(model, x))
    return [name for name, m in model.named_modules() if name in bad]


def _nonfinite_all_modules(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if not torch.isfinite(o).all() else None)
               for name, m in model.named_modules()]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


class Log(nn.Module):
    """log(x): NaN for negative inputs, -inf at 0 (the kind of layer that breaks training)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class Exp(nn.Module):
    """exp(x): overflows to inf in float32 above about 88."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


class _OutOfOrder(nn.Module):
    """Registers `head` before `body` but runs body first: execution order != registration order."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 2)
        self.scale = Exp()
        self.body = nn.Sequential(nn.Linear(3, 4), Exp())  # a nested leaf overflows first: body.1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.scale(self.body(x)))


class _SharedExp(nn.Module):
    """One Exp module used twice in forward (a shared layer): it overflows both times."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(3, 4)
        self.act = Exp()
        self.second = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.act(self.second(self.act(self.first(x)))))


class _Boom(nn.Module):
    """A layer with a bug: it raises, as a shape mismatch would, in the middle of the forward pass."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("this layer failed (a bug in the model)")


def _nonfinite_cases():
    def log_chain():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), Log(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        return (model, torch.randn(5, 3, generator=torch.Generator().manual_seed(1))), {}

    def overflow():
        torch.manual_seed(1)
        model = _OutOfOrder()
        with torch.no_grad():
            model.body[0].weight.fill_(30.0)
        return (model, torch.full((2, 3), 2.0)), {}

    def shared():
        torch.manual_seed(4)
        model = _SharedExp()
        with torch.no_grad():
            model.first.weight.fill_(40.0)
        return (model, torch.full((2, 3), 1.0)), {}

    def finite():
        torch.manual_seed(2)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        model._then_raising = True  # verify also runs the candidate on a model that raises midway
        return (model, torch.randn(4, 3, generator=torch.Generator().manual_seed(3))), {}

    return [log_chain, overflow, shared, finite]


def _hooks_left_after_raise() -> bool:
    """Run the candidate on a model whose middle layer raises; True when hooks stayed behind."""
    from course_utils.exercises import time_limit

    candidate = _CANDIDATE.get("nonfinite")
    if candidate is None:
        return False
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(3, 4), _Boom(), nn.Linear(4, 1))
    try:
        with time_limit(3.0):
            candidate(model, torch.ones(2, 3))
    except BaseException:  # noqa: BLE001 - raising is expected here; only the hooks matter
        pass
    left = any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    _CANDIDATE["raise_left_hooks"] = left
    return left


def _nonfinite_verify(out, ref, args, kwargs):
    model = args[0]
    if any(m._forward_hooks for m in model.modules()):
        return t("your hooks are still registered on the model after the function returned")
    if not isinstance(out, list) or not all(isinstance(n, str) for n in out):
        return t("expected a list of module names (str), found {got}", got=describe(out))
    if out != ref:
        if sorted(set(out)) == sorted(set(ref)) and len(out) < len(ref):
            twice = ", ".join(f"`{n}`" for n in dict.fromkeys(ref) if ref.count(n) > out.count(n))
            return t("expected {ref}, found {out}: a module that runs twice (here {twice}) is listed each "
                     "time its output is non-finite, in the order the calls ran", ref=ref, out=out, twice=twice)
        containers = [n for n in dict.fromkeys(out) if n not in ref
                      and any(name == n and list(m.children()) for name, m in model.named_modules())]
        if containers:
            shown = ", ".join(t("the whole model ('')") if n == "" else f"`{n}`" for n in containers)
            return t("expected {ref}, found {out}: {shown} has children, it is not a leaf module. Hook only "
                     "the modules of model.named_modules() with no children (`not list(m.children())`)",
                     ref=ref, out=out, shown=shown)
        named = _nonfinite_mistake(out, ref, args)
        if named:
            return t("expected {ref}, found {out}: {named}", ref=ref, out=out, named=named)
        return t("expected {ref} (leaf modules whose output has NaN or Inf, in the order they ran), found {out}",
                 ref=ref, out=out)
    if getattr(model, "_then_raising", False) and _hooks_left_after_raise():
        return t("when the forward pass raised (a model with a bug in a middle layer), your hooks stayed "
                 "registered on its modules: remove them in a `finally:` block")
    return None


def _names_with(model: nn.Module, x: torch.Tensor, bad: Callable[[Any, Any], bool],
                leaf: Callable[[nn.Module], bool] = lambda m: not list(m.children())) -> list[str]:
    """The names a hook that reports when ``bad(inputs, output)`` would list (hooks removed afterwards)."""
    found: list[str] = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name) if bad(i, o) else None)
               for name, m in model.named_modules() if leaf(m)]
    try:
        with torch.no_grad():
            model(x)
    except Exception:  # noqa: BLE001 - a fingerprint only
        return []
    finally:
        for handle in handles:
            handle.remove()
    return found


def _inputs_checked(out: Any, model: nn.Module, x: torch.Tensor) -> bool:
    return out == _names_with(model, x, lambda i, o: not all(torch.isfinite(t).all() for t in i
                                                           if isinstance(t, torch.Tensor)))


def _custom_skipped(out: Any, ref: list, model: nn.Module) -> bool:
    modules = dict(model.named_modules())
    custom = [n for n in ref if not type(modules[n]).__module__.startswith("torch.nn")]
    return bool(custom) and out == [n for n in ref if n not in custom]


def _nonfinite_mistake(out: list, ref: list, args: tuple) -> str | None:
    """Name the usual wrong ways of finding the layers, when the output is what that way gives."""
    model, x = args
    leaves = [name for name, m in model.named_modules() if not list(m.children())]
    if ref and len(out) == len(ref) and set(out) == {leaves[-1]} and len(set(ref)) > 1:
        return t("every entry is the last leaf's name `{leaf}`: a lambda defined in a loop reads `name` "
                 "when it runs, after the loop has ended; bind it when the hook is made: "
                 "`lambda m, i, o, name=name: ...`", leaf=leaves[-1])
    if out == _names_with(model, x, lambda i, o: bool(torch.isinf(o).any())):
        return t("the NaN outputs are missing: torch.isinf misses NaN; test `not torch.isfinite(output).all()`, "
                 "which catches both")
    inputs, custom = _inputs_checked(out, model, x), _custom_skipped(out, ref, model)
    if inputs and custom:  # the same list here: ask the candidate about a model where they differ
        candidate = _CANDIDATE.get("nonfinite")
        (other, other_x), _ = _nonfinite_cases()[1]()
        try:
            with torch.no_grad():
                found = candidate(other, other_x)
        except Exception:  # noqa: BLE001 - a fingerprint only
            found = None
        other_ref = nonfinite_layers_reference(*_nonfinite_cases()[1]()[0])
        inputs, custom = _inputs_checked(found, other, other_x), _custom_skipped(found, other_ref, other)
    if inputs and not custom:
        return t("you reported the modules whose inputs are non-finite, not their output: a forward pre-hook "
                 "(register_forward_pre_hook) sees only the inputs; use register_forward_hook and test its third "
                 "argument, the output")
    if custom and not inputs:
        kinds = {type(m).__name__ for name, m in model.named_modules()
                 if not list(m.children()) and not type(m).__module__.startswith("torch.nn")}
        return t("the leaves of other classes ({kinds}) were not hooked: hook every leaf module "
                 "(`not list(m.children())`), whatever its type", kinds=", ".join(sorted(kinds)))
    if len(ref) > 1 and out == ref[-1:]:
        return t("only the last module is listed: looking at the model's final output cannot tell where the "
                 "NaN/Inf appeared; hook every leaf module and record each one whose output is non-finite")
    return None


def _nonfinite_remember(candidate: Any) -> None:
    _CANDIDATE["nonfinite"] = candidate
    _CANDIDATE["raise_left_hooks"] = False
    return None


def _nonfinite_no_finally(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if not torch.isfinite(o).all() else None)
               for name, m in model.named_modules() if not list(m.children())]
    with torch.no_grad():
        model(x)
    for h in handles:  # never reached when model(x) raises
        h.remove()
    return found


def _nonfinite_once_each(model, x):
    return list(dict.fromkeys(nonfinite_layers_reference(model, x)))


register(Exercise(
    "10.nonfinite_layers",
    "nonfinite_layers(model, x) runs model(x) once with forward hooks on every leaf module and returns "
    "the names (from named_modules) of the modules whose output contains NaN or Inf, in the order they "
    "ran (a module that runs twice, such as a shared layer, is listed each time its output is "
    "non-finite); the hooks are removed afterwards, even when the forward pass raises.",
    nonfinite_layers_reference,
    _nonfinite_cases(),
    _nonfinite_verify,
    [
        Mistake("hooks not removed",
                "register_forward_hook returns a handle: keep them and call handle.remove() in a "
                "`finally:` block, or every later forward pass keeps running your hook.",
                _nonfinite_hooks_left,
                detect=lambda out, a, k: any(m._forward_hooks for m in a[0].modules())),
        Mistake("hooks removed without `finally`",
                "if model(x) raises, the lines after it never run: put the handle.remove() loop in "
                "`try: ... finally:` so the hooks go even when the forward pass fails.",
                _nonfinite_no_finally, detect=lambda out, a, k: _CANDIDATE.get("raise_left_hooks", False)),
        Mistake("a module that runs twice listed once",
                "append the name every time the hook sees a non-finite output (no `if name not in "
                "found`): a shared layer that runs twice is two places to look.",
                _nonfinite_once_each,
                detect=lambda out, a, k: isinstance(out, list) and out == _nonfinite_once_each(*a)
                != nonfinite_layers_reference(*a)),
        Mistake("checks only NaN, misses Inf",
                "exp overflow and division by zero give inf, not nan: test ~torch.isfinite(out).all().",
                _nonfinite_nan_only),
        Mistake("reports registration order instead of execution order",
                "append the name inside the hook, as the modules run; named_modules() lists them in the "
                "order __init__ created them, which forward() need not follow.",
                _nonfinite_registration_order),
        Mistake("hooks on container modules too",
                "only leaf modules (no children): a Sequential's output is its last layer's output, so it "
                "would be reported twice; keep modules with `not list(m.children())`.",
                _nonfinite_all_modules),
    ],
    inspect=_nonfinite_remember,
))


# --- 10.fix_train_step ----------------------------------------------------------------------------
# Fix the broken training step from the training doctor's report.

def fix_train_step_reference(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer,
                             loss_fn: Any) -> float:
    x, y = batch
    model.train()                       # EVAL_MODE_LEFT_ON
    optimizer.zero_grad()               # ZERO_GRAD_MISSING
    loss = loss_fn(model(x), y)         # SOFTMAX_BEFORE_CE: logits straight into the loss
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_no_zero_grad(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_softmax(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(x).softmax(dim=1), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_no_train(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_zero_after_backward(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()


def _step_zero_by_hand(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    for p in model.parameters():
        p.grad.zero_()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_swapped(model, batch, optimizer, loss_fn):
    y, x = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_tensor(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def fix_train_step_inputs(seed: int, stale: bool = True,
                          summed: bool = False) -> tuple[nn.Module, tuple, torch.optim.Optimizer, nn.Module]:
    """A small classifier in eval mode with stale gradients (as the notebook's broken program leaves it);
    ``stale=False``: no gradients yet (``.grad`` is None, as after ``zero_grad()``); ``summed``: another loss
    function, a summed, label-smoothed cross-entropy (its gradients are far longer than 1)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(32, 6, generator=gen)
        y = (x[:, :4] * 3).argmax(dim=1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        if stale:
            nn.functional.cross_entropy(model(x + 1), y).backward()   # last step's gradients, never cleared
    model.eval()                                                   # left over from a validation pass
    loss_fn = nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1) if summed else nn.CrossEntropyLoss()
    return model, (x, y), optimizer, loss_fn


#: id(model) of a case -> how many gradients reached its parameters during the call
_GRADS_ARRIVED: dict[int, int] = {}


def _fix_case(seed: int, stale: bool = True, summed: bool = False):
    def make():
        model, batch, optimizer, loss_fn = fix_train_step_inputs(seed, stale, summed)
        model._case_seed = (seed, stale, summed)  # lets verify rebuild identical inputs for the reference
        key = id(model)
        _GRADS_ARRIVED[key] = 0

        def arrived(_: torch.Tensor) -> None:
            _GRADS_ARRIVED[key] = _GRADS_ARRIVED.get(key, 0) + 1
        for param in model.parameters():
            param.register_post_accumulate_grad_hook(arrived)
        return (model, batch, optimizer, loss_fn), {}
    return make


def _variant_step(case_seed: tuple, *, steps: int = 1, clip: float | None = None, scale: bool = False,
                  sigmoid: bool = False) -> tuple[float, nn.Module]:
    """The reference step with one habit changed, on fresh inputs: (returned loss, model after it)."""
    model, (x, y), optimizer, loss_fn = fix_train_step_inputs(*case_seed)
    model.train()
    optimizer.zero_grad()
    out = model(x)
    loss = loss_fn(out.sigmoid() if sigmoid else out, y)
    (loss * len(y) if scale else loss).backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    for _ in range(steps):
        optimizer.step()
    return loss.item(), model


def _largest(model: nn.Module, other: nn.Module) -> float:
    with torch.no_grad():
        return max(float((p - q).abs().max()) for p, q in zip(model.parameters(), other.parameters()))


def _fix_verify(out, ref, args, kwargs):
    if isinstance(out, torch.Tensor) or not isinstance(out, (int, float)):
        return t("expected the loss as a Python float (loss.item()), found {got}", got=describe(out))
    model, optimizer, loss_fn = args[0], args[2], args[3]
    if abs(out - ref) > 1e-5 * max(1.0, abs(ref)):
        if abs(out - _variant_step(model._case_seed, sigmoid=True)[0]) <= 1e-5 * max(1.0, abs(ref)):
            return t("returned loss {out:.4f}, expected {ref:.4f}: a sigmoid was applied before the loss; "
                     "CrossEntropyLoss takes the raw logits", out=out, ref=ref)
        return t("returned loss {out:.4f}, expected {ref:.4f}: loss_fn(model(x), y) on this batch before the "
                 "update, with the loss_fn you are given (here {loss_fn})", out=out, ref=ref, loss_fn=repr(loss_fn))
    if _GRADS_ARRIVED.get(id(model), 1) == 0:
        return t("no gradient reached the parameters during your step, so the update used none: is "
                 "loss.backward() called, and does the loss come from a graph through the parameters (a forward "
                 "pass under torch.no_grad(), or a detached output, builds none)?")
    expected_model, batch, optimizer_ref, loss_fn_ref = fix_train_step_inputs(*model._case_seed)
    fix_train_step_reference(expected_model, batch, optimizer_ref, loss_fn_ref)
    diff = _largest(model, expected_model)
    if diff > 1e-5:
        if _largest(model, _variant_step(model._case_seed, steps=2)[1]) <= 1e-6:
            return t("optimizer.step() ran twice: the update was applied twice; step once per batch")
        if _largest(model, _variant_step(model._case_seed, scale=True)[1]) <= 1e-6:
            return t("the update is len(y) times too large: backward() ran on a loss scaled by the batch size; "
                     "call backward() on loss_fn(model(x), y) itself")
        if _largest(model, _variant_step(model._case_seed, clip=1.0)[1]) <= 1e-6:
            return t("your update was clipped to gradient norm 1.0: the broken step has no clipping, and the task "
                     "is to fix its three problems without changing the update")
        return t("after one step the parameters differ from the expected ones (largest difference {diff:.3g})",
                 diff=diff)
    if not optimizer.state:
        return t("the parameters were updated by hand, not by optimizer.step(): the optimizer's state (SGD's "
                 "momentum buffers) never started, so the next steps would differ; call optimizer.step()")
    return None


def _step_zero_at_end(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()  # too late for the gradients the model arrived with
    return loss.item()


def _right_without_stale_grads(out, args, kwargs) -> bool:
    """Wrong on this case (stale .grad), right on the same case without old gradients."""
    seed, stale, summed = args[0]._case_seed
    candidate = _CANDIDATE.get("fn")
    if not stale or candidate is None:
        return False
    mine = fix_train_step_inputs(seed, False, summed)
    expected = fix_train_step_inputs(seed, False, summed)
    try:
        candidate(*mine)
    except Exception:
        return False
    fix_train_step_reference(*expected)
    return all(torch.allclose(p, q, atol=1e-6) for p, q in zip(mine[0].parameters(), expected[0].parameters()))


def _doctor_says(code: str):
    def detect(out, args, kwargs) -> bool:
        from course_utils.doctor import diagnose

        model, batch, optimizer, loss_fn = fix_train_step_inputs(*args[0]._case_seed)
        candidate = _CANDIDATE.get("fn")
        if candidate is None or not isinstance(out, (int, float)):
            return False  # wrong return types are reported by verify, not blamed on a training bug
        if _GRADS_ARRIVED.get(id(args[0]), 1) == 0 and code == "NO_GRAD_FLOW":
            return False  # no gradient was ever computed: not gradients cleared between backward and step
        return code in diagnose(model, loss_fn, optimizer, batch, train_step=candidate, max_steps=3).codes
    return detect


#: The candidate under check, so the mistake detectors can hand it to the training doctor.
_CANDIDATE: dict[str, Any] = {}


def _remember(candidate: Any) -> None:
    _CANDIDATE["fn"] = candidate
    return None


register(Exercise(
    "10.fix_train_step",
    "fix_train_step(model, batch, optimizer, loss_fn) does one correct training step on batch = (x, y) "
    "and returns the loss as a Python float: the broken step with the three problems of the doctor's "
    "report fixed. The model arrives in eval mode, with last step's gradients in .grad or none at all.",
    fix_train_step_reference,
    # case 4: another loss function (summed, label-smoothed): gradient norms far above 1
    [_fix_case(0), _fix_case(1), _fix_case(2, stale=False), _fix_case(3, summed=True)],
    _fix_verify,
    [
        Mistake("zeroes .grad by hand (breaks when .grad is None)",
                "before the first backward() (or after zero_grad()) .grad is None, so p.grad.zero_() "
                "raises: call optimizer.zero_grad().",
                _step_zero_by_hand, error_match="has no attribute 'zero_'"),
        Mistake("batch unpacked as (y, x)",
                "the batch is (x, y): inputs first, labels second; `y, x = batch` swapped them, so the "
                "model received the integer labels. Write `x, y = batch`.",
                _step_swapped, error_match="but got Long and Float"),
        Mistake("returns a tensor instead of a float",
                "return loss.item(): a tensor keeps the graph (and, on a GPU, the device) alive.",
                _step_tensor, detect=lambda out, a, k: isinstance(out, torch.Tensor)),
        Mistake("zero_grad missing (ZERO_GRAD_MISSING)",
                "the model arrives with last step's gradients in .grad: call optimizer.zero_grad() "
                "before loss.backward().",
                _step_no_zero_grad, detect=_doctor_says("ZERO_GRAD_MISSING")),
        Mistake("gradients cleared after the step, not before backward",
                "the model arrives with last step's gradients in .grad: call optimizer.zero_grad() at "
                "the START of the step, before loss.backward() (zeroing at the end is too late for them).",
                _step_zero_at_end, detect=_right_without_stale_grads),
        Mistake("softmax before CrossEntropyLoss (SOFTMAX_BEFORE_CE)",
                "pass the model's logits straight to the loss: CrossEntropyLoss applies log_softmax itself.",
                _step_softmax, detect=_doctor_says("SOFTMAX_BEFORE_CE")),
        Mistake("model.train() not called (EVAL_MODE_LEFT_ON)",
                "the model arrives in eval mode (from validation): call model.train() first, so "
                "BatchNorm uses the batch's statistics.",
                _step_no_train, detect=_doctor_says("EVAL_MODE_LEFT_ON")),
        Mistake("zero_grad between backward and step (NO_GRAD_FLOW)",
                "zero the gradients before backward(), not between backward() and step(): the update "
                "would be empty.",
                _step_zero_after_backward, detect=_doctor_says("NO_GRAD_FLOW")),
    ],
    inspect=_remember,
))
