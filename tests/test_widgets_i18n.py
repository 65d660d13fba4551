"""The widgets and the printing helpers speak Chinese: no msgid missing, no English sentence left.

Every explorer is built under ``use_language("zh_CN")`` (in a few states, including the failing
ones), and its readout, plain-text form and control labels are checked; every helper that prints
to a learner or raises a teaching ``ValueError`` is called the same way. What stays English (code,
quoted values, reprs, torch's own error text) is left out by :func:`tests.test_i18n.english_left`.
English stays the default: the same calls in English ask the catalogue for nothing.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any, Callable

import matplotlib
import pytest
import torch

from course_utils import devices, i18n
from tests.test_i18n import english_left

matplotlib.use("Agg")


def _labels(widget: Any) -> list[str]:
    """Every description, tooltip and option label of a widget tree."""
    found = []
    for attr in ("description", "tooltip"):
        value = getattr(widget, attr, None)
        if isinstance(value, str) and value:
            found.append(value)
    for option in getattr(widget, "options", ()) or ():
        if isinstance(option, str):
            found.append(option)
        elif isinstance(option, tuple) and isinstance(option[0], str):
            found.append(option[0])
    for child in getattr(widget, "children", ()) or ():
        found += _labels(child)
    return found


def _explorer_texts() -> list[str]:
    """Readouts, plain-text forms and labels of every explorer, in several states."""
    import matplotlib.pyplot as plt

    from course_utils.widgets.accumulation import accumulation_stepper
    from course_utils.widgets.broadcasting import broadcast_explorer
    from course_utils.widgets.dynamic_depth import depth_explorer
    from course_utils.widgets.init_explorer import init_explorer
    from course_utils.widgets.lr_schedule import lr_schedule_explorer
    from course_utils.widgets.memory_calculator import memory_calculator

    texts: list[str] = []

    def show(box: Any) -> None:
        texts.extend([box.text, repr(box), *_labels(box)])

    box = broadcast_explorer("6, 4", "6")          # fails
    show(box)
    box.shape_b.value = "4"                        # broadcasts
    show(box)
    box.shape_a.value = "8, x, 3"                  # not a shape
    show(box)
    box.shape_a.value = "8, , 3"
    show(box)
    box.example.value = box.example.options[-1][1]
    show(box)
    box = accumulation_stepper()
    box.step()
    box.step()
    box.reset()
    show(box)
    box = depth_explorer()
    show(box)
    box = init_explorer(depth=20, width=16)
    show(box)
    box.scheme.value = "zero"
    show(box)
    box = lr_schedule_explorer(epochs=3, steps_per_epoch=2)
    for where in ("auto", "batch", "epoch"):
        box.where.value = where
        show(box)
    box = memory_calculator(1000, n_params=10_000, batch_size=8)
    for precision in ("float32", "amp", "bf16"):
        box.precision.value = precision
        show(box)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for static in (lambda: broadcast_explorer("6, 4", "6", static=True),
                       lambda: broadcast_explorer("6, 4", "4", static=True),
                       lambda: accumulation_stepper(["y = 2 * x", "zero_grad (zeros)", "y = x ** 2"], static=True),
                       lambda: memory_calculator(1000, n_params=10_000, batch_size=8, static=True)):
            static()
            plt.close("all")
    texts.append(printed.getvalue())
    return texts


def _graph_texts() -> list[str]:
    from course_utils.viz.graph import describe_graph

    x = torch.ones(2, requires_grad=True)
    y = x * 2
    return [describe_graph(y + y * 3, {"x": x})]


def _printed(call: Callable[[], Any]) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        call()
    return printed.getvalue()


def _helper_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from torch.utils.data import DataLoader, TensorDataset

    from course_utils.training import fit

    monkeypatch.setattr(devices, "gpu_available", lambda: False)
    monkeypatch.setattr(devices, "cpp_compiler", lambda: None)
    texts = [_printed(lambda: devices.skip_unless_gpu("speed", expect="2x")),
             _printed(lambda: devices.skip_unless_gpu("speed")),
             _printed(lambda: devices.skip_unless_compiler("step"))]
    monkeypatch.setattr(devices, "GPU_RUN_RECORDED", True)
    texts.append(_printed(lambda: devices.skip_unless_gpu("speed", expect="2x")))
    for platform in ("linux", "darwin", "win32", "sunos"):
        monkeypatch.setattr("sys.platform", platform)
        texts.append(devices.compiler_help())
    monkeypatch.undo()
    texts.append(devices.describe(torch.device("cpu")))
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,))), batch_size=4)
    model = torch.nn.Linear(3, 2)
    texts.append(_printed(lambda: fit(model, loader, epochs=2, val_loader=loader, progress=False,
                                      optimizer=torch.optim.SGD(model.parameters(), lr=0.1))))
    bad = torch.nn.Linear(3, 2)
    with torch.no_grad():
        bad.weight.fill_(float("nan"))
    texts.append(_printed(lambda: fit(bad, loader, epochs=1, progress=False,
                                      optimizer=torch.optim.SGD(bad.parameters(), lr=0.1))))
    return texts


def _saved(path: Any, obj: Any) -> Any:
    if isinstance(obj, bytes):
        path.write_bytes(obj)
    else:
        torch.save(obj, path)
    return path


def _teaching_errors(folder: Any) -> list[Callable[[], Any]]:
    """Calls that raise an error written for the learner (ValueError, TypeError, OSError, ...)."""
    from course_utils import checkpoint, data, deploy, memory, profiling, training, workers
    from course_utils.viz import activations, curves, gradients, graph, images, shapes
    from course_utils.viz import memory as viz_memory
    from course_utils.widgets import accumulation, broadcasting, dynamic_depth, init_explorer, memory_calculator

    calls: list[Callable[[], Any]] = [
        lambda: broadcasting.check_shape_text("8, x, 3"),
        lambda: shapes.parse_shape("3, a"),
        lambda: shapes.parse_shape([-1]),
        lambda: accumulation.GradAccumulator().backward("y = 7"),
        lambda: dynamic_depth.norm_trajectory(0),
        lambda: init_explorer.init_explorer(depth=3),
        lambda: memory_calculator.calculator_breakdown(1, 1, "fp8", "adam", 1),
        lambda: memory_calculator.calculator_breakdown(1, 1, "amp", "lion", 1),
        lambda: memory_calculator.calculator_breakdown(-1, 1, "amp", "adam", 1),
        lambda: activations.plot_activation_stds({}),
        lambda: activations.plot_activation_stds({"a": [1.0]}, highlight="b"),
        lambda: activations.plot_activation_stds({"a": [-1.0]}),
        lambda: curves.plot_history([]),
        lambda: curves.plot_history([{"epoch": 1, "acc": 0.5}]),
        lambda: curves.plot_lr_schedules({}),
        lambda: gradients.plot_grad_norms({}),
        lambda: gradients.plot_grad_norms({"a": ["x"]}),
        lambda: gradients.plot_grad_norms({"a": []}),
        lambda: graph.graph_nodes([1]),
        lambda: graph.graph_nodes(torch.ones(1, requires_grad=True)),
        lambda: graph.graph_nodes(torch.ones(1)),
        lambda: images.show_images("not images"),
        lambda: images.show_images(torch.zeros(0, 3, 2, 2)),
        lambda: viz_memory.plot_memory_breakdown({}),
        lambda: viz_memory.plot_activation_vs_batch([1], [1]),
        lambda: checkpoint.atomic_save({}, folder),
        lambda: checkpoint.atomic_save({}, folder / "no" / "x.pt"),
        lambda: checkpoint.capture_rng_state(generator=1),
        lambda: checkpoint.restore_rng_state({}),
        lambda: checkpoint.restore_rng_state(checkpoint.capture_rng_state(), generator=torch.Generator()),
        lambda: checkpoint.make_checkpoint(1),
        lambda: checkpoint.read_checkpoint(folder / "none.pt"),
        lambda: checkpoint.read_checkpoint(_saved(folder / "list.pt", [1])),
        lambda: checkpoint.read_checkpoint(_saved(folder / "bad.pt", b"not a checkpoint")),
        lambda: checkpoint.load_checkpoint(_saved(folder / "empty.pt", {}), model=torch.nn.Linear(1, 1)),
        lambda: checkpoint.load_checkpoint(_saved(folder / "empty.pt", {})),
        lambda: data.toy_sequences(min_len=3, max_len=2),
        lambda: checkpoint.CheckpointManager("/tmp", keep_last=0),
        lambda: checkpoint.CheckpointManager("/tmp", mode="mid"),
        lambda: checkpoint.CheckpointManager("/tmp", prefix="a b"),
        lambda: data.make_shapes(1, split="nope"),
        lambda: data.make_shapes(-1),
        lambda: data.ShapesDataset(split="nope"),
        lambda: deploy.max_abs_diff(torch.ones(2), torch.ones(3)),
        lambda: memory._check_optimizer_name("lion"),
        lambda: profiling.time_it(lambda: None, repeats=0),
        lambda: training.make_scheduler("nope", torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1),
                                        epochs=1, steps_per_epoch=1),
        lambda: workers.SlowDataset([1], mode="nope"),
        lambda: workers.SlowDataset([1], delay_s=-1),
        lambda: devices.skip_unless_gpu(""),
        lambda: devices.skip_unless_compiler(" "),
    ]
    return calls


def _messages_of(calls: list[Callable[[], Any]]) -> tuple[list[str], list[str]]:
    """The errors' messages, and the calls that did not raise one (a renamed helper must be noticed)."""
    found, silent = [], []
    for call in calls:
        try:
            call()
        except (ValueError, TypeError, RuntimeError, OSError) as exc:
            found.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - name what went wrong instead
            silent.append(f"{call.__code__.co_firstlineno}: {type(exc).__name__}: {exc}")
        else:
            silent.append(f"{call.__code__.co_firstlineno}: no error")
    return found, silent


def _all_texts(monkeypatch: pytest.MonkeyPatch, folder: Any) -> tuple[list[str], list[str]]:
    errors, silent = _messages_of(_teaching_errors(folder))
    return [*_explorer_texts(), *_graph_texts(), *_helper_texts(monkeypatch), *errors], silent


_TORCH_LOAD = "Weights only load failed"


def test_widgets_and_helpers_speak_chinese(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    i18n.MISSING.clear()
    with i18n.use_language("zh_CN"):
        texts, silent = _all_texts(monkeypatch, tmp_path)
    assert not silent, silent
    missing = sorted(m for lang, m in i18n.MISSING if lang == "zh_CN")
    assert not missing, f"{len(missing)} msgids not in the catalogue, e.g. {missing[:5]}"
    # torch.load's own (English, multi-line) refusal is quoted whole inside one checkpoint message
    leftovers = {text: english_left(text) for text in texts if english_left(text) and _TORCH_LOAD not in text}
    assert not leftovers, "\n\n".join(f"{m}\n  -> English left: {e}" for m, e in list(leftovers.items())[:5])
    assert sum(_TORCH_LOAD in text for text in texts) == 1
    assert any("广播" in text for text in texts) and any("跳过" in text for text in texts)


def test_english_is_unchanged_and_asks_for_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    i18n.MISSING.clear()
    texts, silent = _all_texts(monkeypatch, tmp_path)
    assert not silent and not i18n.MISSING
    joined = "\n".join(texts)
    assert "Skipped on this machine (no CUDA GPU): speed." in joined
    assert "(6, 4) and (6,) do not broadcast: at dim 1 (counted from the right: -1)" in joined


def test_what_lessons_read_from_a_readout_holds_in_chinese() -> None:
    """Lesson 03's code cell confirms ``"x.grad now: None" in stepper.text`` (code cells are not translated)."""
    from course_utils.widgets.accumulation import accumulation_stepper

    with i18n.use_language("zh_CN"):
        stepper = accumulation_stepper()
        assert "x.grad now: None" in stepper.text and "下一次调用" in stepper.text
