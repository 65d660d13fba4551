# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 13 · Distributed data parallel: many processes, one model
#
# One device too slow? Run **several copies of your training script**, one per GPU (or CPU
# process), each on a different slice of every batch, and average their gradients before every
# optimizer step to keep them identical. That is `DistributedDataParallel` (DDP), PyTorch's
# standard way to train on many GPUs and machines. Here two worker processes run DDP on this CPU
# (backend `gloo`) and report back; we check the central promise: the averaged gradients equal the
# gradients of one big batch.
#
# ## You will learn (≈ 45 min)
#
# 1. What DDP does (replicas, shards, an all-reduce of gradients) and why it equals one big batch.
# 2. How `DistributedSampler` shards a dataset, pads it, and why `set_epoch` matters.
# 3. How to launch worker processes from a notebook, collect their results, and get a clear
#    message instead of a hang when one of them crashes.
# 4. How to save checkpoints once (rank 0) and without the `module.` prefix.
# 5. What changes as you scale (learning rate, `no_sync`, BatchNorm, parameters without gradients,
#    evaluation, models too big for one device), and how the same code runs on many GPUs and
#    machines with `torchrun` (the exact commands).

# %%
# Makes course_utils importable: installed (laptop, Binder), in a folder above (JupyterHub),
# or installed from the course's repository without touching torch (Colab). setup() says which.
import importlib.util, os, pathlib, subprocess, sys
COURSE_REPO = "git+https://github.com/pytorch-inside/course"  # a fork: see pyproject.toml [tool.course]
if importlib.util.find_spec("course_utils"):
    os.environ["COURSE_BOOTSTRAP"] = "installed"
elif here := next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
                   if (p / "course_utils" / "__init__.py").is_file()), None):
    sys.path.insert(0, str(here))
    os.environ["COURSE_BOOTSTRAP"] = f"folder:{here}"
else:
    source = os.environ.get("COURSE_REPO_URL", COURSE_REPO)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", source], check=True)
    importlib.invalidate_caches()
    os.environ["COURSE_BOOTSTRAP"] = f"pip:{source}"

from course_utils.setup import setup

info = setup(seed=0)

# %%
import inspect
import shutil
import tempfile
from pathlib import Path

import psutil
import torch
from torch.nn import functional as F
from torch.utils.data import DistributedSampler

import course_utils.distributed as ddp_lab
from course_utils.claims import confirm
from course_utils.exercises import check

workdir = Path(tempfile.mkdtemp(prefix="nb13-"))  # every file this notebook writes goes here


# %% [markdown]
# ## 1. The idea, in one process first
#
# Data parallelism in four words: **same model, different data**. A *world* of `W` processes runs
# together, and each process has a *rank* `0 … W-1`:
#
# 1. every rank builds the same model (DDP copies rank 0's weights to the others at start-up);
# 2. every rank takes its own shard of the batch and computes forward and backward on it;
# 3. the gradients are **all-reduced**: summed across ranks, divided by `W`, and every rank
#    receives the result;
# 4. every rank runs the same optimizer step on the same gradients, so the replicas stay equal.
#
# Why is that correct? Take a mean-reduced loss over `B` samples, split into `W` equal shards. It is
# the mean of the `W` shard losses, and the gradient of a mean is the mean of the gradients. So the
# average of the shard gradients *is* the big-batch gradient.
#
# Check it in this process before involving any other. The model and the data come from
# `course_utils/distributed.py`, the module this notebook's workers run from:
#
# - `make_model()` builds a tiny MLP, `Linear(4, 8)`, `Tanh`, `Linear(8, 1)`, seeded so that every
#   process gets the same weights;
# - `make_batch()` returns a fixed regression batch, `x` of shape `[8, 4]` and `y` of shape `[8, 1]`.

# %%
print(inspect.getsource(ddp_lab.make_model))


# %%
def gradients(model, x, y):
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


x, y = ddp_lab.make_batch()          # the global batch: 8 samples
model = ddp_lab.make_model()
big_batch = gradients(model, x, y)
shards = [gradients(model, x[r::2], y[r::2]) for r in range(2)]   # what 2 ranks would compute
averaged = [(g0 + g1) / 2 for g0, g1 in zip(*shards)]
summed = [g0 + g1 for g0, g1 in zip(*shards)]
print("shard gradients differ from each other:",
      not torch.allclose(shards[0][0], shards[1][0]))
print("mean of shard gradients == big-batch gradient:",
      all(torch.allclose(a, b, atol=1e-6) for a, b in zip(averaged, big_batch)))
print("sum of shard gradients  == big-batch gradient:",
      all(torch.allclose(s, b, atol=1e-6) for s, b in zip(summed, big_batch)))


# %% [markdown]
# The sum is twice too large: the averaging step matters. DDP divides by the world size for you;
# code that all-reduces by hand must do it itself.
#
# Two details keep the equality exact:
#
# - the shards have **equal sizes** (otherwise the mean of means is not the mean);
# - the loss is a **mean** over the local samples.
#
# ### Exercise 1 — `average_gradients`
#
# Simulate what `dist.all_reduce(grad, op=ReduceOp.SUM)` followed by `grad /= world_size` leaves
# on every rank. `per_rank[r][i]` is gradient `i` computed on rank `r`; return a list with, for
# every rank, its list of averaged gradients, in the gradients' own dtype. (A real `all_reduce`
# overwrites each rank's tensors in place; here you return new ones and leave `per_rank` and its
# tensors unchanged.)

# %%
def average_gradients(per_rank: list[list[torch.Tensor]]) -> list[list[torch.Tensor]]:
    ### BEGIN SOLUTION
    world_size = len(per_rank)
    summed = [torch.stack(grads).sum(dim=0) for grads in zip(*per_rank)]  # all_reduce(SUM)
    return [[g / world_size for g in summed] for _ in range(world_size)]
    ### END SOLUTION


# %%
check("13.average_gradients", average_gradients)

# %% [markdown]
# ## 2. Sharding the data: `DistributedSampler`
#
# Two rules for the data:
#
# - each rank must see a *different* part of the dataset;
# - every rank must run the *same number of steps*, because each step ends in an all-reduce that
#   waits for all ranks.
#
# `DistributedSampler` does both. It pads the index list by repeating its first indices until its
# length divides by the world size. Then it gives rank `r` every `W`-th index, starting at `r`.
#
# It needs no process group when you pass `num_replicas` and `rank` yourself, so you can inspect it
# right here.

# %%
dataset = list(range(10))          # any object with a length works as a "dataset" here
for world_size in (2, 4):
    for rank in range(world_size):
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)
        print(f"world_size={world_size} rank={rank}: {list(sampler)}")

# %% [markdown]
# With 4 ranks, 10 indices become 12: indices 0 and 1 are used twice in that epoch (ranks 2 and 3
# get them). That tiny duplication is the price of equal shards. `drop_last=True` drops the tail
# instead.
#
# With `shuffle=True` the sampler shuffles with a generator seeded by `seed + epoch`. The epoch is
# whatever you last passed to `set_epoch`. Forget to call it and **every epoch uses the same
# order**:

# %%
sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
print("without set_epoch:", [list(sampler) for epoch in range(3)])
with_set_epoch = []
for epoch in range(3):
    sampler.set_epoch(epoch)
    with_set_epoch.append(list(sampler))
print("with set_epoch:   ", with_set_epoch)


# %% [markdown]
# ### Exercise 2 — `shard_indices`
#
# Write `shard_indices(n, rank, world_size)` returning the indices rank `rank` uses, as a list of
# ints, exactly like `DistributedSampler(shuffle=False)`: pad `range(n)` by repeating from its
# start until its length is a multiple of `world_size`, then take every `world_size`-th index
# starting at `rank`. (The padding may need to repeat the list more than once: `n=2`,
# `world_size=5`.)

# %%
def shard_indices(n: int, rank: int, world_size: int) -> list[int]:
    ### BEGIN SOLUTION
    per_rank = -(-n // world_size)            # ceil(n / world_size)
    total = per_rank * world_size
    indices = list(range(n))
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[rank:total:world_size]
    ### END SOLUTION


# %%
check("13.shard_indices", shard_indices)

# %% [markdown]
# ## 3. Real processes, launched from this notebook
#
# Each rank is a separate Python process. There are two ways to start one:
#
# - **fork** (Linux): the new process is a copy of this one. It shares this kernel's memory,
#   including the torch it already imported, so it starts in a fraction of a second and costs
#   little extra memory.
# - **spawn** (the only choice on Windows, the default on macOS): a fresh Python interpreter
#   that imports torch again and then imports the function it must run *by module and name*.
#
# (`torchrun`, section 8, is neither. It starts fresh interpreters that each run your whole script
# from the top, as `__main__`; no function is looked up by name.)
#
# `ddp_lab.launch` forks on Linux and spawns elsewhere. Fork is by far the cheaper start: on the
# course's test machine, starting two workers by spawn took about 40 times as long as by fork, and
# about 30 times the extra memory (`benchmarks/results/ddp_start.md`).
#
# A function defined in a notebook cell lives in no importable module, so a spawned worker could
# not find it. That is why the workers of this notebook live in `course_utils/distributed.py`. And
# `launch` refuses a notebook function on every platform, so your code does not break when it moves
# to a Mac or to Windows.
#
# Here is the heart of it, the gradient step every rank runs:

# %%
print(inspect.getsource(ddp_lab.ddp_gradients))

# %% [markdown]
# `DDP(model)` registers hooks on the parameters. During `backward()`, as soon as a bucket of
# gradients is ready, it starts an all-reduce of that bucket. So communication overlaps with the
# rest of the backward pass (section 4 shows the order). When `backward()` returns, every rank
# holds the averaged gradients.
#
# Before that, each worker joins a **process group**. These lines from `_entry` (the function each
# worker process runs first) are all it takes:

# %%
source = inspect.getsource(ddp_lab._entry)
print("\n".join(line for line in source.splitlines()
                if "FileStore" in line or "init_process_group" in line or "timeout=" in line
                or "LOOPBACK_ENV" in line))
print("LOOPBACK_ENV =", ddp_lab.LOOPBACK_ENV)

# %% [markdown]
# - **backend `gloo`** runs collectives on CPUs (and is what you use for debugging). A
#   *collective* is an operation every rank of the group joins, such as the all-reduce. On NVIDIA
#   GPUs you use **`nccl`**, which moves gradients GPU-to-GPU.
# - **rendezvous**: the ranks must find each other and exchange addresses. `torchrun` and
#   `init_method="env://"` use a small TCP key-value store at `MASTER_ADDR:MASTER_PORT` (or the
#   rendezvous endpoint). Here the ranks meet through a *file* instead (`FileStore` in a temporary
#   folder), so nothing listens on the network at all. `GLOO_SOCKET_IFNAME=lo` pins gloo's own
#   connections to the loopback interface, and `MASTER_ADDR` points at `127.0.0.1` for any code
#   that looks for it. This notebook never talks to another machine: section 5 prints the
#   addresses the workers' sockets actually used.
# - **timeout**: a collective that some rank never joins fails after this time instead of waiting
#   forever.
#
# `launch` starts the processes and waits, with its own deadline. Then it gathers what each worker
# returned and stops every process it started.
#
# One launch runs everything the workers of this notebook do (`ddp_lab.lesson_worker`): the
# gradient step above, a short training run (section 5) and the experiments of section 7. The cell
# prints how this kernel started them (fork or spawn) and how long the launch took, from start to
# stop, work included.

# %% tags=["nbval-ignore-output"]
import time

checkpoint_path = workdir / "ddp_checkpoint.pt"
start = time.perf_counter()
results = ddp_lab.launch(ddp_lab.lesson_worker, world_size=2, checkpoint=str(checkpoint_path))
print(f"2 workers started ({ddp_lab.default_start_method()}), ran and stopped in "
      f"{time.perf_counter() - start:.1f} s")
confirm([r["rank"] for r in results] == [0, 1], "both workers, rank 0 and rank 1, reported back")

# %% [markdown]
# The printed time is this launch on your machine: it depends on the machine, on how busy it is,
# and on the start method. With fork it stays within seconds. With spawn, expect several seconds
# more: every worker imports torch again before it starts.
#
# ## 4. Check: DDP's gradients are the big-batch gradients
#
# Each worker returned the gradients it held after `backward()`. Compare them with the
# single-process big-batch gradients computed in section 1.

# %%
for rank, result in enumerate(results):
    worst = max((g - b).abs().max().item() for g, b in zip(result["grads"], big_batch))
    print(f"rank {rank}: max |DDP gradient - big-batch gradient| < 1e-6: {worst < 1e-6}")
print("rank 0 and rank 1 hold identical gradients:",
      all(torch.equal(a, b) for a, b in zip(results[0]["grads"], results[1]["grads"])))
print("last-layer bias gradient, DDP vs big batch:",
      f"{results[0]['grads'][-1].item():.4f} vs {big_batch[-1].item():.4f}")
confirm(all(torch.allclose(g, b, atol=1e-6) for g, b in zip(results[0]["grads"], big_batch)),
        "DDP's averaged gradients equal the big-batch gradients (to 1e-6)")

# %% [markdown]
# ### Communication during the backward pass
#
# DDP groups the gradients into *buckets*, 25 MB each by default. It all-reduces a bucket as soon
# as all its gradients exist, while autograd goes on computing the gradients of earlier layers.
#
# To make this visible, the worker did two things:
#
# - it made every parameter its own bucket (`bucket_cap_mb` tiny);
# - it registered a *communication hook*, the function DDP calls to reduce a ready bucket. Its hook
#   notes the bucket, then runs the usual averaging all-reduce.
#
# The events of one backward pass on rank 0:

# %%
print(inspect.getsource(ddp_lab.overlap_events))

# %%
for event in results[0]["overlap_events"]:
    print(event)

# %% [markdown]
# The all-reduce of the last layer's gradients starts before the first layer's gradients even
# exist. On a GPU cluster, the network works while the GPU still computes.
#
# (DDP uses a single bucket for the first backward pass. Then it rebuilds its buckets in the order
# the gradients arrived, so the worker reports the second pass.)
#
# Bigger buckets mean fewer, more efficient messages that start later; `bucket_cap_mb` is the knob.

# %% [markdown]
# ## 5. Training with `DistributedSampler`, saving on rank 0
#
# The second half of the lesson worker is an ordinary training loop (notebook 06). The cell below
# prints all of it that matters for DDP, in the order a worker runs it:
#
# 1. `_entry` builds the **process group** before the worker function starts (section 3);
# 2. `ddp_train` builds a `DistributedSampler`, which reads the rank and world size from the process
#    group, and hands it to the `DataLoader`;
# 3. it **wraps the model**: `model = DDP(make_model())`;
# 4. the loop calls `sampler.set_epoch(epoch)`, does one `all_reduce` per epoch to log the loss
#    averaged over all ranks, and saves on rank 0 only.

# %%
entry = inspect.getsource(ddp_lab._entry)
print("# _entry, before the worker runs: join the process group")
print("\n".join(line for line in entry.splitlines()
                if "FileStore" in line or "init_process_group" in line or "timeout=" in line))
source = inspect.getsource(ddp_lab.ddp_train)
print("\n# ddp_train: data, sampler, the DDP wrapper, then the loop")
print(source[source.index("    x, y = make_batch"):source.index("    dist.barrier")])

# %% [markdown]
# On CPUs, `DDP(model)` takes no `device_ids`. On GPUs each process drives one GPU and the wrap
# line becomes `DDP(model.to(device), device_ids=[local_rank])`, as in the script of section 8.

# %% [markdown]
# What came back:
#
# - each rank saw a disjoint half of the 24 samples in every epoch, in a new order each epoch;
# - the logged losses are identical on both ranks (they were all-reduced);
# - the final weights are identical on both ranks, bit for bit, although each rank only ever saw
#   its own half of the data.

# %%
for epoch in range(3):
    seen = [set(r["indices_seen"][epoch]) for r in results]
    print(f"epoch {epoch}: rank 0 first indices {results[0]['indices_seen'][epoch][:5]}, "
          f"overlap {len(seen[0] & seen[1])}, together {len(seen[0] | seen[1])} of 24")
print("epoch losses (rank 0):", [round(v, 4) for v in results[0]["epoch_losses"]])
print("epoch losses (rank 1):", [round(v, 4) for v in results[1]["epoch_losses"]])
print("final weights identical on both ranks:",
      torch.equal(results[0]["final_params"], results[1]["final_params"]))
print("local addresses of the workers' sockets:", sorted({a for r in results for a in r["local_addresses"]}))

# %% [markdown]
# Why only rank 0 saves: all ranks hold the same weights, so one copy is enough. And several
# processes writing the same path at once can interleave into a corrupt file. The `dist.barrier()`
# after the save makes the other ranks wait until the file exists.
#
# The checkpoint holds `model.module.state_dict()`: the model *inside* the DDP wrapper. So it loads
# into a plain model, for evaluation or deployment:

# %%
state = torch.load(checkpoint_path, weights_only=True)
plain = ddp_lab.make_model()
print("checkpoint of epoch", state["epoch"], "| first keys:", list(state["model"])[:2])
print(plain.load_state_dict(state["model"]))
print("files in the work folder:", sorted(p.name for p in workdir.iterdir()))
final = torch.cat([p.detach().flatten() for p in plain.parameters()])
print("loaded weights == final DDP weights:", torch.equal(final, results[0]["final_params"]))

# %% [markdown]
# The checkpoint has served its purpose. Remove this notebook's work folder, so that running the
# notebook again and again leaves nothing behind:

# %%
shutil.rmtree(workdir)
print("work folder removed:", not workdir.exists())


# %% [markdown]
# ### Exercise 3 — `should_save`
#
# `should_save(rank, epoch, every)` is `True` only on rank 0, after every `every`-th epoch (epochs
# count from 0: with `every=2`, after epochs 1, 3, 5, …).

# %%
def should_save(rank: int, epoch: int, every: int) -> bool:
    ### BEGIN SOLUTION
    return rank == 0 and (epoch + 1) % every == 0
    ### END SOLUTION


# %%
check("13.should_save", should_save)


# %% [markdown]
# ### Exercise 4 — `unwrapped_state_dict`
#
# `ddp_model.state_dict()` prefixes every key with `module.`; a plain model cannot load that.
# Return the state dict of the model inside the wrapper when there is one, and the plain state dict
# otherwise, so the same saving code works with and without DDP. Decide by the model's *type*
# (`DistributedDataParallel` or `nn.DataParallel`, or a subclass of either), not by whether it has
# an attribute called `module`: a plain model may well have a layer of that name.

# %%
def unwrapped_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    ### BEGIN SOLUTION
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    inner = model.module if isinstance(model, wrappers) else model
    return inner.state_dict()
    ### END SOLUTION


# %%
check("13.unwrapped_state_dict", unwrapped_state_dict)

# %% [markdown]
# ## 6. When a worker crashes
#
# The nastiest distributed bug is not an error but a **hang**. One rank dies or takes a different
# code path, and the others wait forever in a collective it never joins.
#
# `crash_worker` reproduces it. Rank 1 raises before the all-reduce (think: a corrupt sample, an
# out-of-memory error), while rank 0 enters the all-reduce and waits for it.

# %%
print(inspect.getsource(ddp_lab.crash_worker))

# %% [markdown]
# Three things keep that from freezing your notebook:
#
# - the launcher notices a dead process within a fraction of a second and stops the others;
# - the process group's `timeout` ends a collective that can never complete;
# - `launch` has a wall-clock deadline of its own.
#
# You get the failing rank and its error:

# %%
try:
    ddp_lab.launch(ddp_lab.crash_worker, world_size=2, timeout_s=120)
except ddp_lab.WorkerFailed as error:
    print("WorkerFailed:", error)
else:
    raise AssertionError("the crash was not reported")

# %% [markdown]
# And nothing is left running. The only child process of this kernel that may remain is Python's
# `resource_tracker` helper, which multiprocessing keeps for the kernel's lifetime.
#
# Note: this check sees the children of *this* kernel only. A kernel restart during a launch kills
# the kernel and its workers together. The launch's temporary folder, which its cleanup would have
# removed, then stays behind. The next `launch` removes it (and only folders of launches whose
# process is gone).

# %%
leftover = [p for p in psutil.Process().children(recursive=True)
            if "resource_tracker" not in " ".join(p.cmdline())]
print("worker processes still running:", leftover)
confirm(not leftover, "no worker process is left running after the crash")

# %% [markdown]
# ## 7. What changes when you scale
#
# ### The learning rate
#
# **Effective batch size** = per-rank batch × world size. With 8 GPUs and 32 samples each, one step
# sees 256 samples, and an epoch has 8 times fewer steps.
#
# Section 4 showed that DDP with `W` ranks computes the gradient of one batch `W` times larger. So
# one process can show the effect. We run ten epochs of section 5's training with 4 samples per
# rank, on 1, 2 and 4 ranks:
#
# - with the original learning rate;
# - with the learning rate multiplied by the world size (the *linear scaling rule*).

# %%
def final_loss(world_size: int, lr: float, epochs: int = 10, per_rank: int = 4) -> float:
    x, y = ddp_lab.make_batch(n=24, seed=2)
    model = ddp_lab.make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    order = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        for step in torch.randperm(24, generator=order).split(per_rank * world_size):  # one DDP step
            optimizer.zero_grad()
            F.mse_loss(model(x[step]), y[step]).backward()
            optimizer.step()
    return F.mse_loss(model(x), y).item()


for world_size in (1, 2, 4):
    print(f"{world_size} rank(s), batch {4 * world_size:>2}: loss after 10 epochs "
          f"{final_loss(world_size, lr=0.1):.3f} with lr 0.1, "
          f"{final_loss(world_size, lr=0.1 * world_size):.3f} with lr {0.1 * world_size:.1f}")

# %% [markdown]
# With the learning rate unchanged, more ranks learn less per epoch: fewer steps, of about the same
# size as before.
#
# Scaling it with the world size brings 2 ranks close to the 1-rank loss, but closes only part of
# the gap at 4 ranks. The rule is a starting point, not a law. Large runs pair it with a warm-up
# (notebook 07) and retune.
#
# ### Gradient accumulation: `no_sync`
#
# Accumulating gradients over several micro-batches per optimizer step (notebook 03) would
# all-reduce after every micro-batch. `with model.no_sync():` skips the all-reduce for the backward
# passes inside it. The first backward outside it all-reduces the accumulated sum:

# %%
print(inspect.getsource(ddp_lab.no_sync_gradients))

# %%
inside = [r["inside_no_sync"] for r in results]
after = [r["after_sync"] for r in results]
print("inside no_sync, rank 0 and rank 1 hold the same gradients:",
      all(torch.equal(a, b) for a, b in zip(*inside)))
print("after the synchronising backward, they do:", all(torch.equal(a, b) for a, b in zip(*after)))
print("and they equal the big-batch gradients:",
      all(torch.allclose(a, b, atol=1e-6) for a, b in zip(after[0], big_batch)))

# %% [markdown]
# ### BatchNorm
#
# BatchNorm normalises with the statistics of the batch it sees, so under DDP each rank uses its
# own shard's statistics. When per-rank batches are small, `nn.SyncBatchNorm` computes them over all
# ranks; `nn.SyncBatchNorm.convert_sync_batchnorm(model)` swaps it in.
#
# It works with GPUs only, as the worker found when it wrapped such a model in DDP on this CPU:

# %%
print(results[0]["sync_batchnorm"])

# %% [markdown]
# ### A model too big for one device
#
# DDP keeps a full replica per rank, so it does not help when the model itself does not fit.
# **Model parallelism** splits the model instead. Each device stores some layers; activations
# travel forward from one device to the next, and the gradient of those activations travels back.
#
# The worker split the same `make_model()` into two stages, one per process, and sent the
# activations with `dist.send`/`dist.recv`:

# %%
print(inspect.getsource(ddp_lab.pipeline_gradients))

# %%
full = sum(p.numel() * p.element_size() for p in ddp_lab.make_model().parameters())
stages = [r["pipeline"] for r in results]
print("parameter bytes per rank, model parallel:", [s["param_bytes"] for s in stages], "| DDP:", [full, full])
pipeline = stages[0]["grads"] + stages[1]["grads"]
print("stage gradients == big-batch gradients:",
      all(torch.allclose(a, b, atol=1e-6) for a, b in zip(pipeline, big_batch)))

# %% [markdown]
# Each rank stores only its layers, and together they compute the single-process gradients (to
# 1e-6). The price: rank 1 waits while rank 0 computes, and the other way round in the backward
# pass. *Pipeline parallelism* (`torch.distributed.pipelining`) feeds micro-batches through the
# stages so that both work at once.
#
# **FSDP** (fully sharded data parallel, `torch.distributed.fsdp.fully_shard`) keeps data
# parallelism but stores only a shard of every parameter, gradient and optimizer state on each
# rank. It gathers a layer's full weights just before the layer runs.
#
# FSDP also works on CPUs with `gloo`: `ddp_lab.fsdp_gradients` runs it on this model. The course's
# tests check that the two ranks store disjoint shards that add up to the full model, while the
# gradients stay the big-batch gradients. It is not run here only because its first call takes
# seconds per process.
#
# ### Parameters that get no gradient
#
# DDP expects every parameter to receive a gradient in every backward pass. A layer the forward
# pass skips (a branch taken only for some inputs, a head used only in another phase) breaks that
# rule. The next iteration then stops with a `RuntimeError`: *"Expected to have finished reduction
# in the prior iteration before starting a new one. This error indicates that your module has
# parameters that were not used in producing loss."*
#
# Two ways out:
#
# - `DDP(model, find_unused_parameters=True)`: after each forward, DDP walks the autograd graph and
#   marks the parameters it will not see. That walk costs time in every iteration.
# - `DDP(model, static_graph=True)`: when the *same* parameters are unused in every iteration, DDP
#   learns which ones from the first iteration.
#
# Better still, when you can: leave parameters that never take part out of the model.
#
# ### Logging and evaluation
#
# Print and write from rank 0. All-reduce metrics first, so rank 0 reports the global value, as the
# training loop above does once per epoch.
#
# The padding of section 2 matters here. With a padded `DistributedSampler`, a validation pass
# counts a few samples twice: with 10 samples on 4 ranks, samples 0 and 1 are evaluated twice. The
# accuracy is then that of 12 predictions, not 10. Three fixes:
#
# - `DistributedSampler(val_set, shuffle=False, drop_last=True)`: no duplicates, but the tail is
#   not evaluated;
# - all-gather each prediction with its sample index, then drop the duplicates before computing
#   the metric;
# - evaluate on rank 0 alone, with a plain `DataLoader` over the whole validation set.

# %% [markdown]
# ## 8. The same code on many GPUs and machines: `torchrun`
#
# On real hardware you do not start processes from a notebook. You put the training code in a
# script, say `train.py`, and launch it from a terminal with **`torchrun`**:
#
# ```
# torchrun --standalone --nproc-per-node=2 train.py
# ```
#
# That starts 2 processes on this machine, each running `train.py` from the top. To try it with
# this lesson's own training loop, run this from the course folder (the one that holds
# `course_utils`):
#
# ```
# torchrun --standalone --nproc-per-node=2 -m course_utils.distributed
# ```
#
# It trains on 2 CPU processes, and rank 0 prints `2 ranks, epoch losses [0.534, 0.5074, 0.4354]`:
# the losses section 5 printed.
#
# `torchrun`:
#
# - starts one process per GPU;
# - sets `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT` for each;
# - restarts failed workers if you ask it to (`--max-restarts`);
# - makes `dist.init_process_group(backend)` find the others.
#
# The script differs from single-device training in a handful of lines:
#
# ```python
# import os, torch, torch.distributed as dist
# from torch.nn.parallel import DistributedDataParallel as DDP
# from torch.utils.data import DistributedSampler
#
# local_rank = int(os.environ["LOCAL_RANK"])           # which GPU of this machine
# if torch.cuda.is_available():
#     device = torch.device("cuda", local_rank)
#     torch.cuda.set_device(device)                    # before the process group
#     dist.init_process_group("nccl", device_id=device)   # reads torchrun's variables
# else:
#     device = torch.device("cpu")
#     dist.init_process_group("gloo")
# model = DDP(build_model().to(device), device_ids=[local_rank] if device.type == "cuda" else None)
# sampler = DistributedSampler(train_set, shuffle=True)   # + sampler.set_epoch(epoch) every epoch
# ...                                                      # the usual training loop
# if dist.get_rank() == 0:
#     torch.save(model.module.state_dict(), "checkpoint.pt")
# dist.destroy_process_group()
# ```
#
# On GPUs, choose the device **before** creating the process group, and pass it as `device_id`.
# That binds NCCL's communicator to the right GPU and creates it at once, so a broken NCCL setup
# fails at this line instead of at the first collective. It also spares `dist.barrier()` from
# guessing which GPU to use.
#
# The command for each kind of machine:
#
# | where | command |
# |---|---|
# | this laptop, 2 CPU processes | `torchrun --standalone --nproc-per-node=2 -m course_utils.distributed` |
# | one machine, all its GPUs | `torchrun --standalone --nproc-per-node=gpu train.py` |
# | 2 machines × 8 GPUs (run on **each** machine) | `torchrun --nnodes=2 --nproc-per-node=8 --rdzv-id=job42 --rdzv-backend=c10d --rdzv-endpoint=HEAD_NODE_ADDRESS:29500 train.py` |
# | a cluster with SLURM | the same line inside `srun`, with `HEAD_NODE_ADDRESS` taken from the job's first node |
#
# Nothing in the training code depends on how many processes there are: `WORLD_SIZE` grows, each
# shard shrinks, and the gradients are still the big-batch gradients.
#
# Why this notebook does not run `torchrun` itself: its rendezvous store listens on every network
# interface, and the notebooks stay off the network. The course's tests run the laptop command,
# inside a private network namespace that has only a loopback interface. `nccl` needs NVIDIA GPUs
# and is not run anywhere in this course. On GPUs it replaces `gloo`, and nothing else in the
# script changes.

# %% [markdown]
# ## Key points
#
# - DDP = one process per device, same model, different shard of each batch, gradients all-reduced
#   (summed and divided by the world size) during `backward()`, identical optimizer steps.
# - With equal shards and a mean loss, the averaged gradients equal the big-batch gradient
#   (checked above to 1e-6); the replicas stay identical bit for bit.
# - `DistributedSampler` pads so every rank runs the same number of steps; call `set_epoch(epoch)`
#   or every epoch repeats the same order. In evaluation, the padding counts a few samples twice.
# - Fork copies the running process (Linux); spawn starts a fresh one that imports its
#   function by module and name (macOS, Windows): put worker functions in a module. `torchrun`
#   starts fresh interpreters that each run your script from the top as `__main__`. Bound every
#   wait with timeouts, and turn a dead rank into a clear error instead of a hang.
# - Save once, from rank 0, with `model.module.state_dict()`; barrier before anyone reads it.
# - DDP all-reduces buckets of gradients during `backward()`; `no_sync()` skips it for the
#   micro-batches of an accumulation. Parameters that get no gradient need
#   `find_unused_parameters=True` or `static_graph=True`.
# - More ranks mean a bigger effective batch: scale the learning rate as a starting point, then
#   retune. SyncBatchNorm needs GPUs; a model too big for one device needs model parallelism or
#   FSDP, which store only part of the parameters per rank.
# - `torchrun` runs the same script on one CPU, 8 GPUs or 100 machines; `nccl` on GPUs (set the
#   device first, pass `device_id`), `gloo` on CPUs.
#
# ## Further reading
#
# - PyTorch docs: [Distributed Data Parallel](https://docs.pytorch.org/docs/stable/notes/ddp.html)
#   (design notes) and [DistributedDataParallel](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
#   (API, including `find_unused_parameters` and `static_graph`).
# - PyTorch docs: [torch.distributed](https://docs.pytorch.org/docs/stable/distributed.html):
#   backends, `init_process_group`, collectives, `FileStore`.
# - PyTorch docs: [torchrun (Elastic Launch)](https://docs.pytorch.org/docs/stable/elastic/run.html).
# - PyTorch docs: [torch.utils.data.distributed.DistributedSampler](https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler).
# - PyTorch docs: [Multiprocessing best practices](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html)
#   (spawn and importable functions).
# - PyTorch docs: [DDP Communication Hooks](https://docs.pytorch.org/docs/stable/ddp_comm_hooks.html),
#   [torch.nn.SyncBatchNorm](https://docs.pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html),
#   [Pipeline Parallelism](https://docs.pytorch.org/docs/stable/distributed.pipelining.html)
#   (`torch.distributed.pipelining`).
# - PyTorch tutorials: [Getting Started with Distributed Data Parallel](https://docs.pytorch.org/tutorials/intermediate/ddp_tutorial.html),
#   [Getting Started with Fully Sharded Data Parallel (FSDP2)](https://docs.pytorch.org/tutorials/intermediate/FSDP_tutorial.html).
# - Next: [14 · Capstone](14_capstone.ipynb).
