"""Blind answers for notebook 13, written from notebooks/13_distributed_data_parallel.ipynb only."""
from tests.blind import Answer


def _save(expr: str) -> str:
    return f'''
def should_save(rank, epoch, every):
    return {expr}
'''


_WRAPPERS = "(torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)"

ANSWERS = [
    # ------------------------------------------------------------------ 13.average_gradients: correct
    Answer("13.average_gradients", "ok", '''
def average_gradients(per_rank):
    world_size = len(per_rank)
    averaged = [torch.stack(grads).sum(dim=0) / world_size for grads in zip(*per_rank)]
    return [[g.clone() for g in averaged] for _ in range(world_size)]
''', label="stack, sum, divide; a clone per rank"),
    Answer("13.average_gradients", "ok", '''
def average_gradients(per_rank: list[list[torch.Tensor]]) -> list[list[torch.Tensor]]:
    """Every rank ends with the mean over ranks of each gradient (its own copy)."""
    world_size = len(per_rank)
    result = []
    for _ in range(world_size):
        mine = []
        for i in range(len(per_rank[0])):
            total = torch.zeros_like(per_rank[0][i])
            for r in range(world_size):
                total += per_rank[r][i]
            mine.append(total / world_size)
        result.append(mine)
    return result
''', label="explicit loops, zeros_like accumulator"),
    Answer("13.average_gradients", "ok", '''
def average_gradients(per_rank):
    means = [torch.stack(list(g)).mean(dim=0) for g in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]
''', label="stack + mean(dim=0)"),
    Answer("13.average_gradients", "ok", '''
def average_gradients(per_rank):
    world = len(per_rank)
    return [[sum(rank[i] / world for rank in per_rank) for i in range(len(per_rank[0]))] for _ in per_rank]
''', label="divide each gradient first, then sum (recomputed per rank)"),
    Answer("13.average_gradients", "ok", '''
def average_gradients(per_rank):
    import copy
    reduced = copy.deepcopy(per_rank)          # each rank's own buffers, as all_reduce leaves them
    world_size = len(reduced)
    for i in range(len(reduced[0])):
        total = torch.stack([reduced[r][i] for r in range(world_size)]).sum(0)
        for r in range(world_size):
            reduced[r][i].copy_(total).div_(world_size)
    return reduced
''', label="deepcopy, then in-place SUM and /= world_size like all_reduce"),
    Answer("13.average_gradients", "ok", '''
from functools import reduce
import operator

def average_gradients(per_rank):
    n = len(per_rank)
    summed = [reduce(operator.add, grads) for grads in zip(*per_rank)]
    return [[s.div(n) for s in summed] for _ in range(n)]
''', label="functools.reduce with operator.add", name="average_gradients"),
    # ------------------------------------------------------------------ 13.average_gradients: wrong
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    summed = [torch.stack(g).sum(0) for g in zip(*per_rank)]
    return [[s.clone() for s in summed] for _ in per_rank]
''', label="sums without dividing by the world size", words=("world_size",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    n = len(per_rank[0])
    means = [torch.stack(g).sum(0) / n for g in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]
''', label="divides by the number of gradients, not the number of ranks", words=("len(per_rank)",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    return [torch.stack(g).mean(0) for g in zip(*per_rank)]
''', label="returns one list of gradients, not one list per rank", words=("one list per rank",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    return [[sum(grads) / len(grads) for _ in grads] for grads in per_rank]
''', label="averages the gradients within each rank", words=("ACROSS",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    first = torch.stack([rank[0] for rank in per_rank]).mean(0)
    return [[first.clone()] + [g.clone() for g in rank[1:]] for rank in per_rank]
''', label="only the first gradient averaged", words=("gradient 1",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    return [[g.clone() for g in per_rank[0]] for _ in per_rank]
''', label="broadcasts rank 0's gradients (no averaging)", words=("ACROSS ranks",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    out = [[torch.stack(g).sum(0) for g in zip(*per_rank)] for _ in per_rank]
    for grads in out:
        for g in grads:
            g //= len(per_rank)
    return out
''', label="grad //= world_size (floor division)", words=("floor",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    return torch.stack([torch.stack([torch.stack(g).mean(0) for g in zip(*per_rank)]) for _ in per_rank])
''', label="a stacked tensor instead of lists (assumes equal shapes)", words=("equal size",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    means = [(g[0] + g[1]) / 2 for g in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]
''', label="hard-codes two ranks", words=("len(per_rank)",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    world = len(per_rank)
    means = [sum(per_rank[r][i] for r in range(1, world)) / world for i in range(len(per_rank[0]))]
    return [[m.clone() for m in means] for _ in per_rank]
''', label="sum skips rank 0 (range(1, world))", words=("every rank's",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    means = [torch.stack(g).mean(0) for g in zip(*per_rank)]
    return [[m.clone() for m in means]] + [list(rank) for rank in per_rank[1:]]
''', label="only rank 0 receives the average", words=("rank 1",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    maxima = [torch.stack(g).amax(0) for g in zip(*per_rank)]
    return [[m.clone() for m in maxima] for _ in per_rank]
''', label="element-wise max (ReduceOp.MAX) instead of the mean", words=("mean",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    means = [torch.stack([t.float() for t in g]).mean(0) for g in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]
''', label="casts every gradient to float32 (other dtypes change)", words=("dtype",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    world = len(per_rank)
    for i in range(len(per_rank[0])):
        total = sum(per_rank[r][i] for r in range(world))
        for r in range(world):
            per_rank[r][i] = total / world
    return per_rank
''', label="writes the shared result into the caller's lists (one tensor object for all ranks)",
        words=("modified",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    means = [torch.stack(g).mean(0) for g in zip(*per_rank)]
    return [[m.item() for m in means] for _ in per_rank]
''', label="Python floats via .item() (only works for one-element gradients)", words=("cannot be converted",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    world = len(per_rank)
    means = [torch.stack(g).sum(0) / (world - 1) for g in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]
''', label="divides by world_size - 1", words=("world_size",)),
    Answer("13.average_gradients", "fail", '''
def average_gradients(per_rank):
    world = len(per_rank)
    return [[per_rank[r][i] * 0 + sum(rank[i] for rank in per_rank) / world for r in range(world)]
            for i in range(len(per_rank[0]))]
''', label="transposed result: one list per gradient (of ranks), not one per rank", words=("of shape (3,)",)),
    # ------------------------------------------------------------------ 13.shard_indices: correct
    Answer("13.shard_indices", "ok", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(indices[len(indices) % n])
    return indices[rank::world_size]
''', label="pad one by one, cycling from the start"),
    Answer("13.shard_indices", "ok", '''
def shard_indices(n: int, rank: int, world_size: int) -> list[int]:
    """Like DistributedSampler(shuffle=False): pad by repeating from the start, then stride."""
    import math
    total = math.ceil(n / world_size) * world_size
    repeats = math.ceil(total / n) if n else 0
    padded = (list(range(n)) * repeats)[:total]
    return padded[rank:total:world_size]
''', label="math.ceil total, repeated list, slice"),
    Answer("13.shard_indices", "ok", '''
def shard_indices(n, rank, world_size):
    from torch.utils.data import DistributedSampler
    return [int(i) for i in DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=False)]
''', label="asks DistributedSampler itself"),
    Answer("13.shard_indices", "ok", '''
def shard_indices(n, rank, world_size):
    per_rank = -(-n // world_size)
    return [(rank + k * world_size) % n for k in range(per_rank)]
''', label="arithmetic: (rank + k * world_size) % n"),
    Answer("13.shard_indices", "ok", '''
def shard_indices(n, rank, world_size):
    from itertools import cycle, islice
    total = (n + world_size - 1) // world_size * world_size
    return list(islice(cycle(range(n)), rank, total, world_size)) if n else []
''', label="itertools.cycle + islice"),
    Answer("13.shard_indices", "ok", '''
def shard_indices(n, rank, world_size):
    total = -(-n // world_size) * world_size
    return np.resize(np.arange(n), total)[rank::world_size].tolist()
''', label="np.resize repeats the array; tolist() gives ints"),
    # ------------------------------------------------------------------ 13.shard_indices: wrong
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    return list(range(n))[rank::world_size]
''', label="no padding", words=("pad",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    padding = (world_size - n % world_size) % world_size
    indices += indices[:padding]
    return indices[rank::world_size]
''', label="pads with one copy of the start only: n=2, world_size=5 too short", words=("more than once",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    usable = n - n % world_size
    return list(range(usable))[rank::world_size]
''', label="drops the tail (drop_last) instead of padding", words=("pad",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    import math
    per = math.ceil(n / world_size)
    padded = [i % n for i in range(per * world_size)]
    return padded[rank * per:(rank + 1) * per]
''', label="contiguous blocks instead of every world_size-th index", words=("every",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(n - 1)
    return indices[rank::world_size]
''', label="pads with the last index", words=("found [3, 7, 9]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(-1)
    return indices[rank::world_size]
''', label="pads with -1 placeholders", words=("found [3, 7, -1]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = torch.arange(n)
    total = -(-n // world_size) * world_size
    return indices.repeat(total // max(n, 1) + 1)[:total][rank::world_size]
''', label="returns a tensor, not a list of int", words=("list",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    per = n // world_size + 1
    return [(rank + k * world_size) % n for k in range(per)]
''', label="n // world_size + 1 per rank: one too many when it divides", words=("found [1, 3, 5, 7, 1]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(indices[len(indices) % n])
    return indices[rank + 1::world_size]
''', label="starts at rank + 1", words=("found [2, 4, 6]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    return map(lambda k: (rank + k * world_size) % n, range(-(-n // world_size)))
''', label="returns a lazy map object", words=("list of ints",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    import random
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(indices[len(indices) % n])
    random.Random(0).shuffle(indices)
    return indices[rank::world_size]
''', label="shuffles (shuffle=True behaviour)", words=("found [1, 2, 3, 6]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    padding = world_size - n % world_size
    indices += (indices * world_size)[:padding]
    return indices[rank::world_size]
''', label="padding = world_size - n % world_size: adds a full round when n divides", words=("found [1, 3, 5, 7, 1]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    mine = list(range(n))[rank::world_size]
    longest = -(-n // world_size)
    while len(mine) < longest:
        mine.append(mine[0] if mine else 0)
    return mine
''', label="pads each rank's own list with its first index", words=("found [3, 7, 3]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(indices[len(indices) % n])
    return [i + 1 for i in indices[rank::world_size]]
''', label="1-based indices", words=("found [2, 4, 6, 8]",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    if n % 2:
        indices.append(0)
    return indices[rank::world_size]
''', label="pads to an even length (right for world_size 2 only)", words=("world_size=4",)),
    Answer("13.shard_indices", "fail", '''
def shard_indices(n, rank, world_size):
    indices = list(range(n))
    while len(indices) % world_size:
        indices.append(indices[len(indices) % n])
    return np.array(indices[rank::world_size])
''', label="returns a numpy array", words=("list",)),

    # ------------------------------------------------------------------ 13.should_save: correct
    Answer("13.should_save", "ok", _save("rank == 0 and (epoch + 1) % every == 0"), label="rank == 0 and (epoch + 1) % every == 0"),
    Answer("13.should_save", "ok", _save("not rank and not (epoch + 1) % every"), label="truthiness with not"),
    Answer("13.should_save", "ok", _save("rank == 0 and epoch % every == every - 1"), label="epoch % every == every - 1"),
    Answer("13.should_save", "ok", '''
def should_save(rank: int, epoch: int, every: int) -> bool:
    """Only rank 0 writes; after epochs every-1, 2*every-1, ... (epochs count from 0)."""
    if rank != 0:
        return False
    return (epoch + 1) % every == 0
''', label="early return for other ranks"),
    Answer("13.should_save", "ok", _save("bool(rank == 0 and divmod(epoch + 1, every)[1] == 0)"), label="divmod, bool()"),
    Answer("13.should_save", "ok", _save("(rank, (epoch + 1) % every) == (0, 0)"), label="tuple comparison"),
    # ------------------------------------------------------------------ 13.should_save: wrong
    Answer("13.should_save", "fail", _save("rank == 0 and epoch % every == 0"), label="epoch % every == 0 (saves after epoch 0)",
           words=("epoch + 1",)),
    Answer("13.should_save", "fail", _save("(epoch + 1) % every == 0"), label="every rank saves", words=("rank == 0",)),
    Answer("13.should_save", "fail", _save("rank != 0 and (epoch + 1) % every == 0"), label="rank test inverted", words=("rank == 0",)),
    Answer("13.should_save", "fail", _save("rank == 0 or (epoch + 1) % every == 0"), label="or instead of and", words=("rank == 0",)),
    Answer("13.should_save", "fail", _save("rank == 0 and epoch > 0 and epoch % every == 0"), label="epochs every, 2*every, ... (skips 0 but off by one)",
           words=("epoch + 1",)),
    Answer("13.should_save", "fail", _save("int(rank == 0 and (epoch + 1) % every == 0)"), label="returns an int, not a bool", words=("found int",)),
    Answer("13.should_save", "fail", _save("rank == 0 and (epoch + 1) % 2 == 0"), label="every hard-coded to 2", words=("every=1",)),
    Answer("13.should_save", "fail", _save("rank == 0 and (epoch % every == 0 or epoch == 0)"), label="saves after epoch 0 and multiples of every",
           words=("epoch + 1",)),
    Answer("13.should_save", "fail", '''
def should_save(rank, epoch, every):
    if rank == 0 and (epoch + 1) % every == 0:
        return True
''', label="falls off the end: None instead of False", words=("None",)),
    Answer("13.should_save", "fail", _save("bool(epoch) and rank == 0 and epoch % every == 0"),
           label="epoch and epoch % every == 0", words=("epoch + 1",)),
    Answer("13.should_save", "fail", '''
def should_save(rank, epoch, every):
    import os
    return int(os.environ.get("RANK", "0")) == 0 and (epoch + 1) % every == 0
''', label="reads the rank from the RANK environment variable, ignores the argument", words=("rank == 0",)),
    Answer("13.should_save", "fail", '''
def should_save(rank, epoch, every):
    import torch.distributed as dist
    return dist.get_rank() == 0 and (epoch + 1) % every == 0
''', label="asks torch.distributed for the rank (no process group here)", words=("process group",)),
    Answer("13.should_save", "fail", _save("True if every == 1 else (rank == 0 and (epoch + 1) % every == 0)"),
           label="every=1 shortcut forgets the rank", words=("rank 0",)),
    Answer("13.should_save", "fail", _save("rank == 0 and epoch % every == 1"), label="epoch % every == 1 (right for every=2 only)",
           words=("every=1",)),
    Answer("13.should_save", "fail", _save("rank == 0 and epoch > 0 and (epoch + 1) % every == 0"),
           label="never after epoch 0 (wrong for every=1)", words=("epoch=0, every=1",)),

    # ------------------------------------------------------------------ 13.unwrapped_state_dict: correct
    Answer("13.unwrapped_state_dict", "ok", f'''
def unwrapped_state_dict(model):
    if isinstance(model, {_WRAPPERS}):
        return model.module.state_dict()
    return model.state_dict()
''', label="isinstance on both wrapper types"),
    Answer("13.unwrapped_state_dict", "ok", '''
from torch.nn.parallel import DistributedDataParallel as DDP

def unwrapped_state_dict(model: torch.nn.Module) -> dict:
    """The inner model's state dict for DDP / DataParallel, the model's own otherwise."""
    inner = model.module if isinstance(model, (DDP, nn.DataParallel)) else model
    return inner.state_dict()
''', label="module-level import alias, conditional expression", name="unwrapped_state_dict"),
    Answer("13.unwrapped_state_dict", "ok", f'''
def unwrapped_state_dict(model):
    while isinstance(model, {_WRAPPERS}):
        model = model.module
    return model.state_dict()
''', label="while loop (nested wrappers too)"),
    Answer("13.unwrapped_state_dict", "ok", f'''
def unwrapped_state_dict(model):
    state = model.state_dict()
    if not isinstance(model, {_WRAPPERS}):
        return state
    from collections import OrderedDict
    return OrderedDict((key[len("module."):], value) for key, value in state.items())
''', label="strips exactly one 'module.' prefix, only for wrappers"),
    Answer("13.unwrapped_state_dict", "ok", f'''
def unwrapped_state_dict(model):
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
    state = model.state_dict()
    if isinstance(model, {_WRAPPERS}):
        consume_prefix_in_state_dict_if_present(state, "module.")
    return state
''', label="consume_prefix_in_state_dict_if_present, only for wrappers"),
    Answer("13.unwrapped_state_dict", "ok", '''
def unwrapped_state_dict(model):
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.parallel.DataParallel)
    return {k.removeprefix("module."): v for k, v in model.state_dict().items()} if isinstance(model, wrappers) \\
        else dict(model.state_dict())
''', label="removeprefix for wrappers, plain dict otherwise"),
    # ------------------------------------------------------------------ 13.unwrapped_state_dict: wrong
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    if hasattr(model, "module"):
        return model.module.state_dict()
    return model.state_dict()
''', label="hasattr(model, 'module')", words=("type",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    return model.state_dict()
''', label="never unwraps", words=("module.",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    return model.module.state_dict()
''', label="always model.module", words=("plain",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    return {k.removeprefix("module."): v for k, v in model.state_dict().items()}
''', label="strips 'module.' from every key, wrapped or not", words=("module.weight",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return model.module.state_dict()
    return model.state_dict()
''', label="DDP only, DataParallel not unwrapped", words=("DataParallel",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    if isinstance(model, torch.nn.DataParallel):
        return model.module.state_dict()
    return model.state_dict()
''', label="DataParallel only, DDP not unwrapped", words=("ddp_model",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    if type(model) in (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel):
        return model.module.state_dict()
    return model.state_dict()
''', label="type(model) in (...): a subclass of a wrapper not unwrapped", words=("subclass",)),
    Answer("13.unwrapped_state_dict", "fail", f'''
def unwrapped_state_dict(model):
    if isinstance(model, {_WRAPPERS}):
        return {{k.replace("module.", ""): v for k, v in model.state_dict().items()}}
    return model.state_dict()
''', label="replace('module.', '') also eats an inner layer named module", words=("module",)),
    Answer("13.unwrapped_state_dict", "fail", f'''
def unwrapped_state_dict(model):
    if isinstance(model, {_WRAPPERS}):
        return model.module
    return model
''', label="returns the module, not its state dict", words=("state dict",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    return getattr(model, "module", model).state_dict()
''', label="getattr(model, 'module', model)", words=("type",)),
    Answer("13.unwrapped_state_dict", "fail", f'''
def unwrapped_state_dict(model):
    inner = model.module if isinstance(model, {_WRAPPERS}) else model
    return dict(inner.named_parameters())
''', label="named_parameters: buffers missing", words=("buffer",)),
    Answer("13.unwrapped_state_dict", "fail", f'''
def unwrapped_state_dict(model):
    if isinstance(model, {_WRAPPERS}):
        return {{k.lstrip("module."): v for k, v in model.state_dict().items()}}
    return model.state_dict()
''', label="str.lstrip('module.') strips characters, not the prefix", words=("lstrip",)),
    Answer("13.unwrapped_state_dict", "fail", f'''
def unwrapped_state_dict(model):
    inner = model.module if isinstance(model, {_WRAPPERS}) else model
    return {{k: v.float() for k, v in inner.state_dict().items()}}
''', label="casts every entry to float32", words=("int64",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    if isinstance(model, torch.nn.parallel.DistributedDataParallel) or hasattr(model, "module"):
        return model.module.state_dict()
    return model.state_dict()
''', label="isinstance(DDP) or hasattr fallback", words=("type",)),
    Answer("13.unwrapped_state_dict", "fail", '''
def unwrapped_state_dict(model):
    try:
        return model.module.state_dict()
    except AttributeError:
        return model.state_dict()
''', label="try model.module, fall back on AttributeError", words=("type",)),
]
