"""The training doctor (course_utils.doctor): each code is found on a broken setup, correct setups
give no error, the caller's objects and random generators are unchanged, bad arguments give a
clear TypeError, and the report renders as text and HTML."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.doctor import CODES, Finding, Report, diagnose, standard_step


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Small models run fastest on one thread (and several test workers share the cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _classes(n: int = 64, d: int = 20, c: int = 10, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, d, generator=_g(seed))
    return x, (x @ torch.randn(d, c, generator=_g(seed + 1))).argmax(1)


def _regression(n: int = 64, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, 8, generator=_g(seed))
    return x, (2 * x[:, :1] - x[:, 1:2]).sin()


def _images(n: int = 32, seed: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 3, 32, 32, generator=_g(seed)), torch.randint(0, 10, (n,), generator=_g(seed))


def _mlp(d: int = 20, c: int = 10, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, c))


def _cnn(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.3), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 10))


def _regressor(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))


# --- learners' training steps -------------------------------------------------------------------

def step_without_zero_grad(model, batch, optimizer, loss_fn):
    x, y = batch
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_zero_grad_after_backward(model, batch, optimizer, loss_fn):
    x, y = batch
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()


def step_softmax_then_loss(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x).softmax(dim=1), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_forgets_optimizer_step(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss.item()


def step_item_before_backward(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = torch.tensor(loss_fn(model(x), y).item(), requires_grad=True)  # graph cut
    loss.backward()
    optimizer.step()
    return loss.item()


def step_autocast(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_clipped(model, batch, optimizer, loss_fn):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return loss.detach()


def step_dict_batch(model, batch, optimizer, loss_fn):
    optimizer.zero_grad()
    loss = loss_fn(model(batch["image"]), batch["label"])
    loss.backward()
    optimizer.step()
    return float(loss)


class _Detached(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(20, 64), nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)).detach())


class _LogOfLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(20, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(self.linear(x))  # NaN wherever the linear output is negative


class _SqrtDistance(nn.Module):
    """Finite forward, NaN gradient: d sqrt(u)/du is infinite at u = 0."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(20, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x)
        return out - torch.sqrt(((out - out) ** 2).sum(dim=1, keepdim=True))


Setup = tuple[nn.Module, Any, torch.optim.Optimizer, Any, Callable | None]


def _setup(model: nn.Module, loss_fn: Any, make_opt: Callable, batch: Any, step: Callable | None = None,
           params: Any = None) -> Setup:
    return model, loss_fn, make_opt(model.parameters() if params is None else params), batch, step


def _adam(params: Any) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=1e-3)


def _broken_eval_mode() -> Setup:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 10)).eval()
    return _setup(model, nn.CrossEntropyLoss(), _adam, _classes())


def _broken_optimizer_over_one_layer() -> Setup:
    model = _mlp()
    return model, nn.CrossEntropyLoss(), _adam(model[2].parameters()), _classes(), None


def _broken_head_replaced() -> Setup:
    model = _mlp()
    optimizer = _adam(model.parameters())
    model[2] = nn.Linear(64, 10)  # replaced after the optimizer was built
    return model, nn.CrossEntropyLoss(), optimizer, _classes(), None


class _ListOfLayers(nn.Module):
    """Hidden layers in a plain Python list: model.parameters() does not see them."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = [nn.Linear(20, 32), nn.Linear(32, 32)]
        self.out = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


class _InPlaceSigmoid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(20, 32), nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.body(x))
        h += 1.0  # sigmoid's backward needs its output: modified in place
        return self.head(h)


class _CarriesState(nn.Module):
    """Keeps its GRU state between calls without detaching it."""

    def __init__(self) -> None:
        super().__init__()
        self.gru, self.head = nn.GRU(4, 8, batch_first=True), nn.Linear(8, 2)
        self.state: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, self.state = self.gru(x, self.state)
        return self.head(out[:, -1])


class _TimeFirstLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm, self.head = nn.LSTM(4, 8), nn.Linear(8, 2)  # batch_first=False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)  # x is (batch, time, features)
        return self.head(out[:, -1])


def _dead_relu_mlp() -> nn.Sequential:
    model = _mlp()
    with torch.no_grad():  # every ReLU is off: the output is the last bias, whatever the input
        model[0].bias.fill_(-50.0)
        model[2].bias.copy_(torch.randn(10, generator=_g(9)) * 2)
    return model


class _LockedLoss:
    """A loss object holding a lock: it cannot be deep-copied."""

    def __init__(self) -> None:
        import threading
        self.lock, self.loss = threading.Lock(), nn.CrossEntropyLoss()

    def __call__(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.loss(pred, target)


def step_argmax_loss(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x).argmax(dim=1).float(), y.float())
    loss.backward()
    optimizer.step()
    return loss.item()


def _sequences() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(32, 6, 4, generator=_g(8))
    return x, (x.sum(dim=(1, 2)) > 0).long()


class _ReluLogits(nn.Module):
    """A classifier whose forward() puts a ReLU on the logits."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.net(x))


class _Unfreezable(nn.Module):
    """A backbone frozen at construction, and an unfreeze() that only sets an attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = _mlp(c=64), nn.Linear(64, 10)
        self.body.requires_grad_(False)

    def unfreeze(self) -> None:
        self.body.requires_grad = True  # a plain attribute: no parameter changes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


def _broken_setter() -> Setup:
    model = _Unfreezable()
    model.unfreeze()
    return model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(), None


def _broken_all_frozen() -> Setup:
    model = _mlp()
    optimizer = _adam(model.parameters())
    for p in model.parameters():
        p.requires_grad = False
    return model, nn.CrossEntropyLoss(), optimizer, _classes(), step_skips_backward_without_graph


def step_clamped_scores(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x).clamp(min=0), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_skips_backward_without_graph(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    if loss.requires_grad:
        loss.backward()
    optimizer.step()
    return loss.item()


def _carried_with_graph() -> Setup:
    """A running state kept between steps with its graph; retain_graph=True silences the error."""
    model = _regressor()
    state: dict[str, torch.Tensor | None] = {"h": None}

    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        h = model(x) if state["h"] is None else 0.5 * state["h"] + model(x)
        state["h"] = h  # not detached
        loss = loss_fn(h, y)
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
        return loss.item()
    return model, nn.MSELoss(), _adam(model.parameters()), _regression(), step


def _scheduler_every_batch() -> Setup:
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)  # meant per epoch

    def step(model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        scheduler.step()
        return float(loss)
    return model, nn.CrossEntropyLoss(), optimizer, _classes(), step


BROKEN: dict[str, tuple[str, Callable[[], Setup]]] = {
    "no zero_grad": ("ZERO_GRAD_MISSING", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, 0.05, momentum=0.9), _classes(),
        step_without_zero_grad)),
    "softmax layer before CrossEntropyLoss": ("SOFTMAX_BEFORE_CE", lambda: _setup(
        nn.Sequential(_mlp(), nn.Softmax(dim=1)), nn.CrossEntropyLoss(), _adam, _classes())),
    "softmax in train_step": ("SOFTMAX_BEFORE_CE", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, _classes(), step_softmax_then_loss)),
    "softmax before NLLLoss": ("SOFTMAX_BEFORE_CE", lambda: _setup(
        nn.Sequential(_mlp(), nn.Softmax(dim=1)), nn.NLLLoss(), _adam, _classes())),
    "sigmoid before BCEWithLogitsLoss": ("SOFTMAX_BEFORE_CE", lambda: _setup(
        nn.Sequential(_mlp(c=1), nn.Sigmoid()), nn.BCEWithLogitsLoss(), _adam,
        (_classes()[0], (_classes()[1] % 2).float()[:, None]))),
    "optimizer over one layer": ("PARAM_NOT_IN_OPTIMIZER", _broken_optimizer_over_one_layer),
    "head replaced after optimizer": ("PARAM_NOT_IN_OPTIMIZER", _broken_head_replaced),
    "detach inside forward": ("NO_GRAD_FLOW", lambda: _setup(_Detached(), nn.CrossEntropyLoss(), _adam, _classes())),
    "zero_grad between backward and step": ("NO_GRAD_FLOW", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, _classes(), step_zero_grad_after_backward)),
    "loss re-wrapped with torch.tensor": ("NO_GRAD_FLOW", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, _classes(), step_item_before_backward)),
    "NaN in the inputs": ("NAN_OR_INF", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0].index_fill(0, torch.tensor([3]), float("nan")),
                                               _classes()[1]))),
    "log of negative values": ("NAN_OR_INF", lambda: _setup(_LogOfLinear(), nn.CrossEntropyLoss(), _adam, _classes())),
    "sqrt at zero in backward": ("NAN_OR_INF", lambda: _setup(_SqrtDistance(), nn.CrossEntropyLoss(), _adam, _classes())),
    "SGD lr 20": ("LR_TOO_HIGH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=20.0), _classes())),
    "regression with lr 1": ("LR_TOO_HIGH", lambda: _setup(
        _regressor(), nn.MSELoss(), lambda p: torch.optim.SGD(p, lr=1.0, momentum=0.9),
        (_regression()[0] * 3, _regression()[1]))),
    "lr 1e-7": ("CANNOT_OVERFIT_BATCH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=1e-7), _classes())),
    "optimizer.step() forgotten": ("CANNOT_OVERFIT_BATCH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, _classes(), step_forgets_optimizer_step)),
    "1-based labels": ("LABEL_OUT_OF_RANGE", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0], _classes()[1] + 1))),
    "negative labels": ("LABEL_OUT_OF_RANGE", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0], _classes()[1] - 1))),
    "batch on the meta device": ("DEVICE_MISMATCH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, tuple(t.to("meta") for t in _classes()))),
    "model on the meta device": ("DEVICE_MISMATCH", lambda: _setup(
        _mlp().to("meta"), nn.CrossEntropyLoss(), _adam, _classes())),
    "loss weights on another device": ("DEVICE_MISMATCH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(weight=torch.ones(10, device="meta")), _adam, _classes())),
    "float64 inputs": ("DTYPE_MISMATCH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0].double(), _classes()[1]))),
    "float class labels": ("DTYPE_MISMATCH", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0], _classes()[1].float()))),
    "uint8 images": ("DTYPE_MISMATCH", lambda: _setup(
        _cnn(), nn.CrossEntropyLoss(), _adam, ((_images()[0].abs() * 60).to(torch.uint8), _images()[1]))),
    "(N, 1) prediction vs (N,) target": ("BROADCAST_IN_LOSS", lambda: _setup(
        _regressor(), nn.MSELoss(), _adam, (_regression()[0], _regression()[1][:, 0]))),
    "custom loss broadcasting": ("BROADCAST_IN_LOSS", lambda: _setup(
        _regressor(), lambda p, t: ((p - t) ** 2).mean(), _adam, (_regression()[0], _regression()[1][:, 0]))),
    "pixel values 0..255": ("INPUT_NOT_NORMALIZED", lambda: _setup(
        _cnn(), nn.CrossEntropyLoss(), _adam, ((_images()[0].abs() * 60).clamp(0, 255).round(), _images()[1]))),
    "features on different scales": ("INPUT_NOT_NORMALIZED", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam,
        (_classes()[0] * torch.logspace(-2, 2, 20), _classes()[1]))),
    "model left in eval mode": ("EVAL_MODE_LEFT_ON", _broken_eval_mode),
    "layers in a Python list": ("PARAMS_NOT_REGISTERED", lambda: _setup(
        _ListOfLayers(), nn.CrossEntropyLoss(), _adam, _classes())),
    "in-place change of a sigmoid output": ("INPLACE_MODIFIED", lambda: _setup(
        _InPlaceSigmoid(), nn.CrossEntropyLoss(), _adam, _classes())),
    "GRU state kept without detach": ("GRAPH_REUSED", lambda: _setup(
        _CarriesState(), nn.CrossEntropyLoss(), _adam, _sequences())),
    "class labels shaped (N, 1)": ("TARGET_SHAPE", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0], _classes()[1][:, None]))),
    "argmax inside the loss": ("NON_DIFFERENTIABLE", lambda: _setup(
        _mlp(), nn.MSELoss(), _adam, _classes(), step_argmax_loss)),
    "dead ReLUs: constant output": ("STUCK_AT_CHANCE", lambda: _setup(
        _dead_relu_mlp(), nn.CrossEntropyLoss(), lambda p: torch.optim.Adam(p, lr=0.1), _classes())),
    "(batch, time) input to a time-first LSTM": ("RNN_BATCH_FIRST", lambda: _setup(
        _TimeFirstLSTM(), nn.CrossEntropyLoss(), _adam, _sequences())),
    "loss that cannot be copied": ("NOT_CHECKED", lambda: _setup(_mlp(), _LockedLoss(), _adam, _classes())),
    "NLLLoss on raw logits": ("NLL_ON_LOGITS", lambda: _setup(_mlp(), nn.NLLLoss(), _adam, _classes())),
    "BCELoss on raw scores": ("BCE_ON_LOGITS", lambda: _setup(
        _mlp(c=1), nn.BCELoss(), _adam, (_classes()[0], (_classes()[1] % 2).float()[:, None]))),
    "ReLU on a regression output": ("RELU_ON_OUTPUT", lambda: _setup(
        nn.Sequential(_regressor(), nn.ReLU()), nn.MSELoss(), _adam, _regression())),
    "ReLU as the classifier's last module": ("RELU_ON_OUTPUT", lambda: _setup(
        nn.Sequential(_mlp(), nn.ReLU()), nn.CrossEntropyLoss(), _adam, _classes())),
    "ReLU on the logits in forward()": ("RELU_ON_OUTPUT", lambda: _setup(
        _ReluLogits(), nn.CrossEntropyLoss(), _adam, _classes())),
    "clamp(min=0) before BCEWithLogitsLoss": ("RELU_ON_OUTPUT", lambda: _setup(
        _mlp(c=1), nn.BCEWithLogitsLoss(), _adam, (_classes()[0], (_classes()[1] % 2).float()[:, None]),
        step_clamped_scores)),
    "(N, 1) prediction vs (N, 4) target": ("BROADCAST_IN_LOSS", lambda: _setup(
        _regressor(), nn.MSELoss(), _adam, (_regression()[0], _regression()[0][:, :4]))),
    "unfreeze() that only sets an attribute": ("NO_GRAD_FLOW", _broken_setter),
    "every parameter frozen": ("NO_GRAD_FLOW", _broken_all_frozen),
    "state kept with its graph, retain_graph=True": ("GRAPH_REUSED", _carried_with_graph),
    "StepLR stepped every batch in the step": ("CANNOT_OVERFIT_BATCH", _scheduler_every_batch),
    "one-hot integer targets for CrossEntropyLoss": ("TARGET_SHAPE", lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, (_classes()[0], F.one_hot(_classes()[1], 10)))),
    "MSELoss on class labels": ("TARGET_SHAPE", lambda: _setup(
        _mlp(), nn.MSELoss(), _adam, _classes())),
    "sequence scores with the classes last": ("TARGET_SHAPE", lambda: _setup(
        _Tagger(), nn.CrossEntropyLoss(), _adam, _tokens())),
    "flattened pixels 0..255": ("INPUT_NOT_NORMALIZED", lambda: _setup(
        _mlp(d=192), nn.CrossEntropyLoss(), _adam,
        ((_images()[0].abs() * 60).clamp(0, 255).round()[:, 0, :8, :].reshape(32, -1)[:, :192], _images()[1]))),
}


class _Tagger(nn.Module):
    """Token tagger: scores (N, T, C) with the classes in the last dimension."""

    def __init__(self, permute: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.permute = permute
        self.embedding, self.head = nn.Embedding(12, 16), nn.Linear(16, 5)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        out = self.head(torch.tanh(self.embedding(idx)))
        return out.permute(0, 2, 1) if self.permute else out


def _tokens() -> tuple[torch.Tensor, torch.Tensor]:
    idx = torch.randint(0, 12, (32, 9), generator=_g(8))
    return idx, idx % 5


class _LogSoftmaxByHand(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.net(x)
        return z - z.logsumexp(dim=1, keepdim=True)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_setup_is_diagnosed(name: str) -> None:
    code, make = BROKEN[name]
    model, loss_fn, optimizer, batch, step = make()
    report = diagnose(model, loss_fn, optimizer, batch, train_step=step)
    assert code in report.codes, f"{name}: expected {code}\n{report}"
    item = next(f for f in report.findings if f.code == code)
    observed, why, fix = item.parts()
    assert observed and why and fix, item.message
    assert any(ch.isdigit() for ch in observed), f"the observation should carry numbers: {observed}"


def test_every_code_has_a_broken_setup() -> None:
    covered = {code for code, _ in BROKEN.values()}
    assert covered == set(CODES) - {"STEP_FAILED"}


def test_step_failed_for_an_unknown_error() -> None:
    def step(model, batch, optimizer, loss_fn):
        raise KeyError("my_config['lr']")

    report = diagnose(_mlp(), nn.CrossEntropyLoss(), _adam(_mlp().parameters()), _classes(), train_step=step)
    assert report.codes == {"STEP_FAILED", "PARAM_NOT_IN_OPTIMIZER"}
    assert "KeyError" in next(f for f in report.findings if f.code == "STEP_FAILED").message


def test_train_step_that_returns_nothing() -> None:
    def returns_none(model, batch, optimizer, loss_fn):  # the loss still goes through loss_fn: fine
        x, y = batch
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    def own_loss_returns_text(model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        return "done"

    model = _mlp()
    assert diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(), returns_none).ok
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(), own_loss_returns_text)
    assert report.codes == {"STEP_FAILED"} and "returned str" in report.findings[0].message


def test_shape_error_is_step_failed_not_a_traceback() -> None:
    model = _mlp(d=12)
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes())
    assert report.codes == {"STEP_FAILED"} and "cannot be multiplied" in report.findings[0].message


# --- correct setups ---------------------------------------------------------------------------------

def _scheduled() -> Setup:
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.5, total_steps=100)
    x, y = _classes()
    for _ in range(5):  # the caller has trained a little: the schedule is under way
        standard_step(model, (x, y), optimizer, nn.CrossEntropyLoss())
        scheduler.step()
    return model, nn.CrossEntropyLoss(), optimizer, (x, y), None


def _frozen_backbone() -> Setup:
    model = _mlp()
    model[0].requires_grad_(False)
    return model, nn.CrossEntropyLoss(), _adam([p for p in model.parameters() if p.requires_grad]), _classes(), None


def _unlabelled(marker: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = _classes()
    y = y.clone()
    y[::4] = marker  # every fourth sample has no label
    return x, y


def step_ignore_in_call(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y, ignore_index=-1)
    loss.backward()
    optimizer.step()
    return loss.item()


def _masked_ce(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """A loss of the learner's own that skips the -1 labels itself."""
    keep = target >= 0
    return F.cross_entropy(pred[keep], target[keep])


def _bce_on_int_labels(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """One output per sample (N, 1) and 0/1 int64 labels (N,): converted inside the loss."""
    return F.binary_cross_entropy_with_logits(pred.squeeze(1), target.float())


def step_rewrapped_target(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    target = y.detach().clone().requires_grad_()  # data, re-wrapped: not a parameter
    loss = loss_fn(model(x), target)
    loss.backward()
    optimizer.step()
    return loss.item()


class _SparseBag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embedding, self.head = nn.Embedding(50, 16, sparse=True), nn.Linear(16, 5)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.embedding(idx).mean(dim=1))


def _bag_batch() -> tuple[torch.Tensor, torch.Tensor]:
    idx = torch.randint(0, 50, (64, 6), generator=_g(12))
    return idx, idx[:, 0] % 5


class _SparseFactors(nn.Module):
    """Matrix factorisation: two sparse embeddings and a dot product (SparseAdam's use case)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.users, self.items = nn.Embedding(30, 8, sparse=True), nn.Embedding(40, 8, sparse=True)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return (self.users(pairs[:, 0]) * self.items(pairs[:, 1])).sum(dim=1)


def _sparse_adam() -> Setup:
    model = _SparseFactors()
    g = _g(14)
    pairs = torch.stack([torch.randint(0, 30, (64,), generator=g), torch.randint(0, 40, (64,), generator=g)], dim=1)
    ratings = torch.randn(64, generator=g)
    return model, nn.MSELoss(), torch.optim.SparseAdam(list(model.parameters()), lr=0.05), (pairs, ratings), None


class _TinyDetector(nn.Module):
    """Images as a list, targets as a list of dicts (the torchvision detection layout)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body, self.box = nn.Conv2d(3, 8, 3, padding=1), nn.Linear(8, 4)

    def forward(self, images: list[torch.Tensor]) -> torch.Tensor:
        return self.box(self.body(torch.stack(images)).mean(dim=(2, 3)))


def _detection_batch(n: int = 24) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    g = _g(13)
    images = [torch.rand(3, 12, 12, generator=g) for _ in range(n)]
    targets = [{"boxes": images[i].mean(dim=(1, 2)).repeat(2)[None, :4].repeat(1 + i % 3, 1),
                "labels": torch.randint(1, 4, (1 + i % 3,), generator=g)} for i in range(n)]
    return images, targets


def step_detection(model, batch, optimizer, loss_fn):
    images, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(images), torch.stack([t["boxes"][0] for t in targets]))
    loss.backward()
    optimizer.step()
    return loss.item()


def _warmup_on_optimizer() -> Setup:
    """A warm-up scheduler kept as an attribute of the optimizer and stepped by the step."""
    model = _mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    optimizer.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: min(1.0, (i + 1) / 5))

    def step(model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        optimizer.scheduler.step()
        return float(loss)
    return model, nn.CrossEntropyLoss(), optimizer, _classes(), step


def step_scales_uint8(model, batch, optimizer, loss_fn):
    x, y = batch
    return standard_step(model, ((x.float() / 255 - 0.5) / 0.25, y), optimizer, loss_fn)


CORRECT: dict[str, Callable[[], Setup]] = {
    "MLP classifier, Adam": lambda: _setup(_mlp(), nn.CrossEntropyLoss(), _adam, _classes()),
    "CNN with BatchNorm and Dropout": lambda: _setup(
        _cnn(), nn.CrossEntropyLoss(), _adam, _images(), step_clipped),
    "SGD with a OneCycle scheduler": _scheduled,
    "autocast bf16 step": lambda: _setup(_cnn(), nn.CrossEntropyLoss(), _adam, _images(), step_autocast),
    "gradient clipping": lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), _classes(),
        step_clipped),
    "regression with MSELoss": lambda: _setup(
        _regressor(), nn.MSELoss(), lambda p: torch.optim.Adam(p, lr=1e-2), _regression()),
    "frozen backbone": _frozen_backbone,
    "dict batch with log_softmax + NLLLoss": lambda: _setup(
        nn.Sequential(_mlp(), nn.LogSoftmax(dim=1)), nn.NLLLoss(), _adam,
        dict(zip(("image", "label"), _classes())), step_dict_batch),
    "functional cross_entropy with label smoothing": lambda: _setup(
        _mlp(), lambda p, t: F.cross_entropy(p, t, label_smoothing=0.1), _adam, _classes()),
    "binary classification with BCEWithLogitsLoss": lambda: _setup(
        _mlp(c=1), nn.BCEWithLogitsLoss(), _adam, (_classes()[0], (_classes()[1] % 2).float()[:, None])),
    "BCELoss after a sigmoid": lambda: _setup(
        nn.Sequential(_mlp(c=1), nn.Sigmoid()), nn.BCELoss(), _adam,
        (_classes()[0], (_classes()[1] % 2).float()[:, None])),
    "NLLLoss after log_softmax written by hand": lambda: _setup(
        _LogSoftmaxByHand(), nn.NLLLoss(), _adam, _classes()),
    "sequence scores permuted to (N, C, T)": lambda: _setup(
        _Tagger(permute=True), nn.CrossEntropyLoss(), _adam, _tokens()),
    "CrossEntropyLoss(ignore_index=-1) with unlabelled samples": lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(ignore_index=-1), _adam, _unlabelled(-1)),
    "-100 labels skipped by CrossEntropyLoss's default": lambda: _setup(
        _mlp(), nn.CrossEntropyLoss(), _adam, _unlabelled(-100)),
    "ignore_index=-1 passed in the loss call": lambda: _setup(
        _mlp(), F.cross_entropy, _adam, _unlabelled(-1), step_ignore_in_call),
    "a loss of your own that masks -1 labels": lambda: _setup(_mlp(), _masked_ce, _adam, _unlabelled(-1)),
    "single-output BCE on 0/1 int labels": lambda: _setup(
        _mlp(c=1), _bce_on_int_labels, _adam, (_classes()[0], _classes()[1] % 2)),
    "regression target re-wrapped with requires_grad": lambda: _setup(
        _regressor(), nn.MSELoss(), lambda p: torch.optim.Adam(p, lr=1e-2), _regression(), step_rewrapped_target),
    "logits clamped to [-10, 10]": lambda: _setup(
        _mlp(), lambda p, t: F.cross_entropy(p.clamp(-10, 10), t), _adam, _classes()),
    "sparse embedding with SGD": lambda: _setup(
        _SparseBag(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=0.5), _bag_batch()),
    "sparse embeddings with SparseAdam": _sparse_adam,
    "warm-up scheduler on optimizer.scheduler": _warmup_on_optimizer,
    "uint8 images scaled inside the train_step": lambda: _setup(
        _cnn(), nn.CrossEntropyLoss(), _adam, ((_images()[0].abs() * 60).clamp(0, 255).to(torch.uint8), _images()[1]),
        step_scales_uint8),
    "detection-style batch: list of images, list of target dicts": lambda: _setup(
        _TinyDetector(), nn.SmoothL1Loss(), lambda p: torch.optim.Adam(p, lr=1e-2), _detection_batch(),
        step_detection),
}


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_setup_has_no_error(name: str) -> None:
    model, loss_fn, optimizer, batch, step = CORRECT[name]()
    report = diagnose(model, loss_fn, optimizer, batch, train_step=step)
    assert report.ok, f"{name}\n{report}"
    assert not report.findings, f"{name}: expected a clean report\n{report}"
    assert report.measurements["overfit_losses"], report.measurements


def test_advice_for_label_layouts() -> None:
    x, y = _classes()
    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), (x, F.one_hot(y, 10)))
    assert "y.argmax(dim=1)" in next(f for f in report.findings if f.code == "TARGET_SHAPE").parts()[2]
    report = diagnose(model, nn.MSELoss(), _adam(model.parameters()), (x, y))
    assert "CrossEntropyLoss" in next(f for f in report.findings if f.code == "TARGET_SHAPE").parts()[2]
    pixels = (_images()[0].abs() * 60).clamp(0, 255).to(torch.uint8)
    report = diagnose(_cnn(), nn.CrossEntropyLoss(), _adam(_cnn().parameters()), (pixels, _images()[1]))
    assert {"DTYPE_MISMATCH", "INPUT_NOT_NORMALIZED"} <= report.codes, str(report)
    soft = F.one_hot(y, 10).float()  # probabilities as targets: valid for CrossEntropyLoss
    assert "TARGET_SHAPE" not in diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), (x, soft)).codes


def test_forgotten_backward_and_bce_shapes_are_named() -> None:
    def no_backward(model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        optimizer.step()
        return loss.item()

    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(), no_backward)
    assert report.codes == {"NO_GRAD_FLOW"} and "backward() was never called" in report.findings[0].message
    binary = _mlp(c=1)
    x, y = _classes()
    report = diagnose(binary, nn.BCEWithLogitsLoss(), _adam(binary.parameters()), (x, (y % 2).float()))
    assert report.codes == {"TARGET_SHAPE"}, str(report)  # BCE raises: it does not broadcast
    assert "y.unsqueeze(1)" in report.findings[0].parts()[2]


class _LossInside(nn.Module):
    """A model that computes its own loss in forward() (the Hugging Face style)."""

    def __init__(self, softmax: bool) -> None:
        super().__init__()
        self.softmax, self.net = softmax, _mlp()

    def forward(self, features: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        scores = self.net(features)
        scores = scores.softmax(dim=-1) if self.softmax else scores
        return {"logits": scores, "loss": F.cross_entropy(scores, labels)}


def _loss_inside_step(model, batch, optimizer, loss_fn):
    optimizer.zero_grad()
    out = model(**batch)
    out["loss"].backward()
    optimizer.step()
    return out["loss"].item()


def test_softmax_is_found_in_the_graph_of_a_loss_computed_inside_the_model() -> None:
    x, y = _classes()
    for softmax in (True, False):
        model = _LossInside(softmax)
        report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()),
                          {"features": x, "labels": y}, _loss_inside_step)
        assert ("SOFTMAX_BEFORE_CE" in report.codes) == softmax, str(report)
        assert report.ok != softmax, str(report)


def test_what_cannot_be_checked_is_said() -> None:
    def own_loss(model, batch, optimizer, loss_fn):  # computes its own loss: loss_fn is never called
        x, y = batch
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(), own_loss)
    assert report.ok and any(n.startswith("could not check what reached the loss") for n in report.notes), report
    square = _Tagger()  # 5 classes; 5 positions: the class dimension is ambiguous
    idx = torch.randint(0, 12, (32, 5), generator=_g(9))
    report = diagnose(square, nn.CrossEntropyLoss(), _adam(square.parameters()), (idx, idx % 5))
    assert "TARGET_SHAPE" not in report.codes, str(report)
    assert any("same size" in n for n in report.notes), report.notes


def test_contributing_lists_every_code() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "CONTRIBUTING.md").read_text()
    section = text[text.index("## 9. Changing the training doctor"):]
    assert not [code for code in CODES if f"`{code}`" not in section]


def test_relu_output_on_positive_targets_is_not_flagged() -> None:
    x, y = _regression()
    report = diagnose(nn.Sequential(_regressor(), nn.ReLU()), nn.MSELoss(),
                      _adam(_regressor().parameters()), (x, y.abs() + 0.1))
    assert "RELU_ON_OUTPUT" not in report.codes, str(report)


def test_slow_but_correct_setup_is_at_most_a_warning() -> None:
    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.01), _classes())
    assert report.ok, str(report)
    assert report.codes <= {"CANNOT_OVERFIT_BATCH"}


# --- nothing of the caller's changes ---------------------------------------------------------------

def _snapshot(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any) -> dict[str, Any]:
    return {
        "state": {k: v.clone() for k, v in model.state_dict().items()},
        "grads": [None if p.grad is None else p.grad.clone() for p in model.parameters()],
        "modes": [m.training for m in model.modules()],
        "optimizer": copy.deepcopy(optimizer.state_dict()),
        "batch": copy.deepcopy(batch),
        "rng": (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()),
        "grad_mode": torch.is_grad_enabled(),
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return bool((a == b).all())
    return a == b


@pytest.mark.parametrize("step", [None, step_without_zero_grad, step_autocast], ids=["standard", "no_zero", "autocast"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_callers_objects_are_unchanged(step: Callable | None, training: bool) -> None:
    model = _cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    batch = _images(16)
    standard_step(model, batch, optimizer, nn.CrossEntropyLoss())  # momentum buffers, grads, BN stats
    model.train(training)
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    before = _snapshot(model, optimizer, batch)
    report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch, train_step=step)
    assert isinstance(report, Report)
    after = _snapshot(model, optimizer, batch)
    for key in before:
        assert _same(before[key], after[key]), f"diagnose changed the caller's {key}"
    assert optimizer.param_groups[0]["params"][0] is next(model.parameters())


def test_random_streams_continue_as_if_diagnose_never_ran() -> None:
    model = _mlp()
    optimizer = _adam(model.parameters())
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    diagnose(model, nn.CrossEntropyLoss(), optimizer, _classes())
    draws = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    assert torch.equal(draws[0], torch.rand(3)) and draws[1] == random.random() and draws[2] == np.random.rand()


def test_report_is_deterministic() -> None:
    first = diagnose(*CORRECT["CNN with BatchNorm and Dropout"]()[:4], train_step=step_clipped)
    second = diagnose(*CORRECT["CNN with BatchNorm and Dropout"]()[:4], train_step=step_clipped)
    assert first.measurements["overfit_losses"] == second.measurements["overfit_losses"]


# --- arguments and rendering -------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (("not a model", nn.CrossEntropyLoss(), None, None), ["torch.nn.Module", "str"]),
    ((nn.Linear, nn.CrossEntropyLoss(), None, None), ["create the model first"]),
    ((_mlp(), nn.CrossEntropyLoss, None, None), ["CrossEntropyLoss()", "parentheses"]),
    ((_mlp(), 3, None, None), ["callable"]),
    ((_mlp(), nn.CrossEntropyLoss(), torch.optim.SGD, _classes()), ["Optimizer", "SGD(model.parameters()"]),
    ((_mlp(), nn.CrossEntropyLoss(), iter(_mlp().parameters()), _classes()), ["Optimizer", "generator"]),
    ((_mlp(), nn.CrossEntropyLoss(), "adam", _classes()), ["Optimizer"]),
    ((_mlp(), nn.CrossEntropyLoss(), _adam(_mlp().parameters()),
      torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*_classes()))), ["next(iter(loader))"]),
    ((_mlp(), nn.CrossEntropyLoss(), _adam(_mlp().parameters()), (*_classes(), 1)), ["(inputs, targets)", "length 3"]),
    ((_mlp(), nn.CrossEntropyLoss(), _adam(_mlp().parameters()), ([1.0], [2])), ["no tensors"]),
    ((_mlp(), nn.CrossEntropyLoss(), _adam(_mlp().parameters()), (np.zeros((4, 20)), np.zeros(4))), ["torch.tensor"]),
])
def test_wrong_arguments_raise_a_clear_type_error(args: tuple, words: list[str]) -> None:
    with pytest.raises(TypeError) as info:
        diagnose(*args)
    for word in words:
        assert word in str(info.value), str(info.value)
    assert info.traceback[-1].name == "diagnose", "raise from diagnose itself, not from deep inside"


def test_train_step_with_the_wrong_signature() -> None:
    model = _mlp()
    with pytest.raises(TypeError, match=r"\(model, batch, optimizer, loss_fn\)"):
        diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(),
                 train_step=lambda model, batch: 0.0)
    with pytest.raises(TypeError, match="function or None"):
        diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes(), train_step="step")


def test_report_renders_as_text_and_html() -> None:
    model = nn.Sequential(_mlp(), nn.Softmax(dim=1))
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes())
    text, page = str(report), report._repr_html_()
    assert text.startswith("Training doctor: 1 error, 0 warnings") and "SOFTMAX_BEFORE_CE" in text
    assert "Why it matters:" in text and "Fix:" in text and repr(report) == text
    assert "<table>" in page and "SOFTMAX_BEFORE_CE" in page and "why it matters" in page
    clean = Report([], ["a note"])
    assert "No problems found." in str(clean) and "No problems found." in clean._repr_html_()
    assert clean.ok and clean.codes == set()


def test_finding_parts_and_codes() -> None:
    item = Finding("NAN_OR_INF", "error", "seen 1 NaN. Why it matters: spreads. Fix: clean.")
    assert item.parts() == ("seen 1 NaN.", "spreads.", "clean.")
    assert all(code.isupper() for code in CODES)


# --- the package is a one-way pipeline ------------------------------------------------------------------

#: The doctor's modules in pipeline order: a module may import only modules before it.
PIPELINE = ["records", "common", "graph", "checks", "probes", "errors", "analysis", "report", "diagnose",
            "__init__"]


def _doctor_imports() -> dict[str, set[str]]:
    """For each module of course_utils/doctor, the package modules it imports (anywhere in the file)."""
    import ast
    from pathlib import Path

    import course_utils.doctor as package

    found: dict[str, set[str]] = {}
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                absolute = node.level == 0 and (node.module or "").startswith("course_utils.doctor")
                if node.level == 1 or absolute:
                    rest = (node.module or "").removeprefix("course_utils.doctor").lstrip(".") if absolute \
                        else (node.module or "")
                    if rest:
                        imported.add(rest.split(".")[0])
                    else:  # from . import x (x: a module or a name of the package)
                        imported.update(a.name if a.name in PIPELINE else "__init__" for a in node.names)
            elif isinstance(node, ast.Import):
                imported.update(a.name.removeprefix("course_utils.doctor.").split(".")[0] for a in node.names
                                if a.name.startswith("course_utils.doctor"))
        found[path.stem] = imported
    return found


def test_doctor_package_is_a_one_way_pipeline() -> None:
    imports = _doctor_imports()
    assert set(imports) == set(PIPELINE), f"place every module in PIPELINE: {sorted(set(imports) ^ set(PIPELINE))}"
    rank = {name: i for i, name in enumerate(PIPELINE)}
    backward = [f"{module} imports {target}" for module, targets in imports.items() for target in targets
                if target in rank and rank[target] >= rank[module]]
    assert not backward, f"imports against the pipeline order {PIPELINE}: {backward}"


def test_the_import_check_can_fail(tmp_path, monkeypatch) -> None:
    """The parser sees relative, absolute and function-level imports (the check above can fail)."""
    import course_utils.doctor as package

    (tmp_path / "records.py").write_text("def f():\n    from .analysis import analyse\n")
    (tmp_path / "checks.py").write_text("from course_utils.doctor.probes import run_probes\nfrom . import report\n")
    monkeypatch.setattr(package, "__file__", str(tmp_path / "__init__.py"))
    assert _doctor_imports() == {"records": {"analysis"}, "checks": {"probes", "report"}}


def test_stages_hand_each_other_plain_records() -> None:
    import dataclasses

    from course_utils.doctor import analysis, checks, probes, records

    model = _mlp()
    batch = _classes()
    inputs = records.Inputs(model, nn.CrossEntropyLoss(), _adam(model.parameters()), batch, standard_step,
                            True, *batch, max_steps=30)
    with probes.preserved_state():
        static = checks.static_checks(inputs)
        probed = probes.run_probes(inputs, static)
        result = analysis.analyse(inputs, static, probed)
    for item in (inputs, static, probed, probed.step, probed.overfit, result):
        assert dataclasses.is_dataclass(item), type(item)
    assert isinstance(static, records.StaticRecord) and isinstance(probed, records.ProbeRecord)
    assert isinstance(result, records.Analysis) and result.measurements["overfit_losses"] == probed.overfit.losses


# --- the caller's objects, complete: model, optimizer, schedulers, random generators, modes -----------

def _full_snapshot(model: nn.Module, optimizer: torch.optim.Optimizer, schedulers: list[Any]) -> dict[str, Any]:
    hooks = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    return {
        "weights and buffers": {k: v.clone() for k, v in model.state_dict().items()},
        "grads": [None if p.grad is None else p.grad.clone() for p in model.parameters()],
        "requires_grad": [p.requires_grad for p in model.parameters()],
        "training flags": [(name, m.training) for name, m in model.named_modules()],
        "hooks": [(name, [list(getattr(m, h)) for h in hooks]) for name, m in model.named_modules()],
        "param_groups": [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"} for g in optimizer.param_groups],
        "param identity": [[id(p) for p in g["params"]] for g in optimizer.param_groups],
        "optimizer state": copy.deepcopy(optimizer.state_dict()["state"]),
        "schedulers": [copy.deepcopy({k: v for k, v in vars(s).items() if k != "optimizer"}) for s in schedulers],
        "rng": (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()),
        "grad_mode": torch.is_grad_enabled(),
        "default dtype": torch.get_default_dtype(),
    }


class _Trainer:
    """A train_step written as a method: the scheduler lives on the object."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)

    def train_step(self, model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        self.scheduler.step()
        return loss


def _with_closed_over_scheduler() -> tuple[Setup, list[Any]]:
    """The outsiders' case: StepLR(step_size=1, gamma=0.1) stepped by the train_step it closes over."""
    model = _cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)

    def step(model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        scheduler.step()
        return loss
    return (model, nn.CrossEntropyLoss(), optimizer, _images(16), step), [scheduler]


def _with_scheduler_on_optimizer() -> tuple[Setup, list[Any]]:
    model = _mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.01, total_steps=50)
    for _ in range(3):
        standard_step(model, _classes(), optimizer, nn.CrossEntropyLoss())
        scheduler.step()
    return (model, nn.CrossEntropyLoss(), optimizer, _classes(), None), [scheduler]


def _with_trainer_method() -> tuple[Setup, list[Any]]:
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    trainer = _Trainer(optimizer)
    return (model, nn.CrossEntropyLoss(), optimizer, _classes(), trainer.train_step), [trainer.scheduler]


def _with_plateau_and_global_model() -> tuple[Setup, list[Any]]:
    """A train_step that trains the model it closes over (not its argument) and steps ReduceLROnPlateau."""
    model = _mlp()
    model[0].register_forward_hook(lambda m, i, o: None)
    model[0].bias.requires_grad_(False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.1, patience=0)

    def step(_model, batch, optimizer_arg, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        plateau.step(10.0)  # a constant "validation loss": every call lowers the LR
        return loss.item()
    return (model, nn.CrossEntropyLoss(), optimizer, _classes(), step), [plateau]


def _with_mixed_modes() -> tuple[Setup, list[Any]]:
    model = _cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    standard_step(model, _images(16), optimizer, nn.CrossEntropyLoss())
    model.train()
    model[1].eval()  # one BatchNorm frozen on purpose
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.9 ** epoch)
    return (model, nn.CrossEntropyLoss(), optimizer, _images(16), step_clipped), [scheduler]


@pytest.mark.parametrize("make", [_with_closed_over_scheduler, _with_scheduler_on_optimizer, _with_trainer_method,
                                  _with_plateau_and_global_model, _with_mixed_modes],
                         ids=["closed-over StepLR", "OneCycle on the optimizer", "trainer method",
                              "plateau + global model", "mixed modes + LambdaLR"])
def test_every_object_is_left_as_found(make: Callable) -> None:
    (model, loss_fn, optimizer, batch, step), schedulers = make()
    random.seed(3)
    np.random.seed(3)
    torch.manual_seed(3)
    before = _full_snapshot(model, optimizer, schedulers)
    diagnose(model, loss_fn, optimizer, batch, train_step=step)
    after = _full_snapshot(model, optimizer, schedulers)
    for key in before:
        assert _same(before[key], after[key]), f"diagnose changed the caller's {key}:\n{before[key]}\n{after[key]}"


def test_a_closed_over_scheduler_does_not_change_the_verdict() -> None:
    """Every probe starts from the caller's learning rate, even when the step decays it through a
    scheduler bound to the caller's optimizer."""
    (model, loss_fn, optimizer, batch, step), _ = _with_closed_over_scheduler()
    report = diagnose(model, loss_fn, optimizer, batch, train_step=step)
    overfit = next(n for n in report.notes if n.startswith("one-batch overfit"))
    assert "lr 0.1" in overfit, overfit


# --- error severity only on conclusive evidence ----------------------------------------------------

class _LeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(16 * 4 * 4, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2).flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def _gan_discriminator_step() -> Setup:
    """A WGAN-GP discriminator step: the gradient penalty differentiates through an interpolated input."""
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    critic = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def step(model, batch, optimizer, loss_fn):
        (real,) = batch
        with torch.no_grad():
            fake = generator(torch.randn(real.shape[0], 8))
        optimizer.zero_grad()
        alpha = torch.rand(real.shape[0], 1)
        mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        grad, = torch.autograd.grad(model(mixed).sum(), mixed, create_graph=True)
        penalty = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        loss = model(fake).mean() - model(real).mean() + 10 * penalty
        loss.backward()
        optimizer.step()
        return loss.item()
    real = torch.randn(64, 2, generator=_g(15)) * 0.5 + 2
    return critic, nn.MSELoss(), torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9)), (real,), step


@pytest.mark.parametrize("make", [
    lambda: _setup(_LeNet(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
                   (torch.rand(64, 1, 28, 28, generator=_g(16)), torch.randint(0, 10, (64,), generator=_g(17)))),
    _gan_discriminator_step,
    lambda: _setup(_mlp(), nn.CrossEntropyLoss(), lambda p: torch.optim.SGD(p, lr=1e-4), _classes()),
], ids=["LeNet SGD 0.01 momentum 0.9", "GAN critic with gradient penalty", "MLP SGD 1e-4"])
def test_running_out_of_steps_is_at_most_a_warning(make: Callable) -> None:
    report = diagnose(*make()[:4], train_step=make()[4])
    assert report.ok, str(report)
    for item in report.warnings:
        observed = item.parts()[0]
        assert any(ch.isdigit() for ch in observed), f"a warning should say what it saw: {observed}"


def test_a_constant_output_at_chance_is_still_an_error() -> None:
    code, make = BROKEN["dead ReLUs: constant output"]
    report = diagnose(*make()[:4])
    assert next(f for f in report.findings if f.code == code).severity == "error", str(report)


# --- conventions before rules ---------------------------------------------------------------------

def test_nan_gradients_from_the_loss_are_not_a_missing_zero_grad() -> None:
    from course_utils.doctor.analysis import step_findings
    from course_utils.doctor.records import Inputs, StaticRecord, StepRecord

    w = nn.Parameter(torch.ones(3))
    finite = torch.full((3,), 0.5)
    record = StepRecord({id(w): "w"}, [w], losses=[1.0, 1.0], step_grads=[{id(w): finite}, {id(w): finite}],
                        increments=[{id(w): finite}, {id(w): torch.tensor([float("nan"), 1.0, 1.0])}],
                        leftover=[{id(w): None}, {id(w): torch.full((3,), 0.25)}], updated=[True, True],
                        accumulated={id(w): 2})
    inputs = Inputs(nn.Linear(3, 1), nn.MSELoss(), torch.optim.SGD([w], lr=0.1), None, standard_step, True)
    assert "ZERO_GRAD_MISSING" not in {f.code for f in step_findings(record, StaticRecord(), inputs)}


def test_nan_made_by_the_loss_is_named_as_such() -> None:
    def distance(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(((pred - target) ** 2).sum(dim=1)).mean()  # infinite slope where pred == target

    model = _regressor()
    with torch.no_grad():
        model[2].weight.zero_()
        model[2].bias.zero_()
    x, _ = _regression()
    report = diagnose(model, distance, _adam(model.parameters()), (x, torch.zeros(64, 1)))
    assert "NAN_OR_INF" in report.codes and "ZERO_GRAD_MISSING" not in report.codes, str(report)


def test_a_parameter_created_in_forward_is_still_unregistered() -> None:
    class _NewHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(20, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.Linear(16, 10)(self.body(x))

    model = _NewHead()
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes())
    assert "PARAMS_NOT_REGISTERED" in report.codes, str(report)


def test_labels_the_loss_does_not_skip_are_still_out_of_range() -> None:
    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(ignore_index=-1), _adam(model.parameters()), _unlabelled(-100))
    assert "LABEL_OUT_OF_RANGE" in report.codes, str(report)
    report = diagnose(model, lambda p, t: F.cross_entropy(p, t), _adam(model.parameters()), _unlabelled(10))
    assert "LABEL_OUT_OF_RANGE" in report.codes, str(report)


# --- never stop: any batch structure, sparse parameters --------------------------------------------

Sample = __import__("collections").namedtuple("Sample", "features label")


def _step_sample_dicts(model, batch, optimizer, loss_fn):
    x = torch.stack([item["x"] for item in batch])
    y = torch.stack([item["y"] for item in batch])
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _step_with_ids(model, batch, optimizer, loss_fn):
    x, y, _ids = batch
    return standard_step(model, (x, y), optimizer, loss_fn)


@pytest.mark.parametrize("batch, step, samples", [
    (_detection_batch(), step_detection, 16),
    (_detection_batch(8), step_detection, 8),
    ([{"x": x, "y": y} for x, y in zip(*_classes())], _step_sample_dicts, 16),
    (Sample(*_classes()), None, 16),
    ({"input_ids": _classes()[0], "labels": _classes()[1]},
     lambda m, b, o, f: standard_step(m, (b["input_ids"], b["labels"]), o, f), 16),
    ((*_classes(), [f"id{i}" for i in range(64)]), _step_with_ids, 16),
], ids=["detection lists", "detection, 8 samples", "list of sample dicts", "namedtuple", "dict, other keys",
        "tensors and a list of ids"])
def test_any_batch_structure_is_described_and_checked(batch: Any, step: Callable | None, samples: int) -> None:
    model = _TinyDetector() if step is step_detection else _mlp()
    loss_fn = nn.SmoothL1Loss() if step is step_detection else nn.CrossEntropyLoss()
    report = diagnose(model, loss_fn, torch.optim.Adam(model.parameters(), lr=1e-2), batch, train_step=step)
    assert not any("stopped with" in f.message for f in report.findings), str(report)
    overfit = next(n for n in report.notes if n.startswith("one-batch overfit"))
    assert f"first {samples} samples" in overfit or (samples == 8 and "first 8 samples" in overfit), overfit
    assert "first 0 samples" not in str(report)


def test_a_batch_of_unknown_size_is_said() -> None:
    x, y = _classes()
    batch = {"x": x, "y": y, "weights": torch.ones(3)}  # no size shared by every tensor

    def step(model, batch, optimizer, loss_fn):
        return standard_step(model, (batch["x"], batch["y"]), optimizer, loss_fn)
    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), batch, train_step=step)
    assert report.ok and any("could not be read" in n for n in report.notes), report.notes
    assert "first 0 samples" not in str(report)


def test_a_misspelt_requires_grad_is_named() -> None:
    model = _mlp()
    for p in model[0].parameters():
        p.require_grad = False  # meant to freeze: a new attribute, the layer still trains
    report = diagnose(model, nn.CrossEntropyLoss(), _adam(model.parameters()), _classes())
    item = next(f for f in report.findings if f.code == "NO_GRAD_FLOW")
    assert item.severity == "warning" and "require_grad" in item.message, str(report)


def test_sparse_gradients_of_the_caller_are_kept() -> None:
    model = _SparseBag()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loss = nn.CrossEntropyLoss()(model(_bag_batch()[0]), _bag_batch()[1])
    loss.backward()  # the caller's embedding now holds a sparse gradient
    before = model.embedding.weight.grad.to_dense().clone()
    report = diagnose(model, nn.CrossEntropyLoss(), optimizer, _bag_batch())
    assert not any("stopped with" in f.message for f in report.findings), str(report)
    assert model.embedding.weight.grad.is_sparse and torch.equal(model.embedding.weight.grad.to_dense(), before)
