"""Notebook 14 exercises: learners' wrong answers [FAIL] with a message naming the fix, right ones [OK]
(required ids and mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import sys
import time

import pytest
import torch

from course_utils.capstone.config import Config, config_from_args
from course_utils.checks.nb14 import config_from_args_reference, log_row_reference, update_ratio_reference
from course_utils.exercises import check
from tests.learner_code import assert_accepted, assert_rejected

HEAD = """
import argparse, dataclasses, sys
from course_utils.capstone.config import Config, parse_bool
"""


def _config(body: str) -> str:
    return HEAD + "\ndef config_from_args(argv):\n" + body


LOOP = """    parser = argparse.ArgumentParser()
    for field in dataclasses.fields(Config):
        kind = type(field.default)
"""


def test_reference_agrees_with_the_package() -> None:
    for argv in ([], ["--epochs", "5", "--resume", "yes"], ["--lr", "0.2", "--out", "x"]):
        assert config_from_args_reference(argv) == config_from_args(argv)
    assert config_from_args_reference([]) == Config()


def test_config_check_leaves_sys_argv_and_the_global_config_alone() -> None:
    import course_utils.checks.nb14 as nb14

    argv = list(sys.argv)
    check("14.config_from_args", nb14._config_variant("no type"))
    assert sys.argv == argv and nb14.Config is Config


def test_config_check_is_fast() -> None:
    started = time.monotonic()
    check("14.config_from_args", config_from_args_reference)
    assert time.monotonic() - started < 3


CONFIG_WRONG = [
    ("no type", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default)
    return Config(**vars(parser.parse_args(argv)))""", ["found the string '3'", "type=int"]),
    ("no default", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(argv)))""", ["found None", "default=field.default"]),
    ("parse_known_args", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    args, _ = parser.parse_known_args(argv)
    return Config(**vars(args))""", ["silently accepted", "parse_known_args"]),
    ("type=bool", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=kind)
    return Config(**vars(parser.parse_args(argv)))""", ["bool('False') is True", "parse_bool"]),
    ("sys.argv", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args()))""", ["sys.argv", "parse_args(argv)"]),
    ("sys.argv slice", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(sys.argv[1:])))""", ["sys.argv"]),
    ("namespace", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return parser.parse_args(argv)""", ["found Namespace", "Config(**vars(args))"]),
    ("dict", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return vars(parser.parse_args(argv))""", ["found dict"]),
    ("duplicated defaults", """    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--train-size", type=int, default=1024)
    parser.add_argument("--val-size", type=int, default=256)
    parser.add_argument("--max-batches", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=str, default="runs/run")
    parser.add_argument("--resume", type=parse_bool, default=False)
    parser.add_argument("--stop-after", type=int, default=0)
    parser.add_argument("--tensorboard", type=parse_bool, default=True)
    return Config(**vars(parser.parse_args(argv)))""", ["other defaults", "default=field.default"]),
    ("underscores", LOOP + """        parser.add_argument("--" + field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(argv)))""", ["unrecognized arguments", "--batch-size"]),
    ("store_true", LOOP + """        if kind is bool:
            parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, action="store_true")
        else:
            parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                                type=kind)
    return Config(**vars(parser.parse_args(argv)))""", ["unrecognized arguments", "parse_bool"]),
    ("all float", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=float if kind in (int, float) else kind)
    return Config(**vars(parser.parse_args(argv)))""", ["epochs=3 (int)", "found float"]),
    ("int for lr", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=int if kind in (int, float) else kind)
    return Config(**vars(parser.parse_args(argv)))""", ["invalid int value", "type=type(field.default)"]),
]


CONFIG_WRONG.append(("SystemExit caught", LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    try:
        return Config(**vars(parser.parse_args(argv)))
    except SystemExit:
        return Config()""", ["caught the SystemExit", "propagate"]))


@pytest.mark.parametrize(("name", "body", "words"), CONFIG_WRONG, ids=[c[0] for c in CONFIG_WRONG])
def test_config_wrong_answers(name: str, body: str, words: list[str]) -> None:
    assert_rejected("14.config_from_args", _config(body), words)


CONFIG_RIGHT = [
    LOOP + """        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(argv)))""",
    """    parser = argparse.ArgumentParser(allow_abbrev=False)
    for f in dataclasses.fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", default=f.default,
                            type=parse_bool if isinstance(f.default, bool) else type(f.default))
    return Config(**vars(parser.parse_args(argv)))""",
]


@pytest.mark.parametrize("body", CONFIG_RIGHT)
def test_config_right_answers(body: str) -> None:
    assert_accepted("14.config_from_args", _config(body))


def test_update_ratio_reference_on_a_known_case() -> None:
    out = update_ratio_reference({"w": torch.tensor([3.0, 4.0])}, {"w": torch.tensor([3.0, 4.5])})
    assert out == pytest.approx({"w": 0.1}) and isinstance(out["w"], float)


RATIO_WRONG = [
    ("not normalised", "return {k: (after[k] - w).norm().item() for k, w in before.items()}", ["||before||"]),
    ("after norm", "return {k: ((after[k] - w).norm() / after[k].norm()).item() for k, w in before.items()}",
     ["divide by ||before||"]),
    ("inverted", "return {k: (w.norm() / (after[k] - w).norm()).item() for k, w in before.items()}", ["1e-3"]),
    ("l1", "return {k: ((after[k] - w).abs().sum() / w.abs().sum()).item() for k, w in before.items()}",
     ["L2 norm"]),
    ("max", "return {k: ((after[k] - w).abs().max() / w.abs().max()).item() for k, w in before.items()}",
     ["L2 norm"]),
    ("mean abs", "return {k: ((after[k] - w).abs().mean() / w.abs().mean()).item() for k, w in before.items()}",
     ["expected '0.weight'"]),
    ("difference of norms", "return {k: abs(after[k].norm() - w.norm()).item() / w.norm().item() "
     "for k, w in before.items()}", ["norm of the difference"]),
    ("tensors", "return {k: (after[k] - w).norm() / w.norm() for k, w in before.items()}", [".item()"]),
    ("one number", "return sum(((after[k] - w).norm() / w.norm()).item() for k, w in before.items())",
     ["one ratio per parameter name"]),
    ("in place", "return {k: (after[k].sub_(w).norm() / w.norm()).item() for k, w in before.items()}",
     ["in place"]),
    ("before modified", "return {k: (w.sub_(after[k]).norm() / after[k].norm()).item() for k, w in before.items()}",
     ["in place"]),
    ("squared", "return {k: ((after[k] - w).pow(2).sum() / w.pow(2).sum()).item() for k, w in before.items()}",
     ["expected '0.weight'", "square root"]),
    ("ratio of the norms", "return {k: (after[k].norm() / w.norm()).item() for k, w in before.items()}",
     ["expected '0.weight'", "norm of the difference"]),
    ("per-element", "return {k: ((after[k] - w).abs() / w.abs()).mean().item() for k, w in before.items()}",
     ["per-element"]),
    ("rows", "return {k: ((after[k] - w).norm(dim=-1) / w.norm(dim=-1)).mean().item() for k, w in before.items()}",
     ["over all elements"]),
    ("sums", "return {k: ((w - after[k]).sum().abs() / w.sum().abs()).item() for k, w in before.items()}",
     ["not the sum"]),
    ("float16", "return {k: ((after[k].half() - w.half()).norm() / w.half().norm()).item() for k, w in before.items()}",
     ["float16"]),
    ("Python division", "return {k: float((after[k] - w).norm()) / float(w.norm()) for k, w in before.items()}",
     ["ZeroDivisionError", "inf if it moved"]),
    ("epsilon", "return {k: ((after[k] - w).norm() / (w.norm() + 1e-12)).item() for k, w in before.items()}",
     ["inf if it moved"]),
]


@pytest.mark.parametrize(("name", "body", "words"), RATIO_WRONG, ids=[c[0] for c in RATIO_WRONG])
def test_update_ratio_wrong_answers(name: str, body: str, words: list[str]) -> None:
    assert_rejected("14.update_ratio", f"def update_ratio(before, after):\n    {body}", words)


@pytest.mark.parametrize("body", [
    "return {k: (torch.linalg.vector_norm(after[k] - w) / torch.linalg.vector_norm(w)).item() for k, w in before.items()}",
    "return {k: float((after[k] - w).pow(2).sum().sqrt() / w.pow(2).sum().sqrt()) for k, w in before.items()}",
])
def test_update_ratio_right_answers(body: str) -> None:
    assert_accepted("14.update_ratio", f"def update_ratio(before, after):\n    {body}")


def test_log_row_reference_types() -> None:
    layer = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.5)
    row = log_row_reference(3, layer(torch.ones(1, 2)).sum(), optimizer, torch.tensor(2.0))
    assert row == {"step": 3, "loss": pytest.approx(row["loss"]), "lr": 0.5, "grad_norm": 2.0}
    assert all(type(v) in (int, float) for v in row.values())


ROW = 'return {"step": step, "loss": %s, "lr": %s, "grad_norm": %s}'
ROW_WRONG = [
    ("tensor loss", ROW % ("loss", 'optimizer.param_groups[0]["lr"]', "grad_norm.item()"), ["loss.item()"]),
    ("detached", ROW % ("loss.detach()", 'optimizer.param_groups[0]["lr"]', "grad_norm.item()"),
     [".detach() is still a tensor"]),
    ("defaults", ROW % ("loss.item()", 'optimizer.defaults["lr"]', "grad_norm.item()"), ["param_groups[0]"]),
    ("tensor grad norm", ROW % ("loss.item()", 'optimizer.param_groups[0]["lr"]', "grad_norm"), ["float(grad_norm)"]),
    ("float step", 'return {"step": float(step), "loss": loss.item(), "lr": optimizer.param_groups[0]["lr"], '
     '"grad_norm": grad_norm.item()}', ["int(step)"]),
    ("key names", 'return {"step": step, "loss": loss.item(), "learning_rate": optimizer.param_groups[0]["lr"], '
     '"grad_norm": grad_norm.item()}', ["exactly the keys"]),
    ("list", 'return [step, loss.item(), optimizer.param_groups[0]["lr"], grad_norm.item()]', ["expected a dict"]),
    ("string lr", ROW % ("loss.item()", 'str(optimizer.param_groups[0]["lr"])', "grad_norm.item()"),
     ["a Python float"]),
    ("lr tensor", ROW % ("loss.item()", 'torch.tensor(optimizer.param_groups[0]["lr"])', "grad_norm.item()"),
     [".item()"]),
    ("lr as the optimizer holds it (a tensor rate stays a tensor)",
     ROW % ("loss.item()", 'optimizer.param_groups[0]["lr"]', "grad_norm.item()"), ["'lr'", "tensor", "float("]),
    ("initial_lr", ROW % ("loss.item()", 'optimizer.param_groups[0]["initial_lr"]', "grad_norm.item()"),
     ["initial_lr"]),
    ("norm of .grad after clipping", ROW % ("loss.item()", 'float(optimizer.param_groups[0]["lr"])',
     'torch.linalg.vector_norm(torch.stack([p.grad.norm() for g in optimizer.param_groups for p in g["params"]])).item()'),
     ["after clipping", "grad_norm argument"]),
    ("zero_grad inside", 'optimizer.zero_grad()\n    ' + ROW % ("loss.item()", 'float(optimizer.param_groups[0]["lr"])',
     "grad_norm.item()"), ["zero_grad"]),
    ("grad of loss", ROW % ("loss.item()", 'optimizer.param_groups[0]["lr"]', "loss.item()"),
     ["expected 'grad_norm'"]),
    ("missing grad norm", 'return {"step": step, "loss": loss.item(), "lr": optimizer.param_groups[0]["lr"]}',
     ["expected the keys"]),
]


@pytest.mark.parametrize(("name", "body", "words"), ROW_WRONG, ids=[c[0] for c in ROW_WRONG])
def test_log_row_wrong_answers(name: str, body: str, words: list[str]) -> None:
    assert_rejected("14.log_row", f"def log_row(step, loss, optimizer, grad_norm):\n    {body}", words)


@pytest.mark.parametrize("body", [
    ROW % ("loss.item()", 'float(optimizer.param_groups[0]["lr"])', "grad_norm.item()"),
    ROW % ("float(loss.item())", 'float(optimizer.param_groups[0]["lr"])', "float(grad_norm)"),
])
def test_log_row_right_answers(body: str) -> None:
    assert_accepted("14.log_row", f"def log_row(step, loss, optimizer, grad_norm):\n    {body}")


def test_config_argv_emptied_in_place_is_named() -> None:
    result = assert_rejected("14.config_from_args", _config("""    args = list(argv)
    argv.clear()   # "consumed" the options
    parser = argparse.ArgumentParser()
    for field in dataclasses.fields(Config):
        kind = type(field.default)
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_args(args)))"""), ["modified its input `argv` in place"])
    assert result.status == "fail"
