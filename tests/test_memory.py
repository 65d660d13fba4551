"""course_utils.memory: predicted bytes equal the bytes read from real objects after a step;
activation bytes measured with saved-tensor hooks match a by-hand estimate on notebook 08's models."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from course_utils.memory import (STATE_COPIES, MemoryBreakdown, SavedTensorsMeter, activation_bytes,
                                 cuda_memory, cuda_peak, dtype_bytes, format_bytes, make_optimizer,
                                 measure_training_memory, predict_training_memory, unique_storage_bytes)

# The two models of notebook 08 (CIFAR-shaped input 3x32x32, 10 classes).


def notebook_mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 512), nn.ReLU(),
                         nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def notebook_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))


def mlp_estimate(batch: int) -> int:
    """By hand: the input (saved by the first Linear), two ReLU outputs (each also the next
    Linear's input), CrossEntropy's log-softmax output and int64 targets."""
    floats = batch * (3 * 32 * 32 + 512 + 256 + 10)
    return 4 * floats + 8 * batch


def cnn_estimate(batch: int) -> int:
    """By hand: conv inputs, ReLU outputs (= max-pool inputs), int64 max-pool indices, pooled
    maps (= next conv / Linear inputs), the hidden ReLU output, log-softmax, targets."""
    floats = 3 * 32 * 32 + 32 * 32 * 32 + 32 * 16 * 16 + 64 * 16 * 16 + 64 * 8 * 8 + 128 + 10
    int64 = 32 * 16 * 16 + 64 * 8 * 8
    return batch * (4 * floats + 8 * int64 + 8)


def _batch(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(batch)
    return torch.randn(batch, 3, 32, 32, generator=gen), torch.randint(0, 10, (batch,), generator=gen)


def _one_step(model: nn.Module, name: str) -> torch.optim.Optimizer:
    opt = make_optimizer(name, [p for p in model.parameters() if p.requires_grad], lr=1e-3)
    x, y = _batch(4)
    if isinstance(model, _Tied):
        x = torch.randint(0, 50, (4, 3))
        y = torch.randint(0, 50, (4, 3))
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
    else:
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return opt


class _Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.out = nn.Linear(16, 50, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(tokens))


def _frozen_cnn() -> nn.Module:
    model = notebook_cnn()
    model[0].requires_grad_(False)
    return model


MODELS = {"mlp": notebook_mlp, "cnn": notebook_cnn, "frozen_cnn": _frozen_cnn, "tied": _Tied}


@pytest.mark.parametrize("optimizer", sorted(STATE_COPIES))
@pytest.mark.parametrize("model_name", sorted(MODELS))
def test_prediction_equals_real_state_after_one_step(model_name: str, optimizer: str) -> None:
    model = MODELS[model_name]()
    predicted = predict_training_memory(model, optimizer)
    opt = _one_step(model, optimizer)
    measured = measure_training_memory(model, opt)
    assert measured == predicted, (measured, predicted)


def test_adam_step_tensors_are_counted_as_float32_scalars() -> None:
    model = notebook_mlp()
    with_step = predict_training_memory(model, "adam")
    without = predict_training_memory(model, "adam", include_step=False)
    n_tensors = len(list(model.parameters()))
    assert with_step.optimizer_state - without.optimizer_state == 4 * n_tensors
    assert without.optimizer_state == 2 * without.params
    opt = _one_step(model, "adam")
    steps = [s["step"] for s in opt.state.values()]
    assert len(steps) == n_tensors and all(t.dtype == torch.float32 and t.dim() == 0 for t in steps)


def test_low_precision_model_matches_prediction() -> None:
    model = notebook_mlp().to(torch.bfloat16)
    predicted = predict_training_memory(model, "adamw")
    opt = make_optimizer("adamw", model.parameters())
    x, y = _batch(2)
    nn.functional.cross_entropy(model(x.to(torch.bfloat16)), y).backward()
    opt.step()
    assert measure_training_memory(model, opt) == predicted
    assert predicted.params == 2 * sum(p.numel() for p in model.parameters())
    # pricing a float32 model "as if bf16" gives the same numbers
    assert predict_training_memory(notebook_mlp(), "adamw", torch.bfloat16) == predicted


def test_frozen_and_tied_parameters() -> None:
    frozen = predict_training_memory(_frozen_cnn(), "adam", include_step=False)
    full = predict_training_memory(notebook_cnn(), "adam", include_step=False)
    assert frozen.params == full.params and frozen.grads == full.grads - 4 * (3 * 32 * 9 + 32)
    tied = predict_training_memory(_Tied(), "sgd")
    assert tied.params == 4 * 50 * 16  # the shared matrix once


@pytest.mark.parametrize("batch", [1, 8, 32])
@pytest.mark.parametrize("model_fn,estimate", [(notebook_mlp, mlp_estimate), (notebook_cnn, cnn_estimate)])
def test_activation_bytes_within_10_percent_of_estimate(model_fn, estimate, batch: int) -> None:
    model = model_fn()
    x, y = _batch(batch)
    measured = activation_bytes(model, x, nn.functional.cross_entropy, y)
    expected = estimate(batch)
    assert abs(measured - expected) <= 0.10 * expected, (measured, expected)
    assert all(p.grad is None for p in model.parameters()), "measuring must not run backward"


def test_meter_counts_shared_storages_once_and_skips_parameters() -> None:
    lin = nn.Linear(4, 4)
    x = torch.randn(3, 4, requires_grad=True)
    with SavedTensorsMeter(exclude=lin) as meter:
        h = lin(x)
        _ = h * h  # saves h twice: one storage
    assert meter.bytes == 2 * 3 * 4 * 4  # x (saved by the Linear) and h
    assert [r.counted for r in meter.records].count("already counted") == 1
    assert "parameter/buffer" in [r.counted for r in meter.records]
    assert meter.by_dtype() == {"float32": 96}


def test_alive_bytes_sees_graphs_kept_by_a_tensor_sum() -> None:
    model = notebook_mlp()
    x, y = _batch(4)
    with SavedTensorsMeter(exclude=model) as leaky:
        total = 0.0
        for _ in range(3):
            total = total + nn.functional.cross_entropy(model(x), y)  # keeps every graph
    per_step = mlp_estimate(4) - 4 * 32 * 32 * 3 * 4  # x itself is shared by the 3 steps
    assert leaky.alive_bytes() == leaky.bytes >= 3 * per_step
    del total
    assert leaky.alive_bytes() == 0  # every graph freed (x itself is ours, not the graph's)
    with SavedTensorsMeter(exclude=model) as fixed:
        total = 0.0
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(x), y)
            total += loss.item()
    assert 0 <= fixed.alive_bytes() - mlp_estimate(4) <= 8  # the last `loss` still holds one graph
    del loss
    assert fixed.alive_bytes() == 0


def test_activation_bytes_leaves_batchnorm_statistics_alone() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert activation_bytes(model, torch.randn(2, 3, 8, 8)) > 0
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_checkpointing_keeps_only_block_inputs() -> None:
    torch.manual_seed(0)
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
                           for _ in range(4))
    x = torch.randn(16, 64, requires_grad=True)

    def run(use_checkpoint: bool) -> int:
        with SavedTensorsMeter(exclude=blocks) as meter:
            h = x
            for block in blocks:
                h = checkpoint(block, h, use_reentrant=False) if use_checkpoint else block(h)
        return meter.bytes

    one = 16 * 64 * 4
    assert run(False) == one * (1 + 4 * 2)  # x, then two ReLU outputs per block
    assert run(True) == one * 4  # only each block's input


def test_helpers_and_errors() -> None:
    assert dtype_bytes(torch.float16) == 2 and dtype_bytes(torch.float64) == 8
    assert unique_storage_bytes([]) == 0
    assert format_bytes(2**30) == "1.00 GiB"
    b = MemoryBreakdown(1, 2, 3, 4)
    assert b.total == 10 and b.with_activations(0).total == 6 and "total" in str(b)
    with pytest.raises(ValueError, match="expected an optimizer name"):
        predict_training_memory(nn.Linear(2, 2), "rmsprop")
    with pytest.raises(TypeError, match="torch.dtype"):
        dtype_bytes("float32")  # type: ignore[arg-type]
    assert isinstance(make_optimizer("SGD+momentum", nn.Linear(2, 2).parameters()), torch.optim.SGD)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_cuda_helpers_explain_themselves_without_gpu() -> None:
    with pytest.raises(RuntimeError, match="skip_unless_gpu"):
        cuda_memory()
    with pytest.raises(RuntimeError, match="CUDA"):
        cuda_peak(lambda: None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_peak_sees_a_tensor() -> None:
    _, peak = cuda_peak(lambda: torch.empty(2**20, device="cuda"))
    assert peak >= 4 * 2**20
    stats = cuda_memory()
    assert stats["reserved"] >= stats["allocated"]


def test_viz_and_calculator() -> None:
    import matplotlib.pyplot as plt

    from course_utils.viz.memory import plot_activation_vs_batch, plot_memory_breakdown
    from course_utils.widgets.memory_calculator import calculator_breakdown, memory_calculator

    sgd = calculator_breakdown(10**6, 32, "float32", "sgd", 1000.0)
    adam = calculator_breakdown(10**6, 32, "float32", "adam", 1000.0)
    pure = calculator_breakdown(10**6, 32, "bf16", "adam", 1000.0)
    assert adam.optimizer_state == 2 * adam.params and sgd.optimizer_state == 0
    assert pure.total * 2 == adam.total
    with pytest.raises(ValueError, match="precision"):
        calculator_breakdown(1, 1, "fp8", "sgd", 1.0)
    ax = plot_memory_breakdown({"SGD": sgd, "Adam": adam})
    assert len(ax.patches) == 8  # 4 categories x 2 bars (SGD's optimizer state has width 0)
    ax = plot_activation_vs_batch([1, 2, 4], [100, 200, 400], [100, 200, 400])
    assert "per sample" in ax.get_title()
    fig = memory_calculator(1000.0, static=True)
    assert len(fig.axes[0].get_yticklabels()) == 6
    plt.close("all")
