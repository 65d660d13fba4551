"""course_utils.checkpoint: atomic saves survive SIGKILL, RNG states round-trip through
weights_only=True, resumes are bit-exact, keep-last-k + best, and bad input is explained."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import course_utils.checkpoint as ck
from course_utils.resume_demo import build, main, train


@pytest.fixture(autouse=True)
def one_thread():
    """Bit-exact comparisons and quick tiny models: one thread, restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _params(run) -> list[torch.Tensor]:
    return [p.detach().clone() for p in run.model.parameters()]


# --- atomic_save ---------------------------------------------------------------------------------

def test_atomic_save_round_trip_leaves_no_temp_file(tmp_path: Path) -> None:
    path = ck.atomic_save({"w": torch.arange(5.0)}, tmp_path / "a.pt")
    assert path == tmp_path / "a.pt"
    assert torch.equal(torch.load(path, weights_only=True)["w"], torch.arange(5.0))
    assert [p.name for p in tmp_path.iterdir()] == ["a.pt"]


def test_atomic_save_renames_a_synced_temp_file_from_the_same_folder(tmp_path, monkeypatch) -> None:
    calls: list[tuple] = []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "replace", lambda s, d: (calls.append(("replace", s, d)), real_replace(s, d))[1])
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(("fsync",)), real_fsync(fd))[1])
    ck.atomic_save({"x": 1}, tmp_path / "b.pt")
    replaces = [c for c in calls if c[0] == "replace"]
    assert len(replaces) == 1
    _, src, dst = replaces[0]
    assert Path(src).parent == tmp_path and Path(dst) == tmp_path / "b.pt"
    assert Path(src).name.startswith(".b.pt.") and Path(src).name.endswith(ck.TMP_SUFFIX)
    kinds = [c[0] for c in calls]
    assert kinds == ["fsync", "replace", "fsync"], "file fsync before the rename, folder fsync after"


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def test_failed_save_keeps_previous_file_and_removes_temp(tmp_path: Path) -> None:
    ck.atomic_save({"step": 1}, tmp_path / "last.pt")
    with pytest.raises(RuntimeError, match="cannot pickle"):
        ck.atomic_save({"step": 2, "bad": _Unpicklable()}, tmp_path / "last.pt")
    assert torch.load(tmp_path / "last.pt", weights_only=True) == {"step": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]


_KILL_SCRIPT = textwrap.dedent("""
    import sys, torch
    from course_utils.checkpoint import CheckpointManager
    manager = CheckpointManager(sys.argv[1], keep_last=100)
    manager.save({"step": 1, "w": torch.arange(10.0)}, step=1)
    print("saved step 1", flush=True)
    # 64 storages of 1 MiB: torch.save writes them one record at a time
    big = [torch.full((256, 1024), float(i)) for i in range(64)]
    step = 2
    while True:  # keep writing large checkpoints until killed
        manager.save({"step": step, "w": big}, step=step)
        step += 1
""")


@pytest.mark.slow
def test_sigkill_in_the_middle_of_a_save_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    folder = tmp_path / "ckpts"
    child = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(folder)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "saved step 1", child.stderr.read()
        seen = None
        deadline = time.monotonic() + 120
        while seen is None and time.monotonic() < deadline:  # wait until a big save is under way
            for p in folder.iterdir():
                try:
                    if p.name.endswith(ck.TMP_SUFFIX) and p.stat().st_size > 2**20:
                        seen = p
                except FileNotFoundError:  # renamed between listing and stat
                    pass
            time.sleep(0.001)
        assert seen is not None, "never caught the child writing a temp file"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=60)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    names = sorted(p.name for p in folder.iterdir())
    temps = [n for n in names if n.endswith(ck.TMP_SUFFIX)]
    assert temps, f"the kill should have left an unfinished temp file: {names}"
    latest = ck.find_latest(folder)
    assert latest is not None and not latest.name.endswith(ck.TMP_SUFFIX)
    assert all(p.name in names and not p.name.startswith(".") for p in ck.list_checkpoints(folder))
    checkpoint = ck.read_checkpoint(latest)  # the newest finished checkpoint loads...
    assert latest.name == f"ckpt-{checkpoint['step']:08d}.pt"
    if checkpoint["step"] == 1:
        assert torch.equal(checkpoint["w"], torch.arange(10.0))
    else:
        assert len(checkpoint["w"]) == 64 and torch.equal(checkpoint["w"][63], torch.full((256, 1024), 63.0))
    # ... while the unfinished one is (normally) a truncated zip that cannot be read
    complete = (folder / f"ckpt-{checkpoint['step']:08d}.pt").stat().st_size
    for name in temps:
        if checkpoint["step"] > 1 and (folder / name).stat().st_size < complete:
            with pytest.raises(ck.CheckpointError, match="truncated"):
                ck.read_checkpoint(folder / name)


# --- RNG state -----------------------------------------------------------------------------------

def _draw(generator: torch.Generator) -> tuple:
    return (torch.rand(3).tolist(), np.random.normal(size=3).tolist(), np.random.rand(),
            random.random(), random.gauss(0, 1), torch.randperm(10, generator=generator).tolist())


def test_rng_state_round_trips_through_weights_only_load(tmp_path: Path) -> None:
    generator = torch.Generator().manual_seed(3)
    np.random.seed(1)
    random.seed(2)
    np.random.standard_normal()  # leaves a cached Gaussian in NumPy's legacy state
    random.gauss(0, 1)  # and in Python's
    ck.atomic_save({"rng": ck.capture_rng_state(generator)}, tmp_path / "rng.pt")
    first = _draw(generator)
    state = torch.load(tmp_path / "rng.pt", weights_only=True)["rng"]
    _draw(generator)  # move every generator on
    ck.restore_rng_state(state, generator)
    assert _draw(generator) == first


def test_rng_state_holds_only_weights_only_types() -> None:
    def leaves(value):
        if isinstance(value, dict):
            for item in value.values():
                yield from leaves(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from leaves(item)
        else:
            yield value
    allowed = (torch.Tensor, int, float, str, type(None))
    assert all(isinstance(v, allowed) for v in leaves(ck.capture_rng_state(torch.Generator())))


def test_rng_errors_say_what_to_do() -> None:
    with pytest.raises(TypeError, match="torch.Generator"):
        ck.capture_rng_state("not a generator")
    with pytest.raises(ck.CheckpointError, match="capture_rng_state"):
        ck.restore_rng_state({"torch": torch.get_rng_state()})
    with pytest.raises(ck.CheckpointError, match="generator=None"):
        ck.restore_rng_state(ck.capture_rng_state(), torch.Generator())


# --- full checkpoints and exact resume -----------------------------------------------------------

def test_resume_from_checkpoint_is_bit_exact_and_partial_resumes_are_not(tmp_path: Path) -> None:
    straight = build(seed=0, epochs=3, n=96)
    train(straight, 3)
    expected = _params(straight)

    run = build(seed=0, epochs=3, n=96)
    train(run, 1)
    path = ck.save_checkpoint(tmp_path / "c.pt", run.model, run.optimizer, run.scheduler,
                              epoch=run.epoch, step=run.step, best_metric=0.5, generator=run.generator)

    def resume(**skip) -> list[torch.Tensor]:
        fresh = build(seed=99, epochs=3, n=96)
        options = dict(optimizer=fresh.optimizer, scheduler=fresh.scheduler, generator=fresh.generator)
        options.update(skip)
        meta = ck.load_checkpoint(path, fresh.model, **options)
        assert (meta["epoch"], meta["step"], meta["best_metric"]) == (1, run.step, 0.5)
        train(fresh, 2)
        return _params(fresh)

    assert all(torch.equal(a, b) for a, b in zip(resume(), expected))
    for skip in ({"optimizer": None}, {"scheduler": None}, {"generator": None},
                 {"restore_rng": False, "generator": None}):
        assert not all(torch.equal(a, b) for a, b in zip(resume(**skip), expected)), skip


@pytest.mark.slow
def test_resume_in_a_fresh_process_is_bit_exact(tmp_path: Path) -> None:
    """What notebook 09 describes: the resume runs in a new Python process (resume_demo's CLI)."""
    straight = build(seed=0, epochs=4)
    train(straight, 4)
    run = build(seed=0, epochs=4)
    train(run, 2)
    path = ck.save_checkpoint(tmp_path / "epoch-2.pt", run.model, run.optimizer, run.scheduler,
                              epoch=run.epoch, step=run.step, generator=run.generator)
    child = subprocess.run([sys.executable, "-m", "course_utils.resume_demo", "--resume", str(path),
                            "--epochs", "2", "--total-epochs", "4", "--out", str(tmp_path / "final.pt")],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr
    assert "resumed at epoch 2, step 16" in child.stdout and child.stderr == ""
    final = torch.load(tmp_path / "final.pt", weights_only=True)
    assert final["pid"] != os.getpid() and final["epoch"] == 4
    assert all(torch.equal(a, b) for a, b in zip(straight.model.state_dict().values(), final["model"].values()))


def test_scaler_and_extra_are_saved(tmp_path: Path) -> None:
    model = torch.nn.Linear(2, 1)
    scaler = torch.amp.GradScaler("cpu", init_scale=128.0)
    path = ck.save_checkpoint(tmp_path / "s.pt", model, scaler=scaler, epoch=2, step=7, extra={"note": "hi"})
    other = torch.amp.GradScaler("cpu", init_scale=2.0)
    checkpoint = ck.load_checkpoint(path, torch.nn.Linear(2, 1), scaler=other)
    assert other.get_scale() == 128.0 and checkpoint["extra"] == {"note": "hi"}


def test_resume_demo_main_runs_in_process(tmp_path: Path, capsys) -> None:
    run = build(seed=0, epochs=2)  # main() builds the default run: 8 batches per epoch
    train(run, 1)
    path = ck.save_checkpoint(tmp_path / "c.pt", run.model, run.optimizer, run.scheduler,
                              epoch=run.epoch, step=run.step, generator=run.generator)
    assert main(["--resume", str(path), "--epochs", "1", "--total-epochs", "2",
                 "--out", str(tmp_path / "final.pt")]) == 0
    assert "resumed at epoch 1" in capsys.readouterr().out
    final = torch.load(tmp_path / "final.pt", weights_only=True)
    assert final["epoch"] == 2 and len(final["losses"]) == 8


# --- map_location ----------------------------------------------------------------------------------

def test_saved_as_if_on_gpu_needs_map_location(tmp_path: Path) -> None:
    with ck.saved_as_if_on("cuda:0"):
        torch.save({"w": torch.ones(2)}, tmp_path / "gpu.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "cpu.pt")  # outside the block: a normal file
    assert torch.load(tmp_path / "cpu.pt", weights_only=True)["w"].device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="map_location"):
            torch.load(tmp_path / "gpu.pt", weights_only=True)
    for location in ("cpu", torch.device("cpu"), {"cuda:0": "cpu"}):
        loaded = ck.read_checkpoint(tmp_path / "gpu.pt", map_location=location)
        assert loaded["w"].device.type == "cpu" and torch.equal(loaded["w"], torch.ones(2))


# --- CheckpointManager -------------------------------------------------------------------------------

def test_manager_keeps_last_k_plus_best(tmp_path: Path) -> None:
    manager = ck.CheckpointManager(tmp_path / "run", keep_last=2, mode="min")
    for step, metric in [(1, 0.9), (2, 0.5), (3, 0.7), (4, 0.8)]:
        manager.save({"step": step, "metric": metric}, step=step, metric=metric)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "best.pt", "ckpt-00000003.pt", "ckpt-00000004.pt"]
    assert torch.load(manager.best(), weights_only=True)["step"] == 2
    assert manager.best_metric == 0.5 and manager.latest().name == "ckpt-00000004.pt"

    accuracy = ck.CheckpointManager(tmp_path / "acc", keep_last=1, mode="max", prefix="epoch")
    for step, metric in [(1, 0.6), (2, 0.8), (3, 0.7)]:
        accuracy.save({"step": step}, step=step, metric=metric)
    assert torch.load(accuracy.best(), weights_only=True)["step"] == 2
    assert [p.name for p in accuracy.checkpoints()] == ["epoch-00000003.pt"]


def test_latest_sorts_by_number_and_ignores_temp_and_other_files(tmp_path: Path) -> None:
    for name in ["ckpt-9.pt", "ckpt-10.pt", ".ckpt-11.pt.abc.tmp", "ckpt-12.pt.tmp", "best.pt",
                 "ckpt-final.pt", "notes.txt"]:
        (tmp_path / name).write_bytes(b"x")
    assert [p.name for p in ck.list_checkpoints(tmp_path)] == ["ckpt-9.pt", "ckpt-10.pt"]
    assert ck.find_latest(tmp_path).name == "ckpt-10.pt"
    assert ck.find_latest(tmp_path, prefix="epoch") is None


# --- bad input -------------------------------------------------------------------------------------

def test_bad_input_errors_say_expected_found_and_what_to_try(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match="last.pt"):
        ck.atomic_save({}, tmp_path)
    with pytest.raises(FileNotFoundError, match="mkdir"):
        ck.atomic_save({}, tmp_path / "missing" / "a.pt")
    (tmp_path / "other.pt").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="other.pt"):
        ck.read_checkpoint(tmp_path / "nope.pt")
    (tmp_path / "half.pt").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ck.CheckpointError, match="truncated"):
        ck.read_checkpoint(tmp_path / "half.pt")
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(ck.CheckpointError, match="expected list.pt to hold a dict, found list"):
        ck.read_checkpoint(tmp_path / "list.pt")

    model = torch.nn.Linear(2, 1)
    weights_only = ck.save_checkpoint(tmp_path / "w.pt", model)
    with pytest.raises(ck.CheckpointError, match="pass optimizer=None"):
        ck.load_checkpoint(weights_only, model, torch.optim.SGD(model.parameters(), lr=0.1))
    torch.save({"model": model.state_dict()}, tmp_path / "no_rng.pt")
    with pytest.raises(ck.CheckpointError, match="restore_rng=False"):
        ck.load_checkpoint(tmp_path / "no_rng.pt", model)
    assert "model" in ck.load_checkpoint(tmp_path / "no_rng.pt", model, restore_rng=False)
    with pytest.raises(TypeError, match="nn.Module"):
        ck.make_checkpoint({"not": "a model"})

    with pytest.raises(ValueError, match="keep_last"):
        ck.CheckpointManager(tmp_path / "m", keep_last=0)
    with pytest.raises(ValueError, match="'min'"):
        ck.CheckpointManager(tmp_path / "m", mode="best")
    with pytest.raises(ValueError, match="prefix"):
        ck.CheckpointManager(tmp_path / "m", prefix="a/b")
    with pytest.raises(ValueError, match="step"):
        ck.CheckpointManager(tmp_path / "m").save({}, step=-1)
