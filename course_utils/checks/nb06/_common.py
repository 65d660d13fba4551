"""Recording probes shared by the notebook 06 checkers: ProbeNet, RecordingCrossEntropy, data."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


N_FEATURES, N_CLASSES = 6, 4


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


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
        self.dropout_gen = _gen(seed + 1000)
        self.calls: list[tuple[bool, bool]] = []      # (training, grad enabled) per forward
        self.outputs: list[torch.Tensor] = []
        self.stale_backward = False                   # backward added to old gradients
        self._incoming: dict[int, torch.Tensor] = {}
        for index, param in enumerate(self.parameters()):
            param.register_hook(lambda grad, i=index: self._remember(i, grad))
            param.register_post_accumulate_grad_hook(lambda p, i=index: self._compare(i, p))

    def _remember(self, index: int, grad: torch.Tensor) -> None:
        self._incoming[index] = grad.detach().clone()

    def _compare(self, index: int, param: torch.Tensor) -> None:
        incoming = self._incoming.pop(index, None)
        if incoming is not None and param.grad is not None and not torch.allclose(param.grad, incoming):
            self.stale_backward = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.append((self.training, torch.is_grad_enabled()))
        h = torch.relu(self.bn(self.fc1(x)))
        if self.training:
            keep = torch.rand(h.shape, generator=self.dropout_gen) >= self.p
            h = h * keep / (1 - self.p)
        out = self.fc2(h)
        self.outputs.append(out.detach())
        return out

    def forget(self) -> None:
        self.calls.clear()
        self.outputs.clear()
        self.stale_backward = False


class RecordingCrossEntropy(nn.CrossEntropyLoss):
    """CrossEntropyLoss that remembers its values and whether it was fed probabilities."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[float] = []
        self.saw_probabilities = False

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            rows_sum_to_one = torch.allclose(input.sum(dim=1), torch.ones(len(input)), atol=1e-4)
            if bool((input >= 0).all()) and rows_sum_to_one:
                self.saw_probabilities = True
        loss = super().forward(input, target)
        self.values.append(loss.item())
        return loss


def _classification_data(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = _gen(seed)
    x = torch.randn(n, N_FEATURES, generator=g)
    y = (x[:, :N_CLASSES] + 0.5 * torch.randn(n, N_CLASSES, generator=g)).argmax(dim=1)
    return x, y


def _loader(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> DataLoader:
    # Its own generator: iterating a DataLoader draws a base seed, and without a generator
    # that draw comes from the global RNG, which a check must leave alone.
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, generator=_gen(0))


def _is_number(value: Any) -> bool:
    return isinstance(value, (float, int)) and not isinstance(value, bool)
