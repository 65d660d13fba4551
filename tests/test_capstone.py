"""The capstone project of notebook 14: configuration from the command line, the training script
(logs, checkpoint, exact resume, serving)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_utils.capstone import train as project
from course_utils.capstone.config import Config, config_from_args, load_config, parse_bool, save_config
from course_utils.training import read_csv_log, read_tensorboard_log

TINY = ["--epochs", "2", "--max-batches", "3", "--train-size", "64", "--val-size", "32", "--batch-size", "16"]


def test_config_types_defaults_and_errors(tmp_path: Path, capsys) -> None:
    cfg = config_from_args(["--epochs", "5", "--lr", "0.5", "--batch-size", "4", "--resume", "yes"])
    assert (cfg.epochs, cfg.lr, cfg.batch_size, cfg.resume) == (5, 0.5, 4, True)
    assert config_from_args([]) == Config()
    assert config_from_args(["--tensorboard", "False"]).tensorboard is False
    for bad in (["--learning-rate", "1"], ["--epochs", "x"], ["--resume", "maybe"]):
        with pytest.raises(SystemExit):
            config_from_args(bad)
    save_config(cfg, tmp_path)
    assert load_config(tmp_path) == cfg
    with pytest.raises(Exception):
        parse_bool("perhaps")


def test_every_field_is_an_option() -> None:
    for field in dataclasses.fields(Config):
        value = "true" if isinstance(field.default, bool) else "7"
        parsed = getattr(config_from_args([f"--{field.name.replace('_', '-')}", value]), field.name)
        assert parsed == (True if isinstance(field.default, bool) else type(field.default)(value))


def test_update_ratio_and_log_row() -> None:
    before = {"w": torch.tensor([3.0, 4.0]), "b": torch.tensor([1.0])}
    after = {"w": torch.tensor([3.0, 4.5]), "b": torch.tensor([1.5])}
    assert project.update_ratio(before, after) == pytest.approx({"w": 0.1, "b": 0.5})
    assert project.global_update_ratio(before, after) == pytest.approx((0.25 + 0.25) ** 0.5 / 26 ** 0.5)
    layer = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.5)
    optimizer.param_groups[0]["lr"] = 0.25
    row = project.log_row(4, layer(torch.ones(1, 2)).sum(), optimizer, torch.tensor(1.5))
    assert row["lr"] == 0.25 and row["grad_norm"] == 1.5 and type(row["step"]) is int
    assert isinstance(row["loss"], float)


def test_logs_resume_identically_and_serve(tmp_path: Path) -> None:
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    project.train(config_from_args(TINY + ["--out", str(full)]))
    project.train(config_from_args(TINY + ["--out", str(resumed), "--stop-after", "1", "--tensorboard", "false"]))
    assert len(read_csv_log(resumed / "steps.csv")) == 3
    project.train(config_from_args(TINY + ["--out", str(resumed), "--resume", "true", "--tensorboard", "false"]))
    steps, again = read_csv_log(full / "steps.csv"), read_csv_log(resumed / "steps.csv")
    assert [r["step"] for r in steps] == list(range(1, 7))
    assert [r["loss"] for r in again] == [r["loss"] for r in steps]
    assert set(steps[0]) == set(project.STEP_COLUMNS)
    assert all(r["memory_mb"] > 0 and r["update_ratio"] > 0 for r in steps)
    board = read_tensorboard_log(full / "tensorboard")
    assert [step for step, _ in board["step/loss"]] == list(range(1, 7))
    assert load_config(full).train_size == 64
    labels, probs = project.predict(project.load_model(full), [img for img in project.make_shapes(3)[0]])
    assert len(labels) == 3 and probs.shape == (3, 10)
    assert torch.allclose(probs.sum(1), torch.ones(3))


def test_resume_needs_the_same_schedule(tmp_path: Path) -> None:
    """The one-cycle schedule is planned for the run's length: a resume that changes it is refused."""
    base = TINY + ["--out", str(tmp_path), "--tensorboard", "false"]
    project.train(config_from_args(base + ["--stop-after", "1"]))
    with pytest.raises(ValueError, match="same --epochs"):
        project.train(config_from_args(base + ["--resume", "true", "--epochs", "3"]))
    project.train(config_from_args(base + ["--resume", "true"]))
    assert len(read_csv_log(tmp_path / "steps.csv")) == 6


def test_script_runs_as_a_module(tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    result = subprocess.run([sys.executable, "-m", "course_utils.capstone.train", *TINY, "--epochs", "1",
                             "--tensorboard", "false", "--out", str(tmp_path / "run")],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "done: 3 steps" in result.stdout
    bad = subprocess.run([sys.executable, "-m", "course_utils.capstone.train", "--learning-rate", "1"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unrecognized arguments" in bad.stderr


def test_checkpoint_and_weights_are_written_atomically_with_versions(tmp_path: Path, monkeypatch) -> None:
    """A crash while saving keeps the previous checkpoint loadable (notebook 09 §5), and both files say
    which library versions wrote them (notebook 09 §11)."""
    base = [*TINY, "--tensorboard", "false", "--out", str(tmp_path)]
    project.train(config_from_args(base + ["--stop-after", "1"]))
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["epoch"] == 1
    assert state["versions"]["torch"] == torch.__version__, state.get("versions")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model.safetensors"), "pt") as weights:
        assert weights.metadata()["torch"] == torch.__version__, weights.metadata()

    def dies_mid_write(obj, file, *args, **kwargs):  # a kill or a full disk halfway through the file
        handle = file if hasattr(file, "write") else open(file, "wb")
        handle.write(b"PK\x03\x04 half a checkpoint")
        handle.flush()
        raise OSError("no space left on device")

    monkeypatch.setattr(torch, "save", dies_mid_write)
    with pytest.raises(OSError, match="no space left"):
        project.train(config_from_args(base + ["--resume", "true"]))
    monkeypatch.undo()
    survived = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert survived["epoch"] == 1, "expected the epoch-1 checkpoint to survive a crash during the next save"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
