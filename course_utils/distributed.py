"""Run small DistributedDataParallel (DDP) jobs on CPU from a notebook, on loopback only.

:func:`launch` starts ``world_size`` worker processes, collects what each worker returns, and
always cleans up: a worker that raises gives a :class:`WorkerFailed` naming the rank and
its error, a job that runs past ``timeout_s`` is killed and gives ``TimeoutError``, and
no process is left behind either way. Its temporary folder goes when it returns; the folder of a
launch whose kernel was killed mid-way goes at the next launch (:func:`clean_stale_folders`).

How the processes start (:func:`default_start_method`): on Linux with *fork*, a copy of the
calling process that shares its memory and its already imported torch, so two workers cost
tens of MB and start in a fraction of a second; elsewhere (macOS, Windows) with *spawn*, a
fresh interpreter per worker that imports torch again (seconds and hundreds of MB each, see
``benchmarks/results/ddp_start.md``). A spawned worker finds its function by module and
name, so ``launch`` requires a module-level function from a .py file with either method:
code written against this module runs unchanged on every platform. The workers live here.

Network safety: the workers meet through a file (``torch.distributed.FileStore`` in a
temporary folder), so no rendezvous server listens on any interface, and gloo's own
sockets are pinned to the loopback interface (``GLOO_SOCKET_IFNAME=lo``).

Example (``launch`` itself starts processes, which takes seconds; see tests/test_distributed.py):
    >>> from course_utils.distributed import launch, make_batch, rank_and_sum_worker
    >>> x, y = make_batch()
    >>> tuple(x.shape), tuple(y.shape)
    ((8, 4), (8, 1))
    >>> default_start_method() in ("fork", "spawn")
    True
    >>> launch(lambda rank, world_size: rank)
    Traceback (most recent call last):
    ...
    ValueError: expected a module-level function from a .py file, found '<lambda>' from 'course_utils.distributed': a spawned process (the start method on macOS and Windows) cannot import a function defined in a notebook. Put it in a module.
    >>> launch(rank_and_sum_worker, start_method="forkserver")
    Traceback (most recent call last):
    ...
    ValueError: expected start_method 'fork' or 'spawn' (or None for default_start_method()), found 'forkserver'

    ``launch(rank_and_sum_worker, world_size=2)`` returns one dict per rank, each with
    ``sum_of_ranks == 1.0``.
"""

from __future__ import annotations

from course_utils.i18n import t

import datetime
import json
import logging
import multiprocessing
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

#: Every launch works in a fresh temporary folder with this prefix, holding OWNER_FILE.
FOLDER_PREFIX = "course-ddp-"
OWNER_FILE = "launcher.json"

#: Environment every worker gets before the process group starts (loopback only).
LOOPBACK_ENV = {"GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1"}


def default_start_method() -> str:
    """``"fork"`` on Linux, ``"spawn"`` elsewhere (fork is unavailable on Windows and unsafe on macOS).

    ``"spawn"`` on Linux too when the process forced it (``multiprocessing.set_start_method("spawn",
    force=True)``, as the course's tests do to run the notebooks the way macOS and Windows do).
    """
    if multiprocessing.get_start_method(allow_none=True) == "spawn":
        return "spawn"
    return "fork" if sys.platform.startswith("linux") else "spawn"


class WorkerFailed(RuntimeError):
    """A worker process raised or died; the message names the rank and its error."""


# --- the model and data every rank builds identically -----------------------------------------

def make_model(seed: int = 0) -> nn.Module:
    """A tiny MLP (4 -> 8 -> 1); the same seed gives the same weights in every process."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def make_batch(n: int = 8, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic regression batch ``(x[n, 4], y[n, 1])``."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen)
    y = x.sum(dim=1, keepdim=True).sin() + 0.1 * torch.randn(n, 1, generator=gen)
    return x, y


# --- the workers (each runs in its own process; the process group is already up) -------------

def rank_and_sum_worker(rank: int, world_size: int) -> dict[str, Any]:
    """Smallest possible job: all-reduce each rank's number."""
    value = torch.tensor([float(rank)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)  # every rank ends with the same sum
    return {"rank": rank, "world_size": world_size, "sum_of_ranks": value.item()}


def ddp_gradients(rank: int, world_size: int) -> list[torch.Tensor]:
    """Each rank takes its share of the global batch; DDP averages the gradients."""
    model = DDP(make_model())                       # DDP broadcasts rank 0's weights at start
    x, y = make_batch()                             # the same global batch on every rank...
    mine = torch.arange(rank, len(x), world_size)   # ...but each rank uses only its shard
    loss = F.mse_loss(model(x[mine]), y[mine])      # mean over the LOCAL samples
    loss.backward()                                 # gradients are all-reduced (averaged) here
    return [p.grad.clone() for p in model.parameters()]


def ddp_train(rank: int, world_size: int, checkpoint: str, epochs: int = 3) -> dict[str, Any]:
    """A short DDP training run with DistributedSampler; only rank 0 writes the checkpoint."""
    x, y = make_batch(n=24, seed=2)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)  # rank/world from the group
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    model = DDP(make_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    epoch_losses, seen = [], []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # a different shuffle every epoch, identical on every rank
        seen.append(list(sampler))
        total = torch.zeros(2)  # (sum of losses, number of batches), summed over ranks below
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += torch.stack([loss.detach(), torch.tensor(1.0)])
        dist.all_reduce(total)  # one collective per epoch for logging, not one per step
        epoch_losses.append((total[0] / total[1]).item())
        if rank == 0:  # one writer: all ranks hold identical weights
            state = {"model": model.module.state_dict(), "epoch": epoch}
            torch.save(state, checkpoint + ".tmp")
            os.replace(checkpoint + ".tmp", checkpoint)
    dist.barrier()  # nobody leaves (or reads the checkpoint) before rank 0 has written it
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"epoch_losses": epoch_losses, "indices_seen": seen, "final_params": flat}


def local_addresses() -> list[str]:
    """The local IP addresses of this process's network sockets (gloo's connections included)."""
    import psutil

    return sorted({c.laddr.ip for c in psutil.Process().net_connections(kind="inet") if c.laddr})


def overlap_events(rank: int, world_size: int) -> list[str]:
    """The order of events in a DDP backward: gradients ready, bucket all-reduces launched.

    ``bucket_cap_mb`` is tiny so that every parameter gets its own bucket; a comm hook (which
    DDP calls when a bucket is ready) notes the bucket, then runs the usual averaging all-reduce.
    Returns the events of the second backward (the first one uses a single bucket).
    """
    model = DDP(make_model(), bucket_cap_mb=1e-6)
    names = {id(p): name for name, p in model.module.named_parameters()}
    events: list[str] = []
    for p in model.module.parameters():
        p.register_post_accumulate_grad_hook(lambda p: events.append(f"gradient ready: {names[id(p)]}"))

    def noting_hook(state, bucket):  # DDP calls this when a bucket's gradients are all ready
        events.append("all-reduce launched: " + ", ".join(names[id(p)] for p in bucket.parameters()))
        return default_hooks.allreduce_hook(state, bucket)

    model.register_comm_hook(None, noting_hook)
    x, y = make_batch()
    mine = torch.arange(rank, len(x), world_size)
    for _ in range(2):  # DDP puts everything in one bucket for the first backward, then rebuilds
        events.clear()  # the buckets in the order the gradients arrived: the second one is typical
        model.zero_grad()
        F.mse_loss(model(x[mine]), y[mine]).backward()
    return events


def no_sync_gradients(rank: int, world_size: int) -> dict[str, list[torch.Tensor]]:
    """Gradient accumulation over 2 micro-batches, the first one inside ``no_sync()``."""
    model = DDP(make_model())
    x, y = make_batch()
    mine = torch.arange(rank, len(x), world_size)
    first, second = mine[: len(mine) // 2], mine[len(mine) // 2:]
    with model.no_sync():  # backward accumulates locally, no all-reduce
        (F.mse_loss(model(x[first]), y[first]) / 2).backward()
    inside = [p.grad.clone() for p in model.parameters()]
    (F.mse_loss(model(x[second]), y[second]) / 2).backward()  # this backward all-reduces
    return {"inside_no_sync": inside, "after_sync": [p.grad.clone() for p in model.parameters()]}


def pipeline_gradients(rank: int, world_size: int) -> dict[str, Any]:
    """Model parallelism: rank 0 holds layers 0-1 of ``make_model()``, rank 1 holds layer 2.

    Activations travel forward from rank 0 to rank 1, the gradient of those activations travels
    back; each rank stores and updates only its own layers. (Needs ``world_size == 2``.)
    """
    stage = make_model()[:2] if rank == 0 else make_model()[2:]  # same weights, one part each
    x, y = make_batch()
    if rank == 0:
        hidden = stage(x)
        dist.send(hidden.detach(), dst=1)        # forward: activations to the next stage
        grad_hidden = torch.empty_like(hidden)
        dist.recv(grad_hidden, src=1)            # backward: d loss / d activations comes back
        hidden.backward(grad_hidden)
    else:
        hidden = torch.empty(len(x), stage[0].in_features)
        dist.recv(hidden, src=0)
        hidden.requires_grad_(True)
        F.mse_loss(stage(hidden), y).backward()
        dist.send(hidden.grad, dst=0)
    return {"param_bytes": sum(p.numel() * p.element_size() for p in stage.parameters()),
            "grads": [p.grad.clone() for p in stage.parameters()]}


def fsdp_gradients(rank: int, world_size: int) -> dict[str, Any]:
    """FSDP2 (``fully_shard``) on ``make_model()``: each rank stores only its shard of every parameter.

    Returns the bytes of parameters this rank stores, and the full gradients (gathered from the
    shards) after one backward on this rank's shard of the batch. Not part of the notebook's
    launch: the first ``fully_shard`` call imports the compiler stack (seconds per process).
    """
    from torch.distributed.fsdp import fully_shard

    model = make_model()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)  # each layer's parameters are gathered just before it runs
    fully_shard(model)
    stored = sum(p.to_local().numel() * p.element_size() for p in model.parameters())
    x, y = make_batch()
    mine = torch.arange(rank, len(x), world_size)
    F.mse_loss(model(x[mine]), y[mine]).backward()  # gradients are reduce-scattered to the shards
    return {"param_bytes": stored, "grads": [p.grad.full_tensor() for p in model.parameters()]}


def sync_batchnorm_on_cpu(rank: int, world_size: int) -> str:
    """Wrap a model with SyncBatchNorm in DDP on CPU; returns the error text (or "ran")."""
    model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))
    try:
        DDP(model)(make_batch()[0])
    except ValueError as error:
        return f"{type(error).__name__}: {error}"
    return "ran"


def lesson_worker(rank: int, world_size: int, checkpoint: str) -> dict[str, Any]:
    """Notebook 13 in one launch (starting processes is the slow part)."""
    result = {"rank": rank, "grads": ddp_gradients(rank, world_size),
              "overlap_events": overlap_events(rank, world_size),
              **no_sync_gradients(rank, world_size),
              "sync_batchnorm": sync_batchnorm_on_cpu(rank, world_size),
              **ddp_train(rank, world_size, checkpoint)}
    if world_size == 2:
        result["pipeline"] = pipeline_gradients(rank, world_size)
    return result | {"local_addresses": local_addresses()}


def crash_worker(rank: int, world_size: int) -> dict[str, Any]:
    """Rank 1 fails before the all-reduce, so rank 0 would wait for it forever."""
    grad = torch.full((3,), float(rank))
    if rank == 1:
        raise ValueError("corrupted batch on rank 1")
    dist.all_reduce(grad)  # rank 0 waits here for a rank that will never arrive
    return {"rank": rank, "grad": grad}


def sleepy_worker(rank: int, world_size: int, seconds: float = 60.0) -> dict[str, Any]:
    """Never finishes in time (used to test the timeout)."""
    time.sleep(seconds)
    return {"rank": rank}


# --- plumbing: start, meet, collect, clean up ---------------------------------------------------

def _entry(rank: int, worker: Callable[..., Any], world_size: int, folder: str,
           kwargs: dict[str, Any], group_timeout_s: float) -> None:
    """What each worker process runs first: set up, join the group, run ``worker``, save its result."""
    log = open(os.path.join(folder, f"rank{rank}.log"), "w", buffering=1)  # keep the notebook clean
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log  # a forked worker must not write through the kernel's streams
    os.environ.update(LOOPBACK_ENV)
    if os.environ.get("COURSE_NETGUARD") == "1":
        import course_utils.netguard as netguard

        netguard.install()
    torch.set_num_threads(1)
    store = dist.FileStore(os.path.join(folder, "store"), world_size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=group_timeout_s))
    try:
        result = worker(rank, world_size, **kwargs)
        torch.save(result, os.path.join(folder, f"rank{rank}.pt"))
    except BaseException as exc:  # note when and why, so launch can name the FIRST failure
        with open(os.path.join(folder, f"rank{rank}.error"), "w") as handle:
            handle.write(f"{time.time():.6f} {type(exc).__name__}: {exc}".splitlines()[0])
        raise
    finally:
        dist.destroy_process_group()


def _importable(fn: Callable[..., Any]) -> bool:
    """True when a fresh process can find ``fn`` by its module and qualified name."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return False
    found: Any = module
    for part in getattr(fn, "__qualname__", "<?>").split("."):
        found = getattr(found, part, None)
    return found is fn


def _first_error(folder: str) -> tuple[int, str] | None:
    """(rank, "Type: message") of the earliest recorded worker exception: the cause, not an echo."""
    errors = []
    for path in Path(folder).glob("rank*.error"):
        stamp, _, message = path.read_text().partition(" ")
        errors.append((float(stamp), int(path.stem[4:]), message))
    return min(errors)[1:] if errors else None


def _log_tail(folder: str, rank: int, lines: int = 6) -> str:
    path = Path(folder) / f"rank{rank}.log"
    text = path.read_text(errors="replace").strip() if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def launch(worker: Callable[..., Any], world_size: int = 2, timeout_s: float = 180.0,
           start_method: str | None = None, **kwargs: Any) -> list[Any]:
    """Run ``worker(rank, world_size, **kwargs)`` in ``world_size`` new processes.

    Returns the workers' return values, ordered by rank. ``worker`` must be importable (a
    module-level function in a .py file) and return something ``torch.save`` can store.
    ``start_method`` is ``"fork"`` or ``"spawn"``; ``None`` uses :func:`default_start_method`.
    """
    if start_method is None:
        start_method = default_start_method()
    if start_method not in ("fork", "spawn"):
        raise ValueError(t("expected start_method 'fork' or 'spawn' (or None for default_start_method()), "
                           "found {found}", found=repr(start_method)))
    if world_size < 1:
        raise ValueError(t("expected world_size >= 1, found {world_size}", world_size=world_size))
    if not _importable(worker):
        raise ValueError(t("expected a module-level function from a .py file, found {name} from {module}: a "
                           "spawned process (the start method on macOS and Windows) cannot import a function "
                           "defined in a notebook. Put it in a module.", name=repr(worker.__qualname__),
                           module=repr(worker.__module__)))
    clean_stale_folders()  # left by launches whose kernel was killed (a restart) before it could clean up
    folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "until": time.time() + timeout_s + 60}
    (Path(folder) / OWNER_FILE).write_text(json.dumps(owner))
    context = mp.start_processes(_entry, args=(worker, world_size, folder, kwargs, timeout_s),
                                 nprocs=world_size, join=False, start_method=start_method)
    deadline = time.monotonic() + timeout_s
    spawn_log = logging.getLogger("torch.multiprocessing.spawn")
    level = spawn_log.level
    spawn_log.setLevel(logging.ERROR)  # we report failures ourselves, in one clear message
    try:
        while not context.join(timeout=0.2):
            if time.monotonic() > deadline:
                raise TimeoutError(t("the {world_size} workers did not finish within {timeout} s; they were "
                                     "stopped. A rank waiting for a collective that another rank never reaches "
                                     "looks exactly like this.", world_size=world_size, timeout=f"{timeout_s:g}"))
    except mp.ProcessRaisedException as exc:
        rank, error = _first_error(folder) or (exc.error_index, str(exc).strip().splitlines()[-1])
        raise WorkerFailed(t("worker rank {rank} failed with {error}. The other ranks were stopped (they would "
                             "have waited for it forever).", rank=rank, error=error)) from None
    except mp.ProcessExitedException as exc:
        raise WorkerFailed(t("worker rank {rank} died (exit code {code}). Its last output:\n{tail}",
                             rank=exc.error_index, code=exc.exit_code,
                             tail=_log_tail(folder, exc.error_index))) from None
    finally:
        spawn_log.setLevel(level)
        _stop(context)
        for error_file in context.error_files:  # torch writes a failed rank's traceback there, and keeps it
            if error_file and os.path.exists(error_file):
                os.remove(error_file)
        results = [Path(folder) / f"rank{r}.pt" for r in range(world_size)]
        loaded = [torch.load(p, weights_only=True) if p.exists() else None for p in results]
        shutil.rmtree(folder, ignore_errors=True)
    return loaded


def clean_stale_folders(root: str | os.PathLike[str] | None = None) -> list[str]:
    """Remove the work folders of earlier launches that can no longer clean up after themselves.

    ``launch`` works in a ``course-ddp-*`` folder under ``root`` (default: the system's temporary
    folder) and removes it when it returns. A kernel killed during a launch (a restart) never gets
    there, so each launch first calls this. A folder is removed only when it holds ``launch``'s
    owner file and either the launching process is gone (same machine) or the launch's own
    deadline has passed (so a folder of another machine sharing the folder goes too, but only once
    its launch must be over). Anything else is left alone. Returns the names of removed folders.

    Example:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> dead = Path(root, FOLDER_PREFIX + "old")
        >>> dead.mkdir()
        >>> _ = (dead / OWNER_FILE).write_text('{"pid": -1, "host": "", "until": 0}')
        >>> Path(root, FOLDER_PREFIX + "not-ours").mkdir()
        >>> clean_stale_folders(root)
        ['course-ddp-old']
        >>> sorted(p.name for p in Path(root).iterdir())
        ['course-ddp-not-ours']
    """
    import psutil

    removed = []
    for folder in sorted(Path(root or tempfile.gettempdir()).glob(FOLDER_PREFIX + "*")):
        try:
            owner = json.loads((folder / OWNER_FILE).read_text())
            pid, host, until = int(owner["pid"]), str(owner["host"]), float(owner["until"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a launch folder, or one still being created: not ours to judge
        launcher_gone = host == socket.gethostname() and not psutil.pid_exists(pid)
        if launcher_gone or time.time() > until:
            shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                removed.append(folder.name)
    return removed


def _stop(context: mp.ProcessContext) -> None:
    """Terminate, then kill, then reap every process of ``context``."""
    for process in context.processes:
        if process.is_alive():
            process.terminate()
    for process in context.processes:
        process.join(timeout=3)
        if process.is_alive():
            process.kill()
            process.join(timeout=3)


def main() -> None:
    """The same lesson under ``torchrun`` (which sets RANK, WORLD_SIZE, MASTER_ADDR/PORT)."""
    dist.init_process_group("gloo")  # env:// rendezvous from torchrun's variables
    rank, world_size = dist.get_rank(), dist.get_world_size()
    result = ddp_train(rank, world_size, checkpoint=os.path.join(tempfile.gettempdir(), "ddp.pt"))
    if rank == 0:
        print(t("{world_size} ranks, epoch losses {losses}", world_size=world_size,
                losses=[round(v, 4) for v in result['epoch_losses']]))
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
