"""Blind answers for notebook 14, written from notebooks/14_capstone.ipynb only."""
from tests.blind import Answer

_IMPORTS = '''
import argparse
import dataclasses
from course_utils.capstone.config import Config, parse_bool
'''


def _config(add: str = '''parser.add_argument("--" + field.name.replace("_", "-"), type=kind, default=field.default)''',
            kind: str = "parse_bool if isinstance(field.default, bool) else type(field.default)",
            parse: str = "args = parser.parse_args(argv)", result: str = "return Config(**vars(args))",
            make: str = "parser = argparse.ArgumentParser()") -> str:
    return _IMPORTS + f'''
def config_from_args(argv):
    {make}
    for field in dataclasses.fields(Config):
        kind = {kind}
        {add}
    {parse}
    {result}
'''


def _ratio(expr: str = "((after[name] - before[name]).norm() / before[name].norm()).item()") -> str:
    return f'''
def update_ratio(before, after):
    return {{name: {expr} for name in before}}
'''


def _row(step: str = "int(step)", loss: str = "loss.item()", lr: str = 'float(optimizer.param_groups[0]["lr"])',
         grad: str = "float(grad_norm)", extra: str = "") -> str:
    return f'''
def log_row(step, loss, optimizer, grad_norm):
    {extra or "pass"}
    return {{"step": {step}, "loss": {loss}, "lr": {lr}, "grad_norm": {grad}}}
'''


ANSWERS = [
    # ------------------------------------------------------------------ 14.config_from_args: correct
    Answer("14.config_from_args", "ok", _config(), label="argparse loop over fields, parse_bool for bools"),
    Answer("14.config_from_args", "ok", _IMPORTS + '''
def config_from_args(argv: list[str]) -> Config:
    """One option per field; types and defaults from the dataclass."""
    parser = argparse.ArgumentParser(description="training run", allow_abbrev=False)
    for field in dataclasses.fields(Config):
        option = f"--{field.name.replace('_', '-')}"
        if type(field.default) is bool:
            parser.add_argument(option, dest=field.name, type=parse_bool, default=field.default)
        else:
            parser.add_argument(option, dest=field.name, type=type(field.default), default=field.default)
    namespace = parser.parse_args(list(argv))
    return Config(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(Config)})
''', label="explicit dest, allow_abbrev=False, getattr per field"),
    Answer("14.config_from_args", "ok", _config(add='''parser.add_argument("--" + field.name.replace("_", "-"), type=kind)''',
                                                result="return Config(**{k: v for k, v in vars(args).items() if v is not None})"),
           label="no argparse defaults at all: the dataclass fills what is missing"),
    Answer("14.config_from_args", "ok", _config(result="return dataclasses.replace(Config(), **vars(args))"),
           label="dataclasses.replace on a default Config"),
    Answer("14.config_from_args", "ok", _IMPORTS + '''
def _converter(default):
    return parse_bool if isinstance(default, bool) else type(default)

def config_from_args(argv):
    defaults = Config()
    parser = argparse.ArgumentParser(exit_on_error=False)
    for name, value in vars(defaults).items():
        parser.add_argument("--" + name.replace("_", "-"), type=_converter(value), default=value)
    return Config(**vars(parser.parse_args(argv)))
''', label="defaults read from a Config() instance, helper converter, exit_on_error=False", name="config_from_args"),
    Answer("14.config_from_args", "ok", _IMPORTS + '''
def config_from_args(argv):
    parser = argparse.ArgumentParser()
    fields = {f.name: f for f in dataclasses.fields(Config)}
    for name, f in fields.items():
        flag = "--" + "-".join(name.split("_"))
        parser.add_argument(flag, type=(parse_bool if f.type in (bool, "bool") else type(f.default)),
                            default=f.default, help=f"{name} ({type(f.default).__name__}, default {f.default!r})")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        raise ValueError(f"unknown option(s): {unknown}")
    return Config(**vars(args))
''', label="parse_known_args, then raises ValueError itself on unknown options"),
    # ------------------------------------------------------------------ 14.config_from_args: wrong
    Answer("14.config_from_args", "fail", _config(kind="type(field.default)"),
           label="type=bool for booleans: bool('false') is True", words=("parse_bool",)),
    Answer("14.config_from_args", "fail", _config(add='''parser.add_argument("--" + field.name.replace("_", "-"), default=field.default)'''),
           label="no type: values stay strings", words=("type=int",)),
    Answer("14.config_from_args", "fail", _config(parse="args, _ = parser.parse_known_args(argv)"),
           label="parse_known_args: unknown options silently ignored", words=("unknown",)),
    Answer("14.config_from_args", "fail", _config(parse="import sys\n    args, _ = parser.parse_known_args(sys.argv[1:])"),
           label="parses sys.argv instead of argv", words=("sys.argv",)),
    Answer("14.config_from_args", "fail", _config(add='''parser.add_argument("--" + field.name, type=kind, default=field.default)'''),
           label="options keep the underscore (--batch_size)", words=("--batch-size",)),
    Answer("14.config_from_args", "fail", _IMPORTS + '''
def config_from_args(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--train-size", type=int, default=3000)
    parser.add_argument("--val-size", type=int, default=256)
    parser.add_argument("--max-batches", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=str, default="runs/run")
    parser.add_argument("--resume", type=parse_bool, default=False)
    parser.add_argument("--stop-after", type=int, default=0)
    parser.add_argument("--tensorboard", type=parse_bool, default=True)
    return Config(**vars(parser.parse_args(argv)))
''', label="defaults written twice, one stale (lr 0.003 from the notebook's example parser)", words=("default",)),
    Answer("14.config_from_args", "fail", _config(result="return args"),
           label="returns the argparse Namespace", words=("Config",)),
    Answer("14.config_from_args", "fail", _config(result="return vars(args)"),
           label="returns a dict", words=("Config",)),
    Answer("14.config_from_args", "fail", _config(add='''if isinstance(field.default, bool):
            parser.add_argument("--" + field.name.replace("_", "-"), action="store_true", default=field.default)
        else:
            parser.add_argument("--" + field.name.replace("_", "-"), type=kind, default=field.default)'''),
           label="booleans as store_true flags: '--resume true' is rejected", words=("unrecognized arguments: true",)),
    Answer("14.config_from_args", "fail", _config(add='''if not isinstance(field.default, bool):
            parser.add_argument("--" + field.name.replace("_", "-"), type=kind, default=field.default)'''),
           label="no options for the boolean fields", words=("--resume",)),
    Answer("14.config_from_args", "fail", _config(parse="args = parser.parse_args(argv[1:])"),
           label="skips argv[0] as if it were the program name", words=("unrecognized arguments: 3",)),
    Answer("14.config_from_args", "fail", _config(parse='''try:
        args = parser.parse_args(argv)
    except SystemExit:
        return Config()'''),
           label="swallows the error and returns the defaults", words=("SystemExit",)),
    Answer("14.config_from_args", "fail", _config(kind='''(lambda s: s.lower() == "true") if isinstance(field.default, bool) else type(field.default)'''),
           label="own boolean parser: only 'true' is True ('1', 'yes' become False)", words=("parse_bool",)),
    Answer("14.config_from_args", "fail", _config(parse='''args, unknown = parser.parse_known_args(argv)
    if unknown:
        print("warning: ignoring", unknown)'''),
           label="unknown options only printed as a warning", words=("silently accepted",)),
    Answer("14.config_from_args", "fail", _config(result='''for key, value in vars(args).items():
        setattr(Config, key, value)          # remember the choice as the new default
    return Config()'''),
           label="writes the parsed values into the Config class (changes its defaults)", words=("expected lr=0.1",)),
    Answer("14.config_from_args", "fail", _IMPORTS + '''
def config_from_args(argv):
    values = {}
    kinds = {f.name: (parse_bool if isinstance(f.default, bool) else type(f.default)) for f in dataclasses.fields(Config)}
    while argv:
        option = argv.pop(0)
        name = option.lstrip("-").replace("-", "_")
        if name not in kinds:
            raise ValueError(f"unknown option {option}")
        values[name] = kinds[name](argv.pop(0))
    return Config(**values)
''', label="hand-made parser that pops from the caller's argv", words=("modified",)),
    Answer("14.config_from_args", "fail", _config(kind="field.type if isinstance(field.type, type) else str",
                                                  add='''parser.add_argument("--" + field.name.replace("_", "-"), type=kind, default=field.default)'''),
           label="type=field.type (annotations are strings here, so str is used)", words=("type=int",)),
    Answer("14.config_from_args", "fail", _config(kind="int if isinstance(field.default, (int, float)) and not isinstance(field.default, bool) else (parse_bool if isinstance(field.default, bool) else str)"),
           label="every number parsed as int: --lr 0.1 fails", words=("invalid int value",)),

    # ------------------------------------------------------------------ 14.update_ratio: correct
    Answer("14.update_ratio", "ok", _ratio(), label="dict comprehension, Tensor.norm, item()"),
    Answer("14.update_ratio", "ok", _ratio("float(torch.linalg.vector_norm(after[name] - before[name]) / torch.linalg.vector_norm(before[name]))"),
           label="torch.linalg.vector_norm, float()"),
    Answer("14.update_ratio", "ok", '''
def update_ratio(before: dict, after: dict) -> dict:
    """‖after − before‖ / ‖before‖ per name."""
    ratios = {}
    for name, old in before.items():
        new = after[name]
        ratios[name] = (torch.dist(new, old) / old.norm()).item()
    return ratios
''', label="loop, torch.dist"),
    Answer("14.update_ratio", "ok", _ratio("((after[name].double() - before[name].double()).norm() / before[name].double().norm()).item()"),
           label="computed in float64"),
    Answer("14.update_ratio", "fail", '''
def update_ratio(before, after):
    import math
    out = {}
    for name in after:
        delta = (after[name] - before[name]).flatten()
        out[name] = math.sqrt(float((delta * delta).sum())) / math.sqrt(float((before[name] ** 2).sum()))
    return out
''', label="sum of squares and math.sqrt, Python float division: raises ZeroDivisionError on a zero `before`",
       words=("all zeros", "inf", "nan")),
    # 28 and 29 were "ok" under an older task text; it now states the zero-norm result (inf if moved, nan if not)
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).norm() / (before[name].norm() + 1e-12)).item()"),
           label="tiny epsilon in the denominator: a finite number where the task asks for inf/nan",
           words=("all zeros", "inf", "nan")),
    # ------------------------------------------------------------------ 14.update_ratio: wrong
    Answer("14.update_ratio", "fail", _ratio("(after[name].norm() / before[name].norm()).item()"),
           label="ratio of the norms, not the norm of the difference", words=("norm of the difference",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).norm() / after[name].norm()).item()"),
           label="divides by ‖after‖", words=("before",)),
    Answer("14.update_ratio", "fail", _ratio("(after[name] - before[name]).norm() / before[name].norm()"),
           label="tensors, not Python floats", words=("float",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).norm(p=1) / before[name].norm(p=1)).item()"),
           label="L1 norms", words=("L2",)),
    Answer("14.update_ratio", "fail", _ratio("(((after[name] - before[name]) ** 2).sum() / (before[name] ** 2).sum()).item()"),
           label="squared norms (no square root)", words=("square",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).abs().max() / before[name].abs().max()).item()"),
           label="max-abs (infinity) norms", words=("L2",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).abs() / before[name].abs()).mean().item()"),
           label="mean of per-element relative changes", words=("per-element",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).norm(dim=-1) / before[name].norm(dim=-1)).mean().item()"),
           label="row-wise norms, then the mean", words=("all elements",)),
    Answer("14.update_ratio", "fail", '''
def update_ratio(before, after):
    return {name: (after[name].sub_(before[name]).norm() / before[name].norm()).item() for name in before}
''', label="after.sub_(before): changes the tensors", words=("in place",)),
    Answer("14.update_ratio", "fail", _ratio("(abs(after[name].norm() - before[name].norm()) / before[name].norm()).item()"),
           label="change of the norm |‖after‖ − ‖before‖|, not the norm of the change", words=("difference of norms",)),
    Answer("14.update_ratio", "fail", '''
def update_ratio(before, after):
    ratios = [((after[n] - before[n]).norm() / before[n].norm()).item() for n in before]
    return sum(ratios) / len(ratios)
''', label="one averaged number instead of a dict", words=("dict",)),
    Answer("14.update_ratio", "fail", '''
def update_ratio(before, after):
    return [((after[n] - before[n]).norm() / before[n].norm()).item() for n in before]
''', label="a list, not a dict keyed by name", words=("dict",)),
    Answer("14.update_ratio", "fail", _ratio("round(((after[name] - before[name]).norm() / before[name].norm()).item(), 4)"),
           label="rounded to 4 decimals: small ratios become 0", words=("found 0.0009",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name] - before[name]).norm() / before[name].norm()).log10().item()"),
           label="log10 of the ratio (for a log plot)", words=("-3.02553",)),
    Answer("14.update_ratio", "fail", _ratio("((before[name] - after[name]).sum().abs() / before[name].sum().abs()).item()"),
           label="ratio of sums, not of norms", words=("sum",)),
    Answer("14.update_ratio", "fail", '''
def update_ratio(before, after):
    return {i: ((after[n] - before[n]).norm() / before[n].norm()).item() for i, n in enumerate(before)}
''', label="keys are positions, not names", words=("key",)),
    Answer("14.update_ratio", "fail", _ratio("((after[name].half() - before[name].half()).norm() / before[name].half().norm()).item()"),
           label="computed in float16 to save memory", words=("float16",)),

    # ------------------------------------------------------------------ 14.log_row: correct
    Answer("14.log_row", "ok", _row(), label="item(), param_groups[0], float()"),
    Answer("14.log_row", "ok", _row(loss="float(loss.detach())", lr='float(optimizer.param_groups[0]["lr"])'),
           label="float() on everything"),
    Answer("14.log_row", "ok", '''
def _number(value):
    return value.item() if isinstance(value, torch.Tensor) else float(value)

def log_row(step: int, loss: torch.Tensor, optimizer: torch.optim.Optimizer, grad_norm: torch.Tensor) -> dict:
    """One CSV row: plain Python numbers only."""
    return dict(step=int(step), loss=_number(loss), lr=_number(optimizer.param_groups[0]["lr"]),
                grad_norm=_number(grad_norm))
''', label="helper that accepts tensors or numbers, dict(...)", name="log_row"),
    Answer("14.log_row", "ok", _row(loss="loss.detach().cpu().item()", grad="grad_norm.item()"),
           label="detach().cpu().item()"),
    Answer("14.log_row", "ok", _row(loss="loss.tolist()", grad="float(grad_norm.tolist())"),
           label="tolist() of 0-d tensors"),
    Answer("14.log_row", "ok", '''
def log_row(step, loss, optimizer, grad_norm):
    import math
    group = next(iter(optimizer.param_groups))
    row = {}
    row["step"] = int(step)
    row["loss"] = float(loss)
    row["lr"] = float(group["lr"])
    row["grad_norm"] = float(grad_norm)
    assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row.values())
    return row
''', label="row built key by key, first group via next(iter(...))"),
    # ------------------------------------------------------------------ 14.log_row: wrong
    Answer("14.log_row", "fail", _row(loss="loss"), label="loss tensor kept", words=("loss",)),
    Answer("14.log_row", "fail", _row(loss="loss.detach()"), label="loss.detach(): still a tensor", words=("tensor",)),
    Answer("14.log_row", "fail", _row(lr='optimizer.defaults["lr"]'), label="lr from optimizer.defaults", words=("defaults",)),
    Answer("14.log_row", "fail", _row(grad="grad_norm"), label="grad_norm tensor kept", words=("grad_norm",)),
    Answer("14.log_row", "fail", _row(step="float(step)"), label="step as a float", words=("int",)),
    Answer("14.log_row", "fail", _row(lr='optimizer.param_groups[-1]["lr"]'), label="lr of the last param group",
           words=("param_groups[0]",)),
    Answer("14.log_row", "fail", _row(lr='sum(g["lr"] for g in optimizer.param_groups) / len(optimizer.param_groups)'),
           label="mean lr over the param groups", words=("param_groups[0]",)),
    Answer("14.log_row", "fail", '''
def log_row(step, loss, optimizer, grad_norm):
    return {"step": int(step), "loss": loss.item(), "learning_rate": optimizer.param_groups[0]["lr"],
            "grad_norm": float(grad_norm)}
''', label="key 'learning_rate' instead of 'lr'", words=("lr",)),
    Answer("14.log_row", "fail", _row(extra="optimizer.zero_grad()"),
           label="zero_grad inside the logging function (changes the optimizer's parameters' grads)", words=("grad",)),
    Answer("14.log_row", "fail", _row(lr='optimizer.param_groups[0].get("initial_lr", optimizer.param_groups[0]["lr"])'),
           label="initial_lr (the scheduler's base rate) instead of the current rate", words=("initial_lr",)),
    Answer("14.log_row", "fail", _row(loss="round(loss.item(), 2)"), label="loss rounded to 2 decimals", words=("found 5.5",)),
    Answer("14.log_row", "fail", _row(grad='''torch.norm(torch.stack([p.grad.norm() for g in optimizer.param_groups for p in g["params"] if p.grad is not None])).item()'''),
           label="recomputes the gradient norm from .grad (after clipping) instead of the argument", words=("grad_norm",)),
    Answer("14.log_row", "fail", _row(step="int(step) + 1"), label="step + 1", words=("'step': 1",)),
    Answer("14.log_row", "fail", '''
def log_row(step, loss, optimizer, grad_norm):
    return (int(step), loss.item(), optimizer.param_groups[0]["lr"], float(grad_norm))
''', label="a tuple, not a dict", words=("dict",)),
    Answer("14.log_row", "fail", _row(loss="np.float32(loss.item())", grad="np.float32(grad_norm)"),
           label="numpy float32 values, not Python floats", words=("float32",)),
    Answer("14.log_row", "fail", _row(lr='f"{optimizer.param_groups[0][\'lr\']:.2e}"'),
           label="lr formatted as a string for the CSV", words=("str",)),
    Answer("14.log_row", "fail", _row(loss="loss.data"), label="loss.data: still a tensor", words=("tensor",)),
    Answer("14.log_row", "fail", _row(lr='optimizer.param_groups[0]["lr"]', extra='''if isinstance(optimizer.param_groups[0]["lr"], float):
        pass'''), label="lr returned as the optimizer holds it (a tensor lr stays a tensor)", words=("lr",)),
    Answer("14.log_row", "fail", _row(grad="float(grad_norm) ** 2"), label="squared gradient norm", words=("'grad_norm': 3.77195",)),
    Answer("14.log_row", "fail", _row(extra='''for group in optimizer.param_groups:
        group.setdefault("logged_steps", 0)
        group["logged_steps"] += 1'''),
           label="counts logged steps inside the optimizer's param groups (changes the optimizer)",
           words=("modified",)),
    Answer("14.log_row", "fail", _row(loss="loss.mean().item() if loss.dim() else loss.item()",
                                      extra="loss.detach_()"),
           label="detaches the caller's loss in place", words=("requires_grad",)),
]
