"""Blind answers for notebook 12, written from notebooks/12_export_and_deployment.ipynb only."""
from tests.blind import Answer


def _parity(export: str = '''torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim("batch")},))''',
            before: str = "model.eval()", feed: str = "x.numpy()", combine: str = "worst = max(worst, diff)",
            diff: str = "(model(x) - torch.from_numpy(out)).abs().max().item()", result: str = "worst") -> str:
    """One learner's onnx_parity with one line swapped (the others stay right)."""
    return f'''
def onnx_parity(model, batches, path):
    import onnxruntime
    {before}
    {export}
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    worst = 0.0
    with torch.inference_mode():
        for x in batches:
            out = session.run(None, {{name: {feed}}})[0]
            diff = {diff}
            {combine}
    return {result}
'''


def _predict(prep: str = "x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float() / 255",
             norm: str = "x = (x - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)",
             mode: str = "model.eval()", ctx: str = "torch.inference_mode()",
             probs: str = "probs = model(x).softmax(dim=1)",
             result: str = "return [classes[i] for i in probs.argmax(dim=1).tolist()], probs",
             wrap: str = "if not isinstance(images, (list, tuple)):\n        images = [images]") -> str:
    return f'''
def predict(model, images, mean, std, classes):
    {wrap}
    arrays = [np.asarray(image) for image in images]
    {prep}
    {norm}
    {mode}
    with {ctx}:
        {probs}
    {result}
'''


ANSWERS = [
    # ------------------------------------------------------------------ 12.onnx_parity: correct
    Answer("12.onnx_parity", "ok", _parity(), label="tuple dynamic_shapes, torch-side difference"),
    Answer("12.onnx_parity", "ok", '''
def onnx_parity(model: nn.Module, batches: list, path) -> float:
    """Export with a dynamic batch (dict form), compare in numpy."""
    import onnxruntime
    model.eval()
    batch = torch.export.Dim("batch")
    torch.onnx.export(model, (batches[0],), str(path), dynamo=True, verbose=False,
                      dynamic_shapes={"input": {0: batch}})
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    diffs = []
    for x in batches:
        (onnx_out,) = session.run(None, {session.get_inputs()[0].name: x.detach().cpu().numpy()})
        with torch.no_grad():
            torch_out = model(x).numpy()
        diffs.append(float(np.max(np.abs(onnx_out - torch_out))))
    return max(diffs)
''', label="dict form {'input': {0: Dim}}, numpy difference"),
    Answer("12.onnx_parity", "ok", _parity(export='''torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim.AUTO},))'''), label="Dim.AUTO for the batch dimension"),
    Answer("12.onnx_parity", "ok", '''
def onnx_parity(model, batches, path):
    import onnxruntime
    model.eval()
    torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False, external_data=False,
                      dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=1024)},))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    everything = torch.cat(batches)
    with torch.inference_mode():
        expected = model(everything)
    got = session.run(None, {"input": everything.numpy()})[0]
    return torch.max(torch.abs(expected - torch.as_tensor(got))).item()
''', label="one file (external_data=False), all batches concatenated into one run"),
    Answer("12.onnx_parity", "ok", '''
def _max_diff(a, b):
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())

def onnx_parity(model, batches, path):
    import onnxruntime
    from pathlib import Path
    path = Path(path)
    model.eval()
    program = torch.export.export(model, (batches[0],), dynamic_shapes=({0: torch.export.Dim("n")},))
    torch.onnx.export(program, (batches[0],), path, dynamo=True, verbose=False)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    result = 0.0
    for x in batches:
        with torch.inference_mode():
            reference = model(x)
        result = max(result, _max_diff(session.run(None, {"input": x.numpy()})[0], reference.numpy()))
    return result
''', label="torch.export first, then ONNX from the ExportedProgram; float64 comparison helper",
        name="onnx_parity"),
    Answer("12.onnx_parity", "ok", _parity(
        diff="torch.dist(model(x), torch.from_numpy(out), p=float('inf')).item()",
        combine="worst = diff if diff > worst else worst"), label="torch.dist with p=inf"),
    # ------------------------------------------------------------------ 12.onnx_parity: wrong
    Answer("12.onnx_parity", "fail", _parity(export='''torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False)'''),
           label="no dynamic_shapes: batch size fixed", words=("dynamic",)),
    Answer("12.onnx_parity", "fail", _parity(before="pass"),
           label="model left in training mode (the eval() line deleted)", words=("eval",)),
    Answer("12.onnx_parity", "fail", _parity(before="was_training = model.training; model.eval()",
                                             result="worst if model.train(was_training) is not None else worst"),
           label="restores the caller's training mode (the task: it stays in eval mode)", words=("eval mode",)),
    Answer("12.onnx_parity", "fail", '''
def onnx_parity(model, batches, path):
    import copy, onnxruntime
    frozen = copy.deepcopy(model).eval()
    torch.onnx.export(frozen, (batches[0],), path, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim("batch")},))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst = 0.0
    with torch.inference_mode():
        for x in batches:
            out = session.run(None, {"input": x.numpy()})[0]
            worst = max(worst, (frozen(x) - torch.from_numpy(out)).abs().max().item())
    return worst
''', label="evaluates a deep copy: the model passed in stays in training mode", words=("eval mode",)),
    Answer("12.onnx_parity", "fail", _parity(combine="worst = diff; break"),
           label="only the first batch compared", words=("all batches",)),
    Answer("12.onnx_parity", "fail", _parity(diff="(model(x) - torch.from_numpy(out)).abs().mean().item()"),
           label="mean absolute difference, not the largest", words=("largest",)),
    Answer("12.onnx_parity", "fail", _parity(diff="(model(x) - torch.from_numpy(out)).max().item()"),
           label="signed difference (no abs)", words=("abs",)),
    Answer("12.onnx_parity", "fail", _parity(diff="(model(x) - torch.from_numpy(out)).abs().max()",
                                             combine="worst = torch.maximum(torch.as_tensor(worst), diff)"),
           label="returns a 0-d tensor, not a Python float", words=("float",)),
    Answer("12.onnx_parity", "fail", _parity(result="worst < 1e-4"),
           label="returns the verdict against a tolerance (a bool), not the difference", words=("float",)),
    Answer("12.onnx_parity", "fail", _parity(diff="((model(x) - torch.from_numpy(out)).abs() / model(x).abs().clamp_min(1e-12)).max().item()"),
           label="relative difference instead of absolute", words=("absolute",)),
    Answer("12.onnx_parity", "fail", _parity(feed="x.double().numpy()"),
           label="feeds float64 arrays to ONNX Runtime", words=("float32",)),
    Answer("12.onnx_parity", "fail", _parity(feed="x.permute(0, 2, 3, 1).numpy()"),
           label="feeds NHWC arrays", words=("NCHW",)),
    Answer("12.onnx_parity", "fail", '''
def onnx_parity(model, batches, path):
    import onnxruntime
    model.eval()
    example = batches.pop(0)
    torch.onnx.export(model, (example,), path, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim("batch")},))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst = 0.0
    with torch.inference_mode():
        for x in [example] + batches:
            out = session.run(None, {"input": x.numpy()})[0]
            worst = max(worst, (model(x) - torch.from_numpy(out)).abs().max().item())
    return worst
''', label="batches.pop(0) for the example: the caller's list loses a batch", words=("modified",)),
    Answer("12.onnx_parity", "fail", '''
def onnx_parity(model, batches, path):
    import onnxruntime
    model.eval()
    worst = 0.0
    for x in batches:
        torch.onnx.export(model, (x,), path, dynamo=True, verbose=False)   # one export per batch size
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        with torch.inference_mode():
            out = session.run(None, {"input": x.numpy()})[0]
            worst = max(worst, (model(x) - torch.from_numpy(out)).abs().max().item())
    return worst
''', label="re-exports per batch with static shapes: the file only takes the last size", words=("dynamic",)),
    Answer("12.onnx_parity", "fail", '''
def onnx_parity(model, batches, path):
    import onnxruntime, tempfile, os
    model.eval()
    target = os.path.join(tempfile.mkdtemp(), "model.onnx")
    torch.onnx.export(model, (batches[0],), target, dynamo=True, verbose=False,
                      dynamic_shapes=({0: torch.export.Dim("batch")},))
    session = onnxruntime.InferenceSession(target, providers=["CPUExecutionProvider"])
    worst = 0.0
    with torch.inference_mode():
        for x in batches:
            out = session.run(None, {"input": x.numpy()})[0]
            worst = max(worst, (model(x) - torch.from_numpy(out)).abs().max().item())
    return worst
''', label="exports to its own temporary file, not to `path`", words=("path",)),
    Answer("12.onnx_parity", "fail", _parity(before="model.eval(); torch.set_grad_enabled(False)"),
           label="switches autograd off globally and leaves it off", words=("grad",)),
    Answer("12.onnx_parity", "fail", _parity(diff="(model(x) - torch.from_numpy(out)).abs().max().item() if x.shape[0] == batches[0].shape[0] else 0.0"),
           label="skips batches whose size differs from the example's", words=("all batches",)),
    Answer("12.onnx_parity", "fail", _parity(before="model.eval()\n    batches = [b.sub_(b.mean()) for b in batches]"),
           label="centres the batches in place before exporting", words=("modified",)),

    # ------------------------------------------------------------------ 12.predict: correct
    Answer("12.predict", "ok", _predict(), label="np.stack, permute, /255, normalise, inference_mode"),
    Answer("12.predict", "ok", '''
def predict(model: nn.Module, images, mean: torch.Tensor, std: torch.Tensor, classes: list) -> tuple:
    """One tensor per image, then a batch."""
    if not isinstance(images, (list, tuple)):
        images = [images]
    tensors = []
    for image in images:
        array = np.array(image, dtype=np.uint8)            # PIL or numpy -> HWC uint8 (a copy)
        tensors.append(torch.from_numpy(array).permute(2, 0, 1).to(torch.float32).div(255))
    x = torch.stack(tensors)
    x = (x - mean.float()[None, :, None, None]) / std.float()[None, :, None, None]
    model.eval()
    with torch.inference_mode():
        probs = F.softmax(model(x), dim=1)
    labels = []
    for row in probs:
        labels.append(classes[int(row.argmax())])
    return labels, probs
''', label="per-image loop, stack, explicit float32 casts, F.softmax"),
    Answer("12.predict", "ok", '''
def predict(model, images, mean, std, classes):
    from torchvision.transforms import v2
    if not isinstance(images, (list, tuple)):
        images = [images]
    pipeline = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                           v2.Normalize(mean.tolist(), std.tolist())])
    x = torch.stack([pipeline(image) for image in images])
    model.eval()
    with torch.inference_mode():
        probs = model(x).softmax(1)
    return [classes[i] for i in probs.argmax(1)], probs
''', label="torchvision v2 pipeline (ToImage, ToDtype scale, Normalize)"),
    Answer("12.predict", "ok", '''
def predict(model, images, mean, std, classes):
    from torchvision.transforms.functional import to_tensor, normalize
    if not isinstance(images, (list, tuple)):
        images = [images]
    x = torch.stack([normalize(to_tensor(np.asarray(im)), mean.tolist(), std.tolist()) for im in images])
    model.eval()
    with torch.inference_mode():
        probs = torch.softmax(model(x), dim=1)
    return [classes[k] for k in probs.argmax(dim=1).tolist()], probs
''', label="torchvision functional to_tensor + normalize"),
    Answer("12.predict", "ok", '''
def predict(model, images, mean, std, classes):
    single = not isinstance(images, (list, tuple))
    batch = np.stack([np.asarray(images)] if single else [np.asarray(i) for i in images])   # N H W C
    x = torch.as_tensor(np.ascontiguousarray(batch.transpose(0, 3, 1, 2)), dtype=torch.float32) / 255.0
    x = x.sub(mean.reshape(-1, 1, 1)).div(std.reshape(-1, 1, 1))
    model.eval()
    with torch.inference_mode():
        logits = model(x)
        probs = (logits - logits.logsumexp(dim=1, keepdim=True)).exp()
    idx = probs.argmax(dim=1)
    return list(map(lambda i: classes[i], idx.tolist())), probs
''', label="numpy transpose, reshape(-1, 1, 1) broadcasting, softmax by logsumexp"),
    Answer("12.predict", "ok", _predict(prep="x = torch.stack([torch.tensor(a).permute(2, 0, 1) for a in arrays]).float().div(255)",
                                        norm="x = (x - mean[:, None, None]) / std[:, None, None]",
                                        probs="probs = torch.nn.functional.softmax(model(x), dim=-1)"),
           label="torch.tensor per image, [:, None, None] broadcasting, softmax dim=-1"),
    # ------------------------------------------------------------------ 12.predict: wrong
    Answer("12.predict", "fail", _predict(prep="x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float()"),
           label="uint8 not scaled by 255", words=("255",)),
    Answer("12.predict", "fail", _predict(prep="x = torch.from_numpy(np.stack(arrays)).reshape(len(arrays), 3, arrays[0].shape[0], arrays[0].shape[1]).float() / 255"),
           label="HWC reshaped, not permuted", words=("permute",)),
    Answer("12.predict", "fail", _predict(norm="x = (x - 0.5) / 0.5"),
           label="Normalize(0.5, 0.5) instead of the training statistics", words=("mean",)),
    Answer("12.predict", "fail", _predict(mode="pass"), label="model not put in eval mode", words=("eval",)),
    Answer("12.predict", "fail", _predict(probs="probs = model(x).softmax(dim=0)"),
           label="softmax over the batch dimension", words=("dim=1",)),
    Answer("12.predict", "fail", _predict(probs="probs = model(x)"), label="returns logits, not probabilities",
           words=("softmax",)),
    Answer("12.predict", "fail", _predict(result='''labels = [classes[i] for i in probs.argmax(dim=1).tolist()]
    return (labels[0] if len(labels) == 1 else labels), probs'''),
           label="a single image gets a bare label string, not a list of one", words=("list",)),
    Answer("12.predict", "fail", _predict(result="return probs.argmax(dim=1).tolist(), probs"),
           label="labels are class indices, not names", words=("name",)),
    Answer("12.predict", "fail", _predict(mode="was_training = model.training; model.eval()",
                                          result="model.train(was_training)\n    return [classes[i] for i in probs.argmax(dim=1).tolist()], probs"),
           label="restores the model's previous (training) mode", words=("eval",)),
    Answer("12.predict", "fail", _predict(ctx="torch.no_grad()"),
           label="torch.no_grad instead of the required torch.inference_mode", words=("inference_mode",)),
    Answer("12.predict", "fail", '''
def predict(model, images, mean, std, classes):
    if not isinstance(images, (list, tuple)):
        images = [images]
    for i, image in enumerate(images):
        images[i] = np.asarray(image)          # PIL -> numpy, in the caller's list
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255
    x = (x - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)
    model.eval()
    with torch.inference_mode():
        probs = model(x).softmax(dim=1)
    return [classes[i] for i in probs.argmax(dim=1).tolist()], probs
''', label="converts the caller's list elements in place", words=("images",)),
    Answer("12.predict", "fail", _predict(wrap="if isinstance(images, np.ndarray):\n        images = [images]"),
           label="only a single numpy image is wrapped; a single PIL image is not", words=("not iterable",)),
    Answer("12.predict", "fail", _predict(prep="x = torch.stack([torch.from_numpy(a) for a in images]).permute(0, 3, 1, 2).float() / 255"),
           label="torch.from_numpy on the original images: PIL images not converted", words=("got Image",)),
    Answer("12.predict", "fail", _predict(result="return [classes[i] for i in probs.argmax(dim=1).tolist()], probs.numpy()"),
           label="probs returned as a numpy array", words=("torch.Tensor",)),
    Answer("12.predict", "fail", _predict(result="return probs, [classes[i] for i in probs.argmax(dim=1).tolist()]"),
           label="returns (probs, labels) in the wrong order", words=("order",)),
    Answer("12.predict", "fail", _predict(norm="x = (x - mean) / std"),
           label="mean/std broadcast over the width axis", words=("must match",)),
    Answer("12.predict", "fail", _predict(prep="x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float()",
                                          norm="x = ((x - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)) / 255"),
           label="normalises before scaling to [0, 1]", words=("255",)),
    Answer("12.predict", "fail", _predict(norm="mean.unsqueeze_(-1).unsqueeze_(-1); std.unsqueeze_(-1).unsqueeze_(-1)\n    x = (x - mean) / std"),
           label="reshapes the caller's mean/std in place (unsqueeze_)", words=("in place",)),
    Answer("12.predict", "fail", _predict(result="return [classes[i] for i in probs.argmax(dim=1).tolist()], probs.squeeze(0)"),
           label="squeezes the batch of one: probs [C] instead of [1, C]", words=("shape",)),
    Answer("12.predict", "fail", _predict(prep="x = torch.from_numpy(np.stack(arrays)[..., ::-1].copy()).permute(0, 3, 1, 2).float() / 255"),
           label="BGR channel order (OpenCV habit)", words=("channel",)),
    Answer("12.predict", "fail", _predict(mode="model.eval(); torch.set_grad_enabled(False)"),
           label="turns autograd off globally", words=("grad",)),

    # ------------------------------------------------------------------ 12.save_for_serving: correct
    Answer("12.save_for_serving", "ok", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(list(classes))}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="safetensors.torch.save_model with metadata"),
    Answer("12.save_for_serving", "ok", '''
def save_for_serving(model, path, mean, std, classes):
    import json
    from safetensors.torch import save_file
    tensors, seen = {}, set()
    for name, tensor in model.state_dict().items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if tensor.numel() and key in seen:
            continue                       # a tied weight: stored once, under its first name
        seen.add(key)
        tensors[name] = tensor.detach().contiguous()
    save_file(tensors, str(path), metadata={"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()),
                                              "classes": json.dumps(classes)})
''', label="manual: deduplicate by storage, .contiguous(), save_file"),
    Answer("12.save_for_serving", "ok", '''
def save_for_serving(model: nn.Module, path, mean: torch.Tensor, std: torch.Tensor, classes: list) -> None:
    """Every tensor cloned into its own contiguous memory: ties are stored twice, which load fine."""
    import json
    import safetensors.torch
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    safetensors.torch.save_file(state, path, metadata={
        "mean": json.dumps([float(m) for m in mean]),
        "std": json.dumps([float(s) for s in std]),
        "classes": json.dumps([str(c) for c in classes]),
    })
''', label="clone + contiguous every tensor (ties stored twice), list comprehensions for metadata"),
    Answer("12.save_for_serving", "ok", '''
def save_for_serving(model, path, mean, std, classes):
    import json
    from pathlib import Path
    import safetensors.torch
    metadata = {"mean": json.dumps(mean.cpu().numpy().tolist()), "std": json.dumps(std.cpu().numpy().tolist()),
                "classes": json.dumps(classes)}
    state = {k: torch.empty_like(v, memory_format=torch.contiguous_format).copy_(v)
             for k, v in model.state_dict().items()}
    Path(path).write_bytes(safetensors.torch.save(state, metadata=metadata))
''', label="safetensors.torch.save to bytes, Path.write_bytes"),
    Answer("12.save_for_serving", "ok", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    to_json = lambda values: json.dumps(list(values))
    metadata = dict(mean=to_json(mean.tolist()), std=to_json(std.tolist()), classes=to_json(classes))
    kept, first_name = {}, {}
    for name, tensor in model.state_dict(keep_vars=False).items():
        ptr = tensor.data_ptr()
        if tensor.numel() > 0 and ptr in first_name and model.state_dict()[first_name[ptr]].shape == tensor.shape:
            continue
        first_name.setdefault(ptr, name)
        kept[name] = tensor if tensor.is_contiguous() else tensor.contiguous()
    safetensors.torch.save_file(kept, str(path), metadata=metadata)
''', label="deduplicate by data_ptr with a first-name table; contiguous only where needed"),
    Answer("12.save_for_serving", "ok", '''
def save_for_serving(model, path, mean, std, classes):
    import json
    from safetensors.torch import save_model
    meta = {key: json.dumps(value) for key, value in
            {"mean": [m.item() for m in mean], "std": [s.item() for s in std], "classes": list(classes)}.items()}
    save_model(model, path if isinstance(path, str) else str(path), metadata=meta, force_contiguous=True)
    return None
''', label="save_model, dict comprehension for metadata, explicit return None"),
    # ------------------------------------------------------------------ 12.save_for_serving: wrong
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    tensors = {k: p.detach().clone().contiguous() for k, p in model.named_parameters()}
    safetensors.torch.save_file(tensors, str(path), metadata={"mean": json.dumps(mean.tolist()),
                                "std": json.dumps(std.tolist()), "classes": json.dumps(classes)})
''', label="parameters only: BatchNorm buffers missing", words=("buffer",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    safetensors.torch.save_file(model.state_dict(), str(path), metadata={"mean": json.dumps(mean.tolist()),
                                "std": json.dumps(std.tolist()), "classes": json.dumps(classes)})
''', label="save_file on the raw state_dict: tied and non-contiguous models fail", words=("tied",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    safetensors.torch.save_file(tensors, str(path), metadata={"mean": json.dumps(mean.tolist()),
                                "std": json.dumps(std.tolist()), "classes": json.dumps(classes)})
''', label="contiguous() but tied weights still shared", words=("tied",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    tensors = {k: v.detach().float().clone().contiguous() for k, v in model.state_dict().items()}
    safetensors.torch.save_file(tensors, str(path), metadata={"mean": json.dumps(mean.tolist()),
                                "std": json.dumps(std.tolist()), "classes": json.dumps(classes)})
''', label="casts everything to float32 (num_batches_tracked is int64)", words=("int64",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import safetensors.torch
    metadata = {"mean": str(mean.tolist()), "std": str(std.tolist()), "classes": str(classes)}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="str() instead of json.dumps: classes not valid JSON", words=("JSON list",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": str(mean), "std": str(std), "classes": json.dumps(classes)}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="str(tensor) as metadata: 'tensor([...])'", words=("mean",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": ",".join(classes)}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="classes joined with commas, not JSON", words=("classes",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    tensors = {f"model.{k}": v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    safetensors.torch.save_file(tensors, str(path), metadata=metadata)
''', label="keys prefixed with 'model.'", words=("model.0.weight",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    for p in model.parameters():
        if not p.is_contiguous():
            p.data = p.data.contiguous()           # fix the model so save_model is happy
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="makes the model's own parameter contiguous (changes the model)", words=("model",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
    return str(path)
''', label="returns the path (the task: return nothing)", words=("None",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    model.eval()
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="calls model.eval() (changes the model's mode)", words=("mode",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    path = str(path)
    if not path.endswith(".safetensors"):
        path += ".safetensors"
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    safetensors.torch.save_model(model, path, metadata=metadata)
''', label="appends .safetensors to the path", words=("path",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps([round(m, 3) for m in mean.tolist()]),
                "std": json.dumps([round(s, 3) for s in std.tolist()]), "classes": json.dumps(classes)}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="rounds mean/std to 3 decimals", words=("'mean'",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    tensors = {k: v.contiguous() for k, v in model.state_dict().items() if v.is_floating_point()}
    kept, seen = {}, set()
    for k, v in tensors.items():
        if v.data_ptr() not in seen:
            seen.add(v.data_ptr())
            kept[k] = v
    safetensors.torch.save_file(kept, str(path), metadata=metadata)
''', label="drops integer buffers (num_batches_tracked)", words=("num_batches_tracked",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    torch.save({"state_dict": model.state_dict(), **metadata}, path)
''', label="torch.save (a pickle) instead of safetensors", words=("safetensors",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    kept = {}
    for name, tensor in model.state_dict().items():
        if any(t.shape == tensor.shape and torch.equal(t, tensor) for t in kept.values()):
            continue                            # "duplicate" found by value
        kept[name] = tensor.contiguous()
    safetensors.torch.save_file(kept, str(path), metadata=metadata)
''', label="deduplicates by equal values: drops distinct tensors that happen to be equal", words=("missing",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(mean.tolist()), "classes": json.dumps(classes)}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="std metadata holds the mean (copy-paste)", words=("'std'",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist())}
    safetensors.torch.save_model(model, str(path), metadata=metadata)
''', label="no classes in the metadata", words=("classes",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    state = model.state_dict()
    tensors, seen = {}, set()
    for name, tensor in state.items():
        if tensor.data_ptr() in seen:
            continue
        seen.add(tensor.data_ptr())
        tensors[name] = tensor.contiguous().half() if tensor.is_floating_point() else tensor.contiguous()
    safetensors.torch.save_file(tensors, str(path), metadata=metadata)
''', label="stores floats as float16 to save space", words=("dtype",)),
    Answer("12.save_for_serving", "fail", '''
def save_for_serving(model, path, mean, std, classes):
    import json, safetensors.torch
    if not path.endswith(".safetensors"):
        raise ValueError(f"expected a .safetensors path, got {path}")
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    safetensors.torch.save_model(model, path, metadata=metadata)
''', label="assumes `path` is a str (path.endswith): a pathlib.Path fails", words=("Path",)),
]
