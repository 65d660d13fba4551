"""A corpus of real training bugs for the training doctor.

Each case is a bug reported in a public GitHub issue or pull-request thread (its address is in
``source``), reduced to a small CPU program of the same kind: the same kind of model, training
loop and mistake, written for this corpus (no code copied from the threads). Every case has the
program with the bug (``buggy``) and with the fix the thread settled on (``fixed``); both build
fresh objects on every call and return ``(model, loss_fn, optimizer, batch, train_step)``.

``expected`` is the doctor code that names the cause. The fixed program must get no
error-severity finding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Setup = tuple[nn.Module, Any, torch.optim.Optimizer, Any, Callable | None]


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    expected: str
    buggy: Callable[[], Setup]
    fixed: Callable[[], Setup]


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _classes(n: int = 64, d: int = 20, c: int = 5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, d, generator=_g(seed))
    return x, (x @ torch.randn(d, c, generator=_g(seed + 1))).argmax(1)


def _images(n: int = 32, c: int = 4, seed: int = 2, size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.rand(n, 3, size, size, generator=_g(seed))
    return x, (x.mean(dim=(2, 3)) @ torch.randn(3, c, generator=_g(seed + 1))).argmax(1)


def _sequences(n: int = 32, t: int = 12, f: int = 6, seed: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, t, f, generator=_g(seed))
    return x, (x.sum(dim=(1, 2)) > 0).long()


def _standard(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer, loss_fn: Any) -> float:
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _adam(model: nn.Module, lr: float = 1e-3) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr)


# --- 1. softmax before CrossEntropyLoss ---------------------------------------------------------
# https://github.com/bowang-lab/Transformer-GCN-QA/pull/32 : a candidate scorer ended in a softmax
# that was fed to CrossEntropyLoss; the PR removed the extra softmax.

def _scorer(softmax: bool) -> Setup:
    torch.manual_seed(1)
    layers: list[nn.Module] = [nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 5)]
    model = nn.Sequential(*layers, *([nn.Softmax(dim=1)] if softmax else []))
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _classes(), None


# --- 2. softmax inside forward of a small language model -----------------------------------------
# https://github.com/bkitano/llama-from-scratch/issues/5 : forward() returned F.softmax(...) and the
# loss was F.cross_entropy(logits.view(-1, vocab), targets.view(-1)).

class _TinyLM(nn.Module):
    def __init__(self, vocab: int = 12, dim: int = 16, softmax: bool = True) -> None:
        super().__init__()
        self.vocab, self.softmax = vocab, softmax
        self.embedding = nn.Embedding(vocab, dim)
        self.linear = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, vocab))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        a = self.linear(self.embedding(idx))
        return F.softmax(a, dim=-1) if self.softmax else a


def _lm_step(model, batch, optimizer, loss_fn):
    xs, ys = batch
    optimizer.zero_grad()
    logits = model(xs)
    loss = loss_fn(logits.view(-1, model.vocab), ys.view(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def _lm(softmax: bool) -> Setup:
    torch.manual_seed(2)
    model = _TinyLM(softmax=softmax)
    idx = torch.randint(0, 12, (16, 9), generator=_g(5))
    return model, F.cross_entropy, _adam(model, 1e-2), (idx[:, :-1].contiguous(), idx[:, 1:].contiguous()), _lm_step


# --- 3. sigmoid before BCEWithLogitsLoss -----------------------------------------------------------
# https://github.com/cvg/glue-factory/issues/89 : a token-confidence head nn.Sequential(Linear, Sigmoid)
# was trained with nn.BCEWithLogitsLoss (sigmoid applied twice).

def _confidence(sigmoid: bool) -> Setup:
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(16, 1), *([nn.Sigmoid()] if sigmoid else []))
    x = torch.randn(64, 16, generator=_g(6))
    y = (x[:, :1] + 0.5 * x[:, 1:2] > 0).float()
    return model, nn.BCEWithLogitsLoss(), _adam(model, 1e-2), (x, y), None


# --- 4. sigmoid in the model, BCEWithLogitsLoss in the trainer (multi-label CNN) ------------------
# https://github.com/lopuhin/kaggle-imet-2019/issues/3 : the maintainer confirmed the loss expects
# logits, so no sigmoid must be applied before it.

def _multilabel(sigmoid: bool) -> Setup:
    torch.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 6), *([nn.Sigmoid()] if sigmoid else []))
    x = torch.rand(32, 3, 16, 16, generator=_g(7))
    y = (torch.rand(32, 6, generator=_g(8)) > 0.7).float()
    return model, nn.BCEWithLogitsLoss(), _adam(model, 1e-2), (x, y), None


# --- 5. hidden layers kept in a plain Python list ---------------------------------------------------
# https://github.com/pytorch/pytorch/issues/715 : `self.hids = [...]` of nn.Linear layers; their
# parameters were missing from model.parameters(); fix: nn.ModuleList.

class _ListMLP(nn.Module):
    def __init__(self, module_list: bool) -> None:
        super().__init__()
        hids = [nn.Linear(20, 32)] + [nn.Linear(32, 32) for _ in range(2)]
        self.hids = nn.ModuleList(hids) if module_list else hids
        self.classifier = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.hids:
            x = torch.relu(layer(x))
        return self.classifier(x)


def _list_mlp(fixed: bool) -> Setup:
    torch.manual_seed(5)
    model = _ListMLP(fixed)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _classes(), None


# --- 6. conv + BatchNorm layers in a plain list (segmentation net) -----------------------------------
# https://github.com/kanezaki/pytorch-unsupervised-segmentation/pull/6 : conv and batch-norm layers were
# appended to a normal list on the module; the PR put them in nn.ModuleList.

class _SegNet(nn.Module):
    def __init__(self, module_list: bool, channels: int = 8, classes: int = 4) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels)
        convs = [nn.Conv2d(channels, channels, 3, padding=1) for _ in range(2)]
        bns = [nn.BatchNorm2d(channels) for _ in range(2)]
        self.conv2 = nn.ModuleList(convs) if module_list else convs
        self.bn2 = nn.ModuleList(bns) if module_list else bns
        self.conv3 = nn.Conv2d(channels, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        for conv, bn in zip(self.conv2, self.bn2):
            x = torch.relu(bn(conv(x)))
        return self.conv3(x)


def _segnet(fixed: bool) -> Setup:
    torch.manual_seed(6)
    model = _SegNet(fixed)
    x = torch.rand(8, 3, 12, 12, generator=_g(9))
    y = (x[:, 0] * 4).long().clamp(max=3)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), (x, y), None


# --- 7. layers created inside forward() ------------------------------------------------------------
# https://github.com/pytorch/pytorch/issues/1291 : torch.nn.Linear(D_in, H)(x) inside forward(), so
# model.parameters() does not list those layers (and each call makes new random ones).

class _ForwardLayers(nn.Module):
    def __init__(self, in_init: bool) -> None:
        super().__init__()
        self.in_init = in_init
        if in_init:
            self.linear1, self.linear2 = nn.Linear(20, 32), nn.Linear(32, 32)
        self.linear3 = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.in_init:
            h = self.linear2(self.linear1(x).clamp(min=0)).clamp(min=0)
        else:
            h = nn.Linear(32, 32)(nn.Linear(20, 32)(x).clamp(min=0)).clamp(min=0)
        return self.linear3(h)


def _forward_layers(fixed: bool) -> Setup:
    torch.manual_seed(7)
    model = _ForwardLayers(fixed)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _classes(), None


# --- 8. merge layer keeping its branches in a Python list -------------------------------------------
# https://github.com/asyml/texar-pytorch/issues/72 : MergeLayer stored its layers in a Python list, so
# their trainable variables were missing; fix: nn.ModuleList.

class _Merge(nn.Module):
    def __init__(self, module_list: bool) -> None:
        super().__init__()
        branches = [nn.Linear(20, 8) for _ in range(3)]
        self.branches = nn.ModuleList(branches) if module_list else branches
        self.out = nn.Linear(24, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.cat([torch.tanh(b(x)) for b in self.branches], dim=1))


def _merge(fixed: bool) -> Setup:
    torch.manual_seed(8)
    model = _Merge(fixed)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _classes(), None


# --- 9. in-place change of a tensor autograd still needs (attention block) ----------------------------
# https://github.com/Jee-King/TSAN/issues/3 : `out = x` followed by an in-place update of `out`
# (which is x) raised "modified by an inplace operation"; fix: out = x.clone().

class _Gate(nn.Module):
    def __init__(self, clone: bool) -> None:
        super().__init__()
        self.clone = clone
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.att = nn.Conv2d(8, 8, 1)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.sigmoid(self.conv(x))
        out = x.clone() if self.clone else x
        out *= torch.sigmoid(self.att(x))  # in place on the sigmoid output when not cloned
        return self.head(out.mean(dim=(2, 3)))


def _gate(fixed: bool) -> Setup:
    torch.manual_seed(9)
    model = _Gate(fixed)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _images(), None


# --- 10. RNN encoder writing each step into a preallocated tensor ------------------------------------
# https://github.com/Seanny123/da-rnn/issues/14 : the encoder filled a preallocated tensor step by step
# and fed slices of it back in, which breaks backward ("modified by an inplace operation").

class _Encoder(nn.Module):
    def __init__(self, stack: bool, f: int = 6, h: int = 16) -> None:
        super().__init__()
        self.stack, self.h = stack, h
        self.cell = nn.GRUCell(f, h)
        self.head = nn.Linear(h, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, _ = x.shape
        if self.stack:
            states = [x.new_zeros(n, self.h)]
            for i in range(t):
                states.append(self.cell(x[:, i], states[-1]))
            return self.head(torch.stack(states[1:], dim=1).mean(dim=1))
        encoded = x.new_zeros(n, t + 1, self.h)
        for i in range(t):
            encoded[:, i + 1] = self.cell(x[:, i], encoded[:, i])
        return self.head(encoded[:, 1:].mean(dim=1))


def _encoder(fixed: bool) -> Setup:
    torch.manual_seed(10)
    model = _Encoder(fixed)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _sequences(), None


# --- 11. RNN hidden state carried across batches without detaching --------------------------------
# https://github.com/MorvanZhou/PyTorch-Tutorial/issues/57 : removing `h_state = h_state.data` gave
# "Trying to backward through the graph a second time"; the tutorial keeps the line.

class _RNNRegressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(1, 16, batch_first=True)
        self.out = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        r_out, h = self.rnn(x, h)
        return self.out(r_out), h


def _carry_step(detach: bool) -> Callable:
    state: dict[str, torch.Tensor | None] = {"h": None}

    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        prediction, h = model(x, state["h"])
        state["h"] = h.data if detach else h  # the tutorial's line: h_state = h_state.data
        loss = loss_fn(prediction, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _rnn_regression(fixed: bool) -> Setup:
    torch.manual_seed(11)
    model = _RNNRegressor()
    steps = torch.linspace(0, 6.28, 10).repeat(4, 1)
    x, y = steps.sin()[..., None], steps.cos()[..., None]
    return model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.02), (x, y), _carry_step(fixed)


# --- 12. LSTM that stores its state on the model and feeds it back -----------------------------------
# https://github.com/sgadgil6/cnslab_fmri/issues/4 (fix: https://github.com/sgadgil6/cnslab_fmri/pull/5):
# forward() passed self.hidden into the LSTM and stored the new state there, so the second batch
# back-propagated into the first one's graph; fix: do not pass the stored state.

class _StatefulLSTM(nn.Module):
    def __init__(self, reuse_state: bool, f: int = 6, h: int = 16) -> None:
        super().__init__()
        self.reuse_state = reuse_state
        self.lstm = nn.LSTM(f, h, batch_first=True)
        self.linear = nn.Linear(h, 2)
        self.hidden = (torch.zeros(1, 32, h), torch.zeros(1, 32, h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.reuse_state:
            lstm_out, self.hidden = self.lstm(x, self.hidden)
        else:
            lstm_out, self.hidden = self.lstm(x)
        return self.linear(lstm_out[:, -1, :])


def _stateful_lstm(fixed: bool) -> Setup:
    torch.manual_seed(12)
    model = _StatefulLSTM(reuse_state=not fixed)
    optimizer = _adam(model, 1e-2)
    batch = _sequences()
    _standard(model, batch, optimizer, nn.CrossEntropyLoss())  # one real step: self.hidden holds a graph now
    return model, nn.CrossEntropyLoss(), optimizer, batch, None


# --- 13. DETR-style step without zero_grad (with gradient clipping) ---------------------------------
# https://github.com/IDEA-Research/DN-DETR/issues/19 : the training step called backward, clip_grad_norm_
# and step but no optimizer.zero_grad(), so gradients accumulated.

def _clip_step(zero: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x), y)
        if zero:
            optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        return loss.item()
    return train_step


def _detr(fixed: bool) -> Setup:
    torch.manual_seed(13)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
    return model, nn.CrossEntropyLoss(), torch.optim.AdamW(model.parameters(), lr=1e-3), _classes(), _clip_step(fixed)


# --- 14. transfer learning with a frozen feature extractor, no zero_grad ------------------------------
# https://github.com/udacity/deep-learning-v2-pytorch/pull/160 : the transfer-learning notebook's loop
# had no zero_grad, so gradients of the new classifier accumulated.

def _no_zero_step(zero: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        if zero:
            optimizer.zero_grad()
        output = model(x)
        loss = loss_fn(output, y)
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _transfer(fixed: bool) -> Setup:
    torch.manual_seed(14)
    features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
    features.requires_grad_(False)
    model = nn.Sequential(features, nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model[1:].parameters(), lr=0.05, momentum=0.9)
    return model, nn.CrossEntropyLoss(), optimizer, _images(), _no_zero_step(fixed)


# --- 15. zero_grad outside the loop over batches --------------------------------------------------------
# https://github.com/salesforce/corr_based_prediction/issues/1 : zero_grad() sat outside the training
# stage, so gradients accumulated over all the training data.

def _outside(fixed: bool) -> Setup:
    torch.manual_seed(15)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1))
    x = torch.randn(64, 20, generator=_g(10))
    y = x[:, :3].sum(dim=1, keepdim=True)
    return model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.01), (x, y), _no_zero_step(fixed)


# --- 16. hand-written gradient descent without zeroing the gradients ------------------------------------
# https://github.com/jcjohnson/pytorch-examples/issues/31 : the autograd example updates w1, w2 by hand
# inside torch.no_grad() and must zero w.grad after each update; without it the gradients are summed.

class _TwoLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(20, 32) * 0.2)
        self.w2 = nn.Parameter(torch.randn(32, 1) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mm(self.w1).clamp(min=0).mm(self.w2)


def _manual_step(zero: bool, lr: float = 1e-3) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x), y)
        loss.backward()
        with torch.no_grad():
            for w in (model.w1, model.w2):
                w -= lr * w.grad
                if zero:
                    w.grad.zero_()
        return loss.item()
    return train_step


def _manual(fixed: bool) -> Setup:
    torch.manual_seed(16)
    model = _TwoLayer()
    x = torch.randn(64, 20, generator=_g(11))
    y = x[:, :2].sum(dim=1, keepdim=True)
    loss_fn = nn.MSELoss(reduction="sum")
    return model, loss_fn, torch.optim.SGD(model.parameters(), lr=1e-3), (x, y), _manual_step(fixed)


# --- 17. `.data.sub_` update loop without grad.data.zero_() --------------------------------------------
# https://github.com/llSourcell/pytorch_in_5_minutes/issues/1 : the loop updates w.data by hand and calls
# w.grad.data.zero_() after backward; the question is what happens without it (the gradients add up).

def _data_step(zero: bool, lr: float = 0.05) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x), y)
        loss.backward()
        for w in model.parameters():
            w.data.sub_(lr * w.grad.data)
            if zero:
                w.grad.data.zero_()
        return loss.item()
    return train_step


def _data_update(fixed: bool) -> Setup:
    torch.manual_seed(17)
    model = nn.Sequential(nn.Linear(20, 16), nn.Tanh(), nn.Linear(16, 5))
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05), _classes(), _data_step(fixed)


# --- 18. model.eval() in the test loop, never model.train() again ----------------------------------------
# https://github.com/pytorch/tutorials/issues/1624 : the quickstart's test() calls model.eval(), and
# train() never switches back, so from epoch 2 on the model trains in eval mode.

def _maybe_train_step(train: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        if train:
            model.train()
        x, y = batch
        pred = model(x)
        loss = loss_fn(pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _quickstart(fixed: bool) -> Setup:
    torch.manual_seed(18)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 4))
    model.eval()  # the test pass of the previous epoch
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05), _images(), _maybe_train_step(fixed)


# --- 19. check_accuracy leaves a BatchNorm model in eval mode ----------------------------------------------
# https://github.com/facebookresearch/clevr-iep/pull/22 : check_accuracy() set the models to eval mode
# and training went on without setting them back to train mode.

def _clevr(fixed: bool) -> Setup:
    torch.manual_seed(19)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(8, 4))
    optimizer = _adam(model, 1e-2)
    batch = _images()
    _standard(model, batch, optimizer, nn.CrossEntropyLoss())
    model.eval()  # check_accuracy(...)
    return model, nn.CrossEntropyLoss(), optimizer, batch, _maybe_train_step(fixed)


# --- 20. regression logits squeezed to (N,) against labels (N, 1) -------------------------------------------
# https://github.com/deepset-ai/FARM/issues/229 : "Using a target size (torch.Size([32, 1])) that is
# different to the input size (torch.Size([32]))"; the logits were squeezed; fixed in FARM #230.

class _RegressionHead(nn.Module):
    def __init__(self, squeeze: bool) -> None:
        super().__init__()
        self.squeeze = squeeze
        self.body = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.body(x)
        return logits.squeeze(-1) if self.squeeze else logits


def _farm(fixed: bool) -> Setup:
    torch.manual_seed(20)
    model = _RegressionHead(squeeze=not fixed)
    x = torch.randn(32, 12, generator=_g(12))
    y = (x[:, :1] * 3 + 8).clamp(0, 16)
    return model, nn.MSELoss(), _adam(model, 1e-2), (x, y), None


# --- 21. depth map (N, 1, H, W) against a target (N, H, W) -----------------------------------------------------
# https://github.com/jiwei0921/CoNet/issues/3 : smooth_l1_loss warned about a target size different from the
# input size; the maintainer's fix: target = target.unsqueeze(1).

def _depth_step(unsqueeze: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        image, depth = batch
        if unsqueeze:
            depth = depth.unsqueeze(1)
        optimizer.zero_grad()
        loss = loss_fn(model(image), depth)
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _conet(fixed: bool) -> Setup:
    torch.manual_seed(21)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
    image = torch.rand(8, 3, 12, 12, generator=_g(13))
    depth = image.mean(dim=1)
    return model, F.smooth_l1_loss, _adam(model, 1e-2), (image, depth), _depth_step(fixed)


# --- 22. MSELoss between (n, 1) predictions and (n,) targets ------------------------------------------------------
# https://github.com/pytorch/pytorch/pull/18349 (issue #16045): broadcasting (n, 1) against (n,) in MSELoss
# gave wrong results silently. The fix here is a loss that reshapes the prediction itself.

def _reshaping_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(pred.view(-1), target)


def _mse_shapes(fixed: bool) -> Setup:
    torch.manual_seed(22)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    x = torch.randn(64, 8, generator=_g(14))
    y = (2 * x[:, 0] - x[:, 1]).sin()
    return model, (_reshaping_loss if fixed else nn.MSELoss()), _adam(model, 1e-2), (x, y), None


# --- 23. class labels of shape (N, 1) for CrossEntropyLoss (ConvNet, 7 classes) ------------------------------------
# https://github.com/pytorch/pytorch/issues/3670 : "multi-target not supported" from a small ConvNet with
# 7 classes; the labels had an extra dimension and needed squeezing.

def _convnet7(fixed: bool) -> Setup:
    torch.manual_seed(23)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(8 * 8 * 8, 7))
    x, y = _images(c=7)
    labels = y if fixed else y[:, None]
    return model, nn.CrossEntropyLoss(reduction="sum"), _adam(model), (x, labels), None


# --- 24. binary (N, 1) targets reused for a multi-class CrossEntropyLoss ---------------------------------------------
# https://github.com/pytorch/pytorch/issues/56542 : BCEWithLogits wants (N, 1) targets, CrossEntropyLoss
# wants (N,); moving from one to the other gives "1D target tensor expected, multi-target not supported".

def _ce_from_binary(fixed: bool) -> Setup:
    torch.manual_seed(24)
    model = nn.Linear(3, 3)
    x = torch.randn(48, 3, generator=_g(15))
    target = x.argmax(dim=1, keepdim=True)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), (x, target.squeeze(1) if fixed else target), None


# --- 25. argmax of the predicted bins fed to a regression loss ------------------------------------------------------
# https://github.com/LZGMatrix/BOP19_CDPN_2019ICCV/issues/4 : coordinates taken with torch.argmax over bins
# and then used in the loss gave "element 0 of tensors does not require grad"; the maintainer: argmax is
# not differentiable, take the loss before it.

def _bins_step(on_bins: bool, bins: int = 8) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        x, coord = batch
        optimizer.zero_grad()
        scores = model(x)  # (N, bins)
        if on_bins:
            loss = F.cross_entropy(scores, (coord * (bins - 1)).round().long())
        else:
            predicted = torch.argmax(scores, dim=1).float() / (bins - 1)
            loss = loss_fn(predicted, coord)
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _cdpn(fixed: bool) -> Setup:
    torch.manual_seed(25)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8))
    x = torch.randn(48, 10, generator=_g(16))
    coord = torch.sigmoid(x[:, 0])
    return model, nn.MSELoss(), _adam(model, 1e-2), (x, coord), _bins_step(fixed)


# --- 26. segmentation masks with values 0/255 used as class indices ---------------------------------------------------
# https://github.com/milesial/Pytorch-UNet/issues/291 : "IndexError: Target 192 is out of bounds": the masks
# held grey values 0..255 instead of class indices 0..n_classes-1.

def _unet(fixed: bool) -> Setup:
    torch.manual_seed(26)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
    image = torch.rand(8, 3, 12, 12, generator=_g(17))
    mask = (image[:, 0] > 0.5).long() * 255
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), (image, mask // 255 if fixed else mask), None


# --- 27. labels -1/0/1 for a three-class text classifier ----------------------------------------------------------------
# https://github.com/EricFillion/happy-transformer/issues/248 : "Target -1 is out of bounds": the csv
# labels started below 0; the maintainer: the lowest valid label is 0.

class _BagOfWords(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.EmbeddingBag(50, 16)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.fc(self.embedding(tokens))


def _sentiment(fixed: bool) -> Setup:
    torch.manual_seed(27)
    model = _BagOfWords()
    tokens = torch.randint(0, 50, (32, 10), generator=_g(18))
    labels = (tokens.float().mean(dim=1) > 24.5).long() - (tokens.float().mean(dim=1) < 22).long()  # -1, 0, 1
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), (tokens, labels + 1 if fixed else labels), None


# --- 28. float64 features from NumPy ----------------------------------------------------------------------------------------
# https://github.com/OUCMachineLearning/OUCML/issues/24 : features made with torch.from_numpy(np.random.normal(...))
# are float64 and torch.mm with float32 weights fails; fix: .to(torch.float32).

def _float64(fixed: bool) -> Setup:
    import numpy as np
    torch.manual_seed(28)
    model = nn.Linear(2, 1)
    rng = np.random.default_rng(0)
    features = torch.from_numpy(rng.normal(0, 1, (64, 2)))
    labels = (features @ torch.tensor([2.0, -3.4], dtype=torch.float64) + 4.2)[:, None]
    if fixed:
        features, labels = features.to(torch.float32), labels.to(torch.float32)
    return model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.03), (features, labels), None


# --- 29. layers replaced after the optimizer was created (pruning speed-up) ---------------------------------------------
# https://github.com/microsoft/nni/issues/4521 : speedup_model() replaced layers, so the optimizer still
# held the old parameters and fine-tuning changed nothing; fix: create a new optimizer.

def _pruned(fixed: bool) -> Setup:
    torch.manual_seed(29)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model[0], model[2] = nn.Linear(20, 32), nn.Linear(32, 5)  # the smaller, "sped-up" layers
    if fixed:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, nn.CrossEntropyLoss(), optimizer, _classes(), None


# --- 30. MNIST pixels never divided by 255 (siamese network) ----------------------------------------------------------------
# https://github.com/delijati/pytorch-siamese/issues/3 : under Python 2 the preprocessing lost its / 255.0 and
# the loss became nan; fix: x / 255.0.

def _siamese(fixed: bool) -> Setup:
    torch.manual_seed(30)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 5 * 5, 10))
    pixels = (torch.rand(32, 1, 12, 12, generator=_g(19)) * 255).round()
    labels = (pixels.mean(dim=(1, 2, 3)) / 25.5).long().clamp(max=9)
    x = pixels / 255.0 if fixed else pixels
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), (x, labels), None


# --- 31. question encoder: (batch, time, features) into an LSTM without batch_first ---------------------------------
# https://github.com/Cadene/vqa.pytorch/issues/40 : the LSTM is documented as (seq_len, batch, input_size) but
# was fed (batch, seq_len, input_size); the reporter: batch_first should be set to True.

class _QuestionEncoder(nn.Module):
    def __init__(self, batch_first: bool, vocab: int = 40, dim: int = 12, hidden: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=batch_first)
        self.classifier = nn.Linear(hidden, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embedding(tokens))  # tokens: (batch, time)
        return self.classifier(out[:, -1])


def _vqa(fixed: bool) -> Setup:
    torch.manual_seed(31)
    model = _QuestionEncoder(batch_first=fixed)
    tokens = torch.randint(0, 40, (24, 7), generator=_g(20))
    answers = tokens[:, 0] % 3
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), (tokens, answers), None


# --- 32. NLLLoss on raw convolution scores (no LogSoftmax) -----------------------------------------------------------
# https://github.com/pytorch/pytorch/pull/12703 : the NLLLoss documentation's 2-D example fed a convolution's
# raw output to NLLLoss ("the loss was sometimes negative"); the PR added the missing nn.LogSoftmax(dim=1).

def _nll_conv(fixed: bool) -> Setup:
    torch.manual_seed(32)
    model = nn.Sequential(nn.Conv2d(16, 4, 3), *([nn.LogSoftmax(dim=1)] if fixed else []))
    x = torch.randn(8, 16, 10, 10, generator=_g(21))
    y = x[:, :4, 1:-1, 1:-1].argmax(dim=1)  # (8, 8, 8) class indices 0..3
    return model, nn.NLLLoss(), _adam(model, 1e-2), (x, y), None


# --- 33. softmax + NLLLoss in a text classifier ("the loss is always negative") -------------------------------
# https://github.com/AnubhavGupta3377/Text-Classification-Models-Pytorch/issues/9 : the model ended in softmax,
# the trainer used nn.NLLLoss, which expects log-probabilities; fix: log_softmax.

class _TextClassifier(nn.Module):
    def __init__(self, log: bool) -> None:
        super().__init__()
        self.log = log
        self.embedding = nn.EmbeddingBag(60, 24)
        self.fc = nn.Sequential(nn.Linear(24, 24), nn.ReLU(), nn.Linear(24, 4))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        scores = self.fc(self.embedding(tokens))
        return F.log_softmax(scores, dim=1) if self.log else F.softmax(scores, dim=1)


def _text_nll(fixed: bool) -> Setup:
    torch.manual_seed(33)
    model = _TextClassifier(log=fixed)
    tokens = torch.randint(0, 60, (48, 12), generator=_g(22))
    return model, nn.NLLLoss(), _adam(model, 1e-2), (tokens, tokens[:, 0] % 4), None


# --- 34. BCELoss on an FCN's raw scores (no sigmoid) ----------------------------------------------------------------
# https://github.com/yunlongdong/FCN-pytorch/issues/7 : the training script used nn.BCELoss on the network's
# output without a sigmoid; fix: a sigmoid before BCELoss (or BCEWithLogitsLoss on the raw scores).

def _fcn(fixed: bool) -> Setup:
    torch.manual_seed(34)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
    model = nn.Sequential(net, nn.Sigmoid()) if fixed else net
    image = torch.rand(8, 3, 12, 12, generator=_g(23))
    fg = (image[:, :1] > 0.5).float()
    return model, nn.BCELoss(), _adam(model, 1e-2), (image, torch.cat([fg, 1 - fg], dim=1)), None


# --- 35. sigmoid before BCEWithLogitsLoss in a recommender -------------------------------------------------------------
# https://github.com/yudi-mars/daisyRec/pull/15 : "Do not need sigmoid because there is sigmoid in
# BCEWithLogitsLoss. Otherwise loss does not converge."; the PR removed torch.sigmoid from the prediction.

class _MatrixFactorization(nn.Module):
    def __init__(self, sigmoid: bool, users: int = 20, items: int = 30, dim: int = 8) -> None:
        super().__init__()
        self.sigmoid = sigmoid
        self.users, self.items = nn.Embedding(users, dim), nn.Embedding(items, dim)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        score = (self.users(pairs[:, 0]) * self.items(pairs[:, 1])).sum(dim=-1)
        return torch.sigmoid(score) if self.sigmoid else score


def _recommender(fixed: bool) -> Setup:
    torch.manual_seed(35)
    model = _MatrixFactorization(sigmoid=not fixed)
    pairs = torch.stack([torch.randint(0, 20, (64,), generator=_g(24)),
                         torch.randint(0, 30, (64,), generator=_g(25))], dim=1)
    labels = ((pairs[:, 0] + pairs[:, 1]) % 2).float()
    return model, nn.BCEWithLogitsLoss(), _adam(model, 5e-2), (pairs, labels), None


# --- 36. LSTM text generator: (batch, time, vocab) scores into CrossEntropyLoss ----------------------------------
# https://github.com/markhliu/DGAI/issues/7 : without output.transpose(1, 2) the loss raised "Expected target size
# [32, 12778], got [32, 100]": CrossEntropyLoss wants the classes in dimension 1.

class _TextGenerator(nn.Module):
    def __init__(self, vocab: int = 30, dim: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.fc = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        out, state = self.lstm(self.embedding(tokens), state)
        return self.fc(out), state


def _generator_step(transpose: bool) -> Callable:
    def step(model, batch, optimizer, loss_fn):
        inputs, targets = batch
        optimizer.zero_grad()
        output, _ = model(inputs)
        loss = loss_fn(output.transpose(1, 2) if transpose else output, targets)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def _textgen(fixed: bool) -> Setup:
    torch.manual_seed(36)
    model = _TextGenerator()
    text = torch.randint(0, 30, (16, 11), generator=_g(26))
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), (text[:, :-1], text[:, 1:]), _generator_step(fixed)


# --- 37. LSTM regression ending in ReLU: constant 0 predictions ------------------------------------------------------
# https://github.com/ProteomicsML/ProteomicsML/pull/203 : an LSTM predicting peptide CCS values returned 0 for
# every peptide: the final linear layer was followed by ReLU and, after an unlucky initialisation, its
# pre-activations were all negative; the PR removed the final ReLU.

class _CCSRegressor(nn.Module):
    def __init__(self, relu: bool) -> None:
        super().__init__()
        self.relu = relu
        self.embedding = nn.Embedding(21, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.out = nn.Linear(16, 1)
        with torch.no_grad():  # the unlucky initialisation: every pre-activation of the output below 0
            self.out.bias.fill_(-3.0)

    def forward(self, peptides: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embedding(peptides))
        y = self.out(h[:, -1])
        return torch.relu(y) if self.relu else y


def _ccs(fixed: bool) -> Setup:
    torch.manual_seed(37)
    model = _CCSRegressor(relu=not fixed)
    peptides = torch.randint(0, 21, (32, 10), generator=_g(27))
    ccs = 1.0 + peptides.float().mean(dim=1, keepdim=True) / 20  # positive, scaled targets
    return model, nn.MSELoss(), _adam(model, 1e-2), (peptides, ccs), None


# --- 38. float images in [0, 255]: ToTensor does not scale float arrays --------------------------------------------
# https://github.com/pytorch/vision/issues/546 : images already converted to float arrays in [0.0, 255.0] went
# through transforms.ToTensor(), which only divides uint8 input by 255, so the network saw values up to 255;
# fix: divide by 255 (or keep the arrays uint8 until ToTensor).

def _float_pixels(fixed: bool) -> Setup:
    torch.manual_seed(38)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                          nn.Linear(8 * 16, 4))
    decoded = torch.randint(0, 256, (32, 3, 16, 16), generator=_g(28), dtype=torch.uint8).float()  # astype(float32)
    labels = decoded.mean(dim=(2, 3)).argmax(dim=1) % 4
    x = decoded / 255 if fixed else decoded
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), (x, labels), None


# --- 39. a sign layer in the middle of the network ----------------------------------------------------------------
# https://github.com/torch/nn/issues/1174 : a layer quantising its input to its sign was put inside a network;
# the answers: "The gradient is 0 everywhere; you cannot train the layers before this." (Lua Torch, the same
# autograd rule as PyTorch's torch.sign); fix: a differentiable layer (tanh) while training.

class _Binarized(nn.Module):
    def __init__(self, smooth: bool) -> None:
        super().__init__()
        self.smooth = smooth
        self.encoder, self.decoder = nn.Linear(20, 16), nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x)
        return self.decoder(torch.tanh(h) if self.smooth else torch.sign(h))


def _binarized(fixed: bool) -> Setup:
    torch.manual_seed(39)
    model = _Binarized(smooth=fixed)
    return model, nn.CrossEntropyLoss(), _adam(model, 1e-2), _classes(), None


# --- 40. a custom train_step (Keras 3, torch backend) without zero_grad -------------------------------------------
# https://github.com/fchollet/deep-learning-with-python-notebooks/issues/293 : the chapter's torch train_step
# computed the loss, called backward() and stepped the optimizer but never zeroed the gradients ("the results
# are terrible"); fix: self.zero_grad() at the start of the step.

def _keras_step(zero: bool) -> Callable:
    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        if zero:
            model.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        with torch.no_grad():
            optimizer.step()
        return loss.item()
    return step


def _keras(fixed: bool) -> Setup:
    torch.manual_seed(40)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
    return model, nn.CrossEntropyLoss(), torch.optim.RMSprop(model.parameters(), lr=1e-3), _classes(), \
        _keras_step(fixed)



# --- ReLU after the classifier's last layer -------------------------------------------------------
# https://github.com/pytorch/tutorials/pull/1644 : the "build the model" tutorial's network ended in
# Linear(512, 10) followed by a ReLU before CrossEntropyLoss; the PR removed the last ReLU.

def _tutorial_net(relu_last: bool) -> Setup:
    torch.manual_seed(16)
    layers: list[nn.Module] = [nn.Flatten(), nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU(),
                               nn.Linear(48, 10)]
    model = nn.Sequential(*layers, *([nn.ReLU()] if relu_last else []))
    x = torch.rand(64, 1, 8, 8, generator=_g(16))
    y = (x.flatten(1) @ torch.randn(64, 10, generator=_g(17))).argmax(1)
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05), (x, y), None


# --- a critic's (N, 1) value against an (N, 4) target -------------------------------------------------
# https://github.com/sunwuzhou03/reinforcement-learning-lab/issues/1 : in a SAC update the TD target
# used the log-probability of a 4-dimensional action without summing it over the action dimension,
# so F.mse_loss compared the critic's (64, 1) values with a (64, 4) target (broadcast warning); the
# fix summed the log-probability so the target is (64, 1).

def _sac_critic(summed: bool) -> Setup:
    torch.manual_seed(18)
    critic = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    g = _g(18)
    states, actions = torch.randn(64, 6, generator=g), torch.tanh(torch.randn(64, 4, generator=g))
    reward = torch.randn(64, 1, generator=g)
    log_prob = -0.5 * actions ** 2 - 0.9189  # per action dimension, (64, 4)
    entropy_term = log_prob.sum(dim=1, keepdim=True) if summed else log_prob
    target = reward - 0.2 * entropy_term

    def step(model, batch, optimizer, loss_fn):
        s, a, td_target = batch
        optimizer.zero_grad()
        loss = loss_fn(model(torch.cat([s, a], dim=1)), td_target.detach())
        loss.backward()
        optimizer.step()
        return loss.item()
    return critic, F.mse_loss, torch.optim.Adam(critic.parameters(), lr=3e-3), (states, actions, target), step


# --- every parameter frozen for fine-tuning ------------------------------------------------------------
# https://github.com/cfzd/Ultra-Fast-Lane-Detection/issues/282 : to fine-tune, the whole network was
# frozen (for param in model.parameters(): param.requires_grad = False) and training raised "element 0
# of tensors does not require grad"; the fix froze only the backbone and gave the optimizer the
# trainable parameters only.

class _LaneNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(19)
        self.model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.cls = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cls(self.model(x))


def _lane(backbone_only: bool) -> Setup:
    net = _LaneNet()
    frozen = net.model if backbone_only else net
    for param in frozen.parameters():
        param.requires_grad = False
    params = [p for p in net.parameters() if p.requires_grad] if backbone_only else list(net.parameters())
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return net, nn.CrossEntropyLoss(), optimizer, _images(c=4), None

CASES: list[Case] = [
    Case("softmax layer before CrossEntropyLoss", "https://github.com/bowang-lab/Transformer-GCN-QA/pull/32",
         "SOFTMAX_BEFORE_CE", lambda: _scorer(True), lambda: _scorer(False)),
    Case("softmax in a language model's forward", "https://github.com/bkitano/llama-from-scratch/issues/5",
         "SOFTMAX_BEFORE_CE", lambda: _lm(True), lambda: _lm(False)),
    Case("Linear + Sigmoid head with BCEWithLogitsLoss", "https://github.com/cvg/glue-factory/issues/89",
         "SOFTMAX_BEFORE_CE", lambda: _confidence(True), lambda: _confidence(False)),
    Case("multi-label CNN: sigmoid before BCEWithLogitsLoss", "https://github.com/lopuhin/kaggle-imet-2019/issues/3",
         "SOFTMAX_BEFORE_CE", lambda: _multilabel(True), lambda: _multilabel(False)),
    Case("hidden layers in a Python list", "https://github.com/pytorch/pytorch/issues/715",
         "PARAMS_NOT_REGISTERED", lambda: _list_mlp(False), lambda: _list_mlp(True)),
    Case("conv/BatchNorm layers in a Python list",
         "https://github.com/kanezaki/pytorch-unsupervised-segmentation/pull/6",
         "PARAMS_NOT_REGISTERED", lambda: _segnet(False), lambda: _segnet(True)),
    Case("layers created inside forward()", "https://github.com/pytorch/pytorch/issues/1291",
         "PARAMS_NOT_REGISTERED", lambda: _forward_layers(False), lambda: _forward_layers(True)),
    Case("merge layer branches in a Python list", "https://github.com/asyml/texar-pytorch/issues/72",
         "PARAMS_NOT_REGISTERED", lambda: _merge(False), lambda: _merge(True)),
    Case("in-place update of a tensor needed by backward", "https://github.com/Jee-King/TSAN/issues/3",
         "INPLACE_MODIFIED", lambda: _gate(False), lambda: _gate(True)),
    Case("RNN encoder filling a preallocated tensor", "https://github.com/Seanny123/da-rnn/issues/14",
         "INPLACE_MODIFIED", lambda: _encoder(False), lambda: _encoder(True)),
    Case("RNN hidden state carried without .data", "https://github.com/MorvanZhou/PyTorch-Tutorial/issues/57",
         "GRAPH_REUSED", lambda: _rnn_regression(False), lambda: _rnn_regression(True)),
    Case("LSTM state stored on the model and fed back", "https://github.com/sgadgil6/cnslab_fmri/issues/4",
         "GRAPH_REUSED", lambda: _stateful_lstm(False), lambda: _stateful_lstm(True)),
    Case("no zero_grad, with gradient clipping", "https://github.com/IDEA-Research/DN-DETR/issues/19",
         "ZERO_GRAD_MISSING", lambda: _detr(False), lambda: _detr(True)),
    Case("transfer learning loop without zero_grad", "https://github.com/udacity/deep-learning-v2-pytorch/pull/160",
         "ZERO_GRAD_MISSING", lambda: _transfer(False), lambda: _transfer(True)),
    Case("zero_grad outside the batch loop", "https://github.com/salesforce/corr_based_prediction/issues/1",
         "ZERO_GRAD_MISSING", lambda: _outside(False), lambda: _outside(True)),
    Case("hand-written update, gradients never zeroed", "https://github.com/jcjohnson/pytorch-examples/issues/31",
         "ZERO_GRAD_MISSING", lambda: _manual(False), lambda: _manual(True)),
    Case("w.data.sub_ update without grad.data.zero_()", "https://github.com/llSourcell/pytorch_in_5_minutes/issues/1",
         "ZERO_GRAD_MISSING", lambda: _data_update(False), lambda: _data_update(True)),
    Case("model.eval() in test(), never model.train()", "https://github.com/pytorch/tutorials/issues/1624",
         "EVAL_MODE_LEFT_ON", lambda: _quickstart(False), lambda: _quickstart(True)),
    Case("BatchNorm model left in eval mode by check_accuracy",
         "https://github.com/facebookresearch/clevr-iep/pull/22",
         "EVAL_MODE_LEFT_ON", lambda: _clevr(False), lambda: _clevr(True)),
    Case("squeezed regression logits (N,) vs labels (N, 1)", "https://github.com/deepset-ai/FARM/issues/229",
         "BROADCAST_IN_LOSS", lambda: _farm(False), lambda: _farm(True)),
    Case("depth map (N, 1, H, W) vs target (N, H, W)", "https://github.com/jiwei0921/CoNet/issues/3",
         "BROADCAST_IN_LOSS", lambda: _conet(False), lambda: _conet(True)),
    Case("MSELoss (n, 1) vs (n,); fix: a loss that reshapes", "https://github.com/pytorch/pytorch/pull/18349",
         "BROADCAST_IN_LOSS", lambda: _mse_shapes(False), lambda: _mse_shapes(True)),
    Case("CrossEntropyLoss labels shaped (N, 1), 7 classes", "https://github.com/pytorch/pytorch/issues/3670",
         "TARGET_SHAPE", lambda: _convnet7(False), lambda: _convnet7(True)),
    Case("(N, 1) binary-style targets for CrossEntropyLoss", "https://github.com/pytorch/pytorch/issues/56542",
         "TARGET_SHAPE", lambda: _ce_from_binary(False), lambda: _ce_from_binary(True)),
    Case("argmax of predicted bins inside the loss", "https://github.com/LZGMatrix/BOP19_CDPN_2019ICCV/issues/4",
         "NON_DIFFERENTIABLE", lambda: _cdpn(False), lambda: _cdpn(True)),
    Case("segmentation masks 0/255 as class indices", "https://github.com/milesial/Pytorch-UNet/issues/291",
         "LABEL_OUT_OF_RANGE", lambda: _unet(False), lambda: _unet(True)),
    Case("labels -1/0/1 for three classes", "https://github.com/EricFillion/happy-transformer/issues/248",
         "LABEL_OUT_OF_RANGE", lambda: _sentiment(False), lambda: _sentiment(True)),
    Case("float64 NumPy features", "https://github.com/OUCMachineLearning/OUCML/issues/24",
         "DTYPE_MISMATCH", lambda: _float64(False), lambda: _float64(True)),
    Case("layers replaced after the optimizer was built", "https://github.com/microsoft/nni/issues/4521",
         "PARAM_NOT_IN_OPTIMIZER", lambda: _pruned(False), lambda: _pruned(True)),
    Case("MNIST pixels never divided by 255", "https://github.com/delijati/pytorch-siamese/issues/3",
         "INPUT_NOT_NORMALIZED", lambda: _siamese(False), lambda: _siamese(True)),
    Case("(batch, time) inputs to an LSTM without batch_first", "https://github.com/Cadene/vqa.pytorch/issues/40",
         "RNN_BATCH_FIRST", lambda: _vqa(False), lambda: _vqa(True)),
    Case("NLLLoss on raw convolution scores", "https://github.com/pytorch/pytorch/pull/12703",
         "NLL_ON_LOGITS", lambda: _nll_conv(False), lambda: _nll_conv(True)),
    Case("softmax + NLLLoss in a text classifier",
         "https://github.com/AnubhavGupta3377/Text-Classification-Models-Pytorch/issues/9",
         "SOFTMAX_BEFORE_CE", lambda: _text_nll(False), lambda: _text_nll(True)),
    Case("BCELoss on an FCN's raw scores", "https://github.com/yunlongdong/FCN-pytorch/issues/7",
         "BCE_ON_LOGITS", lambda: _fcn(False), lambda: _fcn(True)),
    Case("sigmoid before BCEWithLogitsLoss in a recommender", "https://github.com/yudi-mars/daisyRec/pull/15",
         "SOFTMAX_BEFORE_CE", lambda: _recommender(False), lambda: _recommender(True)),
    Case("(batch, time, vocab) scores into CrossEntropyLoss", "https://github.com/markhliu/DGAI/issues/7",
         "TARGET_SHAPE", lambda: _textgen(False), lambda: _textgen(True)),
    Case("LSTM regression ending in ReLU predicts 0", "https://github.com/ProteomicsML/ProteomicsML/pull/203",
         "RELU_ON_OUTPUT", lambda: _ccs(False), lambda: _ccs(True)),
    Case("float images in [0, 255] through ToTensor", "https://github.com/pytorch/vision/issues/546",
         "INPUT_NOT_NORMALIZED", lambda: _float_pixels(False), lambda: _float_pixels(True)),
    Case("a sign layer in the middle of the network", "https://github.com/torch/nn/issues/1174",
         "NON_DIFFERENTIABLE", lambda: _binarized(False), lambda: _binarized(True)),
    Case("ReLU after the classifier's last Linear layer", "https://github.com/pytorch/tutorials/pull/1644",
         "RELU_ON_OUTPUT", lambda: _tutorial_net(True), lambda: _tutorial_net(False)),
    Case("critic (N, 1) against a TD target (N, 4)", "https://github.com/sunwuzhou03/reinforcement-learning-lab/issues/1",
         "BROADCAST_IN_LOSS", lambda: _sac_critic(False), lambda: _sac_critic(True)),
    Case("every parameter frozen for fine-tuning", "https://github.com/cfzd/Ultra-Fast-Lane-Detection/issues/282",
         "NO_GRAD_FLOW", lambda: _lane(False), lambda: _lane(True)),
    Case("custom train_step (Keras 3, torch backend) without zero_grad",
         "https://github.com/fchollet/deep-learning-with-python-notebooks/issues/293",
         "ZERO_GRAD_MISSING", lambda: _keras(False), lambda: _keras(True)),
]
