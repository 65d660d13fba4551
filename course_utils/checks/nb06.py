"""Checkers of notebook 06 (training loop), in notebook order: ``06.train_one_epoch``, ``06.evaluate``,
``06.clipped_step``.

The case factories build tiny deterministic models that *record how they are used* (:class:`ProbeNet`):
whether each forward pass ran in training mode and with gradient tracking, and whether ``backward()``
added its gradients on top of stale ones. The loss function (:class:`RecordingCrossEntropy`) records
whether it received probabilities instead of logits. The loaders hand out *host* tensors and the
model returns *device* tensors (:class:`Placed`), so a batch that is never moved to ``device`` is seen
on the CPU. The checkers read those records, so the feedback names the mistake even when the numbers
happen to look plausible.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.i18n import N_, t


# --- shared by the 06 checkers --------------------------------------------------------------------
# Recording probes (ProbeNet, RecordingCrossEntropy) and data.

N_FEATURES, N_CLASSES = 6, 4


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- device movement, checked on the CPU ---------------------------------------------------------
# Every case runs on the CPU, where forgetting `.to(device)` changes nothing. So the batches a case
# hands out are *host* tensors and the model's outputs are *device* tensors (:class:`Placed`): an
# operation that mixes the two is what raises "Expected all tensors to be on the same device" on a
# GPU, and here it is recorded instead. `t.to(device)` (or `.cuda()`) makes a device tensor, `.cpu()`
# a plain one; operations on host tensors alone stay on the host (a reshape before moving is fine).

_MOVES = ("to", "cuda")
_PLAIN = {"numpy", "tolist", "item", "__repr__", "__format__", "__str__"}


class Placed(torch.Tensor):
    """A tensor that knows whether it is on the host (a batch not moved yet) or on the device."""

    where: str = "host"
    log: "PlacementLog | None" = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        placed = [a for a in _flat(args, kwargs) if isinstance(a, Placed)]
        log = next((p.log for p in placed if p.log is not None), None)
        if log is not None:
            log.note(name, args, kwargs)
        if name in _PLAIN or name == "__get__" or not isinstance(out, (torch.Tensor, tuple, list)):
            return out
        if name == "cpu" and isinstance(out, torch.Tensor):
            return out.as_subclass(torch.Tensor)
        if name in _MOVES and _is_move(args[1:], kwargs):
            return _place(out, "device", log)
        wheres = {p.where for p in placed}
        if wheres == {"host", "device"} and log is not None:
            log.mixed = True
        return _place(out, "device" if "device" in wheres else "host", log)


class PlacementLog:
    """What a case saw: a host tensor mixed with device tensors, or fed to the model."""

    def __init__(self) -> None:
        self.mixed = False        # a host tensor met a device tensor (e.g. labels vs predictions)
        self.unmoved_input = False  # the model received a host tensor
        self.ops: set[str] = set()   # names of the torch functions called on the case's tensors
        self.flat_argmax = False     # argmax without a dim
        self.max_with_dim = False    # torch.max(t, dim): (values, indices)

    def note(self, name: str, args, kwargs) -> None:
        self.ops.add(name)
        if name == "argmax" and len(args) == 1 and kwargs.get("dim") is None:
            self.flat_argmax = True
        if name == "max" and (len(args) > 1 or "dim" in kwargs):
            self.max_with_dim = True


def _flat(args, kwargs) -> list:
    found = []
    stack = list(args) + list(kwargs.values())
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        else:
            found.append(item)
    return found


def _is_move(args, kwargs) -> bool:
    if "device" in kwargs:
        return True
    return any(isinstance(a, (str, int, torch.device, torch.Tensor)) and not isinstance(a, bool)
               for a in args)


def _place(value, where: str, log):
    if isinstance(value, torch.Tensor):
        value = value.as_subclass(Placed)  # a new object even when `func` returned its input
        value.where, value.log = where, log
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_place(v, where, log) for v in value)
    return value


class ProbeNet(nn.Module):
    """Linear -> BatchNorm -> ReLU -> Dropout -> Linear, recording how it is called.

    Dropout draws from the model's own generator, so checking never touches the global RNG.
    """

    def __init__(self, seed: int, hidden: int = 12, p: float = 0.4) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.fc1 = nn.Linear(N_FEATURES, hidden)
            self.bn = nn.BatchNorm1d(hidden)
            self.fc2 = nn.Linear(hidden, N_CLASSES)
        self.p = p
        self.log = PlacementLog()
        self.dropout_gen = _gen(seed + 1000)
        self.calls: list[tuple[bool, bool]] = []      # (training, grad enabled) per forward
        self.outputs: list[torch.Tensor] = []
        self.stale_backward = False                   # backward added to old gradients
        self.events: list[str] = []                   # "forward", "backward", "step" in order
        self._incoming: dict[int, torch.Tensor] = {}
        for index, param in enumerate(self.parameters()):
            param.register_hook(lambda grad, i=index: self._remember(i, grad))
            param.register_post_accumulate_grad_hook(lambda p, i=index: self._compare(i, p))

    def _remember(self, index: int, grad: torch.Tensor) -> None:
        if index == 0:
            self.events.append("backward")
        self._incoming[index] = grad.detach().clone()

    def _compare(self, index: int, param: torch.Tensor) -> None:
        incoming = self._incoming.pop(index, None)
        if incoming is not None and param.grad is not None and not torch.allclose(param.grad, incoming):
            self.stale_backward = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.append((self.training, torch.is_grad_enabled()))
        self.events.append("forward")
        if isinstance(x, Placed) and x.where == "host":
            self.log.unmoved_input = True
        h = torch.relu(self.bn(self.fc1(x)))
        if self.training:
            keep = torch.rand(h.shape, generator=self.dropout_gen) >= self.p
            h = h * keep / (1 - self.p)
        out = self.fc2(h)
        self.outputs.append(out.detach().as_subclass(torch.Tensor))
        return _place(out, "device", self.log)  # the model's outputs live on the device

    def on_step(self, *_: Any) -> None:
        """An optimizer step pre-hook (registered by the case factories that hand out an optimizer)."""
        self.events.append("step")

    def steps_before_backward(self) -> int:
        """Steps taken after a forward pass whose backward had not run yet."""
        count, last = 0, ""
        for event in self.events:
            if event == "step" and last == "forward":
                count += 1
            elif event != "step":
                last = event
        return count

    def forget(self) -> None:
        self.events.clear()
        self.calls.clear()
        self.outputs.clear()
        self.stale_backward = False


class _GraphProbe(torch.autograd.Function):
    """Identity on the loss; its node (``ctx``) lives exactly as long as some tensor's graph reaches it."""

    @staticmethod
    def forward(ctx: Any, loss: torch.Tensor) -> torch.Tensor:
        return loss.view_as(loss)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class RecordingCrossEntropy(nn.CrossEntropyLoss):
    """CrossEntropyLoss that remembers its values, whether it was fed probabilities, and whether an
    earlier batch's autograd graph is still alive (a running sum of ``loss`` without ``.detach()``)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[float] = []
        self.saw_probabilities = False
        self.graph_kept = False
        self._nodes: list[Any] = []

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            rows_sum_to_one = torch.allclose(input.sum(dim=1), torch.ones(len(input)), atol=1e-4)
            if bool((input >= 0).all()) and rows_sum_to_one:
                self.saw_probabilities = True
        loss = super().forward(input, target)
        self.values.append(loss.item())
        # the graph of the batch before the previous one (the previous one may still be the `loss` variable)
        if len(self._nodes) >= 2 and self._nodes[-2]() is not None:
            self.graph_kept = True
        if not loss.requires_grad:
            self._nodes.append(lambda: None)
            return loss
        probed = _GraphProbe.apply(loss)
        self._nodes.append(weakref.ref(probed.grad_fn))
        return probed


def _classification_data(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = _gen(seed)
    x = torch.randn(n, N_FEATURES, generator=g)
    y = (x[:, :N_CLASSES] + 0.5 * torch.randn(n, N_CLASSES, generator=g)).argmax(dim=1)
    return x, y


class HostLoader(DataLoader):
    """A DataLoader whose batches are host tensors (:class:`Placed`) that log into ``log``."""

    log: PlacementLog | None = None

    def __iter__(self):
        for batch in super().__iter__():
            yield [_place(t, "host", self.log) for t in batch]

    def plain_batches(self) -> list:
        return list(super().__iter__())


def _loader(x: torch.Tensor, y: torch.Tensor, batch_size: int, log: PlacementLog | None = None) -> DataLoader:
    # Its own generator: iterating a DataLoader draws a base seed, and without a generator
    # that draw comes from the global RNG, which a check must leave alone.
    loader = HostLoader(TensorDataset(x, y), batch_size=batch_size, generator=_gen(0))
    loader.log = log
    return loader


_NOT_MOVED = N_("the batch was used without moving it to `device`: write `x, y = x.to(device), y.to(device)` "
              "(`x.to(device)` alone returns a moved copy and leaves `x` where it was)")


def _not_moved(model) -> bool:
    return model.log.unmoved_input or model.log.mixed


def _is_number(value: Any) -> bool:
    return isinstance(value, (float, int)) and not isinstance(value, bool)


# --- 06.train_one_epoch ---------------------------------------------------------------------------
# Train mode, zero_grad, logits into the loss, per-sample mean.

def train_one_epoch_reference(model: nn.Module, loader, loss_fn, optimizer, device) -> float:
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        count += len(y)
    return total / count


def _epoch_no_zero_grad(model, loader, loss_fn, optimizer, device):
    model.train()
    losses = []
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _epoch_no_train(model, loader, loss_fn, optimizer, device):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _epoch_softmax(model, loader, loss_fn, optimizer, device):
    model.train()
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(torch.softmax(model(x.to(device)), dim=1), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _epoch_unweighted(model, loader, loss_fn, optimizer, device):
    model.train()
    losses = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)  # every batch counts the same, the short last one too


def _epoch_last_loss(model, loader, loss_fn, optimizer, device):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    return loss.item()


def _epoch_not_moved(model, loader, loss_fn, optimizer, device):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        count += len(y)
    return total / count


def _epoch_zero_after_backward(model, loader, loss_fn, optimizer, device):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        total += loss.item() * len(y)
        count += len(y)
    return total / count


def _epoch_sum_not_detached(model, loader, loss_fn, optimizer, device):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss * len(y)
        count += len(y)
    return total.item() / count


def _epoch_no_grad(model, loader, loss_fn, optimizer, device):
    model.train()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            count += len(y)
    return total / count


def _epoch_cases():
    def make(seed: int, n: int, batch_size: int, device: Any, stale: bool = False):
        x, y = _classification_data(seed, n)
        model = ProbeNet(seed)
        if stale:  # gradients left in .grad by an earlier step
            for param in model.parameters():
                param.grad = torch.full_like(param, 0.5)
        model.eval()  # left in eval mode, as after a validation pass
        model.initial = [p.detach().clone() for p in model.parameters()]
        loader = _loader(x, y, batch_size, model.log)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        optimizer.register_step_pre_hook(model.on_step)
        return (model, loader, RecordingCrossEntropy(), optimizer, device), {}
    # case 3 starts with stale gradients in .grad; the last case has a short last batch (16, 16, 3):
    # there the mean of the batch means is wrong
    return [lambda: make(0, 32, 8, torch.device("cpu")), lambda: make(1, 36, 12, "cpu"),
            lambda: make(2, 40, 10, torch.device("cpu"), stale=True), lambda: make(3, 35, 16, "cpu")]


def _params_unchanged(model) -> bool:
    return all(torch.equal(p.detach(), p0) for p, p0 in zip(model.parameters(), model.initial))


def _epoch_verify(out, ref, args, kwargs):
    model, loader, loss_fn, optimizer, device = args
    if isinstance(out, torch.Tensor):
        return t("expected a Python float (the mean loss), found {describe_out}", describe_out=describe(out))
    if not _is_number(out):
        return t("expected a Python float (the mean loss), found {describe_out}", describe_out=describe(out))
    if not model.calls:
        return t("your function never called the model")
    if _not_moved(model):
        return t(_NOT_MOVED)
    if any(not training for training, _ in model.calls):
        return t("the model ran in eval mode during training (the case hands it over in eval mode, as after "
                 "validation): Dropout was off and BatchNorm used running statistics")
    if loss_fn.saw_probabilities:
        return t("CrossEntropyLoss received probabilities (every row sums to 1) instead of raw logits")
    if model.stale_backward:
        return t("backward() added this batch's gradients on top of older ones (the previous batch's, or those the "
                 "model arrived with): the gradients were not reset before backward()")
    steps, batches = model.events.count("step"), model.events.count("forward")
    if model.steps_before_backward():
        return t("optimizer.step() ran before backward (loss.backward() had not filled the gradients yet), so the "
                 "parameters never changed: per batch, zero_grad, forward, loss, backward, then step")
    if steps == 0:
        return t("the parameters never changed: optimizer.step() was never called")
    if _params_unchanged(model):
        return t("the parameters never changed although optimizer.step() ran: the gradients were cleared between "
                 "backward() and step()")
    if steps != batches:
        return t("optimizer.step() ran {steps} time(s) for {batches} batches: take one step for every batch, right "
                 "after its loss.backward()", steps=steps, batches=batches)
    if abs(float(out) - ref) > 1e-4 * max(1.0, abs(ref)):
        sizes = _batch_sizes(loader)
        values = loss_fn.values
        if len(values) == len(sizes):
            weighted = sum(v * n for v, n in zip(values, sizes))
            if _close(float(out), weighted):
                return t("you returned the sum of the per-sample losses over the epoch ({weighted:.4f}): divide it "
                         "by the number of samples ({sum_sizes}) to get the mean, {ref:.4f}",
                         weighted=weighted, sum_sizes=sum(sizes), ref=ref)
            if len(set(sizes)) == 1 and _close(float(out), weighted / len(sizes)):
                return t("you divided the sum of loss.item() * len(y) by the number of batches ({len_sizes}) instead "
                         "of the number of samples ({sum_sizes}): expected {ref:.4f}",
                         len_sizes=len(sizes), sum_sizes=sum(sizes), ref=ref)
        return t("expected the mean loss per sample over the epoch's {len_loss_fn_values} batches of sizes {sizes}, "
                 "{ref:.4f}, found {out:.4f}",
                 len_loss_fn_values=len(loss_fn.values), sizes=sizes, ref=ref, out=float(out))
    if loss_fn.graph_kept:
        return t("the autograd graphs of earlier batches were still alive during later batches: the running sum (or "
                 "a list) holds `loss` itself, so every batch's graph stays chained to it")
    return None


def _ran_in_eval(out, args, kwargs) -> bool:
    return any(not training for training, _ in args[0].calls)


def _batch_sizes(loader) -> list[int]:
    return [len(y) for _, y in loader.plain_batches()]


def _unweighted_mean(out, args, kwargs) -> bool:
    """The output is the plain mean of the batch losses, on a case where that is wrong."""
    sizes, values = _batch_sizes(args[1]), args[2].values
    if not _is_number(out) or len(set(sizes)) < 2 or len(values) != len(sizes):
        return False
    plain = sum(values) / len(values)
    weighted = sum(v * n for v, n in zip(values, sizes)) / sum(sizes)
    return abs(out - plain) < 1e-6 * max(1.0, abs(plain)) and abs(plain - weighted) > 1e-5


def _returned_last(out, args, kwargs) -> bool:
    values = args[2].values
    if isinstance(out, torch.Tensor):
        return True
    return _is_number(out) and bool(values) and abs(out - values[-1]) < 1e-6 and len(values) > 1


register(Exercise(
    "06.train_one_epoch",
    "train_one_epoch(model, loader, loss_fn, optimizer, device) runs one epoch of training "
    "(model in training mode; per batch: move to device, zero_grad, forward, loss, backward, "
    "step) and returns the mean loss per sample over the epoch as a Python float (the running sum "
    "holds loss.detach() or loss.item(), never `loss` itself with its graph). The model may "
    "arrive in eval mode and with old gradients in .grad.",
    train_one_epoch_reference,
    _epoch_cases(),
    _epoch_verify,
    [
        Mistake("missing zero_grad",
                "gradients accumulate across backward() calls: call optimizer.zero_grad() at the "
                "start of every step, before loss.backward().",
                _epoch_no_zero_grad, detect=lambda out, a, k: a[0].stale_backward),
        Mistake("batch not moved to `device`",
                "move every batch before using it: `x, y = x.to(device), y.to(device)`. `.to()` "
                "returns a new tensor, so assign the result; on a GPU an unmoved batch raises "
                "'Expected all tensors to be on the same device'.",
                _epoch_not_moved, detect=lambda out, a, k: _not_moved(a[0])),
        Mistake("zero_grad between backward and step",
                "clear the gradients at the start of each step, before the forward pass: zero_grad() "
                "after backward() wipes the gradients the step needs, so nothing is learned.",
                _epoch_zero_after_backward,
                detect=lambda out, a, k: _params_unchanged(a[0]) and "step" in a[0].events
                and not a[0].steps_before_backward()),
        Mistake("training under torch.no_grad()",
                "no_grad/inference_mode is for evaluation: under it no graph is built and backward() "
                "has nothing to differentiate. Train with gradients enabled.",
                _epoch_no_grad, error_match="does not require grad"),
        Mistake("missing model.train()",
                "a model comes back from validation in eval mode; call model.train() at the start "
                "of the epoch so Dropout drops and BatchNorm uses batch statistics.",
                _epoch_no_train, detect=_ran_in_eval),
        Mistake("softmax before CrossEntropyLoss",
                "nn.CrossEntropyLoss applies log-softmax itself and expects raw logits; pass "
                "model(x) directly, without torch.softmax.",
                _epoch_softmax, detect=lambda out, a, k: a[2].saw_probabilities),
        Mistake("returns last loss or a tensor",
                "add up loss.item() * batch_size over the epoch and return total / number_of_samples "
                "as a Python float, not the last batch's loss and not a tensor.",
                _epoch_last_loss, detect=_returned_last),
        Mistake("running sum of `loss` without .detach()",
                "accumulate `loss.detach() * len(y)` (or `loss.item() * len(y)`): `total += loss * len(y)` "
                "chains every batch's autograd graph onto `total` and keeps it in memory until the end.",
                _epoch_sum_not_detached, detect=lambda out, a, k: a[2].graph_kept),
        Mistake("unweighted mean of batch losses",
                "loss.item() is the mean over one batch, and the last batch can be shorter: add up "
                "loss.item() * len(y) and divide by the number of samples, not by the number of batches.",
                _epoch_unweighted, detect=_unweighted_mean),
    ],
))


# --- 06.evaluate ----------------------------------------------------------------------------------
# Eval mode, no gradient tracking, accuracy over all samples.

def evaluate_reference(model: nn.Module, loader, device) -> float:
    model.eval()
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum().item()
            count += len(y)
    return correct / count


def _eval_no_eval(model, loader, device):
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(dim=1) == y.to(device)).sum().item()
            count += len(y)
    return correct / count


def _eval_grad(model, loader, device):
    model.eval()
    correct, count = 0, 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(dim=1) == y.to(device)).sum().item()
        count += len(y)
    return correct / count


def _eval_wrong_dim(model, loader, device):
    model.eval()
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(dim=0) == y.to(device)).sum().item()
            count += len(y)
    return correct / count


def _eval_batch_mean(model, loader, device):
    model.eval()
    accuracies = []
    with torch.inference_mode():
        for x, y in loader:
            accuracies.append((model(x.to(device)).argmax(dim=1) == y.to(device)).float().mean().item())
    return sum(accuracies) / len(accuracies)  # the short last batch weighs as much as a full one


def _eval_not_moved(model, loader, device):
    model.eval()
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
            count += len(y)
    return correct / count


def _eval_grad_mode_off(model, loader, device):
    model.eval()
    torch.set_grad_enabled(False)
    correct, count = 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        correct += (model(x).argmax(dim=1) == y).sum().item()
        count += len(y)
    return correct / count


def _eval_squeeze(model, loader, device):
    model.eval()
    correct, count = 0, 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).squeeze().argmax(dim=1) == y).sum().item()
            count += len(y)
    return correct / count


def _eval_percent(model, loader, device):
    return 100 * evaluate_reference(model, loader, device)


def _eval_cases():
    def make(seed: int, n: int, batch_size: int, device: Any = torch.device("cpu")):
        x, y = _classification_data(seed + 10, n)
        model = ProbeNet(seed)
        with torch.no_grad():  # a few training-mode passes: BatchNorm running stats move
            for start in range(0, n - 1, batch_size):  # (BatchNorm cannot train on one sample)
                model(x[start:start + batch_size])
        model.forget()
        model.train()  # handed over in training mode, as right after an epoch
        return (model, _loader(x, y, batch_size, model.log), device), {}
    # batch 6 != 4 classes: argmax over dim 0 raises; batch 4 == 4 classes: it silently miscounts;
    # case 4 ends with a short batch (8, 8, 3): a mean of batch accuracies is wrong there;
    # case 5 ends with a batch of one sample (8, 8, 1): squeeze() turns its logits into a vector
    return [lambda: make(0, 30, 6), lambda: make(1, 24, 4, "cpu"), lambda: make(2, 35, 7),
            lambda: make(3, 19, 8), lambda: make(4, 17, 8)]


def _wrong_dim_accuracy(model: ProbeNet, loader) -> float | None:
    labels = [y for _, y in loader.plain_batches()]
    if len(labels) != len(model.outputs):
        return None
    correct, count = 0, 0
    for out, y in zip(model.outputs, labels):
        if out.shape[1] != len(y):
            return None
        correct += int((out.argmax(dim=0) == y).sum())
        count += len(y)
    return correct / count


def _eval_verify(out, ref, args, kwargs):
    model, loader, device = args
    if not _is_number(out):
        return t("expected the accuracy as a Python float between 0 and 1, found {describe_out}",
                 describe_out=describe(out))
    if not model.calls:
        return t("your function never called the model")
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)  # give the learner's session its autograd back
        model.grad_mode_left_off = True
        return t("after your function returned, gradient tracking was still switched off for the whole session "
                 "(torch.set_grad_enabled(False) / torch.no_grad() without `with`): use `with "
                 "torch.inference_mode():` so it is switched back on at the end of the block")
    if _not_moved(model):
        return t(_NOT_MOVED)
    if any(training for training, _ in model.calls):
        return t("the model was still in training mode (the case hands it over right after training): Dropout "
                 "dropped units and BatchNorm used batch statistics")
    if any(grad for _, grad in model.calls):
        return t("the forward passes ran with gradient tracking on: autograd recorded a graph for nothing")
    if abs(float(out) - ref) > 1e-6:
        n = len(loader.dataset)
        named = _accuracy_mistake(out, ref, model, loader)
        if named:
            return named
        return t("expected accuracy {ref:.4f} ({ref_n} of {n} correct), found {out:.4g}",
                 ref=ref, ref_n=round(ref * n), n=n, out=float(out))
    return None


def _accuracy_mistake(out, ref: float, model: ProbeNet, loader) -> str | None:
    """Name the usual ways of counting wrongly, when the output is what that way gives."""
    n = len(loader.dataset)
    labels = [y for _, y in loader.plain_batches()]
    outputs = model.outputs
    expected = t("expected {ref:.4f} ({correct} of {n} correct)", ref=ref, correct=round(ref * n), n=n)
    if _is_number(out) and out == round(ref * n) and ref < 1:
        return t("you returned the number of correct predictions ({out}): divide it by the number of samples, "
                 "correct / total: {expected}", out=out, expected=expected)
    if isinstance(out, int) and out == round(ref * n) // n:
        return t("you returned the int {out}: `correct // total` is integer division and rounds down; use `correct / "
                 "total`: {expected}", out=out, expected=expected)
    if len(outputs) != len(labels):
        if len(outputs) == 1 and len(labels) > 1 and abs(out - float((outputs[0].argmax(dim=1) == labels[0])
                                                                     .float().mean())) < 1e-6:
            return t("only the first batch was evaluated ({len_labels_0} of {n} samples): loop over the whole "
                     "loader: {expected}", len_labels_0=len(labels[0]), n=n, expected=expected)
        return None

    def accuracy(predict) -> float:
        return sum(int((predict(o) == y).sum()) for o, y in zip(outputs, labels)) / n

    if model.log.max_with_dim and abs(out - accuracy(lambda o: o.max(dim=1).values)) < 1e-6:
        return t("you compared the largest logits (the values of torch.max) with the labels: the predicted class is "
                 "the index, torch.max(logits, dim=1).indices or logits.argmax(dim=1): {expected}", expected=expected)
    if model.log.flat_argmax and abs(out - accuracy(lambda o: o.argmax())) < 1e-6:
        return t("argmax() without a dim returns one index into the flattened [batch, classes] tensor: use "
                 "argmax(dim=1), one class per sample: {expected}", expected=expected)
    if abs(out - accuracy(lambda o: o.argmax(dim=1, keepdim=True))) < 1e-6:
        return t("your predictions have shape [batch, 1] (keepdim=True) and the labels [batch]: `pred == y` "
                 "broadcasts to [batch, batch] and counts far too many matches ({out:.4g}); use argmax(dim=1) "
                 "without keepdim: {expected}", out=out, expected=expected)
    if "sigmoid" in model.log.ops:
        return t("a sigmoid with a threshold decides yes/no per class; with {n_classes} classes the predicted class "
                 "is logits.argmax(dim=1): {expected}", n_classes=N_CLASSES, expected=expected)
    return None


def _argmax_wrong_dim(out, args, kwargs) -> bool:
    wrong = _wrong_dim_accuracy(args[0], args[1])
    return _is_number(out) and wrong is not None and abs(out - wrong) < 1e-6


def _mean_of_batch_accuracies(out, args, kwargs) -> bool:
    model, loader = args[0], args[1]
    labels = [y for _, y in loader.plain_batches()]
    if not _is_number(out) or len({len(y) for y in labels}) < 2 or len(labels) != len(model.outputs):
        return False
    accuracies = [float((o.argmax(dim=1) == y).float().mean()) for o, y in zip(model.outputs, labels)]
    return abs(out - sum(accuracies) / len(accuracies)) < 1e-6


def _percent_or_tensor(out, args, kwargs) -> bool:
    if isinstance(out, torch.Tensor):
        return True
    model, loader = args[0], args[1]
    labels = [y for _, y in loader.plain_batches()]
    if not _is_number(out) or len(labels) != len(model.outputs):
        return False
    ref = sum(int((o.argmax(dim=1) == y).sum()) for o, y in zip(model.outputs, labels)) / len(loader.dataset)
    return abs(out - 100 * ref) < 1e-6


register(Exercise(
    "06.evaluate",
    "evaluate(model, loader, device) returns the accuracy (a Python float in [0, 1]) of the "
    "model over all samples of the loader: batches moved to device, eval mode, no gradient tracking "
    "(grad mode as it was afterwards), predicted class = argmax over classes.",
    evaluate_reference,
    _eval_cases(),
    _eval_verify,
    [
        Mistake("batch not moved to `device`",
                "move every batch before using it: `x, y = x.to(device), y.to(device)`. `.to()` "
                "returns a new tensor, so assign the result; on a GPU an unmoved batch raises "
                "'Expected all tensors to be on the same device'.",
                _eval_not_moved, detect=lambda out, a, k: _not_moved(a[0])),
        Mistake("global grad mode left off",
                "torch.set_grad_enabled(False) switches autograd off for the rest of the session, and "
                "the next training step learns nothing: use `with torch.inference_mode():` (or "
                "`with torch.no_grad():`), which switches it back on when the block ends.",
                _eval_grad_mode_off, detect=lambda out, a, k: getattr(a[0], "grad_mode_left_off", False)),
        Mistake("missing eval()",
                "call model.eval() before evaluating: otherwise Dropout keeps dropping and BatchNorm "
                "normalises with the batch's statistics (and updates its running ones).",
                _eval_no_eval, detect=lambda out, a, k: any(t for t, _ in a[0].calls)),
        Mistake("gradients tracked (no inference_mode/no_grad)",
                "wrap the loop in `with torch.inference_mode():` (or torch.no_grad()): evaluation "
                "needs no graph, and building one costs time and memory.",
                _eval_grad, detect=lambda out, a, k: any(g for _, g in a[0].calls)),
        Mistake("argmax over the wrong dim",
                "logits have shape [batch, classes]: the predicted class of each sample is "
                "logits.argmax(dim=1); dim=0 picks, for each class, the sample with the highest score.",
                _eval_wrong_dim, detect=_argmax_wrong_dim, error_match="must match the size of tensor"),
        Mistake("squeeze() on a batch of one",
                "the last batch can hold a single sample: squeeze() then drops the batch dimension "
                "as well, and argmax(dim=1) has no dim 1. Take logits.argmax(dim=1) without squeezing.",
                _eval_squeeze, error_match="Dimension out of range"),
        Mistake("returns a percentage or a tensor",
                "return correct / total as a Python float between 0 and 1 (use .item() on tensor counts).",
                _eval_percent, detect=_percent_or_tensor),
        Mistake("mean of per-batch accuracies",
                "the last batch can be shorter, so averaging the batch accuracies over-weights it: "
                "add up the correct predictions and the samples over all batches, then divide once.",
                _eval_batch_mean, detect=_mean_of_batch_accuracies),
    ],
    free_flags=("model",),  # evaluation runs in eval mode; restoring the caller's mode afterwards is fine
))


# --- 06.clipped_step ------------------------------------------------------------------------------
# zero_grad, backward, clip_grad_norm_, step; the norm before clipping.

def clipped_step_reference(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor,
                           optimizer, max_norm: float) -> float:
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm.item()


def _clip_after_step(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm).item()


def _clip_before_backward(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    loss_fn(model(x), y).backward()
    optimizer.step()
    return total_norm.item()


def _clip_no_zero_grad(model, loss_fn, x, y, optimizer, max_norm):
    loss_fn(model(x), y).backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm.item()


def _clip_zero_by_hand(model, loss_fn, x, y, optimizer, max_norm):
    for param in model.parameters():
        param.grad.zero_()
    loss_fn(model(x), y).backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm.item()


def _clip_tensor(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm


def _clip_setup(seed: int, stale: bool = True, groups: bool = False):
    x, y = _classification_data(seed + 20, 8)
    model = ProbeNet(seed)
    model.train()
    if groups:  # two parameter groups: the first layer learns more slowly
        rest = [p for name, p in model.named_parameters() if not name.startswith("fc1.")]
        optimizer = torch.optim.SGD([{"params": list(model.fc1.parameters()), "lr": 0.2},
                                     {"params": rest}], lr=0.5)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for param in model.parameters():  # left over from the previous step (or None, after zero_grad())
        param.grad = torch.full_like(param, 0.3) if stale else None
    return model, nn.CrossEntropyLoss(), x, y, optimizer


def _clip_cases():
    def make(seed: int, max_norm: float, stale: bool = True, groups: bool = False):
        twin = _clip_setup(seed, stale, groups)
        clipped_step_reference(*twin, max_norm)
        unclipped = _clip_setup(seed, stale, groups)
        clipped_step_reference(*unclipped, float("inf"))
        model, loss_fn, x, y, optimizer = _clip_setup(seed, stale, groups)
        model.expected_params = [p.detach().clone() for p in twin[0].parameters()]
        model.clipped_grads = [p.grad.detach().clone() for p in twin[0].parameters()]
        model.unclipped_params = [p.detach().clone() for p in unclipped[0].parameters()]
        model.raw_grads = [p.grad.detach().clone() for p in unclipped[0].parameters()]
        model.initial_params = [p.detach().clone() for p in model.parameters()]
        lr_of = {id(p): group["lr"] for group in optimizer.param_groups for p in group["params"]}
        model.lrs = [lr_of[id(p)] for p in model.parameters()]
        model.group0 = [i for i, p in enumerate(model.parameters())
                        if any(p is q for q in optimizer.param_groups[0]["params"])]
        return (model, loss_fn, x, y, optimizer, max_norm), {}
    # case 1: some gradient components exceed max_norm (clip_grad_value_ changes them);
    # case 4: .grad is None (as after zero_grad()) and the norm is below max_norm: nothing to clip;
    # case 5: two parameter groups
    return [lambda: make(1, 0.25), lambda: make(0, 0.5), lambda: make(2, 0.4),
            lambda: make(3, 100.0, stale=False), lambda: make(4, 0.3, groups=True)]


def _largest_difference(params, expected) -> float:
    return max(float((p.detach() - e).abs().max()) for p, e in zip(params, expected))


def _stepped_with(model, grads) -> list[torch.Tensor]:
    """The parameters after one plain SGD step that used ``grads``."""
    return [p0 - lr * g for p0, lr, g in zip(model.initial_params, model.lrs, grads)]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-4 * max(1.0, abs(b))


def _norm_mistake(out: float, ref: float, model, max_norm: float) -> str | None:
    """Name the norm the learner computed, when it is one of the usual wrong ones."""
    raw = model.raw_grads
    norms = [float(g.norm()) for g in raw]
    if out == 0 and ref > 0 and _largest_difference(model.parameters(), model.initial_params) == 0:
        return t("you returned a norm of 0 and the parameters did not change: the gradients were cleared (zero_grad) "
                 "after backward(), before measuring and clipping them; the norm before clipping is {ref:.4f}",
                 ref=ref)
    if _close(out, ref ** 2):
        return t("you returned the squared norm ({ref:.4f}² = {out:.4f}): return the total norm clip_grad_norm_ "
                 "gives back, {ref:.4f}", ref=ref, out=out)
    if _close(out, sum(norms)):
        return t("you returned the sum of the per-parameter norms ({out:.4f}); the total norm is the L2 norm of all "
                 "gradients together, sqrt(sum of squared norms) = {ref:.4f}, as clip_grad_norm_ returns",
                 out=out, ref=ref)
    if _close(out, sum(float(g.abs().sum()) for g in raw)):
        return t("you returned the L1 norm (norm_type=1), {out:.4f}: use the default norm_type=2, the total L2 norm "
                 "{ref:.4f}", out=out, ref=ref)
    if len(model.group0) < len(raw) and _close(out, float(torch.stack([raw[i].norm() for i in model.group0]).norm())):
        return t("you returned the norm of optimizer.param_groups[0] only ({out:.4f}); this optimizer has several "
                 "param groups: clip model.parameters() (all of them), total norm {ref:.4f}", out=out, ref=ref)
    if _close(out, max(norms)):
        return t("you returned the largest norm of a single parameter ({out:.4f}): clipping each parameter "
                 "separately is not clipping the total norm; pass all parameters to one clip_grad_norm_ call, total "
                 "norm {ref:.4f}", out=out, ref=ref)
    return None


def _update_mistake(model, ref: float, max_norm: float) -> str | None:
    """Name the gradients the update used, when they are one of the usual wrong ones."""
    params = list(model.parameters())
    raw = model.raw_grads
    if _largest_difference(params, _stepped_with(model, [g.clamp(-max_norm, max_norm) for g in raw])) < 1e-5 \
            and _largest_difference(params, model.unclipped_params) > 1e-5:
        return t("the update used gradients clamped element by element to ±{max_norm:g} (clip_grad_value_): the task "
                 "clips the total norm, with clip_grad_norm_(model.parameters(), max_norm)", max_norm=max_norm)
    if _largest_difference(params, model.unclipped_params) < 1e-6:
        grads = [p.grad for p in params]
        if all(g is not None for g in grads) and _largest_difference(grads, raw) < 1e-6:
            return t("nothing was clipped: the step used the unclipped gradients (total norm {ref:.4f} > max_norm = "
                     "{max_norm:g}) and .grad still holds them. If you stored `params = model.parameters()`, it is a "
                     "generator: the first function that reads it uses it up, and clip_grad_norm_ then gets no "
                     "parameters; use list(model.parameters())", ref=ref, max_norm=max_norm)
        return None
    # one common factor on every gradient: clipped, but to another norm than max_norm
    diffs = [(p0 - p.detach()) / lr for p, p0, lr in zip(params, model.initial_params, model.lrs)]
    flat_d = torch.cat([d.flatten() for d in diffs])
    flat_g = torch.cat([g.flatten() for g in raw])
    scale = float(flat_d @ flat_g / (flat_g @ flat_g))
    if 0 < scale < 1 and float((flat_d - scale * flat_g).abs().max()) < 1e-5:
        return t("the update used gradients clipped to a total norm of {scale_ref:.4f}, not to "
                 "max_norm={max_norm:g}: pass the max_norm argument to clip_grad_norm_ (no fixed number)",
                 scale_ref=scale * ref, max_norm=max_norm)
    return None


def _clip_verify(out, ref, args, kwargs):
    model, loss_fn, x, y, optimizer, max_norm = args
    if not _is_number(out):
        return t("expected the total gradient norm as a Python float, found {describe_out}",
                 describe_out=describe(out))
    if model.stale_backward:
        return t("backward() added the new gradients on top of the previous step's stale ones")
    if abs(float(out) - ref) > 1e-4 * max(1.0, ref):
        named = _norm_mistake(float(out), ref, model, max_norm)
        if named:
            return named
        return t("expected the total gradient norm before clipping, {ref:.4f}, found {out:.4f}",
                 ref=ref, out=float(out))
    difference = _largest_difference(model.parameters(), model.expected_params)
    if difference > 1e-5 and _largest_difference(model.parameters(), model.initial_params) == 0:
        return t("the parameters did not change: call optimizer.step() after clip_grad_norm_")
    if difference > 1e-5 and ref <= max_norm:
        return t("the total norm {ref:.4f} is below max_norm = {max_norm:g}, so the gradients must be used as they "
                 "are, but your update differs (largest difference {difference:.3g})",
                 ref=ref, max_norm=max_norm, difference=difference)
    if difference > 1e-5:
        named = _update_mistake(model, ref, max_norm)
        if named:
            return named
        return t("the norm is right but the parameters after the step differ from a step with clipped gradients "
                 "(largest difference {difference:.3g})", difference=difference)
    return None


def _updated_unclipped(out, args, kwargs) -> bool:
    """The step used the unclipped gradients, and the gradients were clipped afterwards."""
    model = args[0]
    if _largest_difference(model.parameters(), model.unclipped_params) >= 1e-6:
        return False
    grads = [p.grad for p in model.parameters()]
    return all(g is not None for g in grads) and _largest_difference(grads, model.clipped_grads) < 1e-6


register(Exercise(
    "06.clipped_step",
    "clipped_step(model, loss_fn, x, y, optimizer, max_norm) does one training step with "
    "gradient clipping (zero_grad, forward, loss, backward, clip_grad_norm_, step) and returns "
    "the total gradient norm BEFORE clipping as a Python float. The model may hold old gradients, "
    "or .grad may be None.",
    clipped_step_reference,
    _clip_cases(),
    _clip_verify,
    [
        Mistake("missing zero_grad",
                "the model arrives with gradients from the previous step: call optimizer.zero_grad() "
                "before backward(), or they are added to the new ones.",
                _clip_no_zero_grad, detect=lambda out, a, k: a[0].stale_backward),
        Mistake("zeroes .grad by hand (breaks when .grad is None)",
                "after optimizer.zero_grad() a parameter's .grad is None, not zeros, so p.grad.zero_() "
                "raises: call optimizer.zero_grad() (it handles both).",
                _clip_zero_by_hand, error_match="has no attribute 'zero_'"),
        Mistake("returns a tensor",
                "clip_grad_norm_ returns a 0-dim tensor; log it as a number with .item().",
                _clip_tensor, detect=lambda out, a, k: isinstance(out, torch.Tensor)),
        Mistake("clips before backward()",
                "clip_grad_norm_ works on the .grad fields: it must run after loss.backward() "
                "has filled them (and before optimizer.step()).",
                _clip_before_backward,
                detect=lambda out, a, k: _is_number(out) and abs(out) < 1e-12
                and _largest_difference(a[0].parameters(), a[0].unclipped_params) < 1e-6),
        Mistake("clips after optimizer.step()",
                "once step() ran, the update used the unclipped gradients; clip between "
                "loss.backward() and optimizer.step().",
                _clip_after_step, detect=_updated_unclipped),
    ],
))
