"""Checkers of notebook 02 (broadcasting pitfalls), in notebook order: ``02.per_sample_mse``,
``02.center_columns``, ``02.pairwise_sq_dists``.

Shapes are checked before values, and ``02.per_sample_mse`` recognises a silent (N, N) broadcast even
when a mean brings the shape back to (N,). The inputs of ``02.center_columns`` are remembered with a
copy when their case is built (``_remember``), so an in-place change is named as such.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Callable

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


#: input tensor -> a copy taken when its test case was built (to see whether a candidate changed it)
_ORIGINAL: WeakTensorKeyDictionary = WeakTensorKeyDictionary()


def _remember(x: torch.Tensor) -> torch.Tensor:
    _ORIGINAL[x] = x.clone()
    return x


def _input_changed(x: object) -> bool:
    before = _ORIGINAL.get(x) if isinstance(x, torch.Tensor) else None
    return before is not None and not torch.equal(x, before)


def _close(out: object, expected: torch.Tensor) -> bool:
    return (isinstance(out, torch.Tensor) and out.shape == expected.shape
            and torch.allclose(out.detach().to(expected.dtype), expected, atol=1e-5, rtol=1e-4))


def _shape_problem(out: object, expected: tuple[int, ...], meaning: str) -> str | None:
    if not isinstance(out, torch.Tensor):
        return t("expected a torch.Tensor of shape {want}, found {got}", want=expected, got=describe(out))
    if tuple(out.shape) != expected:
        return t("expected shape {want} ({meaning}), found shape {got}", want=expected, meaning=meaning,
                 got=tuple(out.shape))
    return None


# --- 02.per_sample_mse -----------------------------------------------------------------------

def per_sample_mse_reference(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    pred = pred.reshape(pred.shape[0], -1)        # (N,) -> (N, 1); (N, D) unchanged
    target = target.reshape(target.shape[0], -1)
    assert pred.shape == target.shape, (pred.shape, target.shape)
    return ((pred - target) ** 2).mean(dim=1)


def _mse_broadcast(pred, target):
    return (pred - target) ** 2


def _mse_everything(pred, target):
    return ((pred.reshape(-1) - target.reshape(-1)) ** 2).mean()


def _mse_sum_features(pred, target):
    pred, target = pred.reshape(pred.shape[0], -1), target.reshape(target.shape[0], -1)
    return ((pred - target) ** 2).sum(dim=1)


def _broadcast_detect(out, args, kwargs) -> bool:
    pred, target = args
    bad = (pred - target) ** 2
    if bad.dim() < 2 or bad.shape[0] != bad.shape[1] or not isinstance(out, torch.Tensor) or out.dim() == 0:
        return False
    if out.dim() == 2 and out.shape == bad.shape:
        return True  # the (N, N) table itself, whatever its values
    return any(_close(out, candidate) for candidate in (bad.mean(dim=0), bad.mean(dim=1)))


def _sq_err(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    n = pred.shape[0]
    return (pred.reshape(n, -1) - target.reshape(n, -1)) ** 2


def _mse_squeeze(pred, target):
    pred, target = pred.squeeze(), target.squeeze()   # a batch of one loses its batch dim too
    if pred.dim() <= 1:
        return (pred - target) ** 2
    return ((pred - target) ** 2).mean(dim=1)


def _mse_batch_mean(pred, target):
    return _sq_err(pred, target).mean(dim=0)


def _mse_keepdim(pred, target):
    return _sq_err(pred, target).mean(dim=1, keepdim=True)


def _mse_inplace(pred, target):
    n = pred.shape[0]
    diff = pred.reshape(n, -1)          # a view of the caller's pred
    diff.sub_(target.reshape(n, -1))    # ... overwritten in place
    return (diff ** 2).mean(dim=1)


def _mse_value_is(wrong: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]):
    def detect(out, args, kwargs) -> bool:
        ref = per_sample_mse_reference(*args)
        return _close(out, wrong(*args)) and not _close(out, ref)
    return detect


def _mse_cases():
    def pair(p: torch.Tensor, t: torch.Tensor):
        return lambda: ((_remember(p.clone()), _remember(t.clone())), {})
    return [
        pair(_randn(1, 6, 1), _randn(2, 6)),          # model output (N,1), dataset targets (N,)
        pair(_randn(3, 5), _randn(4, 5, 1)),
        pair(_randn(5, 4, 3), _randn(6, 4, 3)),       # 3 outputs per sample: average them
        pair(_randn(7, 7), _randn(8, 7)),
        pair(_randn(9, 1, 1), _randn(10, 1)),         # a batch of one
        pair(_randn(11, 1, 4).double(), _randn(12, 1, 4).double()),   # a batch of one, float64
        pair(_randn(13, 5).double(), _randn(14, 5, 1).double()),      # float64 stays float64
    ]


def _inputs_changed_problem(args) -> str | None:
    for name, value in zip(("pred", "target", "x", "a", "b"), args):
        if _input_changed(value):
            return t("your function changed its input `{name}` in place (an op ending in `_`, `-=`, or "
                     "writing through a view); expected the inputs unchanged", name=name)
    return None


def _mse_verify(out, ref, args, kwargs):
    n = args[0].shape[0]
    return (_inputs_changed_problem(args)
            or _shape_problem(out, (n,), t("one loss value per sample for inputs of shapes {a} and {b}",
                                           a=tuple(args[0].shape), b=tuple(args[1].shape)))
            or compare_tensors(out, ref, name=t("per-sample loss")))


register(Exercise(
    "02.per_sample_mse",
    "per_sample_mse(pred, target) returns the mean squared error of each sample, shape (N,), in the "
    "inputs' dtype, without changing the inputs. Either pred and target both have shape (N, D), or each "
    "of them has shape (N,) or (N, 1): a 1-D tensor is one value per sample, so (N,) and (N, 1) describe "
    "the same numbers. N may be 1.",
    per_sample_mse_reference,
    _mse_cases(),
    _mse_verify,
    [
        Mistake("result broadcast to (N,N)",
                "pred (N, 1) minus target (N,) broadcasts to an (N, N) table of every prediction "
                "against every target. Give both the same shape first: pred.reshape(N, -1) and "
                "target.reshape(N, -1) (or squeeze/unsqueeze), and assert the shapes match.",
                _mse_broadcast, detect=_broadcast_detect),
        Mistake("mean over everything",
                "a plain .mean() averages over the batch too and returns one number; average only "
                "over the feature dim: .mean(dim=1) on (N, D) tensors.",
                _mse_everything,
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.dim() == 0 and a[0].shape[0] > 1),
        Mistake("sums the features instead of averaging them",
                "mean squared error divides by the number of features D: use .mean(dim=1), not .sum(dim=1).",
                _mse_sum_features, detect=_mse_value_is(_mse_sum_features)),
        Mistake("modifies an input in place",
                "sub_() (or -=) on pred, or on a view of it such as pred.reshape(n, -1), overwrites the "
                "caller's predictions; compute a new tensor: (pred - target) ** 2.",
                _mse_inplace, detect=lambda out, a, k: any(_input_changed(t) for t in a)),
        Mistake("squeeze() breaks a batch of one",
                "squeeze() without a dim removes EVERY size-1 dim: for N = 1 the batch dim goes too, and "
                "the result is no longer one value per sample. Use reshape(N, -1) (or squeeze(1)/unsqueeze(1)).",
                _mse_squeeze, error_match="Dimension out of range",
                detect=lambda out, a, k: a[0].shape[0] == 1 and isinstance(out, torch.Tensor)
                and tuple(out.shape) != (1,)),
        Mistake("averages over the batch (dim=0) instead of the features",
                "dim 0 is the batch: .mean(dim=0) gives one value per feature. Average over the features "
                "of each sample: .mean(dim=1).",
                _mse_batch_mean, detect=lambda out, a, k: a[0].shape[0] > 1 and _close(out, _mse_batch_mean(*a))),
        Mistake("keepdim=True leaves shape (N, 1)",
                "the task asks for shape (N,): drop keepdim=True (or .squeeze(1) the result).",
                _mse_keepdim, detect=lambda out, a, k: isinstance(out, torch.Tensor)
                and tuple(out.shape) == (a[0].shape[0], 1)),
        Mistake("divides by the batch size N instead of the number of features D",
                "the mean of each sample's squared errors divides by its number of features D (the row "
                "length), not by the batch size N: ((pred - target) ** 2).mean(dim=1).",
                lambda p, t: _sq_err(p, t).sum(dim=1) / p.shape[0],
                detect=lambda out, a, k: not _close(out, per_sample_mse_reference(*a))
                and _close(out, _sq_err(*a).sum(dim=1) / a[0].shape[0])),
        Mistake("a root or absolute value instead of the squared error",
                "the task asks for the mean of the SQUARED differences, ((pred - target) ** 2).mean(dim=1): "
                "no .sqrt() at the end (RMSE) and no .abs() (MAE).",
                lambda p, t: _sq_err(p, t).mean(dim=1).sqrt(),
                detect=lambda out, a, k: not _close(out, per_sample_mse_reference(*a)) and (
                    _close(out, _sq_err(*a).mean(dim=1).sqrt()) or _close(out, _sq_err(*a).sqrt().mean(dim=1)))),
    ],
))


# --- 02.center_columns -----------------------------------------------------------------------

def center_columns_reference(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(dim=0, keepdim=True)


def _center_rows(x):
    return x - x.mean(dim=1, keepdim=True)


def _center_global(x):
    return x - x.mean()


def _center_rows_no_keepdim(x):
    return x - x.mean(dim=1)


def _center_inplace(x):
    x -= x.mean(dim=0)
    return x


def _center_standardise(x):
    return (x - x.mean(dim=0)) / x.std(dim=0)


def _center_means_as_rows(x):
    return x - x.mean(dim=0).unsqueeze(1)   # (D, 1): lined up with the rows


def _center_value_is(out, x: torch.Tensor, wrong: torch.Tensor) -> bool:
    """The candidate computed `wrong`, which differs from the centred x on this input."""
    return _close(out, wrong) and not _close(out, center_columns_reference(x))


def _center_cases():
    # A square input first: there the no-keepdim bug runs silently instead of raising.
    return [lambda: ((_remember(_randn(10, 4, 4) * 2 + 1),), {}),
            lambda: ((_remember(_randn(11, 6, 3) + torch.arange(3.0) * 5),), {}),
            lambda: ((_remember(_randn(12, 2, 5) - 3),), {}),
            lambda: ((_remember((_randn(13, 5, 2) * 3).double()),), {}),        # float64 stays float64
            lambda: ((_remember(_randn(14, 3, 4).t() + 2),), {})]              # non-contiguous (4, 3)


def _center_verify(out, ref, args, kwargs):
    (x,) = args
    changed = _input_changed(x)
    if changed and isinstance(out, torch.Tensor) and out.data_ptr() == x.data_ptr():
        return t("your function changed its input in place and returned it; expected a new tensor")
    if changed:
        return t("your function changed its input in place (x no longer holds the values it was "
                 "called with); expected x unchanged")
    return _shape_problem(out, tuple(x.shape), t("same shape as x")) or compare_tensors(out, ref,
                                                                                      name=t("centered x"))


register(Exercise(
    "02.center_columns",
    "center_columns(x) returns x (shape (N, D): N samples, D features) minus the mean of each "
    "column, so every column (feature) of the result has mean 0, in x's dtype. Do not change x.",
    center_columns_reference,
    _center_cases(),
    _center_verify,
    [
        Mistake("modifies the input in place",
                "`x -= ...` (or any op ending in `_`) overwrites the caller's data, even if you "
                "return a copy afterwards; return a new tensor: `return x - ...`.",
                _center_inplace, detect=lambda out, a, k: _input_changed(a[0])),
        Mistake("subtracts row means",
                "dim=1 averages across the features of each sample; the column (feature) means "
                "come from averaging over the samples: x.mean(dim=0, keepdim=True).",
                _center_rows, detect=lambda out, a, k: _close(out, _center_rows(a[0]))),
        Mistake("subtracts global mean",
                "x.mean() is one number for the whole tensor; every column needs its own mean: "
                "x.mean(dim=0, keepdim=True) has shape (1, D).",
                _center_global, detect=lambda out, a, k: _close(out, _center_global(a[0]))),
        Mistake("row means without keepdim (lined up with the wrong axis)",
                "x.mean(dim=1) has shape (N,), which broadcasting lines up with the LAST dim of x: "
                "on a square x it runs and subtracts the wrong numbers. You want column means, "
                "x.mean(dim=0, keepdim=True); keepdim=True keeps reductions lined up.",
                _center_rows_no_keepdim, error_match="must match the size of tensor",
                detect=lambda out, a, k: a[0].shape[0] == a[0].shape[1]
                and _close(out, a[0] - a[0].mean(dim=1))),
        Mistake("divides by the std (standardises instead of centring)",
                "centring only subtracts the column means; dividing by the std as well is "
                "standardisation, a different task: return x - x.mean(dim=0, keepdim=True).",
                _center_standardise, detect=lambda out, a, k: _close(out, _center_standardise(a[0]))),
        Mistake("median instead of mean",
                "x.median(dim=0) is the middle value of each column, not its average; centring subtracts "
                "the mean: x - x.mean(dim=0, keepdim=True).",
                lambda x: x - x.median(dim=0, keepdim=True).values,
                detect=lambda out, a, k: _center_value_is(out, a[0], a[0] - a[0].median(dim=0, keepdim=True).values)),
        Mistake("divides the column sums by N - 1",
                "the mean divides the column sum by the number of samples N (N - 1 belongs to the unbiased "
                "variance, not the mean): x.mean(dim=0, keepdim=True).",
                lambda x: x - x.sum(dim=0, keepdim=True) / (x.shape[0] - 1),
                detect=lambda out, a, k: _center_value_is(out, a[0], a[0] - a[0].sum(dim=0, keepdim=True)
                                                          / (a[0].shape[0] - 1))),
        Mistake("subtracts the column minimum",
                "x - x.min(dim=0).values shifts each column to start at 0, but its mean is not 0; subtract "
                "the column mean: x.mean(dim=0, keepdim=True).",
                lambda x: x - x.min(dim=0, keepdim=True).values,
                detect=lambda out, a, k: _center_value_is(out, a[0], a[0] - a[0].min(dim=0, keepdim=True).values)),
        Mistake("result transposed",
                "return the centred x in x's own layout (N, D): no .T on the result.",
                lambda x: center_columns_reference(x).T,
                detect=lambda out, a, k: a[0].shape[0] == a[0].shape[1]
                and _center_value_is(out, a[0], center_columns_reference(a[0]).T)),
        Mistake("column means lined up with the rows (unsqueeze(1))",
                "x.mean(dim=0) has shape (D,), one mean per column; .unsqueeze(1) makes it (D, 1), which "
                "lines up with the ROWS of x. Keep it (1, D): x.mean(dim=0, keepdim=True).",
                _center_means_as_rows, error_match="must match the size of tensor",
                detect=lambda out, a, k: a[0].shape[0] == a[0].shape[1] and _close(out, _center_means_as_rows(a[0]))),
    ],
))


# --- 02.pairwise_sq_dists ----------------------------------------------------------------------

def pairwise_sq_dists_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    diff = a[:, None, :] - b[None, :, :]   # (N, 1, D) - (1, M, D) -> (N, M, D)
    return (diff ** 2).sum(dim=-1)


def _pairs_rowwise(a, b):
    return ((a - b) ** 2).sum(dim=-1)


def _pairs_wrong_sum(a, b):
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(dim=1)


def _pairs_transposed(a, b):
    return ((a[None, :, :] - b[:, None, :]) ** 2).sum(dim=-1)


def _pairs_sqrt(a, b):
    return pairwise_sq_dists_reference(a, b).sqrt()


def _pairs_expansion_no_keepdim(a, b):
    return (a * a).sum(1) + (b * b).sum(1) - 2 * a @ b.T


def _pairs_plus_cross(a, b):
    return (a * a).sum(1, keepdim=True) + (b * b).sum(1) + 2 * a @ b.T


def _pairs_l1(a, b):
    return (a[:, None, :] - b[None, :, :]).abs().sum(dim=-1)


def _pairs_mean(a, b):
    return ((a[:, None, :] - b[None, :, :]) ** 2).mean(dim=-1)


def _pairs_squeezed(a, b):
    return pairwise_sq_dists_reference(a, b).squeeze()


def _pairs_value_is(out, args, wrong: torch.Tensor) -> bool:
    """The candidate computed `wrong`, which differs from the distance table on this input."""
    return _close(out, wrong) and not _close(out, pairwise_sq_dists_reference(*args))


def _forbidden_in_source(func: Callable) -> str | None:
    """The task says "no Python loops, no torch.cdist": read the candidate's source (a notebook cell's
    source is available to inspect) and name what it uses. No source available: nothing to say."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    loops = (ast.For, ast.While, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("map", "filter"):
            return t("your function uses {func}() over the rows (line `{line}`), a Python "
                     "loop in disguise; the task is one broadcast expression with no loop: "
                     "a[:, None, :] - b[None, :, :] has shape (N, M, D)", func=node.func.id,
                     line=ast.unparse(node)[:60])
        if isinstance(node, ast.Attribute) and node.attr == "cdist":
            return t("your function uses torch.cdist; the task is to build the table with broadcasting "
                     "yourself: a[:, None, :] - b[None, :, :] has shape (N, M, D)")
        if isinstance(node, loops):
            kind = t("a Python loop") if isinstance(node, (ast.For, ast.While)) else t("a comprehension (a loop)")
            return t("your function uses {kind} (line `{line}`); the task "
                     "is one broadcast expression with no loop: a[:, None, :] - b[None, :, :] has shape (N, M, D)",
                     kind=kind, line=ast.unparse(node).splitlines()[0][:60])
    return None


def _pairs_cases():
    return [lambda: ((_randn(22, 5, 3), _randn(23, 5, 3)), {}),   # N == M: row-by-row runs silently
            lambda: ((_randn(20, 3, 2), _randn(21, 4, 2)), {}),
            lambda: ((_randn(24, 1, 4), _randn(25, 6, 4)), {}),
            lambda: ((_randn(26, 4, 1), _randn(27, 2, 1)), {}),
            lambda: ((_randn(28, 3, 3).double(), _randn(29, 2, 3).double()), {})]   # float64 stays float64


def _pairs_verify(out, ref, args, kwargs):
    n, m = args[0].shape[0], args[1].shape[0]
    return (_shape_problem(out, (n, m), t("row i, column j: squared distance from a[i] to b[j]"))
            or compare_tensors(out, ref, name=t("distance table")))


register(Exercise(
    "02.pairwise_sq_dists",
    "pairwise_sq_dists(a, b) takes a (N, D) and b (M, D) and returns the (N, M) table whose "
    "entry [i, j] is the squared Euclidean distance between a[i] and b[j], in the inputs' dtype. "
    "Use broadcasting (no Python loops, no torch.cdist).",
    pairwise_sq_dists_reference,
    _pairs_cases(),
    _pairs_verify,
    [
        Mistake("no unsqueeze: compares row i with row i only",
                "a - b pairs a[i] with b[i] (or fails when N != M). Insert size-1 dims so every "
                "row meets every row: a[:, None, :] - b[None, :, :] has shape (N, M, D).",
                _pairs_rowwise, error_match="must match the size of tensor",
                detect=lambda out, a, k: a[0].shape == a[1].shape and _close(out, _pairs_rowwise(*a))),
        Mistake("|a|^2 + |b|^2 - 2ab without keepdim",
                "(a * a).sum(1) has shape (N,), which broadcasting lines up with the LAST dim (the columns, "
                "indexed by b); keep it a column: (a * a).sum(1, keepdim=True) has shape (N, 1), and "
                "(b * b).sum(1) of shape (M,) lines up with the columns.",
                _pairs_expansion_no_keepdim,
                detect=lambda out, a, k: a[0].shape[0] == a[1].shape[0]
                and _pairs_value_is(out, a, _pairs_expansion_no_keepdim(*a))),
        Mistake("+ 2ab instead of - 2ab",
                "|a - b|^2 = |a|^2 + |b|^2 - 2 a.b: the cross term is SUBTRACTED.",
                _pairs_plus_cross, detect=lambda out, a, k: _pairs_value_is(out, a, _pairs_plus_cross(*a))),
        Mistake("dot products instead of distances",
                "a @ b.T gives the dot products a[i].b[j], not the distances; broadcast the differences "
                "a[:, None, :] - b[None, :, :] and sum their squares over the last dim.",
                lambda a, b: a @ b.T, detect=lambda out, a, k: _pairs_value_is(out, a, a[0] @ a[1].T)),
        Mistake("absolute differences (L1) instead of squared",
                "(a[:, None] - b[None]).abs().sum(-1) is the L1 distance; the task asks for the squared "
                "Euclidean distance: square the differences, then sum.",
                _pairs_l1, detect=lambda out, a, k: _pairs_value_is(out, a, _pairs_l1(*a))),
        Mistake("mean over D instead of sum",
                "the squared distance SUMS the squared differences over the D features: .sum(dim=-1), not .mean.",
                _pairs_mean, detect=lambda out, a, k: a[0].shape[1] > 1 and _pairs_value_is(out, a, _pairs_mean(*a))),
        Mistake("squeeze() drops the size-1 dim of N = 1 or M = 1",
                "squeeze() without a dim removes EVERY size-1 dim: for a single row in a (or b) the table is "
                "no longer (N, M). Leave the (N, M) result as it is.",
                _pairs_squeezed, detect=lambda out, a, k: isinstance(out, torch.Tensor)
                and pairwise_sq_dists_reference(*a).squeeze().shape != (a[0].shape[0], a[1].shape[0])
                and _close(out, pairwise_sq_dists_reference(*a).squeeze())),
        Mistake("sums over the wrong dim",
                "the (N, M, D) difference must be summed over D, the LAST dim: .sum(dim=-1).",
                _pairs_wrong_sum, detect=lambda out, a, k: _close(out, _pairs_wrong_sum(*a))),
        Mistake("result transposed (M, N)",
                "put a's rows first: a[:, None, :] - b[None, :, :] gives rows indexed by a.",
                _pairs_transposed,
                detect=lambda out, a, k: _close(out, pairwise_sq_dists_reference(*a).mT)),
        Mistake("distances instead of squared distances",
                "a final .sqrt() (or torch.cdist) gives distances; the task asks for their squares.",
                _pairs_sqrt, detect=lambda out, a, k: _close(out, pairwise_sq_dists_reference(*a).sqrt())),
    ],
    inspect=_forbidden_in_source,
))
