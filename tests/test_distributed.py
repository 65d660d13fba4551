"""course_utils.distributed: real 2-process gloo jobs on loopback, failures reported, nothing left running."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import torch

import course_utils.distributed as d

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def _workers_left() -> list[psutil.Process]:
    """Child processes of this test process, except multiprocessing's resource_tracker helper."""
    left = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(child.cmdline()):
                left.append(child)
        except psutil.NoSuchProcess:
            pass
    return left


#: fork is the default on Linux (the notebook's path); spawn is what macOS and Windows learners get.
METHODS = ["fork", "spawn"] if sys.platform.startswith("linux") else ["spawn"]


def test_default_start_method_is_fork_only_on_linux() -> None:
    assert d.default_start_method() == ("fork" if sys.platform.startswith("linux") else "spawn")
    with pytest.raises(ValueError, match="expected start_method 'fork' or 'spawn'.*found 'forkserver'"):
        d.launch(d.rank_and_sum_worker, start_method="forkserver")


@pytest.mark.parametrize("method", METHODS)
def test_ddp_gradients_equal_big_batch_and_rank0_saves(tmp_path: Path, method: str) -> None:
    checkpoint = tmp_path / "ckpt.pt"
    results = d.launch(d.lesson_worker, world_size=2, checkpoint=str(checkpoint), start_method=method)
    model = d.make_model()
    x, y = d.make_batch()
    torch.nn.functional.mse_loss(model(x), y).backward()
    for result in results:
        for got, expected in zip(result["grads"], [p.grad for p in model.parameters()]):
            assert torch.allclose(got, expected, atol=1e-6)
    assert torch.equal(results[0]["final_params"], results[1]["final_params"])
    assert results[0]["epoch_losses"] == results[1]["epoch_losses"]
    for epoch in range(3):
        seen = [set(r["indices_seen"][epoch]) for r in results]
        assert not seen[0] & seen[1] and len(seen[0] | seen[1]) == 24
    for result in results:  # gloo's sockets (and every other socket of the workers) are loopback only
        assert result["local_addresses"], result["local_addresses"]
        assert all(ipaddress.ip_address(a).is_loopback for a in result["local_addresses"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]
    state = torch.load(checkpoint, weights_only=True)
    assert state["epoch"] == 2 and not any(k.startswith("module.") for k in state["model"])
    assert not _workers_left()
    big = [p.grad for p in model.parameters()]
    _check_lesson_extras(results, big)


def _check_lesson_extras(results: list[dict], big: list[torch.Tensor]) -> None:
    """The overlap, no_sync, model-parallel and SyncBatchNorm parts of the lesson worker."""
    names = [name for name, _ in d.make_model().named_parameters()][::-1]  # backward runs last layer first
    expected = [e for n in names for e in (f"gradient ready: {n}", f"all-reduce launched: {n}")]
    assert results[0]["overlap_events"] == results[1]["overlap_events"] == expected
    inside = [r["inside_no_sync"] for r in results]
    assert all(not torch.allclose(a, b) for a, b in zip(*inside))  # no all-reduce inside no_sync
    for r in results:
        assert all(torch.allclose(g, b, atol=1e-6) for g, b in zip(r["after_sync"], big))
    assert all(torch.equal(a, b) for a, b in zip(results[0]["after_sync"], results[1]["after_sync"]))
    stages = [r["pipeline"] for r in results]
    assert [s["param_bytes"] for s in stages] == [(4 * 8 + 8) * 4, (8 + 1) * 4]
    assert all(torch.allclose(g, b, atol=1e-6) for g, b in zip(stages[0]["grads"] + stages[1]["grads"], big))
    assert all(r["sync_batchnorm"] == "ValueError: SyncBatchNorm layers only work with GPU modules"
               for r in results)


def test_fsdp_stores_a_shard_per_rank_and_keeps_the_big_batch_gradients() -> None:
    results = d.launch(d.fsdp_gradients, world_size=2)
    model = d.make_model()
    x, y = d.make_batch()
    torch.nn.functional.mse_loss(model(x), y).backward()
    full = sum(p.numel() * p.element_size() for p in model.parameters())
    stored = [r["param_bytes"] for r in results]
    assert sum(stored) == full and max(stored) < full, (stored, full)  # DDP stores `full` on every rank
    for result in results:
        assert all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(result["grads"], model.parameters()))
    assert not _workers_left()


def _owner(folder: Path, pid: int, host: str, until: float) -> Path:
    folder.mkdir()
    (folder / d.OWNER_FILE).write_text(json.dumps({"pid": pid, "host": host, "until": until}))
    return folder


def test_clean_stale_folders_removes_only_folders_of_dead_launches(tmp_path: Path) -> None:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()  # its pid names no running process now
    host, soon = socket.gethostname(), time.time() + 600
    _owner(tmp_path / f"{d.FOLDER_PREFIX}dead", finished.pid, host, soon)
    _owner(tmp_path / f"{d.FOLDER_PREFIX}expired", os.getpid(), host, time.time() - 1)
    _owner(tmp_path / f"{d.FOLDER_PREFIX}running", os.getpid(), host, soon)
    _owner(tmp_path / f"{d.FOLDER_PREFIX}other-machine", finished.pid, "another-host", soon)
    _owner(tmp_path / "unrelated-dead", finished.pid, host, soon)
    (tmp_path / f"{d.FOLDER_PREFIX}no-owner-file").mkdir()
    (tmp_path / f"{d.FOLDER_PREFIX}bad-owner-file").mkdir()
    (tmp_path / f"{d.FOLDER_PREFIX}bad-owner-file" / d.OWNER_FILE).write_text("{not json")
    assert d.clean_stale_folders(tmp_path) == [f"{d.FOLDER_PREFIX}dead", f"{d.FOLDER_PREFIX}expired"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{d.FOLDER_PREFIX}bad-owner-file", f"{d.FOLDER_PREFIX}no-owner-file",
        f"{d.FOLDER_PREFIX}other-machine", f"{d.FOLDER_PREFIX}running", "unrelated-dead"]


KILLED_LAUNCH = """
import course_utils.distributed as d
d.launch(d.sleepy_worker, world_size=2, timeout_s=60)
"""


def test_a_killed_launch_leaves_a_folder_that_the_next_launch_removes(tmp_path: Path, monkeypatch) -> None:
    # A kernel restart kills the kernel's whole process group: launch's `finally` never runs.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    kernel = subprocess.Popen([sys.executable, "-c", KILLED_LAUNCH], env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(f"{d.FOLDER_PREFIX}*/rank1.log")) and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = psutil.Process(kernel.pid).children(recursive=True)
    os.killpg(kernel.pid, signal.SIGKILL)
    kernel.wait()
    psutil.wait_procs(workers, timeout=10)
    left = list(tmp_path.glob(f"{d.FOLDER_PREFIX}*"))
    assert len(left) == 1 and (left[0] / "rank1.log").exists(), left
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert [r["sum_of_ranks"] for r in d.launch(d.rank_and_sum_worker, world_size=2)] == [1.0, 1.0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("method", METHODS)
def test_a_crashing_rank_is_reported_not_hung(method: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where launch and torch write their files
    start = time.monotonic()
    with pytest.raises(d.WorkerFailed, match="rank 1 failed with ValueError: corrupted batch"):
        d.launch(d.crash_worker, world_size=2, timeout_s=170, start_method=method)
    assert time.monotonic() - start < 170
    assert not _workers_left()
    # nothing left behind: neither launch's folder nor torch's error file of the crashed rank
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("method", METHODS)
def test_timeout_stops_every_worker(method: str) -> None:
    with pytest.raises(TimeoutError, match="did not finish within 2 s"):
        d.launch(d.sleepy_worker, world_size=2, timeout_s=2, start_method=method)
    assert not _workers_left()


def test_notebook_functions_are_refused_with_advice() -> None:
    def local_worker(rank, world_size):
        return rank

    for worker in (local_worker, lambda rank, world_size: rank):
        with pytest.raises(ValueError, match="cannot import a function defined in a notebook"):
            d.launch(worker)
    with pytest.raises(ValueError, match="world_size >= 1"):
        d.launch(d.rank_and_sum_worker, world_size=0)


def _private_network_available() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _private_network_available(),
                    reason="needs `unshare -n` (root) to run torchrun in a private, loopback-only network")
def test_main_runs_under_torchrun_in_a_private_network() -> None:
    # torchrun's rendezvous store listens on all interfaces; in a fresh network namespace the only
    # interface is loopback, so nothing outside this machine can be reached or reach in.
    torchrun = Path(sys.executable).parent / "torchrun"
    command = (f"ip link set lo up && GLOO_SOCKET_IFNAME=lo timeout 240 {torchrun} --standalone "
               f"--nproc-per-node=2 -m course_utils.distributed")
    result = subprocess.run(["unshare", "-n", "sh", "-c", command], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "2 ranks, epoch losses [0.534, 0.5074, 0.4354]" in result.stdout
