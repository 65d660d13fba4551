"""Blind answers for notebook 07, written from notebooks/07_generalisation.ipynb only."""
from tests.blind import Answer

_NORM = '''
NORM_LAYERS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm,
               nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d,
               nn.LayerNorm, nn.GroupNorm, nn.RMSNorm)
'''

ANSWERS = [
    # ------------------------------------------------------------------ 07.param_groups: correct
    Answer("07.param_groups", "ok", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            if name == "bias" or isinstance(module, NORM_LAYERS):
                no_decay.append(p)
            else:
                decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="the walk the task describes, seen set of ids"),
    Answer("07.param_groups", "ok", _NORM + '''
def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Norm-layer parameters and biases first collected by id, then one pass over named_parameters."""
    skip = set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if isinstance(module, NORM_LAYERS) or name == "bias":
                skip.add(id(p))
    decay, no_decay = [], []
    for _, p in model.named_parameters():        # named_parameters already removes duplicates
        if p.requires_grad:
            (no_decay if id(p) in skip else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="two passes: ids to skip, then named_parameters (deduplicated)"),
    Answer("07.param_groups", "ok", _NORM + '''
def _wants_decay(module, name):
    return not (name == "bias" or isinstance(module, NORM_LAYERS))

def param_groups(model, weight_decay):
    placed = {}
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if p.requires_grad and p not in placed:
                placed[p] = _wants_decay(module, name)
    decay = [p for p, d in placed.items() if d]
    no_decay = [p for p, d in placed.items() if not d]
    return [dict(params=decay, weight_decay=weight_decay), dict(params=no_decay, weight_decay=0.0)]
''', label="helper predicate, dict keyed by parameter, comprehensions"),
    Answer("07.param_groups", "ok", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module_name, module in model.named_modules():
        is_norm = isinstance(module, NORM_LAYERS)
        for name, p in module._parameters.items():
            if p is None or not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            target = no_decay if (is_norm or name == "bias") else decay
            target.append(p)
    groups = [{"params": decay, "weight_decay": float(weight_decay)},
              {"params": no_decay, "weight_decay": 0.0}]
    return groups
''', label="named_modules and module._parameters (skips None)"),
    Answer("07.param_groups", "ok", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in reversed(list(model.modules())):
        for name, p in reversed(list(module.named_parameters(recurse=False))):
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="same rule, parameters in reverse order (the task states no order)"),
    Answer("07.param_groups", "ok", _NORM + '''
def param_groups(model, weight_decay):
    norm_ids = {id(p) for m in model.modules() if isinstance(m, NORM_LAYERS) for p in m.parameters(recurse=False)}
    bias_ids = {id(p) for m in model.modules() for n, p in m.named_parameters(recurse=False) if n == "bias"}
    unique = list({id(p): p for p in model.parameters() if p.requires_grad}.values())
    no_decay = [p for p in unique if id(p) in norm_ids | bias_ids]
    decay = [p for p in unique if id(p) not in norm_ids | bias_ids]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="set comprehensions of ids"),
    # ------------------------------------------------------------------ 07.param_groups: wrong
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="decays biases (only norm layers excluded)", words=("bias",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="decays norm weights (only biases excluded)", words=("norm",)),
    Answer("07.param_groups", "fail", '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for p in model.parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (no_decay if p.ndim <= 1 else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="popular heuristic: every 1-d parameter undecayed", words=("1-d",)),
    Answer("07.param_groups", "fail", '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            if name == "bias" or "norm" in module_name.lower() or "bn" in module_name.lower():
                no_decay.append(p)
            else:
                decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="finds norm layers by their name", words=("name",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="keeps frozen parameters", words=("frozen",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="tied weight listed twice (no seen set)", words=("tied",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if "bias" in name or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="any name containing 'bias' (in_proj_bias) undecayed; the rule says the name `bias`",
        words=("bias",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or type(module) in NORM_LAYERS else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="type(module) in NORM_LAYERS: misses subclasses of a norm layer", words=("subclass",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay}]
''', label="no_decay group without the weight_decay key (AdamW default 0.01)", words=("weight_decay",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": weight_decay}]
''', label="groups in the other order", words=("order",)),
    Answer("07.param_groups", "fail", '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="only BatchNorm2d and LayerNorm treated as norm layers", words=("type",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.children():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="walks model.children(): nested and top-level parameters missed", words=("missing",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters():
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="forgets recurse=False: the root module claims every parameter under its dotted name",
        words=("recurse=False",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
''', label="hard-codes weight_decay 0.01 instead of the argument", words=("found 0.01",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            if name == "bias" or isinstance(module, NORM_LAYERS) or not p.requires_grad:
                no_decay.append(p)
            else:
                decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="puts frozen parameters in the no-decay group instead of leaving them out", words=("frozen",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]
''', label="drops an empty group (model without biases or norms): not two groups", words=("two",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            if name == "bias" or isinstance(module, NORM_LAYERS):
                no_decay.append(p)
            elif p.requires_grad:
                decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="frozen check only on the decayed branch: a frozen bias/norm weight kept", words=("frozen",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            if name == "bias" or isinstance(module, NORM_LAYERS) or isinstance(module, nn.Embedding):
                no_decay.append(p)
            else:
                decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
''', label="also exempts embedding tables (the task says decay them)", words=("embedding",)),
    Answer("07.param_groups", "fail", _NORM + '''
def param_groups(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, NORM_LAYERS) else decay).append(p)
    return [{"params": [p.detach() for p in decay], "weight_decay": weight_decay},
            {"params": [p.detach() for p in no_decay], "weight_decay": 0.0}]
''', label="detached copies instead of the model's own parameters", words=("parameter",)),

    # ------------------------------------------------------------------ 07.early_stopping: correct
    Answer("07.early_stopping", "ok", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy, math
    best_loss, best_epoch, best_state, bad_epochs = math.inf, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="for loop, deepcopy"),
    Answer("07.early_stopping", "ok", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state = float("inf"), 0, None
    epoch = 0
    while epoch < max_epochs:
        epoch += 1
        train_epoch(model)
        val_loss = float(validate(model))
        if best_state is None or val_loss < best_loss - min_delta:
            best_loss, best_epoch = val_loss, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        elif epoch - best_epoch >= patience:
            break
    model.load_state_dict(best_state)
    return best_epoch
''', label="while loop, clone per tensor, patience as epochs since best"),
    Answer("07.early_stopping", "ok", '''
import io

def _snapshot(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    return buffer

def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best, bad = None, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        loss = validate(model)
        if best_loss is None or loss < best_loss - min_delta:
            best_loss, best_epoch, best, bad = loss, epoch, _snapshot(model), 0
            continue
        bad += 1
        if bad == patience:
            break
    model.load_state_dict(torch.load(best, weights_only=True))
    return best_epoch
''', label="snapshot through torch.save into BytesIO", name="early_stopping"),
    Answer("07.early_stopping", "ok", '''
def early_stopping(model: nn.Module, train_epoch, validate, max_epochs: int, patience: int,
                   min_delta: float = 0.0) -> int:
    """Train until `patience` epochs in a row fail to improve; restore and return the best epoch."""
    import math
    history = []
    best_state = None
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        history.append(validate(model))
        if best_state is None or history[-1] < best_loss - min_delta:
            best_loss, best_epoch = history[-1], epoch
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        if epoch - best_epoch >= patience:
            break
    model.load_state_dict(best_state)
    return best_epoch
''', label="keeps a history list; clone() per tensor"),
    Answer("07.early_stopping", "ok", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best = {"loss": float("inf"), "epoch": 0, "state": None}
    since = 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        improved = val_loss < best["loss"] - min_delta
        if improved:
            best.update(loss=val_loss, epoch=epoch, state=copy.deepcopy(model.state_dict()))
        since = 0 if improved else since + 1
        if since >= patience:
            break
    model.load_state_dict(best["state"], strict=True)
    return best["epoch"]
''', label="state in a dict, counter reset by expression"),
    Answer("07.early_stopping", "ok", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    from collections import OrderedDict
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = OrderedDict((k, torch.empty_like(v).copy_(v)) for k, v in model.state_dict().items())
            continue
        bad_epochs += 1
        if bad_epochs >= patience:
            break
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(best_state[k])
    return best_epoch
''', label="copies with empty_like().copy_, restores with copy_ in place"),
    # ------------------------------------------------------------------ 07.early_stopping: wrong
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = model.state_dict()
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="keeps model.state_dict() without a copy (aliases)", words=("copy",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = dict(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="shallow dict() copy: the tensors are still shared", words=("copy",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label=".detach().cpu() on a CPU model: same memory", words=("copy",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = {k: p.detach().clone() for k, p in model.named_parameters()}
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state, strict=False)
    return best_epoch
''', label="copies parameters only: BatchNorm running statistics not restored", words=("buffer",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss <= best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="<= : a tie counts as an improvement", words=("tie",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="ignores min_delta", words=("min_delta",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss + min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="min_delta with the wrong sign (best + min_delta)", words=("min_delta",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch = val_loss, epoch
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="never resets the counter: counts all non-improving epochs, not in a row", words=("in a row",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs > patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="off by one: stops after patience + 1 bad epochs", words=("patience",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return epoch
''', label="returns the last epoch trained, not the best", words=("best epoch",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(max_epochs):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="epochs numbered from 0", words=("from 1",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    return best_epoch
''', label="never loads the best copy back", words=("load",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                model.load_state_dict(best_state)
                return best_epoch
    return best_epoch
''', label="restores the best weights only when patience runs out, not at max_epochs", words=("max_epochs",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        if validate(model) < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = validate(model), epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="calls validate twice in an improving epoch", words=("validate",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = validate(model), 0, copy.deepcopy(model.state_dict()), 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="validates the untrained model first (first epoch need not improve)", words=("before the first train_epoch",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="range(1, max_epochs): one epoch too few", words=("max_epochs",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        before = copy.deepcopy(model.state_dict())
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = before
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="keeps the weights from before the epoch was trained", words=("best epoch's weights",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_model, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_model = copy.deepcopy(model)
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model = best_model
    return best_epoch
''', label="rebinds the local name to a deep-copied model: caller's model not restored", words=("load",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss * (1 - min_delta):
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch
''', label="min_delta as a relative fraction", words=("min_delta",)),
    Answer("07.early_stopping", "fail", '''
def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    import copy
    best_loss, best_epoch, best_state, bad_epochs = float("inf"), 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_epoch, bad_epochs = epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
        best_loss = min(best_loss, val_loss)
    model.load_state_dict(best_state)
    return best_epoch
''', label="best_loss also lowered by sub-min_delta gains (not an improvement)", words=("min_delta",)),

    # ------------------------------------------------------------------ 07.warmup_cosine: correct
    Answer("07.warmup_cosine", "ok", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="SequentialLR of LinearLR and CosineAnnealingLR"),
    Answer("07.warmup_cosine", "ok", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    def factor(step):
        if step < warmup_steps:
            return 1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps
        t = step - warmup_steps
        return 0.5 * (1 + math.cos(math.pi * t / (total_steps - warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
''', label="LambdaLR with the closed-form factor"),
    Answer("07.warmup_cosine", "ok", '''
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR

def warmup_cosine(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int):
    """Linear warm-up from base_lr / warmup_steps, then cosine to 0 at total_steps."""
    if not 0 < warmup_steps < total_steps:
        raise ValueError(f"need 0 < warmup_steps < total_steps, got {warmup_steps}, {total_steps}")
    return SequentialLR(
        optimizer,
        schedulers=[LinearLR(optimizer, start_factor=1.0 / warmup_steps, end_factor=1.0, total_iters=warmup_steps),
                    CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=0.0)],
        milestones=[warmup_steps],
    )
''', label="imports, keywords, argument validation", name="warmup_cosine"),
    Answer("07.warmup_cosine", "ok", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    lambdas = []
    for _ in optimizer.param_groups:
        lambdas.append(lambda s: (1 + s * (warmup_steps - 1) / warmup_steps) / warmup_steps
                       if s < warmup_steps
                       else (1 + math.cos(math.pi * (s - warmup_steps) / (total_steps - warmup_steps))) / 2)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lambdas)
''', label="LambdaLR with one lambda per param group (rearranged formula)"),
    Answer("07.warmup_cosine", "ok", '''
import math

class WarmupCosine(torch.optim.lr_scheduler.LRScheduler):
    def __init__(self, optimizer, warmup_steps, total_steps):
        self.warmup_steps, self.total_steps = warmup_steps, total_steps
        super().__init__(optimizer)

    def get_lr(self):
        s, w, T = self.last_epoch, self.warmup_steps, self.total_steps
        if s < w:
            f = 1 / w + (1 - 1 / w) * s / w
        else:
            f = 0.5 * (1 + math.cos(math.pi * (s - w) / (T - w)))
        return [base * f for base in self.base_lrs]

def warmup_cosine(optimizer, warmup_steps, total_steps):
    return WarmupCosine(optimizer, warmup_steps, total_steps)
''', label="own LRScheduler subclass with get_lr", name="warmup_cosine"),
    Answer("07.warmup_cosine", "ok", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import numpy as np
    w = warmup_steps
    warm = np.linspace(1 / w, 1.0, w + 1)            # factors at steps 0..w
    t = np.arange(1, total_steps - w + 1)
    cos = 0.5 * (1 + np.cos(np.pi * t / (total_steps - w)))
    table = np.concatenate([warm, cos]).tolist()
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: table[min(s, len(table) - 1)])
''', label="precomputed table of factors (numpy linspace), LambdaLR lookup"),
    # ------------------------------------------------------------------ 07.warmup_cosine: wrong
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="T_max = total_steps (not minus the warm-up)", words=("T_max",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps + 1])
''', label="milestone one step late", words=("milestone",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps - 1)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps - 1])
''', label="warm-up one step short (total_iters and milestone warmup_steps - 1)", words=("step 1",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=0.1, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="start_factor 0.1 hard-coded (right only for 10 warm-up steps)", words=("step 0",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    scheduler = sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
    optimizer.step()
    scheduler.step()
    return scheduler
''', label="steps the scheduler inside the function", words=("step",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=1e-6)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="eta_min=1e-6: does not reach 0", words=("eta_min",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.ChainedScheduler([warm, cos])
''', label="ChainedScheduler: both schedules applied at once", words=("SequentialLR",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
''', label="LambdaLR warm-up (step+1)/w: full rate one step early", words=("step 1",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    def factor(step):
        if step < warmup_steps:
            return step / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
''', label="warm-up from 0 instead of base_lr / warmup_steps", words=("step 0",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    def factor(step):
        if step < warmup_steps:
            return 1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * step / total_steps))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
''', label="cosine phase measured from step 0 over total_steps", words=("step 4",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    base = optimizer.param_groups[0]["lr"]
    def lr_at(step):
        if step < warmup_steps:
            return base * (1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps)
        return base * 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
''', label="LambdaLR returning a learning rate instead of a factor (base_lr applied twice)", words=("lr_lambda",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    base = optimizer.param_groups[0]["lr"]
    def factor_group0(step):
        if step < warmup_steps:
            return 1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
    # every group gets the first group's learning rate curve
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, [lambda s, lr=g["lr"]: factor_group0(s) * base / lr for g in optimizer.param_groups])
''', label="every param group follows the first group's base_lr", words=("group 1",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    return sched.CosineAnnealingWarmRestarts(optimizer, T_0=total_steps - warmup_steps)
''', label="warm restarts instead of a warm-up (no linear phase)", words=("step 0",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    return sched.OneCycleLR(optimizer, max_lr=[g["lr"] for g in optimizer.param_groups],
                            total_steps=total_steps + 1, pct_start=warmup_steps / total_steps,
                            anneal_strategy="cos")
''', label="OneCycleLR: cosine warm-up from max_lr/25, not the stated linear one", words=("step 0",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    for group in optimizer.param_groups:
        group["lr"] = group["lr"] / warmup_steps
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="also divides the optimizer's lr by warmup_steps (warm-up applied twice)", words=("step 0",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps - 1)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="T_max one short: reaches 0 a step early and rises again", words=("T_max", "short")),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return [warm, cos]
''', label="returns the two schedulers as a list", words=("scheduler",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    import math
    def factor(step):
        if step <= warmup_steps:
            return 1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / total_steps))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
''', label="cosine divides by total_steps: lr at total_steps not 0", words=("0",)),
    Answer("07.warmup_cosine", "fail", '''
def warmup_cosine(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warm = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=total_steps)
    cos = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
''', label="LinearLR total_iters=total_steps: warm-up too slow, jumps at the milestone", words=("step 1",)),
]
