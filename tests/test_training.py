"""course_utils.training (fit, evaluate, schedulers), viz.curves, viz.images, widgets.lr_schedule."""

from __future__ import annotations

import contextlib
import io

import matplotlib
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_utils.training import (History, evaluate, fit, lr_curve, make_scheduler,
                                   read_csv_log, read_tensorboard_log)

matplotlib.use("Agg")


def _data(n: int = 96, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long() + 2 * (x[:, 2] > 0).long()
    return TensorDataset(x, y)


def _model(seed: int = 0) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))


def _bare_loop(model, loader, optimizer, epochs):
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()


def test_fit_trains_and_logs_every_step(tmp_path) -> None:
    loader = DataLoader(_data(), batch_size=16)
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    history = fit(model, loader, epochs=4, optimizer=opt, val_loader=loader,
                  log_csv=tmp_path / "log.csv", progress=False, verbose=False)
    assert isinstance(history, History)
    assert [r["epoch"] for r in history.epochs] == [1, 2, 3, 4]
    assert len(history.steps) == 4 * len(loader)
    assert set(history.epochs[0]) == {"epoch", "train_loss", "val_loss", "val_acc", "lr",
                                      "grad_norm", "seconds"}
    assert history.epochs[-1]["train_loss"] < history.epochs[0]["train_loss"]
    assert history.epochs[-1]["val_acc"] > 0.8
    assert all(step["grad_norm"] > 0 for step in history.steps)
    rows = read_csv_log(tmp_path / "log.csv")
    assert [r["epoch"] for r in rows] == [1.0, 2.0, 3.0, 4.0]
    assert rows[-1]["val_acc"] == pytest.approx(history.epochs[-1]["val_acc"])
    assert "4 epochs" in repr(history)
    with pytest.raises(KeyError, match="val_acc"):
        history.column("accuracy")


def test_fit_logs_the_same_numbers_to_tensorboard(tmp_path) -> None:
    loader = DataLoader(_data(), batch_size=16)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    history = fit(model, loader, epochs=2, optimizer=opt, val_loader=loader,
                  log_tensorboard=tmp_path / "tb", progress=False, verbose=False)
    scalars = read_tensorboard_log(tmp_path / "tb")
    assert set(scalars) == {"step/loss", "step/lr", "step/grad_norm", "epoch/train_loss",
                            "epoch/val_loss", "epoch/val_acc", "epoch/lr", "epoch/grad_norm"}
    assert [step for step, _ in scalars["step/loss"]] == [s["step"] for s in history.steps]
    assert [v for _, v in scalars["step/loss"]] == pytest.approx([s["loss"] for s in history.steps])
    assert [v for _, v in scalars["epoch/val_acc"]] == pytest.approx(history.column("val_acc"))
    with pytest.raises(FileNotFoundError, match="expected a TensorBoard log folder"):
        read_tensorboard_log(tmp_path / "missing")


def test_fit_matches_the_bare_loop() -> None:
    loader = DataLoader(_data(), batch_size=16)
    a, b = _model(1), _model(1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        fit(a, loader, epochs=2, optimizer=torch.optim.SGD(a.parameters(), lr=0.1),
            progress=False, verbose=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        _bare_loop(b, loader, torch.optim.SGD(b.parameters(), lr=0.1), 2)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_fit_clips_and_reports_the_norm_before_clipping() -> None:
    loader = DataLoader(_data(), batch_size=32)
    model = _model()
    history = fit(model, loader, epochs=1, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                  max_grad_norm=1e-3, progress=False, verbose=False)
    assert all(step["grad_norm"] > 1e-3 for step in history.steps)  # logged before clipping


def test_fit_accepts_a_loader_without_length(capsys) -> None:
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(_data(48))

    model = _model()
    history = fit(model, DataLoader(Stream(), batch_size=16), epochs=2,
                  optimizer=torch.optim.SGD(model.parameters(), lr=0.1), progress=True, verbose=False)
    assert len(history.steps) == 6
    assert "training" in capsys.readouterr().err  # the text progress bar outside Jupyter


def test_fit_prints_one_line_per_epoch() -> None:
    loader = DataLoader(_data(), batch_size=32)
    model = _model()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        fit(model, loader, epochs=2, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            val_loader=loader, progress=False)
    lines = printed.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("epoch 1/2") and "val_acc" in lines[0]


@pytest.mark.parametrize("name, per_batch", [("onecycle", True), ("cosine", False), ("step", False),
                                             ("plateau", False)])
def test_fit_steps_each_scheduler_in_its_place(name: str, per_batch: bool) -> None:
    loader = DataLoader(_data(), batch_size=16)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = make_scheduler(name, opt, epochs=4, steps_per_epoch=len(loader))
    history = fit(model, loader, epochs=4, optimizer=opt, scheduler=sched, val_loader=loader,
                  progress=False, verbose=False)
    lrs = history.column("lr", level="steps")
    expected = lr_curve(name, epochs=4, steps_per_epoch=len(loader), lr=0.1)
    if name != "plateau":  # plateau follows the real validation loss, not the demo metric
        assert lrs == pytest.approx(expected)
    changes_inside_epoch = any(lrs[i] != lrs[i + 1] for i in range(len(loader) - 1))
    assert changes_inside_epoch == per_batch


def test_evaluate_restores_mode_and_does_not_track_gradients() -> None:
    loader = DataLoader(_data(), batch_size=20)
    model = _model()
    model.train()
    seen = []
    model.register_forward_hook(lambda m, i, o: seen.append((m.training, o.requires_grad)))
    result = evaluate(model, loader)
    assert set(result) == {"loss", "acc"} and 0 <= result["acc"] <= 1
    assert model.training and all(not training and not grad for training, grad in seen)
    regression = DataLoader(TensorDataset(torch.randn(8, 5), torch.randn(8, 4)), batch_size=4)
    assert set(evaluate(model, regression, nn.MSELoss())) == {"loss"}


def test_bad_arguments() -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="epochs"):
        fit(model, [], epochs=0, optimizer=opt)
    with pytest.raises(ValueError, match="scheduler name"):
        make_scheduler("linear", opt, epochs=3)
    with pytest.raises(ValueError, match="step_every"):
        lr_curve("cosine", epochs=2, steps_per_epoch=2, step_every="sometimes")
    with pytest.raises(ValueError, match="empty"):
        evaluate(model, [])


def test_lr_curve_shows_the_misplaced_step() -> None:
    right = lr_curve("cosine", epochs=6, steps_per_epoch=10, lr=0.1)
    wrong = lr_curve("cosine", epochs=6, steps_per_epoch=10, lr=0.1, step_every="batch")
    assert right[0] == right[9] == 0.1 and right[-1] < 0.01
    assert min(wrong[:10]) < 0.01 and max(wrong[-10:]) > 0.05  # runs out in epoch 1, then climbs back
    cycle_wrong = lr_curve("onecycle", epochs=6, steps_per_epoch=10, lr=0.1, step_every="epoch")
    assert max(cycle_wrong) < 0.1  # never reaches the peak


def test_curves_and_lr_plots() -> None:
    from course_utils.viz.curves import plot_history, plot_lr_schedules

    fig = plot_history([{"epoch": "1", "train_loss": "1.0"}, {"epoch": "2", "train_loss": "0.5"}])
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="loss"):
        plot_history([{"epoch": 1, "acc": 0.3}])
    fig = plot_lr_schedules({"a": [1, 2], "b": [2, 1]}, steps_per_epoch=1, log=True)
    assert fig.axes[0].get_yscale() == "log"


def test_show_images_accepts_pil_and_normalised_tensors() -> None:
    from course_utils.data import ShapesDataset
    from course_utils.viz.images import show_images

    ds = ShapesDataset("val", size=5)
    fig = show_images([ds[i][0] for i in range(5)], labels=ds.targets, classes=ds.classes, ncols=3)
    texts = fig.axes[0].texts
    assert len(texts) == 5 and texts[0].get_text() == ds.classes[ds.targets[0]]
    x = (torch.rand(2, 3, 4, 4) - 0.5) / 0.25
    fig = show_images(x, labels=[0, 1], predictions=[0, 0], mean=[0.5] * 3, std=[0.25] * 3)
    assert fig.axes[0].texts[1].get_text() == "0 (1)" and fig.axes[0].texts[1].get_color() == "red"
    gray = show_images(torch.rand(3, 1, 5, 5), title="gray")
    assert gray.axes[0].get_title() == "gray" and not gray.axes[0].texts
    with pytest.raises(ValueError, match=r"\[B, C, H, W\]"):
        show_images(torch.rand(3, 4, 4))


def test_lr_widget_reacts_to_every_control() -> None:
    import ipywidgets as widgets

    from course_utils.widgets.lr_schedule import lr_schedule_explorer

    box = lr_schedule_explorer(epochs=6, steps_per_epoch=5)
    out = box.children[-1]
    assert isinstance(out, widgets.Output)
    controls = [w for child in box.children[:-1]
                for w in (child.children if isinstance(child, widgets.HBox) else [child])]
    assert len(controls) == 7
    for control in controls:
        before = out.outputs
        if isinstance(control, widgets.IntSlider):
            control.value = control.value + 1
        else:  # a selection: the last option other than the current one
            values = [o[1] if isinstance(o, tuple) else o for o in control.options]
            control.value = [v for v in values if v != control.value][-1]
        assert out.outputs != before, f"{control.description} did not update the output"
        assert any("image/png" in o.get("data", {}) for o in out.outputs)