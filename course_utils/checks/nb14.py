"""Checkers of notebook 14 (capstone), in notebook order: ``14.config_from_args``, ``14.update_ratio``,
``14.log_row``.

``14.config_from_args`` runs argparse, which ends with ``SystemExit`` (not an ``Exception``) on a bad
option: every argument list the cases use is first run by ``_config_inspect``, which catches it, reads
argparse's message, and also tries an unknown option, a command line in ``sys.argv`` that differs from
``argv``, and a ``Config`` with other defaults (put in the candidate's globals for one call).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import math
import sys
from typing import Any, Callable

import torch

from course_utils.capstone.config import Config, parse_bool
from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.i18n import t


_CONFIG = Config


# --- 14.config_from_args --------------------------------------------------------------------------

def config_from_args_reference(argv: list[str]) -> Config:
    parser = argparse.ArgumentParser()
    for field in dataclasses.fields(Config):
        kind = type(field.default)
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(argv)))


_CONFIG_ARGV: list[list[str]] = [
    ["--epochs", "3", "--lr", "0.1"],
    [],
    ["--batch-size", "16", "--resume", "true", "--tensorboard", "false"],
    ["--out", "runs/b", "--max-batches", "4", "--seed", "7", "--resume", "False"],
    ["--tensorboard", "False", "--val-size", "64", "--lr", "1e-3"],
]


def _config_variant(how: str) -> Callable[[list[str]], Any]:
    """A learner's config_from_args with one thing done differently."""
    def config_from_args(argv):
        parser = argparse.ArgumentParser()
        for field in dataclasses.fields(Config):
            kind = type(field.default)
            options: dict[str, Any] = {"dest": field.name, "default": field.default,
                                       "type": parse_bool if kind is bool else kind}
            if how == "no type":
                del options["type"]
            elif how == "no default":
                del options["default"]
            elif how == "type=bool":
                options["type"] = kind
            elif how == "== true" and kind is bool:
                options["type"] = lambda text: text.strip().lower() in ("true", "1", "yes", "on")
            parser.add_argument("--" + field.name.replace("_", "-"), **options)
        args = parser.parse_args(argv)
        if how == "namespace":
            return args
        if how == "dict":
            return vars(args)
        return Config(**vars(args))
    return config_from_args


def _run_quietly(candidate: Callable[..., Any], argv: list[str]) -> tuple[Any, str | None]:
    """(result, None) or (None, argparse's message) when the candidate stopped with SystemExit."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            return candidate(list(argv)), None
    except SystemExit:
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        return None, (lines[-1] if lines else "SystemExit")
    except Exception:  # noqa: BLE001 -- the cases run it again and report the error
        return None, None


def _argparse_hint(message: str) -> str:
    if "unrecognized arguments" in message and "-" in message:
        return t(" Name every option after its field with `-` for `_` (`--batch-size` for batch_size), "
                 "one add_argument per field of the dataclass.")
    if "invalid" in message and "value" in message:
        return t(" Give each option the type of its field's default: type=type(field.default).")
    if "expected one argument" in message or "ignored explicit argument" in message:
        return t(" Booleans take a value here (`--resume true`): type=parse_bool, not action='store_true'.")
    return ""


def _other_defaults() -> type:
    """A dataclass like Config whose every default differs."""
    new = {"epochs": 7, "batch_size": 8, "lr": 0.5, "train_size": 96, "val_size": 48, "max_batches": 3,
           "seed": 11, "out": "elsewhere", "resume": True, "stop_after": 5, "tensorboard": False}
    fields = [(f.name, type(f.default), dataclasses.field(default=new[f.name])) for f in dataclasses.fields(Config)]
    return dataclasses.make_dataclass("Config", fields)


def _config_inspect(candidate: Callable[..., Any]) -> str | None:
    saved = sys.argv
    sys.argv = ["train.py", "--epochs", "99", "--seed", "99"]  # a command line that is not argv
    try:
        return _config_probes(candidate)
    finally:
        sys.argv = saved


def _config_probes(candidate: Callable[..., Any]) -> str | None:
    out, error = _run_quietly(candidate, ["--epochs", "3"])
    if error is None and (getattr(out, "epochs", None) == 99 or isinstance(out, dict) and out.get("epochs") == 99):
        return t("your function read the command line from sys.argv, not from its argument: "
                 "pass it on, parser.parse_args(argv) (a notebook's sys.argv is the kernel's).")
    for argv in _CONFIG_ARGV:
        _, error = _run_quietly(candidate, argv)
        if error is not None:
            return (t("with argv={argv} argparse stopped the program with: {error}.", argv=argv, error=error)
                    + _argparse_hint(error))
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            candidate(["--epochs", "3", "--learning-rate", "0.1"])
        swallowed = "error:" in stderr.getvalue()
    except BaseException:  # noqa: BLE001 -- SystemExit is the right outcome; errors are reported below
        swallowed = False
    if swallowed:
        return t("argparse reported `unrecognized arguments: --learning-rate 0.1` and raised SystemExit, but "
                 "your function caught the SystemExit and went on: let it propagate (no try/except around "
                 "parse_args), so a misspelt option stops the program.")
    out, error = _run_quietly(candidate, ["--epochs", "3", "--learning-rate", "0.1"])
    if error is None and out is not None:
        return t("an unknown option (--learning-rate) was silently accepted: use parser.parse_args(argv), "
                 "which stops with an error, not parse_known_args, which ignores a misspelt option.")
    out, error = _run_quietly(candidate, ["--resume", "false"])
    reads_false = error is None and (getattr(out, "resume", None) is False
                                     or isinstance(out, dict) and out.get("resume") is False)
    for word in ("maybe", "ture") if reads_false else ():  # type=bool is named by the cases
        out, error = _run_quietly(candidate, ["--resume", word])
        got = out.get("resume") if isinstance(out, dict) else getattr(out, "resume", None)
        if error is None and isinstance(got, bool):  # a string left unconverted is named by the cases
            return t("`--resume {word}` was accepted (resume={got}): read booleans with type=parse_bool, "
                     "which refuses anything but true/false (1/0, yes/no, on/off), so a typo stops the "
                     "program instead of silently meaning False.", word=word, got=repr(got))
    globals_ = getattr(candidate, "__globals__", {})
    original = _CONFIG  # not the name Config: that may be the very global swapped below
    if globals_.get("Config") is original:
        variant = _other_defaults()
        globals_["Config"] = variant
        try:
            out, error = _run_quietly(candidate, [])
        finally:
            globals_["Config"] = original
        expected, old = variant(), original()
        if error is None and isinstance(out, variant) and any(
                getattr(out, f.name) == getattr(old, f.name) != getattr(expected, f.name)
                for f in dataclasses.fields(Config)):
            return t("with other defaults in the dataclass your function still gave the old ones: take each "
                     "default from the dataclass (default=field.default), do not write it a second time.")
    return None


def _config_verify(out: Any, ref: Config, args: tuple, kwargs: dict) -> str | None:
    (argv,) = args
    if isinstance(out, argparse.Namespace) or isinstance(out, dict):
        return t("expected a Config, found {kind}: build the dataclass from the parsed "
                 "options, Config(**vars(args))", kind=type(out).__name__)
    if not isinstance(out, Config):
        return t("expected a Config, found {got}", got=describe(out))
    for field in dataclasses.fields(Config):
        got, want = getattr(out, field.name), getattr(ref, field.name)
        if got is None and want is not None:
            return t("with argv={argv} expected {field}={want} (the default), found None: "
                     "give each option default=field.default", argv=argv, field=field.name, want=repr(want))
        if type(got) is not type(want):
            if isinstance(got, str):
                return t("with argv={argv} expected {field}={want} ({kind}), found the "
                         "string {got}: give the option type={kind} (argparse returns strings)",
                         argv=argv, field=field.name, want=repr(want), kind=type(want).__name__, got=repr(got))
            return t("with argv={argv} expected {field}={want} ({kind}), found {got}",
                     argv=argv, field=field.name, want=repr(want), kind=type(want).__name__, got=describe(got))
        if got != want:
            if isinstance(want, bool):
                return t("with argv={argv} expected {field}={want}, found {got}: bool('False') is True, "
                         "so type=bool accepts everything; use type=parse_bool",
                         argv=argv, field=field.name, want=repr(want), got=repr(got))
            return t("with argv={argv} expected {field}={want}, found {got}",
                     argv=argv, field=field.name, want=repr(want), got=repr(got))
    return None


register(Exercise(
    "14.config_from_args",
    "config_from_args(argv) parses the list argv (not sys.argv) into a Config: one option --name per "
    "field (`-` for `_`), typed and defaulted from the dataclass itself, booleans as `--resume true`/"
    "`false` (parse_bool), an unknown option an error.",
    config_from_args_reference,
    [lambda argv=argv: ((list(argv),), {}) for argv in _CONFIG_ARGV],
    _config_verify,
    [
        Mistake("types not converted", "argparse returns strings: give each option "
                "type=type(field.default) (int, float, str, parse_bool).", _config_variant("no type")),
        Mistake("defaults lost", "an option not given is None unless you pass default=field.default.",
                _config_variant("no default")),
        Mistake("type=bool", "bool('False') is True: any non-empty string is; parse the text with "
                "type=parse_bool.", _config_variant("type=bool")),
        Mistake("returns the Namespace", "return the dataclass: Config(**vars(parser.parse_args(argv))).",
                _config_variant("namespace")),
        Mistake("returns a dict", "return the dataclass: Config(**vars(parser.parse_args(argv))).",
                _config_variant("dict")),
        Mistake("booleans compared with 'true' (a typo reads as False)",
                "read booleans with type=parse_bool: it raises on anything but true/false, so argparse "
                "reports `--resume ture` instead of running without resuming.", _config_variant("== true")),
    ],
    inspect=_config_inspect,
))


# --- 14.update_ratio ------------------------------------------------------------------------------

def update_ratio_reference(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> dict[str, float]:
    return {name: ((after[name] - w).norm() / w.norm()).item() for name, w in before.items()}


def _ratio_cases():
    def make(seed, shapes, scales, zero=()):
        def factory():
            gen = torch.Generator().manual_seed(seed)
            before = {name: torch.randn(*shape, generator=gen) for name, shape in shapes.items()}
            for name in zero:  # biases that start at zero: ||before|| = 0 (inf when moved, nan when not)
                before[name] = torch.zeros(shapes[name])
            after = {name: w + scales[name] * torch.randn(w.shape, generator=gen) for name, w in before.items()}
            return (before, after), {}
        return factory
    return [make(0, {"0.weight": (4, 3), "0.bias": (4,)}, {"0.weight": 1e-3, "0.bias": 0.3}),
            make(1, {"conv.weight": (2, 3, 3, 3), "fc.weight": (5, 6), "fc.bias": (5,)},
                 {"conv.weight": 0.05, "fc.weight": 0.5, "fc.bias": 2e-3}),
            make(2, {"w": (7,)}, {"w": 0.2}),
            make(3, {"fc.weight": (3, 2), "fc.bias": (3,), "norm.bias": (2,)},
                 {"fc.weight": 0.01, "fc.bias": 0.1, "norm.bias": 0.0}, zero=("fc.bias", "norm.bias"))]


def _ratio_verify(out: Any, ref: dict[str, float], args: tuple, kwargs: dict) -> str | None:
    if isinstance(out, (float, int, torch.Tensor)) and not isinstance(out, bool):
        return t("expected a dict with one ratio per parameter name, found {got}: "
                 "{code}", got=describe(out), code="{name: ratio for name in before}")
    if not isinstance(out, dict):
        return t("expected a dict with one ratio per parameter name, found {got}", got=describe(out))
    if sorted(out) != sorted(ref):
        return t("expected the keys {want}, found {got}", want=sorted(ref), got=sorted(out))
    for name, want in ref.items():
        got = out[name]
        if isinstance(got, torch.Tensor):
            return t("expected {name}: a Python float, found {got}: call .item() on the ratio",
                     name=repr(name), got=describe(got))
        if not isinstance(got, (float, int)) or isinstance(got, bool):
            return t("expected {name}: a Python float, found {got}", name=repr(name), got=describe(got))
        if math.isnan(want) or math.isinf(want):
            if not (math.isnan(got) if math.isnan(want) else got == want):
                if math.isinf(want):
                    return t("expected {name}: {want} (its weights before the step are all zero and it moved: "
                             "keep what the division gives, ||after - before|| / 0), found {got}",
                             name=repr(name), want=want, got=repr(got))
                return t("expected {name}: {want} (its weights before the step are all zero and it did not move: "
                         "keep what the division gives, ||after - before|| / 0), found {got}",
                         name=repr(name), want=want, got=repr(got))
            continue
        if not math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-9):
            return t("expected {name}: {want:.6g}, found {got:.6g}", name=repr(name), want=want, got=got)
    return None


def _ratio_like(formula: Callable[[torch.Tensor, torch.Tensor], Any]) -> Callable[..., bool]:
    """A detector: every ratio equals ``formula(before, after)`` and one differs from the right ratio."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        before, after = args
        if not isinstance(out, dict) or not out:
            return False
        differs = False
        for name, got in out.items():
            if name not in before or name not in after or not isinstance(got, float):
                return False
            with torch.no_grad():
                alt = float(formula(before[name], after[name]))
                right = float((after[name] - before[name]).norm() / before[name].norm())
            if not math.isfinite(alt) or not math.isfinite(right):
                continue  # the zero-norm rule is named by its own message
            if not math.isclose(got, alt, rel_tol=1e-3, abs_tol=1e-12):
                return False
            differs = differs or not math.isclose(alt, right, rel_tol=1e-4, abs_tol=1e-9)
        return differs
    return detect


def _ratio_variant(how: str) -> Callable[..., Any]:
    def update_ratio(before, after):
        result = {}
        for name, w in before.items():
            delta = after[name] - w
            if how == "not normalised":
                value = delta.norm()
            elif how == "after norm":
                value = delta.norm() / after[name].norm()
            elif how == "inverted":
                value = w.norm() / delta.norm()
            elif how == "l1":
                value = delta.abs().sum() / w.abs().sum()
            elif how == "max":
                value = delta.abs().max() / w.abs().max()
            elif how == "norm difference":
                value = (after[name].norm() - w.norm()).abs() / w.norm()
            elif how == "tensor":
                result[name] = delta.norm() / w.norm()
                continue
            elif how == "epsilon":
                value = delta.norm() / (w.norm() + 1e-12)
            elif how == "norm ratio":
                value = after[name].norm() / w.norm()
            elif how == "squared":
                value = delta.pow(2).sum() / w.pow(2).sum()
            elif how == "per-element":
                value = (delta.abs() / w.abs()).mean()
            elif how == "rows":
                value = (delta.norm(dim=-1) / w.norm(dim=-1)).mean()
            elif how == "sums":
                value = delta.sum().abs() / w.sum().abs()
            elif how == "half":
                value = (after[name].half() - w.half()).norm() / w.half().norm()
            elif how == "plain division":
                value = torch.tensor(math.sqrt(float((delta * delta).sum())) / math.sqrt(float((w * w).sum())))
            else:
                raise ValueError(how)
            result[name] = value.item()
        return result
    return update_ratio


register(Exercise(
    "14.update_ratio",
    "update_ratio(before, after) takes two {name: tensor} dicts (the weights before and after one "
    "optimizer step) and returns {name: ||after - before|| / ||before||} as Python floats, the norm "
    "being the L2 norm of all the tensor's elements (Tensor.norm()); for a `before` of all zeros keep "
    "what the tensor division gives: inf if it moved, nan if it did not.",
    update_ratio_reference,
    _ratio_cases(),
    _ratio_verify,
    [
        Mistake("not normalised", "divide the size of the update by the size of the weights: "
                "||after - before|| / ||before||, a ratio that does not depend on the layer's scale.",
                _ratio_variant("not normalised")),
        Mistake("divides by the new weights", "divide by ||before||, the weights the update was applied to.",
                _ratio_variant("after norm")),
        Mistake("inverted", "the update goes on top: ||after - before|| / ||before||, small (about 1e-3).",
                _ratio_variant("inverted")),
        Mistake("wrong norm", "use the L2 norm of all elements, Tensor.norm(), not sums or maxima of "
                "absolute values.", _ratio_variant("l1")),
        Mistake("max instead of norm", "use the L2 norm of all elements, Tensor.norm(), not the largest "
                "absolute value.", _ratio_variant("max")),
        Mistake("difference of norms", "take the norm of the difference, (after - before).norm(): two "
                "weights of the same size can be far apart.", _ratio_variant("norm difference")),
        Mistake("tensors, not floats", "call .item() so the log holds numbers, not tensors.",
                _ratio_variant("tensor")),
        Mistake("epsilon added to the norm", "a `before` of all zeros (a bias that starts at zero) has no "
                "scale to compare with: keep what the division gives (inf if it moved, nan if not) instead of "
                "a huge finite number from ||before|| + eps.", _ratio_variant("epsilon"),
                detect=lambda out, a, k: isinstance(out, dict) and any(
                    isinstance(v, float) and math.isfinite(v) and a[0][n].norm() == 0 and a[1][n].ne(0).any()
                    for n, v in out.items() if n in a[0])),
        Mistake("Python division by a zero norm", "a `before` of all zeros (a bias that starts at zero) makes "
                "||before|| = 0, and Python's float division raises ZeroDivisionError: divide the tensors, "
                "(after - before).norm() / before.norm(), which gives inf if it moved and nan if not.",
                _ratio_variant("plain division"), error_match="division by zero"),
        Mistake("ratio of the norms", "||after|| / ||before|| is about 1 for any small step: take the norm of "
                "the difference, (after - before).norm() / before.norm().",
                _ratio_variant("norm ratio"), detect=_ratio_like(lambda b, a: a.norm() / b.norm())),
        Mistake("squared norms", "(after - before).pow(2).sum() / before.pow(2).sum() is the square of the "
                "ratio: take the square root of each sum, or use Tensor.norm().",
                _ratio_variant("squared"),
                detect=_ratio_like(lambda b, a: (a - b).pow(2).sum() / b.pow(2).sum())),
        Mistake("mean of per-element ratios", "a per-element ratio |after - before| / |before| blows up where a "
                "weight is near zero: divide the norms over all elements, (after - before).norm() / before.norm().",
                _ratio_variant("per-element"), detect=_ratio_like(lambda b, a: ((a - b).abs() / b.abs()).mean())),
        Mistake("norms per row", "take one norm over all elements of the tensor, Tensor.norm() without dim, "
                "not norms per row averaged afterwards.", _ratio_variant("rows"),
                detect=_ratio_like(lambda b, a: ((a - b).norm(dim=-1) / b.norm(dim=-1)).mean())),
        Mistake("sums instead of norms", "a sum lets positive and negative changes cancel: use the L2 norm of "
                "all elements, Tensor.norm(), not the sum.", _ratio_variant("sums"),
                detect=_ratio_like(lambda b, a: (b - a).sum().abs() / b.sum().abs())),
        Mistake("computed in float16", "float16 keeps about 3 significant digits: after - before of a small "
                "step loses most of its digits. Compute in the weights' own dtype (float32).",
                _ratio_variant("half"),
                detect=_ratio_like(lambda b, a: (a.half() - b.half()).norm() / b.half().norm())),
    ],
))


# --- 14.log_row -----------------------------------------------------------------------------------

_ROW_KEYS = ("step", "loss", "lr", "grad_norm")


def log_row_reference(step: int, loss: torch.Tensor, optimizer: torch.optim.Optimizer,
                      grad_norm: torch.Tensor) -> dict[str, float | int]:
    return {"step": int(step), "loss": loss.item(), "lr": float(optimizer.param_groups[0]["lr"]),
            "grad_norm": float(grad_norm)}


def _row_cases():
    def make(seed, step, lr, factor):
        def factory():
            gen = torch.Generator().manual_seed(seed)
            layer = torch.nn.Linear(3, 2)
            with torch.no_grad():
                for p in layer.parameters():
                    p.copy_(torch.randn(p.shape, generator=gen))
            optimizer = torch.optim.SGD([{"params": [layer.weight]}, {"params": [layer.bias], "lr": lr * 7}],
                                        lr=lr)  # two groups: the first one's rate, not the last one's
            optimizer.param_groups[0]["lr"] = lr * 2  # set by hand: optimizer.defaults keeps lr
            # a scheduler: the first group's rate now is 2 * lr * factor, its initial_lr stays 2 * lr
            torch.optim.lr_scheduler.LambdaLR(optimizer, [lambda epoch: factor, lambda epoch: 1.0])
            loss = layer(torch.randn(4, 3, generator=gen)).pow(2).mean()
            loss.backward()
            # clipped: the norm returned (before clipping) is not the norm of .grad afterwards
            grad_norm = torch.nn.utils.clip_grad_norm_(layer.parameters(), max_norm=0.5)
            optimizer.step()
            return (step, loss, optimizer, grad_norm), {}
        return factory

    def tensor_lr():  # an optimizer may hold its rate as a tensor (lr=torch.tensor(...))
        layer = torch.nn.Linear(3, 2)
        with torch.no_grad():
            for p in layer.parameters():
                p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape))
        optimizer = torch.optim.SGD(layer.parameters(), lr=torch.tensor(0.05))
        loss = layer(torch.ones(2, 3)).pow(2).mean()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(layer.parameters(), max_norm=1.0)
        optimizer.step()
        return (3, loss, optimizer, grad_norm), {}
    return [make(0, 1, 0.1, 0.5), make(1, 17, 0.01, 0.9), make(2, 250, 3e-4, 0.1), tensor_lr]


def _row_verify(out: Any, ref: dict[str, Any], args: tuple, kwargs: dict) -> str | None:
    if not isinstance(out, dict):
        return t("expected a dict with the keys {keys}, found {got}", keys=list(_ROW_KEYS), got=describe(out))
    if sorted(out) != sorted(ref):
        return t("expected the keys {want}, found {got}", want=sorted(ref), got=sorted(out))
    optimizer = args[2]
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if any(p.grad is None or not p.grad.any() for p in params):
        return t("after your function the parameters' .grad were cleared: log_row only reads the numbers, "
                 "it must not call optimizer.zero_grad() (the training loop does that before the next backward)")
    for key in _ROW_KEYS:
        got, want = out[key], ref[key]
        if isinstance(got, torch.Tensor) and key == "lr":
            return t("expected 'lr': a Python float, found {got}: convert it, "
                     "float(optimizer.param_groups[0]['lr']) or .item() (an optimizer may hold its rate as a "
                     "tensor, lr=torch.tensor(...))", got=describe(got))
        if isinstance(got, torch.Tensor):
            return t("expected {key}: a Python {kind}, found {got}: call .item() "
                     "(a tensor in a log keeps its graph alive, and the CSV would read 'tensor(...)')",
                     key=repr(key), kind=type(want).__name__, got=describe(got))
        if key == "step":
            if type(got) is not int:
                return t("expected 'step': the int {want}, found {got}", want=want, got=describe(got))
            if got != want:
                return t("expected 'step': {want}, found {got}", want=want, got=got)
            continue
        if not isinstance(got, float):
            return t("expected {name}: a Python float, found {got}", name=repr(key), got=describe(got))
        if not math.isclose(got, want, rel_tol=1e-6):
            first = optimizer.param_groups[0]
            if key == "lr" and "initial_lr" in first and math.isclose(got, float(first["initial_lr"]), rel_tol=1e-6):
                return t("expected 'lr': {want:.6g}, found {got:.6g}, the group's 'initial_lr' (the rate before "
                         "the scheduler changed it): read the rate it holds now, optimizer.param_groups[0]['lr']",
                         want=want, got=got)
            if key == "grad_norm" and params and math.isclose(
                    got, float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))), rel_tol=1e-5):
                return t("expected 'grad_norm': {want:.6g}, found {got:.6g}, the norm of .grad after clipping: "
                         "log the grad_norm argument (clip_grad_norm_ returns the norm before it clips)",
                         want=want, got=got)
            if key == "lr":
                return t("expected 'lr': {want:.6g}, found {got:.6g}: read the rate the optimizer holds now, "
                         "optimizer.param_groups[0]['lr'] (a scheduler changes it there, not in "
                         "optimizer.defaults)", want=want, got=got)
            return t("expected {name}: {want:.6g}, found {got:.6g}", name=repr(key), want=want, got=got)
    return None


def _loss_tensor(out: Any, requires_grad: bool) -> bool:
    loss = out.get("loss") if isinstance(out, dict) else None
    return isinstance(loss, torch.Tensor) and loss.requires_grad == requires_grad


def _defaults_lr(out: Any, args: tuple, kwargs: dict) -> bool:
    optimizer = args[2]
    got, held = out.get("lr") if isinstance(out, dict) else None, optimizer.param_groups[0]["lr"]
    return (isinstance(got, (int, float)) and got == float(optimizer.defaults["lr"])
            and not math.isclose(got, float(held), rel_tol=1e-6))


def _row_variant(how: str) -> Callable[..., Any]:
    def log_row(step, loss, optimizer, grad_norm):
        row = {"step": step, "loss": loss.item(), "lr": optimizer.param_groups[0]["lr"],
               "grad_norm": grad_norm.item()}
        if how == "tensor loss":
            row["loss"] = loss
        elif how == "detached loss":
            row["loss"] = loss.detach()
        elif how == "defaults lr":
            row["lr"] = optimizer.defaults["lr"]
        elif how == "tensor grad_norm":
            row["grad_norm"] = grad_norm
        elif how == "float step":
            row["step"] = float(step)
        elif how == "last group lr":
            row["lr"] = optimizer.param_groups[-1]["lr"]
        elif how == "mean lr":
            row["lr"] = sum(g["lr"] for g in optimizer.param_groups) / len(optimizer.param_groups)
        elif how == "learning_rate key":
            row["learning_rate"] = row.pop("lr")
        else:
            raise ValueError(how)
        return row
    return log_row


register(Exercise(
    "14.log_row",
    "log_row(step, loss, optimizer, grad_norm), called just after optimizer.step(), returns "
    "{'step': int, 'loss': float, 'lr': float, 'grad_norm': float}: plain Python numbers, the learning "
    "rate the optimizer's first parameter group holds now.",
    log_row_reference,
    _row_cases(),
    _row_verify,
    [
        Mistake("tensor left in the row", "call loss.item(): a tensor in a log keeps the graph alive.",
                _row_variant("tensor loss"), detect=lambda out, a, k: _loss_tensor(out, requires_grad=True)),
        Mistake("detached tensor", "call loss.item(): .detach() is still a tensor.", _row_variant("detached loss"),
                detect=lambda out, a, k: _loss_tensor(out, requires_grad=False)),
        Mistake("lr from optimizer.defaults", "read optimizer.param_groups[0]['lr']: a scheduler changes the "
                "rate there; optimizer.defaults keeps the value the optimizer was built with.",
                _row_variant("defaults lr"), detect=_defaults_lr),
        Mistake("lr of another param group", "the log reports the first group's rate, "
                "optimizer.param_groups[0]['lr'], not the last group's or an average over the groups.",
                _row_variant("last group lr")),
        Mistake("gradient norm left a tensor", "clip_grad_norm_ returns a tensor: float(grad_norm) or "
                "grad_norm.item().", _row_variant("tensor grad_norm")),
        Mistake("step as a float", "keep the step an int: int(step).", _row_variant("float step")),
        Mistake("other key names", "use exactly the keys step, loss, lr, grad_norm (the CSV columns and the "
                "plots read them).", _row_variant("learning_rate key")),
    ],
))
