"""The training doctor on real bugs (tests/doctor_corpus: public issue threads reduced to small CPU
programs) and on correct code written the way real projects write it: the right cause on the
buggy program, no error on its fix, the same verdict on a slow machine, no crash on awkward models."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
import torch
from doctor_corpus import CASES
from torch import nn

from course_utils.doctor import CODES, diagnose, standard_step

BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_corpus_is_real_and_large_enough() -> None:
    assert len(CASES) >= 25 and len(BY_NAME) == len(CASES)
    for case in CASES:
        assert case.source.startswith("https://github.com/") and "/issues/" in case.source or "/pull/" in case.source
        assert case.expected in CODES, case.name
    assert len({case.source for case in CASES}) == len(CASES), "one thread per case"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_buggy_program_gets_the_right_cause(name: str) -> None:
    case = BY_NAME[name]
    report = diagnose(*case.buggy())
    assert case.expected in report.codes, f"{name} ({case.source}): expected {case.expected}\n{report}"
    item = next(f for f in report.findings if f.code == case.expected)
    observed, why, fix = item.parts()
    assert observed and why and fix, item.message


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_fixed_program_has_no_error(name: str) -> None:
    case = BY_NAME[name]
    report = diagnose(*case.fixed())
    assert report.ok, f"{name} ({case.source}): the fix got an error\n{report}"


# --- the same verdict on a slow machine ----------------------------------------------------------------

def _slowed(step: Callable | None, seconds: float) -> Callable:
    inner = step or standard_step

    def slow_step(model, batch, optimizer, loss_fn):
        time.sleep(seconds)
        return inner(model, batch, optimizer, loss_fn)
    return slow_step


def _mlp(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))


def _classes(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 20, generator=g)
    return x, (x @ torch.randn(20, 5, generator=g)).argmax(1)


@pytest.mark.parametrize("lr", [1e-2, 1e-6], ids=["learns", "too_slow"])
def test_verdict_does_not_depend_on_machine_speed(lr: float) -> None:
    def build():
        model = _mlp()
        return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=lr), _classes()

    fast = diagnose(*build(), max_steps=30)
    slow = diagnose(*build(), train_step=_slowed(None, 0.05), max_steps=30)
    assert fast.codes == slow.codes, f"{fast}\n{slow}"
    assert fast.measurements["overfit_losses"] == slow.measurements["overfit_losses"]
    assert fast.measurements.get("second_opinion_losses") == slow.measurements.get("second_opinion_losses")
    assert len(slow.measurements["overfit_losses"]) <= 30


def _verdicts(names: list[str]) -> list[tuple]:
    reports = [diagnose(*getattr(BY_NAME[name], kind)()) for name in names for kind in ("buggy", "fixed")]
    return [(sorted((f.code, f.severity) for f in r.findings), r.measurements.get("overfit_losses"),
             r.measurements.get("second_opinion_losses")) for r in reports]


def test_verdicts_are_the_same_with_the_cpu_busy() -> None:
    """Corpus programs diagnosed on an idle and on a busy machine (one spinning process per core):
    codes, severities and every one-batch loss are identical."""
    names = ["MNIST pixels never divided by 255", "softmax + NLLLoss in a text classifier",
             "no zero_grad, with gradient clipping"]
    idle = _verdicts(names)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        time.sleep(0.3)
        busy = _verdicts(names)
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()
    assert all(losses for _, losses, _ in idle), idle
    assert idle == busy


# --- no false alarms on correct code ---------------------------------------------------------------------

def test_raw_outputs_inside_zero_one_are_not_called_probabilities() -> None:
    torch.manual_seed(0)
    binary = nn.Linear(20, 1)
    with torch.no_grad():  # fresh raw scores that all happen to lie in (0, 1)
        binary.weight.mul_(0.01)
        binary.bias.fill_(0.5)
    x, y = _classes()
    report = diagnose(binary, nn.BCEWithLogitsLoss(), torch.optim.Adam(binary.parameters(), lr=1e-2),
                      (x, (y % 2).float()[:, None]))
    assert "SOFTMAX_BEFORE_CE" not in report.codes, str(report)
    two = nn.Linear(20, 2)
    with torch.no_grad():  # rows [0.3, 0.7]: in [0, 1] and summing to 1, yet logits
        two.weight.zero_()
        two.bias.copy_(torch.tensor([0.3, 0.7]))
    report = diagnose(two, nn.CrossEntropyLoss(), torch.optim.Adam(two.parameters(), lr=1e-2), (x, y % 2))
    assert "SOFTMAX_BEFORE_CE" not in report.codes, str(report)


class _LSTMClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 24, batch_first=True)
        self.head = nn.Linear(24, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def test_correct_lstm_gets_no_learning_rate_finding() -> None:
    torch.manual_seed(0)
    model = _LSTMClassifier()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 10, 6, generator=g)
    y = (x[:, :, 0].mean(dim=1) * 3).long().clamp(-1, 1) + 1
    report = diagnose(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-3), (x, y))
    assert not report.findings, str(report)


def test_stateful_step_and_hand_written_update_are_not_flagged() -> None:
    for name in ("RNN hidden state carried without .data", "hand-written update, gradients never zeroed",
                 "w.data.sub_ update without grad.data.zero_()"):
        report = diagnose(*BY_NAME[name].fixed())
        assert not ({"ZERO_GRAD_MISSING", "CANNOT_OVERFIT_BATCH"} & report.codes), f"{name}\n{report}"


def test_advice_matches_the_shapes() -> None:
    report = diagnose(*BY_NAME["CrossEntropyLoss labels shaped (N, 1), 7 classes"].buggy())
    fix = next(f for f in report.findings if f.code == "TARGET_SHAPE").parts()[2]
    assert "squeeze(1)" in fix and "unsqueeze" not in fix, fix
    report = diagnose(*BY_NAME["squeezed regression logits (N,) vs labels (N, 1)"].buggy())
    fix = next(f for f in report.findings if f.code == "BROADCAST_IN_LOSS").parts()[2]
    assert "y.squeeze(1)" in fix, fix


# --- robust on real models ---------------------------------------------------------------------------------

class _WithLock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()  # cannot be deep-copied
        self.net = _mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with self.lock:
            return self.net(x)


def test_model_that_cannot_be_deep_copied_is_still_diagnosed() -> None:
    model = _WithLock()
    report = diagnose(model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2), _classes())
    assert report.ok and report.measurements["overfit_losses"], str(report)
    assert any("model.lock" in note and "cannot be copied" in note for note in report.notes), report.notes


def test_model_trained_a_few_steps_with_stored_state_is_diagnosed() -> None:
    report = diagnose(*BY_NAME["LSTM state stored on the model and fed back"].fixed())
    assert report.ok, str(report)
    assert any("model.hidden" in note for note in report.notes), report.notes
    bad = diagnose(*BY_NAME["LSTM state stored on the model and fed back"].buggy())
    assert bad.codes == {"GRAPH_REUSED"}, str(bad)
    assert "files, loaders, locks" not in str(bad) and "detach" in bad.findings[0].parts()[2]


def test_a_failed_step_says_what_could_not_be_checked() -> None:
    report = diagnose(*BY_NAME["in-place update of a tensor needed by backward"].buggy())
    assert report.codes == {"INPLACE_MODIFIED"}
    assert any(note.startswith("could not check") for note in report.notes), report.notes


def test_gradient_accumulation_across_steps_is_not_zero_grad_missing() -> None:
    calls = {"n": 0}

    def accumulate_two(model, batch, optimizer, loss_fn):
        x, y = batch
        (loss_fn(model(x), y) / 2).backward()
        calls["n"] += 1
        if calls["n"] % 2 == 0:  # update every second batch, then clear
            optimizer.step()
            optimizer.zero_grad()
        return 0.0 + float(loss_fn(model(x), y))

    model = _mlp()
    report = diagnose(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1), _classes(),
                      accumulate_two)
    assert "ZERO_GRAD_MISSING" not in report.codes, str(report)
