"""Checkers of notebook 07 (generalisation), in notebook order: ``07.param_groups``, ``07.early_stopping``,
``07.warmup_cosine``. The reference solutions are the packaged helpers of :mod:`course_utils.generalisation`.

* ``07.param_groups`` reads the groups the candidate returns parameter by parameter (by identity, not by
  name), so a group that holds copies, names, a set, a parameter twice (tied weights) or a frozen one is
  named as such. The models use ordinary and odd attribute names for their norm layers, a bias-free
  model, tied weights, a frozen parameter and a plain 1-d parameter that is not a norm weight.
* ``07.early_stopping`` drives the candidate with a scripted training run (:class:`ScriptedTraining`):
  every "epoch" moves the weights *and* the BatchNorm buffers in place, and the validation losses are
  fixed in advance, so when to stop and which epoch is best are known. The model
  (:class:`RecordingNet`) records every ``load_state_dict`` and whether the state it was given shares
  memory with the live tensors (a ``state_dict()`` kept without a copy).
* ``07.warmup_cosine`` traces the learning rate of every param group, step by step, and compares the
  curve with the reference's.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register
from course_utils.i18n import t
from course_utils.generalisation import NORM_LAYERS
from course_utils.generalisation import early_stopping as early_stopping_reference
from course_utils.generalisation import param_groups as param_groups_reference
from course_utils.generalisation import warmup_cosine as warmup_cosine_reference

# --- 07.param_groups ------------------------------------------------------------------------------

_ADAMW_DEFAULT = 0.01  # what AdamW gives a group without a "weight_decay" key


class TinyMLP(nn.Module):
    """Linear -> LayerNorm -> ReLU -> Linear, with the usual attribute names."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.norm = nn.LayerNorm(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


class SmallCNN(nn.Module):
    """Conv -> BatchNorm, Conv (no bias) -> GroupNorm (named ``gn``), a bias-free linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.gn = nn.GroupNorm(2, 4)
        self.norm2 = nn.GroupNorm(2, 4)  # the same type under a usual name: names and types disagree
        self.head = nn.Linear(4, 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm2(self.gn(self.conv2(torch.relu(self.bn1(self.conv1(x)))))))
        return self.head(h.mean(dim=(2, 3)))


class TiedLM(nn.Module):
    """Embedding and output layer share one weight; a frozen positional table."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.pos = nn.Parameter(torch.randn(5, 6), requires_grad=False)  # frozen: left out
        self.ln = nn.LayerNorm(6)
        self.head = nn.Linear(6, 10, bias=False)
        self.head.weight = self.emb.weight  # tied: one Parameter, two names

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln(self.emb(tokens) + self.pos[: tokens.shape[-1]]))


class OddNames(nn.Module):
    """Norm layers under names that do not say "norm" (``body.1``, ``scale_layer``), an RMSNorm under
    a usual name, and ``gain``: a plain 1-d parameter that is not in a norm layer (so it is decayed)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 5), nn.BatchNorm1d(5))
        self.scale_layer = nn.LayerNorm(5)
        self.norm = nn.RMSNorm(5)
        self.gain = nn.Parameter(torch.ones(5))
        self.out = nn.Linear(5, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.scale_layer(self.body(x))) * self.gain)


class _ScaledLayerNorm(nn.LayerNorm):
    """A project's own norm layer: a subclass, so an instance of nn.LayerNorm, but not of that exact type."""


class _Shift(nn.Module):
    """A custom layer whose parameter is registered under the name ``bias``."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.bias


class Subclassed(nn.Module):
    """A norm-layer subclass, a ``bias`` on a custom layer and on the model itself (full name ``bias``),
    and 1-d parameters whose names end in ``_bias`` but are not called ``bias`` (so they are decayed)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.post = _ScaledLayerNorm(4)
        self.shift = _Shift(4)
        self.rel_bias = nn.Parameter(torch.randn(4))
        self.bias = nn.Parameter(torch.randn(4))
        self.out_bias = nn.Parameter(torch.randn(4))
        self.scale = nn.Parameter(torch.ones(4))  # 1-d, not a bias, not in a norm layer: decayed
        self.post.bias.requires_grad_(False)      # a frozen norm parameter and a frozen bias: left out
        self.fc.bias.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shift(self.post(self.fc(x) + self.rel_bias)) * self.scale + self.bias + self.out_bias


def _weights_only_model() -> nn.Module:
    """Nothing that goes in the no-decay group: it is empty, and still one of the two groups."""
    return nn.Sequential(nn.Linear(4, 3, bias=False), nn.ReLU(), nn.Linear(3, 2, bias=False))


def _no_bias_model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 6, bias=False), nn.LayerNorm(6, bias=False), nn.ReLU(),
                         nn.Linear(6, 2, bias=False))


def _seeded(make, seed: int):
    def factory():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return make()
    return factory


def _groups_cases():
    def case(make, seed: int, weight_decay: float):
        return lambda: ((_seeded(make, seed)(), weight_decay), {})
    return [case(TinyMLP, 0, 0.1), case(SmallCNN, 1, 0.05), case(TiedLM, 2, 0.01), case(OddNames, 3, 0.2),
            case(_no_bias_model, 4, 0.3), case(Subclassed, 5, 0.1), case(_weights_only_model, 6, 0.2)]


def _role(model: nn.Module) -> dict[int, tuple[str, str, str]]:
    """id(param) -> (first name, owning module's class, role); role is bias / norm / decay / frozen."""
    roles: dict[int, tuple[str, str, str]] = {}
    full = {id(p): n for n, p in model.named_parameters()}
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if id(param) in roles:
                continue
            if not param.requires_grad:
                role = "frozen"
            elif isinstance(module, NORM_LAYERS):
                role = "norm"
            elif name == "bias":
                role = "bias"
            else:
                role = "decay"
            roles[id(param)] = (full.get(id(param), name), type(module).__name__, role)
    return roles


def _all_names(model: nn.Module) -> dict[int, list[str]]:
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return names


def _group_lists(out: Any) -> list[tuple[list, float, bool]] | str:
    """[(params, weight_decay, has_key)] or a problem sentence about the structure."""
    if isinstance(out, dict):
        return t("expected a list of parameter-group dicts, found one dict with keys {sorted_map_str_out}: return "
                 "[{{'params': [...], 'weight_decay': ...}}, {{'params': [...], 'weight_decay': 0.0}}]",
                 sorted_map_str_out=sorted(map(str, out)))
    if not isinstance(out, (list, tuple)):
        return t("expected a list of parameter-group dicts, found {describe_out}", describe_out=describe(out))
    groups = []
    for index, group in enumerate(out, start=1):
        if not isinstance(group, dict) or "params" not in group:
            return t("expected every group to be a dict with the keys 'params' and 'weight_decay', found group "
                     "{index}: {describe_group}", index=index, describe_group=describe(group))
        params = group["params"]
        if isinstance(params, (set, frozenset)):
            return t("group {index} holds its parameters in a set: the optimizer refuses sets (their order changes "
                     "between runs); use a list", index=index)
        params = [params] if isinstance(params, torch.Tensor) else list(params)
        for p in params:
            if isinstance(p, str):
                return t("group {index} holds the parameter name {p!r} (a str) instead of the parameter itself: the "
                         "optimizer needs the nn.Parameter objects", index=index, p=p)
        groups.append((params, group.get("weight_decay", _ADAMW_DEFAULT), "weight_decay" in group))
    return groups


def _assigned(out: Any, model: nn.Module) -> dict[int, list[tuple[int, float, bool]]] | None:
    """id(param) -> [(group number, weight_decay, has_key)] for every model parameter in the groups."""
    groups = _group_lists(out)
    if isinstance(groups, str):
        return None
    ids = {id(p) for p in model.parameters()}
    found: dict[int, list[tuple[int, float, bool]]] = {}
    for index, (params, wd, has_key) in enumerate(groups, start=1):
        for p in params:
            if id(p) in ids:
                found.setdefault(id(p), []).append((index, wd, has_key))
    return found


def _foreign(out: Any, model: nn.Module) -> str | None:
    groups = _group_lists(out)
    if isinstance(groups, str):
        return None
    ids = {id(p) for _, p in model.named_parameters(remove_duplicate=False)}
    for index, (params, _, _) in enumerate(groups, start=1):
        for p in params:
            if id(p) not in ids:
                return t("group {index} holds {describe_p}", index=index, describe_p=describe(p))
    return None


def _groups_verify(out, ref, args, kwargs):
    model, weight_decay = args
    groups = _group_lists(out)
    if isinstance(groups, str):
        return groups
    foreign = _foreign(out, model)
    if foreign:
        return t("{foreign}, which is not one of the model's parameters (a copy, `.data` or `.detach()`?): the "
                 "optimizer would update that tensor and the model would never change", foreign=foreign)
    roles, names = _role(model), _all_names(model)
    found = _assigned(out, model) or {}
    for pid, places in found.items():
        if len(places) > 1:
            name = roles[pid][0]
            shared = names.get(pid, [name])
            tied = (t(" (one Parameter shared as {names})", names=t(" and ").join(f"`{n}`" for n in shared))
                    if len(shared) > 1 else "")
            return t("expected every parameter exactly once, found `{name}`{tied} {count} times, in groups "
                     "{groups}",
                     name=name, tied=tied, count=len(places), groups=", ".join(str(g) for g, _, _ in places))
    for pid, (name, kind, role) in roles.items():
        if role == "frozen" and pid in found:
            return t("the frozen parameter `{name}` (requires_grad=False) is in group {found_pid_0_0}: the task says "
                     "to leave frozen parameters out", name=name, found_pid_0_0=found[pid][0][0])
    for pid, (name, kind, role) in roles.items():
        if role != "frozen" and pid not in found:
            return t("expected every trainable parameter in a group, found `{name}` (in {kind}) in none",
                     name=name, kind=kind)
    for pid, (name, kind, role) in roles.items():
        if role == "frozen":
            continue
        group, wd, has_key = found[pid][0]
        expected = weight_decay if role == "decay" else 0.0
        if abs(float(wd) - expected) <= 1e-12:
            continue
        default = "" if has_key else t(" (group {group} has no 'weight_decay' key, so AdamW gives it its default, "
                                       "{default})", group=group, default=_ADAMW_DEFAULT)
        what = {"bias": t("a bias"), "norm": t("a parameter of a normalisation layer ({kind})", kind=kind),
                "decay": t("a weight of {kind}", kind=kind)}[role]
        return t("`{name}` is {what}: expected weight_decay={expected:g} for it, found {wd:g}{default}",
                 name=name, what=what, expected=expected, wd=float(wd), default=default)
    if len(out) != 2:
        return t("expected exactly two groups, [decay, no_decay], even when one of them is empty (this model has "
                 "{kinds}), found {len_out} group(s)",
                 kinds=t("no bias or norm parameter")
                 if not any(r == "norm" or r == "bias" for _, _, r in roles.values())
                 else t("both kinds"), len_out=len(out))
    wds = [float(g.get("weight_decay", _ADAMW_DEFAULT)) for g in out]
    if abs(wds[0] - weight_decay) > 1e-12 or abs(wds[1]) > 1e-12:
        return t("expected the groups in the task's order, [{{'params': decay, 'weight_decay': {weight_decay:g}}}, "
                 "{{'params': no_decay, 'weight_decay': 0.0}}], found weight decays {wds} in that order",
                 weight_decay=weight_decay, wds=wds)
    try:
        torch.optim.AdamW(out, lr=1e-3)
    except Exception as exc:  # noqa: BLE001 - whatever the optimizer refuses, say it
        return t("torch.optim.AdamW refuses these groups: {error}: {exc}", error=type(exc).__name__, exc=exc)
    return None


# Detectors read the candidate's groups on the failing case (in list order: the first that fits wins).

def _roles_found(out, args):
    model = args[0]
    return _role(model), _assigned(out, model)


def _any_group_without_key(out, args, kwargs) -> bool:
    groups = _group_lists(out)
    return not isinstance(groups, str) and any(not has_key for _, _, has_key in groups)


def _swapped(out, args, kwargs) -> bool:
    roles, found = _roles_found(out, args)
    if not found:
        return False
    wd = args[1]
    checks = [(role, found[pid][0][1]) for pid, (_, _, role) in roles.items() if pid in found and role != "frozen"]
    return bool(checks) and all((abs(w) < 1e-12) == (role == "decay") for role, w in checks) and wd > 0


def _frozen_in(out, args, kwargs) -> bool:
    roles, found = _roles_found(out, args)
    return found is not None and any(role == "frozen" and pid in found for pid, (_, _, role) in roles.items())


def _duplicates(out, args, kwargs, tied: bool) -> bool:
    roles, found = _roles_found(out, args)
    if found is None:
        return False
    names = _all_names(args[0])
    twice = [pid for pid, places in found.items() if len(places) > 1]
    if not twice:
        return False
    if tied:
        return all(len(names[pid]) > 1 for pid in twice)
    return any(len(names[pid]) == 1 for pid in twice)


def _missing(out, args, kwargs) -> bool:
    roles, found = _roles_found(out, args)
    return found is not None and any(role != "frozen" and pid not in found for pid, (_, _, role) in roles.items())


def _wd_of(out, args, predicate) -> list[float]:
    roles, found = _roles_found(out, args)
    if not found:
        return []
    return [found[pid][0][1] for pid, (name, kind, role) in roles.items()
            if pid in found and predicate(name, kind, role)]


def _usual_norm_name(name: str) -> bool:
    return "norm" in name or "bn" in name


def _by_name(out, args, kwargs) -> bool:
    def norm_weight(usual: bool):
        return lambda name, kind, role: role == "norm" and name.endswith("weight") and _usual_norm_name(name) == usual
    return (any(abs(w) < 1e-12 for w in _wd_of(out, args, norm_weight(True)))
            and any(abs(w) > 1e-12 for w in _wd_of(out, args, norm_weight(False))))


def _one_d_not_decayed(out, args, kwargs) -> bool:
    model = args[0]
    one_d = {id(p) for p in model.parameters() if p.ndim == 1}
    roles, found = _roles_found(out, args)
    if not found:
        return False
    return any(role == "decay" and pid in one_d and pid in found and abs(found[pid][0][1]) < 1e-12
               and "bias" not in name.rsplit(".", 1)[-1] for pid, (name, _, role) in roles.items())


def _norm_by_exact_type(out, args, kwargs) -> bool:
    """A norm layer that is a subclass of one in NORM_LAYERS decayed, those of the exact types not."""
    model = args[0]
    roles, found = _roles_found(out, args)
    if not found:
        return False
    norm_modules = [m for m in model.modules() if isinstance(m, NORM_LAYERS)]
    sub = [p for m in norm_modules if type(m) not in NORM_LAYERS for n, p in m.named_parameters(recurse=False)
           if id(p) in found and n != "bias"]
    exact = [p for m in norm_modules if type(m) in NORM_LAYERS for n, p in m.named_parameters(recurse=False)
             if id(p) in found and n != "bias"]
    return (bool(sub) and all(abs(found[id(p)][0][1]) > 1e-12 for p in sub)
            and all(abs(found[id(p)][0][1]) < 1e-12 for p in exact))


def _norm_by_type_list(out, args, kwargs) -> bool:
    """Norm layers decayed by their type alone (a hand-written, incomplete list): every norm layer of one
    type decayed, every one of another type not, whatever their names."""
    model = args[0]
    roles, found = _roles_found(out, args)
    if not found:
        return False
    decayed: dict[type, set[bool]] = {}
    for module in model.modules():
        if isinstance(module, NORM_LAYERS):
            for n, p in module.named_parameters(recurse=False):
                if id(p) in found and n != "bias":  # a norm layer's bias is a `bias` anyway
                    decayed.setdefault(type(module), set()).add(abs(found[id(p)][0][1]) > 1e-12)
    kinds = list(decayed.values())
    return (all(len(k) == 1 for k in kinds) and any(k == {True} for k in kinds)
            and any(k == {False} for k in kinds))


def _dotted_names_missed(out, args, kwargs) -> bool:
    """named_parameters() without recurse=False: the model itself claims every parameter under a dotted
    name first, so no nested bias or norm parameter reaches the no-decay group."""
    roles, found = _roles_found(out, args)
    nested = [(pid, role) for pid, (name, _, role) in roles.items() if "." in name and role in ("bias", "norm")]
    return bool(found) and bool(nested) and all(
        pid in found and abs(found[pid][0][1]) > 1e-12 for pid, _ in nested)


def _groups_exact_type(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if type(module) in NORM_LAYERS or name == "bias" else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_type_list(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)) or name == "bias" else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_recurse(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters():
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if isinstance(module, NORM_LAYERS) or name == "bias" else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _bias_by_pattern(out, args, kwargs) -> bool:
    """A parameter whose name only *ends* in bias (``rel_bias``) left undecayed."""
    roles, found = _roles_found(out, args)
    return bool(found) and any(
        role == "decay" and pid in found and abs(found[pid][0][1]) < 1e-12
        and name.rsplit(".", 1)[-1] != "bias" and "bias" in name.rsplit(".", 1)[-1]
        for pid, (name, _, role) in roles.items())


def _groups_bias_by_pattern(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if isinstance(module, NORM_LAYERS) or name.endswith("bias") else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _embedding_not_decayed(out, args, kwargs) -> bool:
    return any(abs(w) < 1e-12 for w in _wd_of(out, args, lambda n, kind, role: kind == "Embedding" and role == "decay"))


def _biases_decayed(out, args, kwargs) -> bool:
    return any(abs(w) > 1e-12 for w in _wd_of(out, args, lambda n, kind, role: role == "bias"))


def _norm_decayed(out, args, kwargs) -> bool:
    return any(abs(w) > 1e-12 for w in _wd_of(out, args, lambda n, kind, role: role == "norm"))


# The wrong answers (each is also the example a unit test feeds to check()).

def _groups_dict(model, weight_decay):
    groups = param_groups_reference(model, weight_decay)
    return {"decay": groups[0]["params"], "no_decay": groups[1]["params"]}


def _groups_names(model, weight_decay):
    decay = [n for n, p in model.named_parameters() if p.requires_grad and p.ndim > 1]
    no_decay = [n for n, p in model.named_parameters() if p.requires_grad and p.ndim <= 1]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_set(model, weight_decay):
    groups = param_groups_reference(model, weight_decay)
    return [{"params": set(g["params"]), "weight_decay": g["weight_decay"]} for g in groups]


def _groups_detached(model, weight_decay):
    groups = param_groups_reference(model, weight_decay)
    return [{"params": [p.detach() for p in g["params"]], "weight_decay": g["weight_decay"]} for g in groups]


def _groups_no_key(model, weight_decay):
    decay, no_decay = param_groups_reference(model, weight_decay)
    return [decay, {"params": no_decay["params"]}]  # AdamW's default weight_decay=0.01 applies


def _groups_swapped(model, weight_decay):
    decay, no_decay = param_groups_reference(model, weight_decay)
    return [{"params": decay["params"], "weight_decay": 0.0},
            {"params": no_decay["params"], "weight_decay": weight_decay}]


def _groups_frozen(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if isinstance(module, NORM_LAYERS) or name == "bias" else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_tied_twice(model, weight_decay):
    decay, no_decay = [], []
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if param.requires_grad:
                (no_decay if isinstance(module, NORM_LAYERS) or name == "bias" else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_recursive(model, weight_decay):
    decay, no_decay = [], []
    for module in model.modules():
        for name, param in module.named_parameters():  # recursive: a parameter once per enclosing module
            if param.requires_grad:
                (no_decay if isinstance(module, NORM_LAYERS) or name.endswith("bias") else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_linear_only(model, weight_decay):
    decay, no_decay = [], []
    for module in model.modules():
        if isinstance(module, nn.Linear):
            decay.append(module.weight)
            if module.bias is not None:
                no_decay.append(module.bias)
        elif isinstance(module, NORM_LAYERS):
            no_decay += [p for p in module.parameters()]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_by_name(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (no_decay if "bias" in name or "norm" in name or "bn" in name else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_by_shape(model, weight_decay):
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_no_embedding_decay(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            skip = isinstance(module, (nn.Embedding, *NORM_LAYERS)) or name == "bias"
            (no_decay if skip else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_biases_decayed(model, weight_decay):
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for param in module.parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if isinstance(module, NORM_LAYERS) else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _groups_norm_decayed(model, weight_decay):
    decay = [p for n, p in model.named_parameters() if p.requires_grad and not n.endswith("bias")]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and n.endswith("bias")]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


register(Exercise(
    "07.param_groups",
    "param_groups(model, weight_decay) returns a list of parameter-group dicts for torch.optim.AdamW, "
    "[{'params': [...], 'weight_decay': weight_decay}, {'params': [...], 'weight_decay': 0.0}]. Every "
    "trainable parameter appears exactly once (tied weights too); frozen ones (requires_grad=False) are "
    "left out. No decay (0.0) for parameters registered as `bias` and for every parameter of a "
    "normalisation layer (an instance of NORM_LAYERS: BatchNorm, InstanceNorm, LayerNorm, GroupNorm, "
    "RMSNorm), whatever it is called; every other parameter, whatever its shape (convolution and linear "
    "weights, embedding tables, a plain 1-d nn.Parameter), gets `weight_decay`. The model is not changed.",
    param_groups_reference,
    _groups_cases(),
    _groups_verify,
    [
        Mistake("returns a dict, not a list of groups",
                "an optimizer takes a list of dicts, one per group, each with its own 'params' and "
                "'weight_decay': return [{'params': decay, 'weight_decay': weight_decay}, "
                "{'params': no_decay, 'weight_decay': 0.0}].",
                _groups_dict, detect=lambda out, a, k: isinstance(out, dict)),
        Mistake("parameter names instead of parameters",
                "named_parameters() yields (name, parameter) pairs: use the name to decide, and put the "
                "parameter itself in the group.",
                _groups_names),
        Mistake("params in a set",
                "collect the parameters in a list (keep a set of id(p) only to skip the ones already seen).",
                _groups_set),
        Mistake("copies instead of the parameters",
                "put the nn.Parameter objects themselves in the groups, not p.detach(), p.data or "
                "p.clone(): the optimizer updates exactly the tensors it is given.",
                _groups_detached),
        Mistake("no-decay group without weight_decay 0.0",
                "a group without a 'weight_decay' key gets the optimizer's default, which is 0.01 for "
                "AdamW: write 'weight_decay': 0.0 in the no-decay group.",
                _groups_no_key, detect=_any_group_without_key),
        Mistake("groups swapped",
                "the weights of convolution, linear and embedding layers are decayed; biases and "
                "norm-layer parameters get 0.0, not the other way round.",
                _groups_swapped, detect=_swapped),
        Mistake("frozen parameters included",
                "skip parameters with requires_grad=False (`if not p.requires_grad: continue`), as the "
                "task says.",
                _groups_frozen, detect=_frozen_in),
        Mistake("tied parameters listed twice",
                "a Parameter shared by two modules (tied embedding and output weights) is reached from "
                "both: keep a set of id(p) already seen and skip repeats, or start from "
                "model.named_parameters(), which yields each parameter once.",
                _groups_tied_twice, detect=lambda out, a, k: _duplicates(out, a, k, tied=True)),
        Mistake("parameters listed once per enclosing module",
                "module.named_parameters() recurses into submodules, so inside a loop over "
                "model.modules() every parameter comes back once per module above it: use "
                "module.named_parameters(recurse=False).",
                _groups_recursive, detect=lambda out, a, k: _duplicates(out, a, k, tied=False)),
        Mistake("parameters missing (only some layer types visited)",
                "walk every module (model.modules()) and every parameter it holds, not only nn.Linear "
                "and norm layers: convolutions and embeddings, and parameters set directly on a module, "
                "need a group too.",
                _groups_linear_only, detect=_missing),
        Mistake("norm layer tested by its exact type (a subclass missed)",
                "a project's own norm layer is often a subclass (class MyNorm(nn.LayerNorm)): test "
                "isinstance(module, NORM_LAYERS), which accepts subclasses, not type(module) in NORM_LAYERS.",
                _groups_exact_type, detect=_norm_by_exact_type),
        Mistake("an incomplete list of norm layer types",
                "list every normalisation type (or use the NORM_LAYERS tuple given above): BatchNorm, "
                "InstanceNorm, LayerNorm, GroupNorm, RMSNorm; a layer of a type missing from your list was "
                "decayed.", _groups_type_list, detect=_norm_by_type_list),
        Mistake("named_parameters() without recurse=False",
                "walk model.modules() and, for each, module.named_parameters(recurse=False): with recursion "
                "the model itself comes first and claims every parameter under a dotted name ('fc.bias'), "
                "so name == 'bias' never matches and no norm layer is seen as the owner.",
                _groups_recurse, detect=_dotted_names_missed),
        Mistake("norm layer found by its name",
                "a name like 'bn' or 'norm' is a convention, not a rule (`body.1`, `scale_layer`, `gn` are "
                "norm layers too): test the module, isinstance(module, NORM_LAYERS), while walking "
                "model.modules() with named_parameters(recurse=False).",
                _groups_by_name, detect=_by_name),
        Mistake("bias found by a name pattern (`*bias`)",
                "the rule is the parameter's own registered name, exactly `bias`: `rel_bias` or `out_bias` "
                "are ordinary weights and are decayed; test name == 'bias', not endswith/in.",
                _groups_bias_by_pattern, detect=_bias_by_pattern),
        Mistake("rule by shape (p.ndim < 2)",
                "`p.ndim < 2` is a popular shortcut, and this task's rule is by layer instead: a 1-d "
                "parameter that is neither a bias nor in a norm layer (here `gain`) is decayed; decide "
                "with isinstance(module, NORM_LAYERS) or name == 'bias'.",
                _groups_by_shape, detect=_one_d_not_decayed),
        Mistake("embedding excluded from decay",
                "the task decays embedding tables like any other weight: only biases and norm-layer "
                "parameters get 0.0.",
                _groups_no_embedding_decay, detect=_embedding_not_decayed),
        Mistake("biases decayed",
                "a bias only shifts an output; decay pulls it towards 0 for no gain in smoothness: put "
                "every parameter registered as `bias` in the weight_decay=0.0 group.",
                _groups_biases_decayed, detect=_biases_decayed),
        Mistake("norm weights decayed",
                "decay pulls a norm layer's scale (weight) towards 0, which shrinks the normalised "
                "activations for no benefit: every parameter of a NORM_LAYERS module goes in the 0.0 "
                "group, its weight as well as its bias.",
                _groups_norm_decayed, detect=_norm_decayed),
    ],
))


# --- 07.early_stopping ----------------------------------------------------------------------------

class RecordingNet(nn.Module):
    """Linear -> BatchNorm1d (a buffer that training moves) -> Linear; records every load_state_dict."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.out = nn.Linear(4, 2)
        self.loads: list[bool] = []  # per load_state_dict call: did the state share memory with the model?

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.bn(self.fc(x))))

    def load_state_dict(self, state_dict, *args, **kwargs):  # type: ignore[override]
        live = {k: v.data_ptr() for k, v in self.state_dict().items() if v.numel()}
        shared = any(isinstance(v, torch.Tensor) and v.numel() and live.get(k) == v.data_ptr()
                     for k, v in state_dict.items())
        self.loads.append(shared)
        return super().load_state_dict(state_dict, *args, **kwargs)


class ScriptedTraining:
    """``train_epoch(model)``: moves every parameter and buffer in place (as training would) and keeps a
    copy of the state after each epoch; ``validate(model)`` returns the scripted loss of that epoch."""

    def __init__(self, losses: list[float]) -> None:
        self.losses = list(losses)
        self.epochs = 0
        self.states: list[dict[str, torch.Tensor]] = []
        self.calls: list[str] = []  # "train" / "validate", in the order they came

    def train_epoch(self, model: nn.Module) -> None:
        if self.epochs >= len(self.losses):
            raise RuntimeError("train_epoch was called more often than max_epochs")
        self.calls.append("train")
        self.epochs += 1
        with torch.no_grad():
            for index, value in enumerate(model.state_dict().values()):
                if value.is_floating_point():
                    value.add_(0.01 * (index + 1) * self.epochs)
        self.states.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def validate(self, model: nn.Module) -> float:
        if self.epochs == 0:
            raise RuntimeError("validate was called before the first train_epoch")
        self.calls.append("validate")
        return self.losses[self.epochs - 1]


def _stopping_cases():
    def case(seed: int, losses: list[float], patience: int, min_delta: float = 0.0,
             max_epochs: int | None = None):
        def factory():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model = RecordingNet()
            script = ScriptedTraining(losses)
            kwargs = {"min_delta": min_delta} if min_delta else {}
            return (model, script.train_epoch, script.validate, max_epochs or len(losses), patience), kwargs
        return factory
    return [
        # best at 3, then three epochs without improvement: stop after epoch 6
        case(0, [1.0, 0.8, 0.7, 0.75, 0.72, 0.71, 0.9, 0.6, 0.5, 0.4], patience=3),
        # improvements between bad epochs: the counter must restart (best 7, stop after 10)
        case(1, [2.0, 1.5, 1.6, 1.4, 1.45, 1.42, 1.3, 1.35, 1.36, 1.33, 1.0, 0.9], patience=3),
        # a tie is not an improvement (best 2, stop after 4)
        case(3, [1.0, 0.5, 0.5, 0.5, 0.4, 0.3], patience=2),
        # min_delta=0.05: 0.97, 0.96 and 0.951 are not improvements on 1.0 (best 1, stop after 4)
        case(2, [1.0, 0.97, 0.96, 0.951, 0.92, 0.93, 0.5, 0.52, 0.53, 0.54, 0.55, 0.3], patience=3, min_delta=0.05),
        # it always improves: all max_epochs epochs run, the last is the best
        case(4, [1.0, 0.9, 0.8, 0.7], patience=2),
        # patience 1: stop at the first epoch without improvement (best 2, stop after 3)
        case(5, [1.0, 0.6, 0.7, 0.3, 0.2], patience=1),
        # all max_epochs epochs run and the best is not the last (best 2): the best state is loaded
        # back at the end of the loop too, not only when patience runs out
        case(6, [1.0, 0.5, 0.6, 0.55], patience=3),
        # min_delta=0.05 far from 1: 3.97 is no improvement on 4.0, 3.94 is (absolute, not relative, and
        # best_loss moves only on an improvement); best 6, stop after 8
        case(7, [4.0, 3.97, 3.94, 3.9, 3.88, 3.8, 3.79, 3.78, 3.0, 2.0], patience=2, min_delta=0.05),
    ]


def _same_state(model: nn.Module, state: dict[str, torch.Tensor], buffers: bool | None = None) -> bool:
    params = {name for name, _ in model.named_parameters()}
    for key, value in model.state_dict().items():
        if buffers is not None and (key not in params) != buffers:
            continue
        if value.is_floating_point() and not torch.equal(value, state[key]):
            return False
    return True


def _script(args) -> ScriptedTraining:
    return args[1].__self__


def _stopping_verify(out, ref, args, kwargs):
    model, script, patience = args[0], _script(args), args[4]
    if isinstance(out, bool) or not isinstance(out, int):
        return t("expected the best epoch's number as a Python int, found {describe_out}", describe_out=describe(out))
    ref_epochs = _reference_epochs(args, kwargs)
    if script.epochs != ref_epochs:
        delta = t(", min_delta={min_delta:g} (best_loss - min_delta, absolute)", min_delta=kwargs["min_delta"]) \
            if kwargs.get("min_delta") else ""
        return t("with patience={patience}{delta} and these validation losses {losses}, expected "
                 "training to stop after epoch {ref_epochs}, found it stopped after epoch {script_epochs}",
                 patience=patience, delta=delta, losses=script.losses[:ref_epochs + 1], ref_epochs=ref_epochs,
                 script_epochs=script.epochs)
    if script.calls != ["train", "validate"] * script.epochs:
        trains, validations = script.calls.count("train"), script.calls.count("validate")
        return t("expected train_epoch(model) then validate(model) once each per epoch ({script_epochs} epochs: "
                 "{script_epochs} calls of each, alternating), found {trains} train_epoch and {validations} validate "
                 "calls in the order {calls}{more}",
                 script_epochs=script.epochs, trains=trains, validations=validations, calls=" ".join(script.calls[:8]),
                 more=" ..." if len(script.calls) > 8 else "")
    if out != ref:
        return t("expected the best epoch to be epoch {ref} (epochs count from 1), found {out}", ref=ref, out=out)
    best = script.states[ref - 1]
    if not _same_state(model, best):
        if _same_state(model, best, buffers=False):
            return t("the parameters are the best epoch's but the buffers (BatchNorm running_mean, running_var) are "
                     "not: restore the whole state_dict(), parameters and buffers")
        last = t("the last epoch's") if _same_state(model, script.states[-1]) else t("not the best epoch's")
        if any(model.loads):
            return t("after load_state_dict the model holds {last} weights: the saved state shared memory with the "
                     "model, so training kept changing it", last=last)
        return t("expected the model to end with the best epoch's weights (epoch {ref}), found {last} weights",
                 ref=ref, last=last)
    return None


def _reference_epochs(args, kwargs) -> int:
    """How many epochs the reference trains on a copy of this case (the scripted losses decide it)."""
    script = ScriptedTraining(_script(args).losses)
    with torch.random.fork_rng(devices=[]):
        early_stopping_reference(copy.deepcopy(args[0]), script.train_epoch, script.validate, *args[3:], **kwargs)
    return script.epochs


def _stop_shared_state(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad = math.inf, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        loss = validate(model)
        if loss < best_loss - min_delta:
            best_loss, best_epoch, bad = loss, epoch, 0
            best_state = model.state_dict()  # the live tensors, not a copy
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch


def _stop_restored_on_patience_only(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_state, bad = math.inf, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad >= patience:
                model.load_state_dict(best_state)
                return best_epoch
    return best_epoch


def _stop_never_restored(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, bad = math.inf, 0, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        loss = validate(model)
        if loss < best_loss - min_delta:
            best_loss, best_epoch, bad = loss, epoch, 0
        else:
            bad += 1
            if bad >= patience:
                break
    return best_epoch


def _stop_parameters_only(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
    best_loss, best_epoch, best_params, bad = math.inf, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        loss = validate(model)
        if loss < best_loss - min_delta:
            best_loss, best_epoch, bad = loss, epoch, 0
            best_params = [p.detach().clone() for p in model.parameters()]
        else:
            bad += 1
            if bad >= patience:
                break
    with torch.no_grad():
        for p, saved in zip(model.parameters(), best_params):
            p.copy_(saved)
    return best_epoch


def _stopping_variant(*, strict_patience: bool = False, reset: bool = True, against_best: bool = True,
                      use_delta: bool = True, delta_sign: int = -1, ties_improve: bool = False,
                      zero_based: bool = False, return_last: bool = False, short_range: bool = False):
    """A wrong early_stopping with one learner's slip switched on."""
    def early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0):
        best_loss, previous, best_epoch, best_state, bad = math.inf, math.inf, 0, None, 0
        epoch = 0
        for epoch in range(1, max_epochs if short_range else max_epochs + 1):
            train_epoch(model)
            loss = validate(model)
            target = (best_loss if against_best else previous) + (delta_sign * min_delta if use_delta else 0.0)
            improved = loss <= target if ties_improve else loss < target
            previous = loss
            if improved:
                best_loss, best_epoch = loss, epoch
                best_state = copy.deepcopy(model.state_dict())
                if reset:
                    bad = 0
            else:
                bad += 1
                if (bad > patience) if strict_patience else (bad >= patience):
                    break
        model.load_state_dict(best_state)
        if return_last:
            return epoch
        return best_epoch - 1 if zero_based else best_epoch
    return early_stopping


def _trained_one_more(out, args, kwargs) -> bool:
    return _script(args).epochs == _reference_epochs(args, kwargs) + 1


register(Exercise(
    "07.early_stopping",
    "early_stopping(model, train_epoch, validate, max_epochs, patience, min_delta=0.0) runs at most "
    "max_epochs epochs, numbered from 1; each epoch calls train_epoch(model), then "
    "val_loss = validate(model). An epoch improves when val_loss < best_loss - min_delta (strictly: a tie "
    "is no improvement; the first epoch always improves). After each improvement keep a copy of "
    "model.state_dict() (parameters and buffers) that later training cannot change. Stop as soon as "
    "`patience` epochs in a row have not improved. Before returning, load the best copy into the model; "
    "return the best epoch's number (an int).",
    early_stopping_reference,
    _stopping_cases(),
    _stopping_verify,
    [
        Mistake("state_dict() kept without a copy",
                "model.state_dict() returns the model's live tensors (so do dict(...), .detach() and, on "
                "the CPU, .cpu()): training keeps changing them. Keep copy.deepcopy(model.state_dict()) "
                "or {k: v.clone() for k, v in model.state_dict().items()}.",
                _stop_shared_state, detect=lambda out, a, k: any(a[0].loads)),
        Mistake("best state loaded back only when patience runs out",
                "the loop can also end because it reached max_epochs: load the best state after the loop "
                "(on both ways out), not only inside the `if bad_epochs >= patience:` branch.",
                _stop_restored_on_patience_only,
                detect=lambda out, a, k: (not a[0].loads and _script(a).epochs == a[3]
                                          and _same_state(a[0], _script(a).states[-1]))),
        Mistake("best state never loaded back",
                "remembering the best epoch is not enough: call model.load_state_dict(best_state) "
                "before returning, so the model is the best one.",
                _stop_never_restored,
                detect=lambda out, a, k: not a[0].loads and _same_state(a[0], _script(a).states[-1])),
        Mistake("only the parameters saved (buffers not restored)",
                "BatchNorm's running_mean and running_var are buffers: they are in model.state_dict() but "
                "not in model.parameters(). Copy and load the whole state_dict().",
                _stop_parameters_only),
        Mistake("patience off by one (`>` instead of `>=`)",
                "with patience=3, training stops when the 3rd epoch in a row has not improved: test "
                "`bad_epochs >= patience`.",
                _stopping_variant(strict_patience=True), detect=_trained_one_more),
        Mistake("counter not reset after an improvement",
                "patience counts epochs *in a row* without improvement: set the counter back to 0 "
                "whenever an epoch improves.",
                _stopping_variant(reset=False)),
        Mistake("compares with the previous epoch, not the best",
                "an epoch improves when it beats the best loss so far, not the epoch just before it: keep "
                "best_loss and compare with it.",
                _stopping_variant(against_best=False)),
        Mistake("min_delta ignored",
                "an improvement must be larger than min_delta: test val_loss < best_loss - min_delta.",
                _stopping_variant(use_delta=False)),
        Mistake("min_delta added the wrong way",
                "`val_loss < best_loss + min_delta` accepts a loss that got *worse* by less than min_delta: "
                "subtract it, val_loss < best_loss - min_delta.",
                _stopping_variant(delta_sign=1)),
        Mistake("a tie counted as an improvement (`<=`)",
                "an epoch that only equals the best loss has not improved: use `<`, not `<=`.",
                _stopping_variant(ties_improve=True)),
        Mistake("returns the last epoch, not the best",
                "return the number of the epoch with the best validation loss (the one you restored), "
                "not the epoch the loop stopped at.",
                _stopping_variant(return_last=True)),
        Mistake("epochs counted from 0",
                "the task numbers epochs from 1: loop `for epoch in range(1, max_epochs + 1)`.",
                _stopping_variant(zero_based=True)),
        Mistake("one epoch too few (range(1, max_epochs))",
                "range(1, max_epochs) stops at max_epochs - 1: write range(1, max_epochs + 1) to run all "
                "max_epochs epochs.",
                _stopping_variant(short_range=True)),
    ],
    may_modify=("model", "train_epoch", "validate"),
    time_limit=5.0,
))


# --- 07.warmup_cosine -----------------------------------------------------------------------------

def _warmup_cases():
    def case(lrs: tuple[float, ...], warmup_steps: int, total_steps: int):
        def factory():
            groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
            return (torch.optim.SGD(groups, lr=lrs[0]), warmup_steps, total_steps), {}
        return factory
    return [case((0.1,), 4, 12), case((0.2, 0.02), 3, 10), case((1.0,), 5, 6), case((0.5,), 2, 20)]


def _trace(scheduler, optimizer, steps: int) -> list[list[float]]:
    """The learning rate of every group at steps 0..steps (one optimizer step, then one scheduler step)."""
    lrs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps + 1):
            lrs.append([group["lr"] for group in optimizer.param_groups])
            optimizer.step()
            scheduler.step()
    return lrs


def _warmup_verify(out, ref, args, kwargs):
    optimizer, warmup_steps, total_steps = args
    if isinstance(out, (list, tuple)):
        return t("expected one scheduler, found a {out} of {len_out}: join them with SequentialLR(optimizer, "
                 "[warmup, cosine], milestones=[warmup_steps])", out=type(out).__name__, len_out=len(out))
    if not isinstance(out, torch.optim.lr_scheduler.LRScheduler):
        return t("expected a learning-rate scheduler (for example a SequentialLR), found {describe_out}",
                 describe_out=describe(out))
    if out.optimizer is not optimizer:
        return t("the scheduler drives another optimizer than the one passed in (was a new optimizer made inside?): "
                 "the learning rate of `optimizer` never changes")
    found = _trace(out, optimizer, total_steps)
    expected = _trace(ref, ref.optimizer, total_steps)
    for step, (got, want) in enumerate(zip(found, expected)):
        for group, (g, w) in enumerate(zip(got, want)):
            if abs(g - w) > 1e-9 * max(1.0, abs(w)):
                curve = ", ".join(f"{row[group]:.4g}" for row in found[: min(len(found), warmup_steps + 3)])
                digits = 6 if f"{w:.6g}" != f"{g:.6g}" else 12  # never the same printed number twice
                bases = [group_["initial_lr"] for group_ in ref.optimizer.param_groups]
                return (t("with warmup_steps={warmup_steps}, total_steps={total_steps}: expected the learning rate "
                          "of group {group} at step {step} to be {want}, found {got} "
                          "(difference {difference:.3g}; your first steps: {curve})",
                          warmup_steps=warmup_steps, total_steps=total_steps, group=group, step=step,
                          want=f"{w:.{digits}g}", got=f"{g:.{digits}g}", difference=g - w, curve=curve)
                        + _warmup_diagnosis(found, expected, bases, warmup_steps, total_steps))
    return None


def _close_curves(a: list[list[float]], b: list[list[float]]) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= 1e-9 * max(1.0, abs(y)) for ra, rb in zip(a, b)
                                    for x, y in zip(ra, rb))


def _warmup_diagnosis(found, expected, bases, warmup_steps, total_steps) -> str:
    """A sentence naming the mistake when the whole curve has its fingerprint, else ''."""
    if any(b != 1.0 for b in bases) and _close_curves(found, [[w * b for w, b in zip(row, bases)] for row in expected]):
        return t(". Your curve is the right one multiplied by base_lr: LambdaLR multiplies base_lr by what lr_lambda "
                 "returns, so lr_lambda must return a factor (1/warmup_steps ... 1 ... 0), not a learning rate")
    floors = found[-1]
    if warmup_steps < total_steps and all(f > 0 for f in floors) and _close_curves(
            found, [[w if step <= warmup_steps else e + (b - e) * w / b for w, b, e in zip(row, bases, floors)]
                    for step, row in enumerate(expected)]):
        return t(". Your cosine ends at {floors_0:.3g}, not 0, at step total_steps: CosineAnnealingLR's eta_min must "
                 "stay 0 (its default)", floors_0=floors[0])
    if total_steps - warmup_steps >= 2:
        short = _reference_curve(bases, warmup_steps, total_steps, t_max=total_steps - warmup_steps - 1)
        if _close_curves(found, short):
            return t(". Your cosine reaches 0 a step early and rises again: T_max is one step short; it is "
                     "total_steps - warmup_steps")
    return ""


def _reference_curve(bases, warmup_steps, total_steps, *, t_max):
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in bases]
    optimizer = torch.optim.SGD(groups, lr=bases[0])
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cosine = sched.CosineAnnealingLR(optimizer, T_max=t_max)
    return _trace(sched.SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps]), optimizer, total_steps)


def _warmup_zero(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=0.0, total_iters=warmup_steps)
    cosine = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps])


def _warmup_int_milestone(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cosine = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warmup, cosine], milestones=warmup_steps)


def _warmup_list(optimizer, warmup_steps, total_steps):
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    return [warmup, sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)]


def _warmup_new_optimizer(optimizer, warmup_steps, total_steps):
    own = torch.optim.SGD([p for g in optimizer.param_groups for p in g["params"]], lr=optimizer.defaults["lr"])
    return warmup_cosine_reference(own, warmup_steps, total_steps)


def _warmup_variant(*, start: str = "1/w", milestone: int = 0, t_max_total: bool = False,
                    total_iters: int = 0, order: str = "warmup first", chained: bool = False,
                    warm: bool = True, step_inside: bool = False):
    def warmup_cosine(optimizer, warmup_steps, total_steps):
        sched = torch.optim.lr_scheduler
        if not warm:
            return sched.CosineAnnealingLR(optimizer, T_max=total_steps)
        factor = 1 / warmup_steps if start == "1/w" else float(start)
        warmup = sched.LinearLR(optimizer, start_factor=factor, total_iters=warmup_steps + total_iters)
        t_max = total_steps if t_max_total else total_steps - warmup_steps
        cosine = sched.CosineAnnealingLR(optimizer, T_max=t_max)
        if chained:
            scheduler = sched.ChainedScheduler([warmup, cosine])
        else:
            parts = [warmup, cosine] if order == "warmup first" else [cosine, warmup]
            scheduler = sched.SequentialLR(optimizer, parts, milestones=[warmup_steps + milestone])
        if step_inside:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scheduler.step()
        return scheduler
    return warmup_cosine


register(Exercise(
    "07.warmup_cosine",
    "warmup_cosine(optimizer, warmup_steps, total_steps) returns a scheduler, stepped once per optimizer "
    "step (for example LinearLR and CosineAnnealingLR joined by SequentialLR; any scheduler with the same "
    "learning-rate curve passes): from step 0 to step "
    "warmup_steps the learning rate of every param group rises linearly from base_lr / warmup_steps "
    "(start_factor=1/warmup_steps: LinearLR refuses 0) to base_lr; then a cosine brings it to 0 at step "
    "total_steps (T_max = total_steps - warmup_steps). It does not step the scheduler itself.",
    warmup_cosine_reference,
    _warmup_cases(),
    _warmup_verify,
    [
        Mistake("start_factor=0",
                "LinearLR requires 0 < start_factor <= 1 (a learning rate of exactly 0 would waste the "
                "first step): use start_factor=1/warmup_steps.",
                _warmup_zero, error_match="Starting multiplicative factor"),
        Mistake("milestones as an int",
                "SequentialLR takes a list of milestones, one fewer than schedulers: "
                "milestones=[warmup_steps].",
                _warmup_int_milestone, error_match="has no len()"),
        Mistake("returns a list of schedulers",
                "two schedulers stepped by hand both change the same learning rate: join them with "
                "SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps]) and return that.",
                _warmup_list, detect=lambda out, a, k: isinstance(out, (list, tuple))),
        Mistake("a new optimizer inside",
                "build the schedulers on the optimizer you were given: a scheduler changes the learning "
                "rate of its own optimizer only.",
                _warmup_new_optimizer,
                detect=lambda out, a, k: isinstance(out, torch.optim.lr_scheduler.LRScheduler)
                and out.optimizer is not a[0]),
        Mistake("ChainedScheduler instead of SequentialLR",
                "ChainedScheduler applies both schedulers at every step (warm-up and cosine multiplied "
                "together); SequentialLR runs one, then the other, switching at the milestone.",
                _warmup_variant(chained=True)),
        Mistake("no warm-up",
                "a cosine alone starts at the full learning rate: put a LinearLR warm-up of warmup_steps "
                "steps in front of it with SequentialLR.",
                _warmup_variant(warm=False)),
        Mistake("cosine T_max counts the warm-up steps",
                "the cosine starts at the milestone, so it has total_steps - warmup_steps steps left: "
                "T_max=total_steps - warmup_steps, or the learning rate never reaches 0.",
                _warmup_variant(t_max_total=True)),
        Mistake("milestone one step early",
                "SequentialLR switches to the cosine at the milestone: milestones=[warmup_steps], the "
                "step at which the warm-up has reached base_lr.",
                _warmup_variant(milestone=-1)),
        Mistake("milestone one step late",
                "SequentialLR switches to the cosine at the milestone: milestones=[warmup_steps], not "
                "warmup_steps + 1.",
                _warmup_variant(milestone=1)),
        Mistake("warm-up length differs from the milestone",
                "LinearLR's total_iters and SequentialLR's milestone must both be warmup_steps.",
                _warmup_variant(total_iters=1)),
        Mistake("start factor not 1/warmup_steps",
                "the task starts the warm-up at base_lr / warmup_steps: start_factor=1/warmup_steps "
                "(LinearLR's default, 1/3, fits only warmup_steps=3).",
                _warmup_variant(start="0.3333333333333333")),
        Mistake("schedulers in the wrong order",
                "SequentialLR runs its schedulers in list order: [warmup, cosine].",
                _warmup_variant(order="cosine first")),
        Mistake("scheduler stepped inside the function",
                "return the scheduler unstepped: the training loop calls scheduler.step() once after "
                "each optimizer.step(), or the whole curve is shifted by one step.",
                _warmup_variant(step_inside=True)),
    ],
    time_limit=5.0,
))
