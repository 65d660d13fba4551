"""The rule table: for every exercise, each rule its task text states, and a wrong answer that breaks
exactly that rule (``tests/test_rule_table.py`` runs each one and expects ``[FAIL]``).

A rule's ``wrong`` is either the name of one of the exercise's ``Mistake`` entries (its ``example`` is
the wrong answer, and the checker case that catches it is the one its hint names) or a function written
here, for rules no listed mistake breaks. ``case`` says which checker case (or inspection) separates a
compliant answer from one that breaks the rule.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class Rule:
    text: str
    wrong: str | Callable[..., Any]
    case: str = "the case its mistake's hint names"


# --- wrong answers for rules no listed mistake breaks --------------------------------------------
def _avg_float32(per_rank):
    means = [torch.stack([g.float() for g in grads]).mean(dim=0) for grads in zip(*per_rank)]
    return [[m.clone() for m in means] for _ in per_rank]


def _avg_overwrites(per_rank):
    world_size = len(per_rank)
    for i in range(len(per_rank[0])):
        total = sum(grads[i] for grads in per_rank)
        for grads in per_rank:
            grads[i] = total / world_size
    return per_rank


def _shard_tensor(n, rank, world_size):
    from course_utils.checks.nb13 import shard_indices_reference

    return torch.tensor(shard_indices_reference(n, rank, world_size))


def _save_every_one_shortcut(rank, epoch, every):
    return True if every == 1 else rank == 0 and (epoch + 1) % every == 0



def _pg_exact_type(model, weight_decay):
    from course_utils.generalisation import NORM_LAYERS

    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if type(module) in NORM_LAYERS or name == "bias" else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _pg_full_name(model, weight_decay):
    from course_utils.generalisation import NORM_LAYERS

    norm = {id(p) for m in model.modules() if isinstance(m, NORM_LAYERS) for p in m.parameters(recurse=False)}
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (no_decay if name.endswith(".bias") or id(param) in norm else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _pg_changes_model(model, weight_decay):
    from course_utils.generalisation import param_groups

    model.train(not model.training)
    return param_groups(model, weight_decay)


def _es_twice(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        validate(model)                       # an extra validation call per epoch
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch


def _es_train_twice(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        if epoch == 1:
            train_epoch(model)                # the first epoch trained twice
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch


def _wc_first_group_only(optimizer, warmup_steps, total_steps):
    from course_utils.generalisation import warmup_cosine

    scheduler = warmup_cosine(optimizer, warmup_steps, total_steps)
    return scheduler if len(optimizer.param_groups) == 1 else _FirstGroupOnly(optimizer, scheduler)


class _FirstGroupOnly:
    """Steps the real scheduler but pins every group after the first to its base rate."""

    def __init__(self, optimizer, scheduler) -> None:
        self.optimizer, self.scheduler = optimizer, scheduler
        self.base = [g["initial_lr"] for g in optimizer.param_groups]

    def step(self) -> None:
        self.scheduler.step()
        for group, base in zip(self.optimizer.param_groups[1:], self.base[1:]):
            group["lr"] = base

    def __getattr__(self, name):
        return getattr(self.scheduler, name)


def _onnx(reduce: str) -> Callable[..., float]:
    def onnx_parity(model, batches, path):
        import onnxruntime

        model.eval()
        torch.onnx.export(model, (batches[0],), path, dynamo=True, verbose=False,
                          dynamic_shapes=({0: torch.export.Dim("batch")},))
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        diffs = []
        for x in batches:
            onnx_out = session.run(None, {name: x.numpy()})[0]
            with torch.inference_mode():
                torch_out = model(x).numpy()
            if reduce == "signed":
                diffs.append(float((torch_out - onnx_out).max()))
            elif reduce == "relative":
                diffs.append(float((np.abs(torch_out - onnx_out) / np.abs(torch_out)).max()))
            else:
                diffs.append(float(np.abs(torch_out - onnx_out).max()))
        if reduce == "last":
            return diffs[-1]
        if reduce == "first":
            return diffs[0]
        return max(diffs)
    return onnx_parity


def _onnx_back_to_train(model, batches, path):
    value = _onnx("max")(model, batches, path)
    model.train()
    return value


def _predict_restores_mode(model, images, mean, std, classes):
    from course_utils.checks.nb12 import predict_reference

    was_training = model.training
    out = predict_reference(model, images, mean, std, classes)
    model.train(was_training)
    return out


def _predict_replaces_images(model, images, mean, std, classes):
    from course_utils.checks.nb12 import predict_reference

    if isinstance(images, list):
        images[:] = [np.asarray(image).copy() for image in images]
    return predict_reference(model, images, mean, std, classes)


def _save_contiguous_in_place(model, path, mean, std, classes):
    from course_utils.checks.nb12 import save_for_serving_reference

    for p in model.parameters():
        p.data = p.data.contiguous()
    save_for_serving_reference(model, path, mean, std, classes)


def _save_unties(model, path, mean, std, classes):
    import json

    import safetensors.torch

    for module in model.modules():
        for name, p in list(module.named_parameters(recurse=False)):
            setattr(module, name, nn.Parameter(p.detach().clone().contiguous()))
    metadata = {"mean": json.dumps(mean.tolist()), "std": json.dumps(std.tolist()), "classes": json.dumps(classes)}
    safetensors.torch.save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path),
                                metadata=metadata)


def _save_switches_train(model, path, mean, std, classes):
    from course_utils.checks.nb12 import save_for_serving_reference

    model.train()
    save_for_serving_reference(model, path, mean, std, classes)


def _config_loose_bool(argv):
    from course_utils.capstone.config import Config

    parser = argparse.ArgumentParser()
    for field in dataclasses.fields(Config):
        kind = type(field.default)
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=(lambda s: s.lower() == "true") if kind is bool else kind)
    return Config(**vars(parser.parse_args(argv)))


def _config_known_args(argv):
    from course_utils.capstone.config import Config, parse_bool

    parser = argparse.ArgumentParser()
    for field in dataclasses.fields(Config):
        kind = type(field.default)
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, default=field.default,
                            type=parse_bool if kind is bool else kind)
    return Config(**vars(parser.parse_known_args(argv)[0]))


def _config_sys_argv(argv):
    import sys

    from course_utils.checks.nb14 import config_from_args_reference

    return config_from_args_reference(sys.argv[1:])


def _ratio_guarded(before, after):
    return {name: ((after[name] - w).norm() / w.norm()).item() if w.norm() > 0 else 0.0
            for name, w in before.items()}


def _ratio_in_place(before, after):
    out = {}
    for name, w in before.items():
        delta = after[name].sub_(w)
        out[name] = (delta.norm() / w.norm()).item()
    return out


def _row_mean_lr(step, loss, optimizer, grad_norm):
    lrs = [g["lr"] for g in optimizer.param_groups]
    return {"step": int(step), "loss": loss.item(), "lr": float(sum(lrs) / len(lrs)), "grad_norm": float(grad_norm)}


def _epoch_list_of_losses(model, loader, loss_fn, optimizer, device):
    model.train()
    losses, count = [], 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss * len(y))
        count += len(y)
    return float(sum(v.item() for v in losses)) / count


def _loss_float32(step_losses):
    return torch.stack([loss.detach() for loss in step_losses]).float().mean()


def _loss_detach_in_place(step_losses):
    return torch.stack([loss.detach_() for loss in step_losses]).mean()


def _clip_item(x):
    norm = x.norm().item()
    return x / norm if norm > 1 else x.clone()


def _shapes_forces_train(model, x):
    model.train()
    shapes = []
    for layer in model:
        x = layer(x)
        shapes.append(tuple(x.shape))
    return shapes


def _shrink_row_norm(x, layer, max_steps=10):
    steps = 0
    while x.norm(dim=-1).max() > 1 and steps < max_steps:
        x = layer(x)
        steps += 1
    return x, steps


def _shrink_applies_once(x, layer, max_steps=10):
    steps = 0
    while x.norm() > 1:
        x = layer(x)
        steps += 1
        if steps >= max_steps:   # tested after the step: max_steps = 0 still applies the layer once
            break
    return x, steps


def _pairs_map(a, b):
    return torch.stack(list(map(lambda row: ((row - b) ** 2).sum(1), a)))


def _init_reseeds(module):
    if isinstance(module, nn.Linear):
        torch.manual_seed(0)
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def _stds_forces_eval(model, x):
    from course_utils.checks.nb04 import layer_output_stds_reference

    model.eval()
    return layer_output_stds_reference(model, x)


# --- the table -----------------------------------------------------------------------------------

R = Rule
RULES: dict[str, list[Rule]] = {
    "00.double": [R("returns a new tensor, x unchanged", "modifies the input in place"),
                  R("returns a tensor", "returns a Python list/number"),
                  R("equal to 2 * x", "squares x (x ** 2) instead of doubling it"),
                  R("same shape, size-1 dims included", "squeeze() drops size-1 dims", "a (1, 3, 1) input"),
                  R("same dtype (equal to 2 * x)", "changes the dtype", "a float64 input")],
    "00.layer_shapes": [R("output shapes, not inputs", "records input shapes instead of output shapes"),
                        R("one shape per layer", "only the final shape"),
                        R("layer by layer (each layer gets the previous output)", "each layer applied to the original x"),
                        R("the layers, not the model itself", "iterates model.modules() (the model itself comes first)"),
                        R("each shape a tuple", "shapes as lists"),
                        R("output shapes only, not the input's", "records the input shape first"),
                        R("a nested container is one layer", "opens up nested containers (leaf modules instead of the model's layers)",
                          "a model with a nested nn.Sequential"),
                        R("the model's mode left as it was", _shapes_forces_train, "a model in eval mode")],
    "00.shrink_until_small": [R("while x.norm() > 1 (test first)", "applies the layer before testing the condition"),
                              R("strictly > 1", "stops at >= 1 instead of > 1"),
                              R("at most max_steps", "max_steps not respected"),
                              R("the layer's output is the new x", "the layer's output is thrown away"),
                              R("returns (x, count)", "returns (steps, x)"),
                              R("gradients flow through the applied layers", "the loop runs under torch.no_grad() (or detaches x)",
                                "a layer with a weight; the gradient of the output is compared"),
                              R("the norm of the whole tensor", _shrink_row_norm, "a (3, 4) input whose rows are small"),
                              R("max_steps = 0 applies nothing", _shrink_applies_once, "max_steps = 0")],
    "01.flatten_batch": [R("works on non-contiguous inputs", "uses .view on a non-contiguous tensor"),
                         R("keeps dim 0", "flattens the batch dimension too"),
                         R("a batch of one keeps its batch dim", "squeeze() drops the batch dim of a batch of one"),
                         R("any number of dims", "hard-codes the number of dims"),
                         R("keeps the dtype", "changes the dtype", "float64 and int64 inputs")],
    "01.independent_copy": [R("does not share memory", "returns torch.from_numpy (shares memory)"),
                            R("same dtype", "wrong dtype"),
                            R("same shape, size-1 dims included", "squeeze() drops size-1 dims", "a (1, 3, 1) array")],
    "01.to_device": [R("nested structures all the way down", "moves only the top level"),
                     R("namedtuples rebuilt", "namedtuple not rebuilt field by field"),
                     R("non-tensors left exactly as they were", "returns non-tensors changed"),
                     R("same container types", "containers changed type (list became tuple or tuple became list)"),
                     R("strings are leaves", "strings treated as sequences"),
                     R("the moved tensor is used", "result of .to() not kept"),
                     R("namedtuples are walked too", "namedtuple returned as it was"),
                     R("tensor subclasses are tensors", "tensor subclasses not recognised (type(x) is torch.Tensor)",
                       "a batch with a torch.Tensor subclass"),
                     R("tensors keep their dtype", "tensor dtype changed"),
                     R("non-tensors are the very same objects", "non-tensors copied", "a batch with a NumPy array"),
                     R("new containers, also without tensors", "container without tensors returned as it was",
                       "a batch with a list and a tuple of strings")],
    "02.center_columns": [R("x unchanged", "modifies the input in place"),
                          R("column means (dim 0)", "subtracts row means"),
                          R("per column, not global", "subtracts global mean"),
                          R("centre, do not scale", "divides by the std (standardises instead of centring)"),
                          R("the mean, not the median", "median instead of mean"),
                          R("mean divides by N", "divides the column sums by N - 1")],
    "02.pairwise_sq_dists": [R("every pair (N, M)", "no unsqueeze: compares row i with row i only"),
                             R("sum over D", "sums over the wrong dim"),
                             R("shape (N, M), not (M, N)", "result transposed (M, N)"),
                             R("squared distances", "distances instead of squared distances"),
                             R("no Python loop (map() included)", _pairs_map, "inspection of the source"),
                             R("(N, M) also for N = 1 or M = 1", "squeeze() drops the size-1 dim of N = 1 or M = 1", "a (1, 4) a")],
    "02.per_sample_mse": [R("shape (N,)", "result broadcast to (N,N)"),
                          R("one value per sample", "mean over everything"),
                          R("mean over the features", "sums the features instead of averaging them"),
                          R("inputs unchanged", "modifies an input in place"),
                          R("N may be 1", "squeeze() breaks a batch of one"),
                          R("not (N, 1)", "keepdim=True leaves shape (N, 1)"),
                          R("squared error", "a root or absolute value instead of the squared error")],
    "03.accumulated_grads": [R("equals the whole-batch gradient (divide)", "no division by the number of micro-batches"),
                             R("stale .grad cleared first", "stale grads not zeroed first"),
                             R(".grad may be None", "p.grad.zero_() when .grad is None"),
                             R("`micro_batches` chunks", "x.split(micro_batches) makes chunks of that SIZE"),
                             R("micro-batches, not one pass", "the whole batch in one forward pass"),
                             R("backward() on each micro-batch", "one backward() over the summed micro-batch losses",
                               "backward runs counted on the last weight"),
                             R("a frozen parameter's entry is None", "frozen parameters' None gradients dropped or replaced",
                               "a model with a frozen first layer")],
    "03.finite_difference_grad": [R("x unchanged", "changes x in place"), R("float64", "computes in float32"),
                                  R("central differences", "forward difference instead of central"),
                                  R("one element at a time", "perturbs all elements at once"),
                                  R("divide by 2*eps", "divides by eps instead of 2 * eps"),
                                  R("uses eps", "eps argument ignored"),
                                  R("an estimate, not autograd", "exact gradient (autograd) instead of the central-difference estimate"),
                                  R("element i, not row i", "x[i] is a row, not element i")],
    "03.gradient_at": [R("x's .grad unchanged", "backward() on the caller's x (leaves .grad behind, adds to stale .grad)"),
                       R("x's requires_grad unchanged", "turns on requires_grad on the caller's x"),
                       R("works when x does not require grad", "forgets requires_grad"),
                       R("returns a tensor shaped like x", "returns the tuple from torch.autograd.grad"),
                       R("x's requires_grad not switched off", "switches requires_grad off on the caller's x (detach_() or requires_grad_(False))"),
                       R("x's .grad unchanged when x requires grad", "backward() on x.clone(), which is not a leaf when x requires grad")],
    "04.count_trainable": [R("requires_grad only", "counts frozen params"), R("shared once", "counts shared params twice"),
                           R("scalars, not tensors", "counts tensors instead of scalars"),
                           R("no buffers", "counts buffers"), R("requires_grad, not .grad", "tests p.grad instead of p.requires_grad"),
                           R("every submodule's parameters", "parameters(recurse=False) sees only the model's own parameters"),
                           R("each parameter once (nested modules)", "modules() x parameters() counts nested parameters several times")],
    "04.kaiming_init": [R("Kaiming, not Xavier", "Xavier instead of Kaiming"), R("zero bias", "biases not zeroed"),
                        R("other modules untouched", "touches non-Linear layers"), R("fan_in", "fan_out mode instead of fan_in"),
                        R("normal, not uniform", "uniform instead of normal"), R("std sqrt(2/fan_in)", "std 2/fan_in (the square root forgotten)"),
                        R("a Linear may have no bias", "assumes every Linear has a bias"),
                        R("changed in place (same Parameters, same dtype)", "new Parameter objects instead of an in-place change",
                          "Parameter identity and a float64 layer"),
                        R("subclasses of nn.Linear included", "type(module) == nn.Linear misses subclasses of nn.Linear",
                          "a NonDynamicallyQuantizableLinear"),
                        R("no seeding inside", _init_reseeds, "inspection: two layers initialised")],
    "04.layer_output_stds": [R("hooks removed", "hooks not removed"), R("outputs, not inputs", "records the input instead of the output"),
                             R("every leaf by its own name", "late-binding name in the hook"),
                             R("floats", "returns tensors instead of floats"),
                             R("model(x) run once", "runs the model more than once", "forward calls counted"),
                             R("through model(x): a custom forward", "chains the leaf modules by hand instead of hooking model(x)",
                               "a residual model"),
                             R("only your own hooks removed", "clears hooks that were not its own", "a hook of the model's own"),
                             R("the model's mode left as it was", _stds_forces_eval, "a BatchNorm model in train mode")],
    "04.make_mlp": [R("every layer registered", "plain Python list (layers not registered)"),
                    R("no ReLU after the last", "ReLU after the last layer"),
                    R("ReLU between layers", "no activation between layers"),
                    R("ReLU, not another activation", "another activation instead of ReLU"),
                    R("Linear with bias", "Linear layers without bias"),
                    R("nothing else between the layers", "adds Dropout"),
                    R("nothing after the last layer", "softmax at the end")],
    "05.make_loaders": [R("validation keeps the order", "shuffles the validation set"),
                        R("training shuffles", "training set not shuffled"),
                        R("training drops the last batch", "drop_last missing on train: a batch of one reaches BatchNorm"),
                        R("validation keeps every sample", "drop_last on validation loses samples")],
    "05.normalization_stats": [R("shape [C]", "keepdim=True leaves shape [1, C, 1, 1]"),
                               R("(mean, std) in that order", "mean and std in the wrong order"),
                               R("std, not variance", "variance instead of std"),
                               R("per channel", "global instead of per-channel statistics"),
                               R("over all images and pixels", "averages per-image stds")],
    "05.pad_collate": [R("[B, T_max] (batch first)", "time-major output (batch_first missing)"),
                       R("lengths before padding", "lengths measured after padding"),
                       R("T_max of this batch", "pads to a fixed length instead of the batch's longest"),
                       R("padded with 0", "pads with a value other than 0"),
                       R("(padded, lengths, labels) order", "lengths and labels in the wrong order"),
                       R("padded on the right", "pads on the left")],
    "06.clipped_step": [R("zero_grad first", "missing zero_grad"), R(".grad may be None", "zeroes .grad by hand (breaks when .grad is None)"),
                        R("a Python float", "returns a tensor"), R("clip after backward", "clips before backward()"),
                        R("clip before step", "clips after optimizer.step()")],
    "06.evaluate": [R("batches moved to device", "batch not moved to `device`"),
                    R("grad mode as it was afterwards", "global grad mode left off"),
                    R("eval mode", "missing eval()"), R("no gradient tracking", "gradients tracked (no inference_mode/no_grad)"),
                    R("argmax over classes", "argmax over the wrong dim"), R("a batch of one", "squeeze() on a batch of one"),
                    R("a float in [0, 1]", "returns a percentage or a tensor"),
                    R("over all samples", "mean of per-batch accuracies")],
    "06.train_one_epoch": [
        R("zero_grad every batch (old gradients in .grad)", "missing zero_grad"),
        R("batches moved to device", "batch not moved to `device`"),
        R("zero_grad before backward", "zero_grad between backward and step"),
        R("training mode (arrives in eval mode)", "missing model.train()"),
        R("gradients tracked", "training under torch.no_grad()"),
        R("the mean loss over the epoch, a float", "returns last loss or a tensor"),
        R("weighted by batch size", "unweighted mean of batch losses"),
        R("the running sum holds loss.detach()/item(), never loss", "running sum of `loss` without .detach()",
          "every case: the loss function's graph probe sees an earlier batch's graph alive"),
        R("no list of undetached losses either", _epoch_list_of_losses, "every case: graph probe")],
    "07.param_groups": [
        R("a list of two group dicts", "returns a dict, not a list of groups"),
        R("the Parameters themselves", "parameter names instead of parameters"),
        R("not copies", "copies instead of the parameters"),
        R("the no-decay group has weight_decay 0.0", "no-decay group without weight_decay 0.0"),
        R("frozen parameters left out", "frozen parameters included"),
        R("tied weights once", "tied parameters listed twice"),
        R("every parameter exactly once", "parameters listed once per enclosing module"),
        R("every layer type", "parameters missing (only some layer types visited)"),
        R("a norm layer whatever it is called", "norm layer found by its name"),
        R("an INSTANCE of NORM_LAYERS (a subclass too)", _pg_exact_type, "case 6: _ScaledLayerNorm(nn.LayerNorm)"),
        R("registered as `bias`, exactly (not *_bias)", "bias found by a name pattern (`*bias`)", "case 6: rel_bias, out_bias"),
        R("the parameter's own name (a top-level `bias` too)", _pg_full_name, "case 6: the model's own `bias`"),
        R("whatever its shape (1-d weights decayed)", "rule by shape (p.ndim < 2)"),
        R("embedding tables decayed", "embedding excluded from decay"),
        R("biases not decayed", "biases decayed"), R("norm weights not decayed", "norm weights decayed"),
        R("the model is not changed", _pg_changes_model, "every case: the train flags of every submodule")],
    "07.early_stopping": [
        R("a copy later training cannot change", "state_dict() kept without a copy"),
        R("the best copy loaded back", "best state never loaded back"),
        R("buffers too", "only the parameters saved (buffers not restored)"),
        R("stop after `patience` epochs in a row", "patience off by one (`>` instead of `>=`)"),
        R("in a row (reset on improvement)", "counter not reset after an improvement"),
        R("improves on the best", "compares with the previous epoch, not the best"),
        R("min_delta", "min_delta ignored"), R("best_loss - min_delta", "min_delta added the wrong way"),
        R("a tie is no improvement", "a tie counted as an improvement (`<=`)"),
        R("returns the best epoch", "returns the last epoch, not the best"),
        R("epochs numbered from 1", "epochs counted from 0"), R("at most max_epochs, all of them", "one epoch too few (range(1, max_epochs))"),
        R("validate once per epoch", _es_twice, "every case: the scripted run counts the calls"),
        R("train_epoch once per epoch", _es_train_twice, "every case: the scripted run counts the calls")],
    "07.warmup_cosine": [
        R("start at base_lr / warmup_steps", "start_factor=0"), R("warm-up exists", "no warm-up"),
        R("T_max = total - warmup", "cosine T_max counts the warm-up steps"),
        R("milestone at warmup_steps", "milestone one step early"), R("not late", "milestone one step late"),
        R("start factor 1/warmup_steps", "start factor not 1/warmup_steps"),
        R("warm-up first, then cosine", "schedulers in the wrong order"),
        R("not stepped inside", "scheduler stepped inside the function"),
        R("the given optimizer", "a new optimizer inside"),
        R("every param group", _wc_first_group_only, "a case with two param groups")],
    "08.amp_train_step": [R("gradients cleared", "no `zero_grad` (stale or inf gradients)"),
                          R("bfloat16 on cpu", "wrong low-precision dtype for the device"),
                          R("backward on scaler.scale(loss)", "backward on unscaled loss"),
                          R("scaler.step", "`optimizer.step()` instead of `scaler.step`"),
                          R("scaler.update", "no `scaler.update()`"), R("the unscaled loss", "returns the scaled loss"),
                          R("under autocast", "no autocast")],
    "08.saved_activation_bytes": [R("a storage once", "shared tensors counted twice"),
                                  R("by storage, not tensor object", "deduplicated by the tensor object instead of its storage"),
                                  R("the storage's full nbytes", "sized with the view's nbytes instead of the storage's"),
                                  R("parameters left out", "parameters counted"), R("bytes", "element count instead of bytes"),
                                  R("graph still works/freed", "pack hook returns the tensor itself (graph never freed)"),
                                  R("grad mode on", "forward run under no_grad (nothing saved)")],
    "08.training_memory": [R("Adam keeps two buffers", "Adam counted once"), R("grads", "grads forgotten"),
                           R("dtype size", "dtype size ignored"), R("momentum buffer", "momentum buffer forgotten"),
                           R("frozen: no grad, no state", "frozen parameters given grads and optimizer state"),
                           R("buffers are not parameters", "buffers counted as parameters"),
                           R("shared once", "shared parameters counted twice")],
    "09.clean_state_dict": [R("prefix at the start only", "replaces the prefix anywhere in the key"),
                            R("'_orig_mod.' too", "only strips 'module.' (torch.compile's '_orig_mod.' stays)"),
                            R("repeatedly", "strips only one layer of wrappers"),
                            R("a new dict", "changes the caller's dict in place")],
    "09.latest_checkpoint": [R("None when there is none", "fails when there is no checkpoint yet"),
                             R("the full path", "returns the bare file name, not the full path"),
                             R("n as a number", "sorts the numbers as text (epoch-9 after epoch-10)"),
                             R("temp files ignored", "picks up a temp/partial file"),
                             R("by number, not time", "uses modification time")],
    "09.load_checkpoint": [R("map_location", "`map_location` ignored"), R("optimizer restored", "optimizer state missing (never loaded)"),
                           R("scheduler restored", "scheduler missing (never loaded)"), R("RNG restored", "RNG state missing (not restored)"),
                           R("generator restored", "RNG state missing for the DataLoader generator"),
                           R("weights_only=True", "weights_only=False (unsafe load)")],
    "09.save_checkpoint": [R("path may be a str", "str path used as a Path"), R("optimizer", "optimizer state missing"),
                           R("scheduler", "scheduler missing"), R("rng", "RNG state missing"),
                           R("generator", "RNG state missing the DataLoader generator"),
                           R("atomic (temp + os.replace)", "non-atomic write (torch.save straight onto the path)"),
                           R("temp in the same folder", "non-atomic write: temp file in another folder"),
                           R("fsync before replace", "no os.fsync before os.replace"),
                           R("state_dicts, not objects", "stores objects instead of state_dicts")],
    "10.fix_train_step": [R(".grad may be None", "zeroes .grad by hand (breaks when .grad is None)"),
                          R("a Python float", "returns a tensor instead of a float"),
                          R("zero_grad", "zero_grad missing (ZERO_GRAD_MISSING)"),
                          R("logits to CrossEntropyLoss", "softmax before CrossEntropyLoss (SOFTMAX_BEFORE_CE)"),
                          R("train mode (arrives in eval)", "model.train() not called (EVAL_MODE_LEFT_ON)"),
                          R("zero_grad before backward", "zero_grad between backward and step (NO_GRAD_FLOW)")],
    "10.nonfinite_layers": [R("hooks removed", "hooks not removed"), R("removed even when forward raises", "hooks removed without `finally`"),
                            R("a module each time it runs", "a module that runs twice listed once"),
                            R("NaN or Inf", "checks only NaN, misses Inf"), R("execution order", "reports registration order instead of execution order"),
                            R("leaf modules only", "hooks on container modules too")],
    "10.seed_everything": [R("a fresh generator", "global generator returned instead of a fresh seeded one"),
                           R("the seed argument", "hard-coded seed instead of the argument"),
                           R("a new generator per call", "same generator object returned by every call"),
                           R("python random", "python `random` not seeded"), R("numpy", "numpy not seeded"),
                           R("torch", "torch not seeded"), R("the generator seeded", "returned generator not seeded")],
    "11.clip_norm": [R("no graph break (no Python if)", "Python if on a tensor value", "the inspection: host-read probe, then torch.export"),
                     R("no .item()", _clip_item, "the inspection: host-read probe"),
                     R("no .item() inside torch.where either", "reads a tensor value on the host (.item(), float())",
                       "the inspection: host-read probe"),
                     R("unchanged copy when norm <= 1", "always normalises"),
                     R("the right branch", "branches swapped (or clamp(max=1) instead of clamp(min=1))"),
                     R("x / x.norm(): the L2 norm", "L1 norm instead of the L2 norm"),
                     R("x / x.norm(): the norm, not its square", "divides by the squared norm"),
                     R("x / x.norm(): scaled, not clamped", "clamps each element instead of scaling by the norm"),
                     R("the norm of the whole tensor, whatever its shape", "norm per row (dim=-1) instead of the norm of the whole tensor"),
                     R("a copy for an all-zero x", "NaN for an all-zero input")],
    "11.mean_epoch_loss": [R("no .item() (no sync)", "calls .item() every step (a host-device sync each time)"),
                           R("detached", "keeps the autograd graph (no detach)"), R("the mean", "sums instead of averaging"),
                           R("the mean: divided by len(step_losses)", "divides by len - 1"),
                           R("the mean: every step weighs the same", "pairwise running average ((running + loss) / 2)"),
                           R("in the losses' dtype", _loss_float32, "case 4: float64 losses"),
                           R("the given tensors unchanged", _loss_detach_in_place, "every case: the state of step_losses")],
    "11.time_it": [R("warm-up calls", "forgets warm-up (times the first, compiling call)"),
                   R("sync after the warm-up", "does not sync after the warm-up (warm-up work leaks into the timing)"),
                   R("sync after the timed calls", "forgets synchronization (measures only the launches)"),
                   R("sync not inside the timed loop", "syncs inside the timed loop"),
                   R("clock()", "reads the real clock instead of the clock argument"),
                   R("warm-up untimed", "starts the clock before the warm-up (the warm-up is timed)"),
                   R("per call", "returns the total instead of the time per call"),
                   R("per timed call (repeats)", "divides by repeats + warmup"),
                   R("the mean seconds per call", "the fastest call (min) instead of the mean"),
                   R("returns the time", "returns fn()'s result instead of the time"),
                   R("sync may be None", "calls sync when it is None")],
    "12.onnx_parity": [
        R("eval mode", "model left in training mode (no eval())"),
        R("it stays in eval mode", _onnx_back_to_train, "the train flags the reference leaves"),
        R("dynamic batch dimension", "no dynamic batch dimension"),
        R("float32 NCHW fed", "float64 fed to onnxruntime"),
        R("the same input on both sides", "compares against a different input than was fed to onnxruntime"),
        R("a Python float", "returns an array, tensor or numpy scalar, not a float"),
        R("the number, not a verdict", "returns the allclose verdict (a bool), not the difference"),
        R("the largest difference, not the mean", "mean difference, a signed difference or one batch instead of the largest over all batches"),
        R("over ALL batches (not the last)", _onnx("last"), "cases 1-2: the middle batch is 4x larger, so its difference is the largest"),
        R("over ALL batches (not the first)", _onnx("first"), "cases 1-2: the middle batch is 4x larger, so its difference is the largest"),
        R("absolute difference (not signed)", _onnx("signed"), "cases 1-2: the last layer negated, so the largest |diff| is a negative torch - onnx in one of them"),
        R("absolute, not relative", _onnx("relative"), "case 1: exact comparison with the checker's measurement"),
        R("written at path", "no ONNX file written at path")],
    "12.predict": [
        R("eval mode", "no eval() (Dropout and BatchNorm in training mode)"),
        R("it stays in eval mode", _predict_restores_mode, "the train flags the reference leaves"),
        R("inference_mode", "gradients tracked (no inference_mode)"),
        R("the training mean/std", "Normalize(0.5, 0.5) instead of the training statistics"),
        R("not ImageNet's", "ImageNet statistics instead of the training statistics"),
        R("normalised", "no normalisation"), R("scaled to [0, 1]", "uint8 not scaled to [0, 1]"),
        R("permute, not reshape", "HWC reshaped instead of permuted"),
        R("softmax over classes", "softmax over the wrong dim"), R("probabilities", "logits returned instead of probabilities"),
        R("one image alone", "a single image not wrapped in a list"),
        R("class names", "labels as class indices instead of names"), R("argmax over classes", "argmax over the wrong dim"),
        R("do not change the images (PIL images in the list)", _predict_replaces_images, "case 2: a list of PIL images")],
    "12.save_for_serving": [
        R("safetensors", "torch.save instead of safetensors"), R("tied weights work", "save_file on tied (shared) tensors"),
        R("non-contiguous parameters work", "non-contiguous tensor passed to save_file"),
        R("buffers too", "parameters only (buffers missing)"), R("metadata as JSON strings", "str(tensor) as metadata (not JSON)"),
        R("metadata present", "metadata missing (statistics or class names not saved)"),
        R("own dtypes", "weights converted to float16"),
        R("the model unchanged: strides", _save_contiguous_in_place, "case 3: a transposed parameter"),
        R("the model unchanged: ties", _save_unties, "case 2: tied embedding/output weights"),
        R("the model unchanged: train/eval flags", _save_switches_train, "every case: flags of every submodule")],
    "13.average_gradients": [R("divide by world_size", "sums without dividing by world_size"),
                             R("all-reduce across ranks", "keeps each rank's own gradients (no all-reduce)"),
                             R("one list per rank", "returns a single list instead of one per rank"),
                             R("across ranks, not within", "averages within a rank instead of across ranks"),
                             R("world_size = len(per_rank)", "divides by the number of gradients instead of the number of ranks"),
                             R("any world_size", "hard-codes two ranks", "case 2: four ranks"),
                             R("SUM, then divide (the mean)", "element-wise maximum (ReduceOp.MAX) instead of the mean"),
                             R("in the gradients' dtype", _avg_float32, "cases 4 and 5: float64 and float16 gradients"),
                             R("per_rank unchanged", _avg_overwrites, "every case: the state of per_rank")],
    "13.shard_indices": [R("by rank", "ignores rank (every rank gets the same samples: overlap)"),
                         R("padded", "drops the remainder without padding"), R("equal sizes", "unequal shard sizes (no padding)"),
                         R("repeated more than once if needed", "pads by repeating the start only once"),
                         R("every world_size-th", "contiguous blocks instead of every world_size-th index"),
                         R("a list of ints", _shard_tensor, "every case: the type of the result")],
    "13.should_save": [R("rank 0 only", "every rank saves"), R("rank 0, not the others", "rank test inverted (every rank but rank 0 saves)"),
                       R("rank 0 only, also with every=1", _save_every_one_shortcut, "case 10: rank 2 with every=1"),
                       R("epochs from 0", "off by one epoch")],
    "13.unwrapped_state_dict": [R("no 'module.' prefix", "keeps the 'module.' prefix"),
                                R("unwrapped models work", "fails on an unwrapped model"),
                                R("a layer named 'module' is not a wrapper", "unwraps by attribute name (getattr(model, 'module', model))"),
                                R("nn.DataParallel too", "unwraps DistributedDataParallel only (not nn.DataParallel)"),
                                R("a subclass of a wrapper too", "tests the exact type (a subclass of a wrapper is not unwrapped)"),
                                R("the inner model's keys (only the leading prefix goes)", "replace('module.', '') removes every 'module.' in a key"),
                                R("the inner model's keys (a prefix, not characters)", "str.lstrip('module.') strips characters, not the prefix"),
                                R("the whole state dict (buffers too)", "parameters only (buffers missing)")],
    "14.config_from_args": [
        R("typed from the dataclass", "types not converted"), R("defaulted from the dataclass", "defaults lost"),
        R("booleans with parse_bool (False is False)", "type=bool"),
        R("an invalid boolean is an error", _config_loose_bool, "inspection: --resume maybe / ture"),
        R("an unknown option is an error", _config_known_args, "inspection: --learning-rate"),
        R("argv, not sys.argv", _config_sys_argv, "inspection: sys.argv set to another command line"),
        R("returns the Config", "returns the Namespace"), R("not a dict", "returns a dict")],
    "14.update_ratio": [
        R("normalised by ||before||", "not normalised"), R("before, not after", "divides by the new weights"),
        R("not inverted", "inverted"), R("L2 norm", "wrong norm"), R("not the max", "max instead of norm"),
        R("norm of the difference", "difference of norms"), R("Python floats", "tensors, not floats"),
        R("all-zero before: inf if moved (no eps)", "epsilon added to the norm", "case 4: zero biases"),
        R("all-zero before: what the division gives (no 0.0 guard)", _ratio_guarded, "case 4: zero biases"),
        R("the tensors unchanged", _ratio_in_place, "every case: the dicts' tensors")],
    "14.log_row": [
        R("loss a float", "tensor left in the row"), R("not a detached tensor", "detached tensor"),
        R("lr as the optimizer holds it now", "lr from optimizer.defaults"),
        R("the FIRST param group's lr", "lr of another param group", "every case: two groups with different rates"),
        R("not an average over groups", _row_mean_lr, "every case: two groups with different rates"),
        R("grad_norm a float", "gradient norm left a tensor"), R("step an int", "step as a float"),
        R("exactly these keys", "other key names")],
}
