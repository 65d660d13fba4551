"""Notebook 12 exercises: learners' other right and wrong answers (required ids: tests/test_exercise_checks.py).

``12.onnx_parity`` exports a model on every run (about a second on an idle machine, two runs per check),
so it has fewer extra cases here than the other two; tests/test_exercise_checks.py runs each of its
listed mistakes.
"""

from __future__ import annotations

import copy
import json
import time

import numpy as np
import pytest
import safetensors.torch
import torch
from torchvision.transforms import v2

from course_utils.checks import nb12
from course_utils.exercises import check, get_exercise

# --- 12.predict -----------------------------------------------------------------------------------


def _predict(*, batch="stack", scale="divide", norm="train", mode="eval", grad="inference", softmax=1,
             single="wrap", out="pair"):
    def predict(model, images, mean, std, classes):
        if not isinstance(images, (list, tuple)):
            images = [images] if single == "wrap" else images
        if batch == "transforms":
            pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                                   v2.Normalize(mean.tolist(), std.tolist())])
            x = torch.stack([pipeline(image) for image in images]).as_subclass(torch.Tensor)
        else:
            arrays = [torch.from_numpy(np.array(image)) for image in images]
            if batch == "stack":
                raw = torch.stack([a.permute(2, 0, 1) for a in arrays])
            elif batch == "transpose":       # H and W swapped as well
                raw = torch.stack([a.permute(2, 1, 0) for a in arrays])
            else:                            # view as CHW without moving the data
                raw = torch.stack([a.view(3, a.shape[0], a.shape[1]) for a in arrays])
            x = raw.float() / 255 if scale == "divide" else raw.float() / 256 if scale == "256" else raw.float()
            if norm == "train":
                x = (x - mean[:, None, None]) / std[:, None, None]
            elif norm == "imagenet":
                x = v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])(x)
            elif norm == "swapped":
                x = (x - std[:, None, None]) / mean[:, None, None]
            elif norm == "batch stats":
                x = (x - x.mean(dim=(0, 2, 3), keepdim=True)) / x.std(dim=(0, 2, 3), keepdim=True)
        if mode == "eval":
            model.eval()
        elif mode == "train(False) after":
            model.train(False)
        if grad == "inference":
            with torch.inference_mode():
                logits = model(x)
        elif grad == "no_grad":
            with torch.no_grad():
                logits = model(x)
        else:
            logits = model(x)
        probs = logits.softmax(dim=softmax) if softmax is not None else torch.sigmoid(logits)
        labels = [classes[i] for i in probs.argmax(dim=1).tolist()]
        if out == "labels only":
            return labels
        if out == "probs first":
            return probs, labels
        if out == "numpy":
            return labels, probs.detach().numpy()
        if out == "detach at end":
            return labels, probs.detach()
        return labels, probs
    return predict


def _sigmoid_like(**kwargs):
    return _predict(softmax=None, **kwargs)


PREDICT_WRONG = [
    (_predict(mode="none"), ["eval()"]),
    (_predict(norm="imagenet"), ["ImageNet", "training mean and std"]),
    (_predict(norm="none"), ["subtract the training mean"]),
    (_predict(scale="none"), ["/ 255"]),
    (_predict(batch="view"), ["permute(2, 0, 1)"]),
    (_predict(softmax=0), ["softmax(dim=1)"]),
    (_predict(grad="tracked"), ["inference_mode"]),
    (_predict(single="as is"), ["images = [images]"]),
    (_predict(out="labels only"), ["(labels, probs)"]),
    (_predict(out="numpy"), ["torch.Tensor"]),
    (_predict(out="probs first"), ["order (labels, probs)", "found (probs, labels)"]),
    (_predict(grad="no_grad"), ["torch.inference_mode()", "no_grad"]),
    (nb12._predict_variant(norm_first=True), ["Hint (normalised before scaling to [0, 1])", "/ 255"]),
    (nb12._predict_variant(bgr=True), ["Hint (BGR channel order)", "RGB"]),
    (_predict(batch="transpose"), ["wrong values"]),
    (_predict(norm="swapped"), ["wrong values"]),
    (_predict(norm="batch stats"), ["wrong values"]),
    (_sigmoid_like(), ["wrong values"]),
    (_predict(scale="256"), ["wrong values"]),
]


@pytest.mark.parametrize(("wrong", "words"), PREDICT_WRONG, ids=[str(i) for i in range(len(PREDICT_WRONG))])
def test_predict_wrong_answers_fail_with_a_message_naming_the_fix(wrong, words) -> None:
    result = check("12.predict", wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


@pytest.mark.parametrize("right", [_predict(), _predict(batch="transforms"),
                                   _predict(mode="train(False) after"), _predict(out="detach at end")])
def test_predict_right_answers_pass(right) -> None:
    result = check("12.predict", right)
    assert result.passed, result.message


def test_predict_in_place_edit_of_an_image_is_named() -> None:
    def predict(model, images, mean, std, classes):
        if isinstance(images, list) and isinstance(images[0], np.ndarray):
            for image in images:
                image[...] = image[:, :, ::-1].copy()    # RGB -> BGR "in passing"
        return nb12.predict_reference(model, images, mean, std, classes)

    result = check("12.predict", predict)
    assert result.status == "fail" and "modified its input `images` in place" in result.message, result.message


def test_predict_endless_loop_is_stopped(monkeypatch) -> None:
    monkeypatch.setattr(get_exercise("12.predict"), "time_limit", 1.0)

    def predict(model, images, mean, std, classes):
        while True:
            pass

    result = check("12.predict", predict)
    assert result.status == "fail" and "did not finish within 1 s" in result.message, result.message


def test_predict_forgotten_return_and_stub() -> None:
    def forgot(model, images, mean, std, classes):
        nb12.predict_reference(model, images, mean, std, classes)

    assert "did you forget `return`?" in check("12.predict", forgot).message

    def stub(model, images, mean, std, classes):
        raise NotImplementedError("Your turn")

    assert check("12.predict", stub).status == "todo"
    assert check("12.predict", nb12.predict_reference).status == "ok"


# --- 12.save_for_serving --------------------------------------------------------------------------


def _save(how):
    def save_for_serving(model, path, mean, std, classes):
        metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()),
                    "classes": json.dumps(list(classes))}
        state = model.state_dict()
        if how == "save_model":
            safetensors.torch.save_model(model, path, metadata=metadata)
        elif how == "floats":
            safetensors.torch.save_model(model, path, metadata={
                "mean": json.dumps([float(v) for v in mean]), "std": json.dumps([float(v) for v in std]),
                "classes": json.dumps(classes)})
        elif how == "contiguous clones":
            safetensors.torch.save_file({k: v.contiguous().clone() for k, v in state.items()}, path, metadata=metadata)
        elif how == "contiguous":
            safetensors.torch.save_file({k: v.contiguous() for k, v in state.items()}, path, metadata=metadata)
        elif how == "pickle":
            torch.save({"state_dict": state, **metadata}, path)
        elif how == "model.half()":
            safetensors.torch.save_model(model.half(), path, metadata=metadata)
        elif how == "classes missing":
            safetensors.torch.save_model(model, path, metadata={"mean": metadata["mean"], "std": metadata["std"]})
        elif how == "comma string":
            safetensors.torch.save_model(model, path, metadata={
                **metadata, "mean": ",".join(f"{v:.6f}" for v in mean.tolist())})
        elif how == "std as mean":
            safetensors.torch.save_model(model, path, metadata={**metadata, "mean": metadata["std"]})
        elif how == "float64":
            tensors = {k: (v.double() if v.is_floating_point() else v).contiguous().clone() for k, v in state.items()}
            safetensors.torch.save_file(tensors, path, metadata=metadata)
        elif how == "other path":
            safetensors.torch.save_model(model, path + ".tmp", metadata=metadata)
        elif how == "detached params dict":
            safetensors.torch.save_file({k: p.detach().clone().contiguous() for k, p in model.named_parameters()},
                                        path, metadata=metadata)
        elif how == "str metadata":
            safetensors.torch.save_model(model, path, metadata={**metadata, "std": str(std)})
    return save_for_serving


SAVE_WRONG = [
    (_save("pickle"), ["safetensors.torch.save_model"]),
    (_save("contiguous"), ["save_model", "duplicate names"]),
    (_save("contiguous clones"), [], ),  # unties and packs: right (checked below), listed to document it
    (_save("model.half()"), ["modified its input `model` in place"]),
    (_save("classes missing"), ["metadata", "'classes'"]),
    (_save("comma string"), ["json.dumps"]),
    (_save("std as mean"), ["expected metadata 'mean'"]),
    (_save("float64"), ["keep each tensor's dtype"]),
    (_save("other path"), ["expected a file at `path`"]),
    (_save("detached params dict"), ["buffers"]),
    (_save("str metadata"), ["json.dumps(mean.tolist())"]),
]


def _save_model(model, path, mean, std, classes, *, prefix="", dedup_by_value=False, floats_only=False):
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    kept = {}
    for name, tensor in model.state_dict().items():
        if floats_only and not tensor.is_floating_point():
            continue
        if any(t.data_ptr() == tensor.data_ptr() or dedup_by_value and t.shape == tensor.shape
               and torch.equal(t, tensor) for t in kept.values()):
            continue
        kept[prefix + name] = tensor.contiguous()
    safetensors.torch.save_file(kept, str(path), metadata=metadata)


def _returns_path(model, path, mean, std, classes):
    nb12.save_for_serving_reference(model, path, mean, std, classes)
    return str(path)


def _calls_eval(model, path, mean, std, classes):
    model.eval()
    nb12.save_for_serving_reference(model, path, mean, std, classes)


def _adds_suffix(model, path, mean, std, classes):
    path = str(path)
    nb12.save_for_serving_reference(model, path if path.endswith(".safetensors") else path + ".safetensors",
                                    mean, std, classes)


def _str_path_only(model, path, mean, std, classes):
    if not path.endswith(".safetensors"):
        raise ValueError(path)
    nb12.save_for_serving_reference(model, path, mean, std, classes)


@pytest.mark.parametrize(("wrong", "words"), [
    (lambda *a: _save_model(*a, prefix="model."), ["'model.0.weight'", "own name"]),
    (lambda *a: _save_model(*a, dedup_by_value=True), ["missing ['2.bias']"]),
    (lambda *a: _save_model(*a, floats_only=True), ["missing ['1.num_batches_tracked']"]),
    (_returns_path, ["expected None", "returns nothing"]),
    (_calls_eval, ["left in eval mode"]),
    (_adds_suffix, ["expected a file at `path`", "served_model.safetensors"]),
    (_str_path_only, ["AttributeError", "PosixPath"]),
], ids=["prefixed keys", "dedup by value", "integer buffers dropped", "returns the path", "eval inside",
        "suffix added", "str path only"])
def test_save_task_rules_each_have_a_failing_case(wrong, words) -> None:
    result = check("12.save_for_serving", wrong)
    assert result.status == "fail", result.message
    assert "Hint (parameters only" not in result.message, result.message
    for word in words:
        assert word in result.message, result.message


@pytest.mark.parametrize(("wrong", "words"), [w for w in SAVE_WRONG if w[1]],
                         ids=[str(i) for i, w in enumerate(SAVE_WRONG) if w[1]])
def test_save_wrong_answers_fail_with_a_message_naming_the_fix(wrong, words) -> None:
    result = check("12.save_for_serving", wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


@pytest.mark.parametrize("right", [_save("save_model"), _save("floats"), _save("contiguous clones")])
def test_save_right_answers_pass(right) -> None:
    result = check("12.save_for_serving", right)
    assert result.passed, result.message


def test_save_stub_and_endless_loop(monkeypatch) -> None:
    def stub(model, path, mean, std, classes):
        ...

    assert check("12.save_for_serving", stub).status == "todo"
    monkeypatch.setattr(get_exercise("12.save_for_serving"), "time_limit", 1.0)

    def spins(model, path, mean, std, classes):
        while True:
            pass

    assert "did not finish within 1 s" in check("12.save_for_serving", spins).message


def test_fast_checks_take_under_three_seconds() -> None:
    for exercise_id in ("12.predict", "12.save_for_serving"):
        check(exercise_id, get_exercise(exercise_id).reference)       # warm
        start = time.perf_counter()
        assert check(exercise_id, get_exercise(exercise_id).reference).passed
        assert time.perf_counter() - start < 3.0, exercise_id


# --- 12.onnx_parity (each run exports: a few of them only) ----------------------------------------


def _parity_dict_shapes(model, batches, path):
    import onnxruntime

    model.eval()
    torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False,
                      dynamic_shapes={"input": {0: torch.export.Dim("batch")}})
    session = onnxruntime.InferenceSession(path)
    worst = 0.0
    for x in batches:
        with torch.no_grad():
            expected = model(x).numpy()
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        worst = max(worst, float(np.max(np.abs(expected - got))))
    return worst


def _parity_in_place(model, batches, path):
    for x in batches:
        x.clamp_(-3, 3)                    # "clean" the inputs in place
    return nb12.onnx_parity_reference(model, batches, path)


def _parity_first_batch_only(model, batches, path):
    import onnxruntime

    model.eval()
    torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False)   # static batch size
    session = onnxruntime.InferenceSession(path)
    with torch.no_grad():
        expected = model(batches[0]).numpy()
    return float(np.abs(session.run(None, {"input": batches[0].numpy()})[0] - expected).max())


def test_onnx_parity_alternative_passes() -> None:
    assert check("12.onnx_parity", _parity_dict_shapes).passed


@pytest.mark.parametrize(("wrong", "words"), [
    (_parity_in_place, ["modified its input `batches` in place"]),
    (_parity_first_batch_only, ["accept any batch size"]),
    # eval() first: a model left in training mode is named before the missing file
    (lambda model, batches, path: (model.eval(), 0.0)[1], ["expected an ONNX file at `path`"]),
    (lambda model, batches, path: 0.0, ["left in train mode", "Hint (no ONNX file written at path)"]),
], ids=["in place", "first batch only", "constant", "constant, model left in train mode"])
def test_onnx_parity_other_wrong_answers(wrong, words) -> None:
    result = check("12.onnx_parity", wrong)
    assert result.status == "fail", result.message
    for word in words:
        assert word in result.message, result.message


def test_onnx_parity_stub_is_todo_without_exporting() -> None:
    def stub(model, batches, path):
        raise NotImplementedError

    start = time.perf_counter()
    assert check("12.onnx_parity", stub).status == "todo"
    assert time.perf_counter() - start < 1.0


def test_onnx_parity_bound_reads_the_given_batches_only() -> None:
    """The extra batch size the checker adds only tests the dynamic dimension: a candidate that ran
    the given batches correctly is not compared with a difference it never measured."""
    (model, batches, path), _ = nb12._parity_cases()[0]()
    value = nb12.onnx_parity_reference(model, batches, path)   # leaves the model in eval mode
    given, with_extra, concatenated = nb12._measure(model, batches, path)
    reference = copy.deepcopy(nb12._pristine(model)).eval()
    session = nb12._session(path)
    name = session.get_inputs()[0].name
    with torch.inference_mode():
        expected = max(nb12.max_abs_diff(reference(x), session.run(None, {name: x.numpy()})[0]) for x in batches)
    assert given == pytest.approx(expected) and with_extra >= given
    assert value == given or value == concatenated           # exactly the number measured on the file
    other = 0.9 * nb12.TOLERANCE  # far above the given batches' difference, still within the tolerance
    assert other > 10 * value
    nb12._MEASURED[path] = (given, other, concatenated)     # as if the extra size differed much more
    try:
        assert nb12._parity_verify(value, None, (model, batches, path), {}) is None
        nb12._MEASURED[path] = (other, other, other)
        problem = nb12._parity_verify(value, None, (model, batches, path), {})
        assert "largest absolute difference over every element of every batch" in problem, problem
    finally:
        nb12._MEASURED.pop(path)

