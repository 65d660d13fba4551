"""Checkers of notebook 12 (export and deployment), in notebook order: ``12.onnx_parity``,
``12.predict``, ``12.save_for_serving``.

How the checkers see more than a return value:

* ``12.onnx_parity``: the candidate's ONNX file is opened with onnxruntime *by the checker* and run
  at the given batch sizes and one more, against a pristine copy of the model in eval mode; the
  number the candidate returns must agree with the measurement over the given batches (the extra
  size only checks that the batch dimension is dynamic). One case only: an export costs
  about a second (:func:`course_utils.deploy.reuse_onnx_registry` removes the rest).
* ``12.predict``: each wrong preprocessing is recomputed on a pristine copy of the case's model and
  compared with the candidate's probabilities (``detect``), so a hint never depends on the exact
  wording of a numerical difference.
* ``12.save_for_serving``: the file is read back with safetensors into a zeroed copy of the model
  (``load_model``; a tied weight stored under one name reaches its other name through the tie the
  model's constructor made), and its header and metadata are checked.
"""

from __future__ import annotations

import atexit
import copy
import json
import math
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from course_utils.deploy import max_abs_diff, reuse_onnx_registry
from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t


_ROOT: list[Path] = []
#: id(model handed to a candidate) -> an untouched copy made by the case factory
_PRISTINE: dict[int, nn.Module] = {}


def _case_dir() -> Path:
    if not _ROOT:
        root = Path(tempfile.mkdtemp(prefix="course-12-checks-"))
        atexit.register(shutil.rmtree, root, True)
        _ROOT.append(root)
    return Path(tempfile.mkdtemp(dir=_ROOT[0]))


def _keep_pristine(model: nn.Module) -> nn.Module:
    _PRISTINE[id(model)] = copy.deepcopy(model)
    return model


def _pristine(model: nn.Module) -> nn.Module:
    return copy.deepcopy(_PRISTINE[id(model)])


def _scramble_norm_stats(model: nn.Module, gen: torch.Generator) -> None:
    """Running statistics far from 0/1, so train mode and eval mode differ clearly."""
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, nn.BatchNorm2d):
                layer.running_mean.copy_(0.5 * torch.randn(layer.num_features, generator=gen))
                layer.running_var.copy_(0.5 + torch.rand(layer.num_features, generator=gen))


def _number(out: Any) -> float | None:
    """The candidate's result when it is a Python number (not a bool, tensor, array or numpy scalar)."""
    if isinstance(out, bool) or not isinstance(out, (int, float)):
        return None
    return float(out)


# --- 12.onnx_parity -------------------------------------------------------------------------------
# Export to ONNX with a dynamic batch dimension, and measure the parity with onnxruntime.

TOLERANCE = 1e-4


def _session(path: str | Path) -> Any:
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def onnx_parity_reference(model: nn.Module, batches: list[torch.Tensor], path: str | Path) -> float:
    import onnxruntime

    model.eval()
    torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim("batch")},))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    worst = 0.0
    for x in batches:
        onnx_out = session.run(None, {name: x.numpy()})[0]
        with torch.inference_mode():
            torch_out = model(x)
        worst = max(worst, float(np.abs(torch_out.numpy() - onnx_out).max()))
    return worst


def _parity_variant(*, eval_mode: bool = True, dynamic: bool = True, feed: str = "same",
                    reduce: str = "max", result: str = "float", to_file: bool = True) -> Callable[..., Any]:
    """A learner's onnx_parity with one thing done differently."""
    def onnx_parity(model, batches, path):
        import onnxruntime

        if eval_mode:
            model.eval()
        shapes = ({0: torch.export.Dim("batch")},) if dynamic else None
        if to_file:
            torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False, dynamic_shapes=shapes)
            session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        else:  # the in-memory program: nothing written at `path`
            program = torch.onnx.export(model, (batches[0],), dynamo=True, verbose=False, dynamic_shapes=shapes)
            session = onnxruntime.InferenceSession(program.model_proto.SerializeToString(),
                                                   providers=["CPUExecutionProvider"])
        name = "x" if feed == "name" else session.get_inputs()[0].name
        diffs, close = [], True
        for x in batches:
            fed = {"same": x, "name": x, "double": x.double(), "nhwc": x.permute(0, 2, 3, 1),
                   "random": torch.randn_like(x)}[feed]
            onnx_out = session.run(None, {name: fed.numpy()})[0]
            with torch.no_grad():
                torch_out = model(x).numpy()
            gap = np.abs(torch_out - onnx_out)
            diffs.append(gap.mean() if reduce == "mean" else gap.max())
            close = close and np.allclose(torch_out, onnx_out, atol=TOLERANCE)
        if result == "bool":
            return close
        if result == "array":
            return np.array(diffs).max(keepdims=True)
        return float(max(diffs))
    return onnx_parity


def _parity_model(seed: int, sign: float = 1.0) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.5), nn.Linear(6, 10))
    _scramble_norm_stats(model, torch.Generator().manual_seed(seed))
    with torch.no_grad():  # outputs around 15: float32 rounding differs from batch to batch and in sign
        model[0].weight.mul_(3.0)
        model[-1].weight.mul_(20.0 * sign)
        model[-1].bias.mul_(sign)  # sign -1: every output negated exactly, in PyTorch and in ONNX Runtime alike
    return model.train()  # handed over in training mode: eval() is part of the task


def _parity_cases():
    def make(seed: int, sizes: tuple[int, ...], scales: tuple[float, ...], sign: float):
        def factory():
            # every export in a check reuses one table; installed here, not on import, so that 12.predict
            # and 12.save_for_serving never load the ONNX exporter
            reuse_onnx_registry()
            gen = torch.Generator().manual_seed(seed)
            model = _keep_pristine(_parity_model(0, sign))
            batches = [scale * torch.randn(n, 3, 8, 8, generator=gen) for n, scale in zip(sizes, scales)]
            return (model, batches, str(_case_dir() / "model.onnx")), {}
        return factory
    # Two cases, the same model with its last layer negated (each run exports once). Negating the last layer
    # negates every output exactly, in PyTorch and in ONNX Runtime, so torch - onnx changes sign and nothing
    # else: whichever sign the largest |onnx - torch| has on this CPU, it is negative in one of the two cases,
    # and a signed maximum gives another number there. The middle batch is four times larger, so its
    # rounding differences are the largest on any CPU: "the first/last batch only" gives another number.
    # The differences are a few float32 steps, so a signed maximum can still coincide with the (accepted)
    # maximum over the concatenated batches; seed 46 separates them on the machine that runs CI (AMD
    # EPYC): tests/rule_table.py fails where they coincide.
    return [make(46, (3, 5, 2), (1.0, 4.0, 1.0), sign) for sign in (1.0, -1.0)]


#: path -> the checker's own measurement of that file: (max |onnx - eval model| over the given batches,
#: the same over those and one more batch size, the same with the given batches run as one concatenated
#: batch), or None: a batch size is refused (static batch)
_MEASURED: dict[str, tuple[float, float, float] | None] = {}


def _static_batch(path: str) -> bool:
    try:
        return isinstance(_session(path).get_inputs()[0].shape[0], int)
    except Exception:
        return False


def _measure(model: nn.Module, batches: list[torch.Tensor], path: str) -> tuple[float, float, float] | None:
    """max |onnx - model in eval mode| over the given batches, and over those plus one more batch size
    (the candidate never runs that one: it only tests the dynamic batch dimension); None: a size is refused."""
    if path in _MEASURED:
        return _MEASURED[path]
    reference = _pristine(model).eval()
    session = _session(path)
    name = session.get_inputs()[0].name
    diffs: list[float] = []
    for x in [*batches, torch.cat([batches[0], batches[0]])[:7], torch.cat(batches)]:
        try:
            onnx_out = session.run(None, {name: x.numpy()})[0]
        except Exception:
            _MEASURED[path] = None
            return None
        with torch.inference_mode():
            diffs.append(max_abs_diff(reference(x), onnx_out))
    # float32 rounding inside a kernel depends on the batch it runs on: running the batches one by one or
    # as one concatenated batch are both what the task asks, and give (slightly) different maxima
    result = (max(diffs[:-2]), max(diffs[:-1]), diffs[-1])
    _MEASURED[path] = result
    return result


def _parity_verify(out, ref, args, kwargs):
    model, batches, path = args
    if isinstance(out, (bool, np.bool_)):
        return t("expected the largest difference as a float, found a bool ({out})", out=out)
    if isinstance(out, (torch.Tensor, np.ndarray, np.generic)):
        return t("expected a Python float, found {got} ({kind})", got=describe(out), kind=type(out).__name__)
    value = _number(out)
    if value is None:
        return t("expected a Python float, found {got}", got=describe(out))
    if not Path(path).is_file():
        return t("expected an ONNX file at `path`, found no file there")
    try:
        measurement = _measure(model, batches, path)
    except Exception as exc:
        return t("expected an ONNX file at `path` that onnxruntime can open, found one it refuses ({exc})", exc=exc)
    if measurement is None:
        return t("expected the exported file to accept any batch size, found one that accepts only "
                 "batch size {n} (the example's)", n=batches[0].shape[0])
    measured, measured_all, concatenated = measurement  # given batches; and one more size; as one batch
    if measured_all > TOLERANCE:
        return t("expected the exported file to match the model in eval mode, found a difference of "
                 "{diff:.3g}", diff=measured_all)
    if not math.isfinite(value) or value < 0:
        return t("expected a difference >= 0, found {value}", value=value)
    if value > TOLERANCE:
        return t("expected a difference below {tol:g} (the exported file matches the model in eval "
                 "mode to {measured:.1e}), found {value:.3g}", tol=TOLERANCE, measured=measured, value=value)
    if not (_same_number(value, measured) or _same_number(value, concatenated)):
        return t("expected the largest absolute difference over every element of every batch, "
                 "{measured:.6g} (measured on your file with the same batches), found {value:.6g}",
                 measured=measured, value=value)
    if model.training:
        return t("expected the model in eval mode after your function, found it in training mode")
    return None


def _parity_effects(model: nn.Module, batches: list[torch.Tensor], path: str | Path) -> float:
    """What the reference does to its arguments, without its export (a second export per check, about a
    second): the model ends in eval mode. It returns a float as the reference does (so a candidate that
    returns None is told about `return`); ``_parity_verify`` measures the candidate's own file instead of
    using the reference's output."""
    model.eval()
    return 0.0


def _same_number(value: float, measured: float) -> bool:
    """The candidate's number equals the checker's measurement on the same file and batches: both are
    differences of the same float32 outputs, so only the last bits may differ (float64 arithmetic)."""
    return abs(value - measured) <= 1e-4 * measured + 1e-12


def _large(out: Any) -> bool:
    value = _number(out)
    return value is not None and value > TOLERANCE


def _too_small(out: Any, args: tuple, kwargs: dict) -> bool:
    value, path = _number(out), args[2]
    measurement = _MEASURED.get(path)
    return value is not None and measurement is not None and value < measurement[0] and \
        not _same_number(value, measurement[0]) and not _same_number(value, measurement[2])


register(Exercise(
    "12.onnx_parity",
    "onnx_parity(model, batches, path) puts the model in eval mode, exports it with "
    "torch.onnx.export to `path` (example batches[0], a dynamic batch dimension: the model is an "
    "nn.Sequential, whose forward argument is `input`), "
    "runs every batch through an onnxruntime.InferenceSession and through the model, and returns the "
    "largest absolute difference over all batches as a Python float; the batches are not changed.",
    onnx_parity_reference,
    _parity_cases(),
    _parity_verify,
    [
        Mistake("model left in training mode (no eval())",
                "call model.eval() before exporting and comparing: in training mode Dropout zeroes "
                "random values and BatchNorm uses the batch's statistics, so PyTorch's output is not "
                "what the exported graph computes.",
                _parity_variant(eval_mode=False),
                detect=lambda out, a, k: _large(out) and a[0].training),
        Mistake("float64 fed to onnxruntime",
                "the graph is float32: feed x.numpy() of the float32 tensor, not x.double() or a "
                "float64 numpy array.",
                _parity_variant(feed="double"), error_match="tensor(double)"),
        Mistake("NHWC layout fed to onnxruntime",
                "feed the same NCHW layout the model was exported with; do not permute to channels-last.",
                _parity_variant(feed="nhwc"), error_match="index: 1 Got"),
        Mistake("no dynamic batch dimension",
                "without dynamic_shapes the file accepts only the example's batch size: pass "
                "dynamic_shapes=({0: torch.export.Dim('batch')},) to torch.onnx.export.",
                _parity_variant(dynamic=False), error_match="index: 0 Got",
                detect=lambda out, a, k: Path(a[2]).is_file() and _static_batch(a[2])),
        Mistake("wrong input name fed to onnxruntime",
                "the feed dict's key is the graph's input name: session.get_inputs()[0].name.",
                _parity_variant(feed="name"), error_match="missing from input feed"),
        Mistake("returns the allclose verdict (a bool), not the difference",
                "return the number itself, float(np.abs(a - b).max()), so the caller can compare it "
                "with its tolerance (and see how close it was).",
                _parity_variant(result="bool"),
                detect=lambda out, a, k: isinstance(out, (bool, np.bool_))),
        Mistake("returns an array, tensor or numpy scalar, not a float",
                "convert the result with float(...): np.abs(a - b).max() is a numpy float32.",
                _parity_variant(result="array"),
                detect=lambda out, a, k: isinstance(out, (torch.Tensor, np.ndarray, np.generic))),
        Mistake("compares against a different input than was fed to onnxruntime",
                "run onnxruntime and the model on the same batch (the same tensor, x.numpy() for "
                "onnxruntime and x for PyTorch).",
                _parity_variant(feed="random"),
                detect=lambda out, a, k: _large(out) and not a[0].training),
        Mistake("mean difference, a signed difference or one batch instead of the largest over all batches",
                "take the max of |onnx - torch| (the absolute value) over every element of every batch: not "
                "the mean, not the last (or first) batch alone, not max(a - b) without abs.",
                _parity_variant(reduce="mean"), detect=_too_small),
        Mistake("no ONNX file written at path",
                "pass `path` to torch.onnx.export (its third argument) and open that file with "
                "onnxruntime.InferenceSession(path).",
                _parity_variant(to_file=False),
                detect=lambda out, a, k: not Path(a[2]).is_file()),
    ],
    may_modify=("model",),  # a forgotten eval() runs BatchNorm in training mode: named by its hint
    time_limit=60.0,
    reference_effects=_parity_effects,
))


# --- 12.predict -----------------------------------------------------------------------------------
# An inference wrapper: raw images in, labels and probabilities out.

def predict_reference(model: nn.Module, images: Any, mean: torch.Tensor, std: torch.Tensor,
                      classes: list[str]) -> tuple[list[str], torch.Tensor]:
    if not isinstance(images, (list, tuple)):
        images = [images]
    batch = torch.stack([torch.from_numpy(np.array(image)).permute(2, 0, 1) for image in images])
    x = (batch.float() / 255 - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)
    model.eval()
    with torch.inference_mode():
        probs = model(x).softmax(dim=1)
    labels = [classes[i] for i in probs.argmax(dim=1).tolist()]
    return labels, probs


def _predict_variant(*, eval_mode: bool = True, grad: bool = False, norm: str = "train",
                     scale: bool = True, layout: str = "permute", softmax_dim: int | None = 1,
                     argmax_dim: int = 1, wrap_single: bool = True, unsqueeze: bool = True,
                     names: bool = True, bgr: bool = False, norm_first: bool = False,
                     context: str = "inference_mode") -> Callable[..., Any]:
    """A learner's predict with one thing done differently."""
    def predict(model, images, mean, std, classes):
        single = not isinstance(images, (list, tuple))
        if single and wrap_single:
            images = [images]
        arrays = [torch.from_numpy(np.array(image)) for image in images]
        if single and wrap_single and not unsqueeze:
            batch = arrays[0].permute(2, 0, 1)                     # [3, H, W]: no batch dimension
        elif layout == "permute":
            batch = torch.stack([a.permute(2, 0, 1) for a in arrays])
        elif layout == "reshape":
            batch = torch.stack([a.reshape(a.shape[2], a.shape[0], a.shape[1]) for a in arrays])
        else:
            batch = torch.stack(arrays)                            # HWC as is
        if layout == "stack first":
            x = (batch.float() / 255 - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)   # fails: HWC
            batch = x.permute(0, 3, 1, 2)
        if bgr:
            batch = batch.flip(-3)                                 # channels in BGR order
        x = batch.float() / 255 if scale and not norm_first else batch.float()
        if norm_first:
            x = ((x - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)) / 255
        elif layout == "hwc":  # normalised in HWC (the stats broadcast over the last axis), never permuted
            x = (x - mean) / std
        elif norm == "train":
            x = (x - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)
        elif norm == "half":
            x = (x - 0.5) / 0.5
        elif norm == "imagenet":
            x = (x - _IMAGENET_MEAN.view(-1, 1, 1)) / _IMAGENET_STD.view(-1, 1, 1)
        if eval_mode:
            model.eval()
        with torch.set_grad_enabled(grad), torch.inference_mode(not grad and context == "inference_mode"):
            logits = model(x if x.dim() == 4 or not unsqueeze else x.unsqueeze(0))
            probs = logits if softmax_dim is None else logits.softmax(dim=softmax_dim)
        index = probs.argmax(dim=argmax_dim).flatten().tolist()
        labels = [classes[i % len(classes)] for i in index] if names else index
        return labels, probs
    return predict


_CLASSES = ["cat", "dog", "bird", "fish"]
#: the statistics every tutorial copies (torchvision's pretrained models), not this model's
_IMAGENET_MEAN, _IMAGENET_STD = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])


#: per model: torch.is_inference_mode_enabled() at each forward call (a hook records it; no model state)
_INFERENCE_SEEN: "weakref.WeakKeyDictionary[nn.Module, list[bool]]" = weakref.WeakKeyDictionary()


def _record_inference_mode(module: nn.Module, inputs: Any) -> None:
    _INFERENCE_SEEN.setdefault(module, []).append(torch.is_inference_mode_enabled())


def _predict_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.5), nn.Linear(6, len(_CLASSES)))
    model.register_forward_pre_hook(_record_inference_mode)
    _scramble_norm_stats(model, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        model[-1].weight.mul_(4.0)   # confident enough that softmax mistakes show
    return model.train()


def _predict_cases():
    from PIL import Image

    def make(seed: int, n: int | None, pil: bool, height: int = 6, width: int = 5):
        def factory():
            rng = np.random.default_rng(seed)
            arrays = [rng.integers(0, 256, (height, width, 3), dtype=np.uint8) for _ in range(n or 1)]
            images = [Image.fromarray(a) for a in arrays] if pil else arrays
            mean, std = torch.tensor([0.45, 0.5, 0.55]), torch.tensor([0.2, 0.25, 0.3])
            model = _keep_pristine(_predict_model(seed))
            return (model, images if n else images[0], mean, std, list(_CLASSES)), {}
        return factory
    # lists of numpy arrays and PIL images, then one image alone (numpy, then PIL)
    return [make(0, 3, False), make(1, 2, True, 7, 4), make(2, None, False), make(3, None, True, 5, 5)]


def _probs_of(out: Any) -> Any:
    return out[1] if isinstance(out, (tuple, list)) and len(out) == 2 else None


def _predict_verify(out, ref, args, kwargs):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        return t("expected a pair (labels, probs), found {got}", got=describe(out))
    labels, probs = out
    want_labels, want_probs = ref
    if isinstance(labels, torch.Tensor) and isinstance(probs, list) and all(isinstance(v, str) for v in probs):
        return t("expected the pair in the order (labels, probs), found (probs, labels): "
                 "return labels, probs")
    if not isinstance(probs, torch.Tensor):
        return t("expected probs to be a torch.Tensor, found {got}", got=describe(probs))
    if probs.requires_grad:
        return t("expected probabilities without autograd history, found a tensor that requires grad")
    seen = _INFERENCE_SEEN.get(args[0], [])
    if seen and not any(seen):  # the model's forward ran, never under inference mode
        return t("expected the model to run under torch.inference_mode(), as the task says; it ran without it "
                 "(torch.no_grad() also skips the graph, but inference_mode() is what the task asks for: "
                 "`with torch.inference_mode():` around the forward pass)")
    problem = compare_tensors(probs.detach(), want_probs, atol=1e-5, name="probs")  # a name from the task
    if problem:
        return problem
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        return t("expected labels as a list of class names (str), found {got}", got=describe(labels))
    if labels != want_labels:
        return t("expected labels {want}, found {got}", want=want_labels, got=labels)
    return None


def _like(variant: Callable[..., Any]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's probabilities are those of ``variant`` on an untouched copy of the model."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        probs = _probs_of(out)
        if not isinstance(probs, torch.Tensor):
            return False
        model, *rest = args
        try:
            _, wrong = variant(_pristine(model), *rest)
        except Exception:
            return False
        return probs.shape == wrong.shape and torch.allclose(probs.detach().float(), wrong.detach(), atol=1e-5)
    return detect


def _labels_are_indices(out: Any, args: tuple, kwargs: dict) -> bool:
    labels = out[0] if isinstance(out, (tuple, list)) and len(out) == 2 else None
    if not isinstance(out[1] if labels is not None else None, torch.Tensor):
        return False  # (probs, labels) swapped is named by its own message
    return isinstance(labels, torch.Tensor) or (isinstance(labels, list) and bool(labels)
                                                and all(isinstance(v, int) for v in labels))


def _labels_wrong_dim(out: Any, args: tuple, kwargs: dict) -> bool:
    if not isinstance(out, (tuple, list)) or len(out) != 2 or not isinstance(out[1], torch.Tensor):
        return False
    labels, probs = out
    by_dim0 = [args[4][i % len(args[4])] for i in probs.argmax(dim=0).tolist()]
    return labels == by_dim0 and probs.shape[0] > 1


_NO_EVAL = _predict_variant(eval_mode=False)

register(Exercise(
    "12.predict",
    "predict(model, images, mean, std, classes): images is one image or a list of images (uint8 numpy "
    "arrays [H, W, 3] or RGB PIL images); permute to CHW, stack into a batch, scale to [0, 1], normalise "
    "with the training mean/std, run the model in eval mode under torch.inference_mode(), and return "
    "(labels, probs): a list of class names (one per image) and the float32 softmax probabilities "
    "[N, len(classes)].",
    predict_reference,
    _predict_cases(),
    _predict_verify,
    [
        Mistake("no eval() (Dropout and BatchNorm in training mode)",
                "call model.eval() before the forward pass: in training mode Dropout drops random "
                "activations and BatchNorm normalises with the batch's statistics.",
                _NO_EVAL, detect=lambda out, a, k: a[0].training),
        Mistake("gradients tracked (no inference_mode)",
                "wrap the forward pass in `with torch.inference_mode():`, as the task says: "
                "no autograd graph is needed for inference.",
                _predict_variant(grad=True),
                detect=lambda out, a, k: isinstance(_probs_of(out), torch.Tensor) and _probs_of(out).requires_grad),
        Mistake("Normalize(0.5, 0.5) instead of the training statistics",
                "normalise with the mean and std the model was trained with (the arguments), per "
                "channel: (x - mean.view(-1, 1, 1)) / std.view(-1, 1, 1).",
                _predict_variant(norm="half"), detect=_like(_predict_variant(norm="half"))),
        Mistake("ImageNet statistics instead of the training statistics",
                "(0.485, 0.456, 0.406) / (0.229, 0.224, 0.225) belong to models trained on ImageNet: "
                "normalise with this model's training mean and std (the arguments).",
                _predict_variant(norm="imagenet"), detect=_like(_predict_variant(norm="imagenet"))),
        Mistake("no normalisation",
                "after scaling to [0, 1], subtract the training mean and divide by the training std.",
                _predict_variant(norm="none"), detect=_like(_predict_variant(norm="none"))),
        Mistake("uint8 not scaled to [0, 1]",
                "convert with .float() / 255 before normalising: the statistics are for values in [0, 1].",
                _predict_variant(scale=False), detect=_like(_predict_variant(scale=False))),
        Mistake("HWC reshaped instead of permuted",
                "reshape keeps the memory order and scrambles the pixels: use .permute(2, 0, 1) to "
                "move the channel axis first.",
                _predict_variant(layout="reshape"), detect=_like(_predict_variant(layout="reshape"))),
        Mistake("HWC fed as is (channels last)",
                "the model expects [N, 3, H, W]: permute each image with .permute(2, 0, 1) before stacking.",
                _predict_variant(layout="hwc"), error_match="channels, but got"),
        Mistake("normalised before moving the channels first",
                "mean.view(1, -1, 1, 1) is shaped for [N, 3, H, W]: permute each image to CHW first, "
                "then normalise.",
                _predict_variant(layout="stack first"), error_match="(3) at non-singleton dimension 1"),
        Mistake("normalised before scaling to [0, 1]",
                "scale first, then normalise: (x.float() / 255 - mean) / std; the training statistics are "
                "for values in [0, 1], so dividing by 255 after normalising gives other inputs.",
                _predict_variant(norm_first=True), detect=_like(_predict_variant(norm_first=True))),
        Mistake("BGR channel order",
                "the images are RGB (PIL and numpy images here): keep the channel order as it is; reversing "
                "the channels (OpenCV's BGR habit) pairs each channel with another channel's mean and std.",
                _predict_variant(bgr=True), detect=_like(_predict_variant(bgr=True))),
        Mistake("softmax over the wrong dim",
                "the classes are dim 1 of [N, classes]: softmax(dim=1), so each row sums to 1.",
                _predict_variant(softmax_dim=0), detect=_like(_predict_variant(softmax_dim=0))),
        Mistake("logits returned instead of probabilities",
                "apply .softmax(dim=1) to the model's output: it returns logits.",
                _predict_variant(softmax_dim=None), detect=_like(_predict_variant(softmax_dim=None))),
        Mistake("a single image not wrapped in a list",
                "one image is a batch of one: `if not isinstance(images, (list, tuple)): images = [images]` "
                "(iterating over one numpy image walks over its rows).",
                _predict_variant(wrap_single=False), error_match="len(dims)"),
        Mistake("a single image not batched (no unsqueeze(0))",
                "the model expects [N, 3, H, W]: add the batch dimension with .unsqueeze(0) (or stack a list of one).",
                _predict_variant(unsqueeze=False), error_match="expected 4D input"),
        Mistake("labels as class indices instead of names",
                "map each index to its name: [classes[i] for i in probs.argmax(dim=1).tolist()].",
                _predict_variant(names=False), detect=_labels_are_indices),
        Mistake("argmax over the wrong dim",
                "the predicted class of each image is the argmax over dim 1 (the classes).",
                _predict_variant(argmax_dim=0), detect=_labels_wrong_dim),
    ],
    may_modify=("model",),  # a forgotten eval() updates BatchNorm's statistics: named by its hint
))


# --- 12.save_for_serving --------------------------------------------------------------------------
# Weights and normalisation statistics in one safetensors file.

def save_for_serving_reference(model: nn.Module, path: str | Path, mean: torch.Tensor, std: torch.Tensor,
                               classes: list[str]) -> None:
    import safetensors.torch

    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()),
                "classes": json.dumps(list(classes))}
    safetensors.torch.save_model(model, str(path), metadata=metadata)


def _save_variant(how: str) -> Callable[..., Any]:
    """A learner's save_for_serving written one typical wrong way."""
    def save_for_serving(model, path, mean, std, classes):
        import safetensors.torch

        metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()),
                    "classes": json.dumps(list(classes))}
        state = model.state_dict()
        if how == "torch.save":
            torch.save(state, path)
        elif how == "save_file":
            safetensors.torch.save_file(state, str(path), metadata=metadata)
        elif how == "clone":  # unties the shared tensors, but a clone keeps a transposed layout
            safetensors.torch.save_file({k: v.clone() for k, v in state.items()}, str(path), metadata=metadata)
        elif how == "parameters":
            tensors = {k: v.detach().contiguous() for k, v in model.named_parameters()}
            safetensors.torch.save_file(tensors, str(path), metadata=metadata)
        elif how == "lists":
            safetensors.torch.save_model(model, str(path), metadata={"mean": mean.tolist(), "std": std.tolist(),
                                                                     "classes": list(classes)})
        elif how == "json tensor":
            safetensors.torch.save_model(model, str(path), metadata={"mean": json.dumps(mean)})
        elif how == "str":
            safetensors.torch.save_model(model, str(path), metadata={**metadata, "mean": str(mean),
                                                                     "std": str(std)})
        elif how == "no metadata":
            safetensors.torch.save_model(model, str(path))
        elif how == "half":
            tensors = {k: (v.half() if v.is_floating_point() else v).contiguous().clone() for k, v in state.items()}
            safetensors.torch.save_file(tensors, str(path), metadata=metadata)
        elif how == "half in place":
            safetensors.torch.save_model(model.half(), str(path), metadata=metadata)
    return save_for_serving


class _Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(6, 3)
        self.out = nn.Linear(3, 6, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(tokens))


class _Transposed(nn.Module):
    """A parameter stored transposed (non-contiguous), as some conversions leave them."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 5).t())
        self.bias = nn.Parameter(torch.randn(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight + self.bias


def _save_cases():
    def make(seed: int, kind: str):
        def factory():
            torch.manual_seed(seed)
            path: str | Path = str(_case_dir() / "weights.safetensors")
            if kind == "cnn":
                model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten())
                _scramble_norm_stats(model, torch.Generator().manual_seed(seed))
            elif kind == "equal":
                # two distinct tensors with equal values (both biases start at zero), a model still in
                # training mode, and a pathlib.Path without the .safetensors suffix
                model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.1), nn.Linear(4, 4))
                with torch.no_grad():
                    model[0].bias.zero_()
                    model[2].bias.zero_()
                path = _case_dir() / "served_model"
            else:
                model = _Tied() if kind == "tied" else _Transposed()
            model = _keep_pristine(model.train(kind == "equal"))
            mean, std = torch.rand(3, generator=torch.Generator().manual_seed(seed)), torch.full((3,), 0.25)
            names = [f"class_{i}" for i in range(seed + 2)]
            return (model, path, mean, std, names), {}
        return factory
    return [make(0, "cnn"), make(1, "tied"), make(2, "transposed"), make(3, "equal")]


def _missing_names(model: nn.Module, stored: set[str]) -> tuple[list[str], list[str]]:
    """(state_dict names not in the file, file keys not in the state_dict); a tied tensor stored once
    under any one of its names counts as stored."""
    state = _pristine(model).state_dict()
    by_storage: dict[tuple[int, int], list[str]] = {}
    for name, tensor in state.items():
        by_storage.setdefault((tensor.untyped_storage().data_ptr(), tensor.storage_offset()), []).append(name)
    missing = [name for names in by_storage.values() if not set(names) & stored for name in names]
    return sorted(missing), sorted(stored - set(state))


def _read_back(model: nn.Module, path: str) -> tuple[nn.Module | None, str | None]:
    import safetensors
    import safetensors.torch

    with safetensors.safe_open(path, framework="pt") as f:
        missing, unexpected = _missing_names(model, set(f.keys()))
    if missing:
        renamed = [key for key in unexpected if any(key.endswith("." + name) for name in missing)]
        if renamed and len(renamed) >= len(missing) // 2:
            return None, t("the keys {renamed} where the state_dict has {missing}: store each tensor "
                           "under model.state_dict()'s own name (load_model looks them up by name)",
                           renamed=renamed[:4], missing=missing[:4])
        extra = t(" (and keys it does not have: {keys})", keys=unexpected[:6]) if unexpected else ""
        return None, t("missing {missing}{extra}", missing=missing, extra=extra)
    fresh = _pristine(model)
    with torch.no_grad():
        for tensor in fresh.state_dict().values():
            tensor.zero_()
    try:
        missing, _ = safetensors.torch.load_model(fresh, path, strict=False)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    if missing:
        return None, t("missing {missing}{extra}", missing=sorted(missing), extra="")
    return fresh, None


def _metadata(path: str) -> dict[str, str]:
    import safetensors

    with safetensors.safe_open(path, framework="pt") as f:
        return f.metadata() or {}


def _is_zip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"PK"


def _save_verify(out, ref, args, kwargs):
    import safetensors.torch

    model, path, mean, std, classes = args
    if out is not None:
        return t("expected None (the task: it returns nothing), found {got}", got=describe(out))
    if not Path(path).is_file():
        near = sorted(p.name for p in Path(path).parent.glob(Path(path).name + "*"))
        if near:
            return t("expected a file at `path` ({name}), found none, but {near} beside it: "
                     "write to exactly the path you were given (add no suffix)", name=Path(path).name, near=near)
        return t("expected a file at `path`, found none")
    if _is_zip(path):
        return t("expected a safetensors file, found a torch.save archive (a zip of pickles)")
    try:
        stored = safetensors.torch.load_file(path)
    except Exception as exc:
        return t("expected a safetensors file, found one safetensors cannot read ({exc})", exc=exc)
    original = _pristine(model).state_dict()
    for name, tensor in stored.items():
        if name in original and tensor.dtype != original[name].dtype:
            return t("expected {name} stored as {want} (its own dtype), found {got}",
                     name=name, want=original[name].dtype, got=tensor.dtype)
    fresh, problem = _read_back(model, path)
    if problem:
        return t("expected the whole state_dict (parameters and buffers) in the file, found {problem}",
                 problem=problem)
    for name, tensor in fresh.state_dict().items():
        if not torch.equal(tensor, original[name]):
            return t("expected {name} equal to the model's, found different values", name=name)
    metadata = _metadata(path)
    want = {"mean": mean.tolist(), "std": std.tolist(), "classes": list(classes)}
    for key, value in want.items():
        if key not in metadata:
            return t("expected metadata {key}, found only {keys}", key=repr(key), keys=sorted(metadata))
        try:
            decoded = json.loads(metadata[key])
        except ValueError:
            return t("expected metadata {key} as a JSON list, found {got}", key=repr(key), got=repr(metadata[key][:40]))
        if key == "classes":
            if decoded != value:
                return t("expected metadata 'classes' {want}, found {got}", want=value, got=decoded)
        elif (not isinstance(decoded, list) or len(decoded) != len(value)
              or not np.allclose(decoded, value, atol=1e-6)):
            return t("expected metadata {key} {want}, found {got}", key=repr(key), want=value, got=decoded)
    return None


def _metadata_not_json(out: Any, args: tuple, kwargs: dict) -> bool:
    try:
        metadata = _metadata(args[1])
    except Exception:
        return False
    for key in ("mean", "std"):
        try:
            json.loads(metadata.get(key, "[]"))
        except ValueError:
            return True
    return False


def _metadata_missing(out: Any, args: tuple, kwargs: dict) -> bool:
    try:
        return not {"mean", "std", "classes"} <= set(_metadata(args[1]))
    except Exception:
        return False


def _stored_dtype_changed(out: Any, args: tuple, kwargs: dict) -> bool:
    import safetensors.torch

    try:
        stored = safetensors.torch.load_file(args[1])
    except Exception:
        return False
    original = _pristine(args[0]).state_dict()
    return any(name in original and t.dtype != original[name].dtype for name, t in stored.items())


def _buffers_missing(out: Any, args: tuple, kwargs: dict) -> bool:
    import safetensors.torch

    try:
        stored = safetensors.torch.load_file(args[1])
    except Exception:
        return False
    model = _pristine(args[0])
    buffers = {name for name, _ in model.named_buffers()}
    params = {name for name, _ in model.named_parameters()}
    return bool(buffers) and not buffers & set(stored) and params <= set(stored)


register(Exercise(
    "12.save_for_serving",
    "save_for_serving(model, path, mean, std, classes) writes a safetensors file at `path` with the "
    "model's whole state_dict (parameters and buffers; a tied weight may be stored once, under one of "
    "its names; non-contiguous parameters too, which save_file refuses unless made .contiguous()) in "
    "its own dtypes, and "
    "the metadata 'mean', 'std' and 'classes', each a JSON string of a list; it returns nothing and "
    "leaves the model unchanged.",
    save_for_serving_reference,
    _save_cases(),
    _save_verify,
    [
        Mistake("torch.save instead of safetensors",
                "torch.save writes a pickle; use safetensors.torch.save_model(model, path, metadata=...) "
                "(or save_file with the state_dict).",
                _save_variant("torch.save"), detect=lambda out, a, k: Path(a[1]).is_file() and _is_zip(a[1])),
        Mistake("save_file on tied (shared) tensors",
                "safetensors refuses two names for one tensor: use safetensors.torch.save_model, which "
                "drops the duplicate names and stores the tensor once (load_model does not re-tie: the model's "
                "constructor did, so the other name follows).",
                _save_variant("save_file"), error_match="share memory"),
        Mistake("non-contiguous tensor passed to save_file",
                "safetensors stores plain contiguous bytes: use save_model (force_contiguous=True by "
                "default) or call .contiguous() on each tensor.",
                _save_variant("clone"), error_match="non contiguous"),
        Mistake("parameters only (buffers missing)",
                "save model.state_dict(), not named_parameters(): BatchNorm's running_mean, running_var "
                "and num_batches_tracked are buffers the model needs in eval mode.",
                _save_variant("parameters"), detect=_buffers_missing),
        Mistake("metadata values not strings",
                "safetensors metadata is a dict of str -> str: store each list as json.dumps(...).",
                _save_variant("lists"), error_match="is not an instance of 'str'"),
        Mistake("a tensor passed to json.dumps",
                "json cannot encode tensors: json.dumps(mean.tolist()).",
                _save_variant("json tensor"), error_match="not JSON serializable"),
        Mistake("str(tensor) as metadata (not JSON)",
                "str(mean) gives 'tensor([...])', which no loader can parse: json.dumps(mean.tolist()).",
                _save_variant("str"), detect=_metadata_not_json),
        Mistake("metadata missing (statistics or class names not saved)",
                "pass metadata={'mean': ..., 'std': ..., 'classes': ...}: without the training "
                "statistics nobody can feed the model correctly.",
                _save_variant("no metadata"), detect=_metadata_missing),
        Mistake("weights converted to float16",
                "keep each tensor's dtype: the model was trained and checked in float32.",
                _save_variant("half"), detect=_stored_dtype_changed),
    ],
    returns=False,
))

