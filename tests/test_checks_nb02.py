"""Notebook 02 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch.nn.functional as F

import pytest

from course_utils.exercises import check
from tests.learner_code import assert_accepted, assert_rejected

WRONG = [
    # --- 02.per_sample_mse
    ("02.per_sample_mse", "def per_sample_mse(pred, target):\n    return ((pred - target) ** 2).mean(dim=1)",
     ["(N, N)"]),
    ("02.per_sample_mse", "def per_sample_mse(pred, target):\n    return (pred - target) ** 2", ["(N, N)"]),
    ("02.per_sample_mse", "def per_sample_mse(pred, target):\n    return ((pred - target) ** 2).mean()",
     ["one number"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            return ((pred.reshape(n, -1) - target.reshape(n, -1)) ** 2).sum(dim=1)""", [".sum(dim=1)"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            pred, target = pred.squeeze(), target.squeeze()
            if pred.dim() == 1:
                return (pred - target) ** 2
            return ((pred - target) ** 2).mean(dim=1)""", ["squeeze", "batch of one"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            return ((pred.view(-1) - target.view(-1)) ** 2)""", ["shape"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            return ((pred.reshape(n, -1) - target.reshape(n, -1)) ** 2).mean(dim=0)""", ["dim=1"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            return ((pred.reshape(n, -1) - target.reshape(n, -1)) ** 2).mean(dim=1, keepdim=True)""",
     ["keepdim"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            return ((pred.reshape(n, -1) - target.reshape(n, -1)) ** 2).mean(dim=1).sqrt()""", ["sqrt"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            return (pred.reshape(n, -1) - target.reshape(n, -1)).abs().mean(dim=1)""", ["square"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            return ((pred.reshape(n, -1).float() - target.reshape(n, -1).float()) ** 2).mean(dim=1)""",
     ["dtype"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            p = pred.reshape(n, -1)
            p.sub_(target.reshape(n, -1))
            return (p ** 2).mean(dim=1)""", ["in place"]),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            return F.mse_loss(pred, target, reduction="none")""", ["(N, N)"]),
    # --- 02.center_columns
    ("02.center_columns", "def center_columns(x):\n    return x - x.mean(dim=1, keepdim=True)", ["row means"]),
    ("02.center_columns", "def center_columns(x):\n    return x - x.mean()", ["global"]),
    ("02.center_columns", "def center_columns(x):\n    return x - x.mean(dim=1)", ["keepdim"]),
    ("02.center_columns", "def center_columns(x):\n    x -= x.mean(dim=0)\n    return x", ["in place"]),
    ("02.center_columns", "def center_columns(x):\n    return x.sub_(x.mean(dim=0))", ["in place"]),
    ("02.center_columns", "def center_columns(x):\n    return (x - x.mean(dim=0)) / x.std(dim=0)", ["std"]),
    ("02.center_columns", "def center_columns(x):\n    return x.mean(dim=0, keepdim=True)", ["shape"]),
    ("02.center_columns", "def center_columns(x):\n    return x - x.mean(dim=0).unsqueeze(1)", ["keepdim"]),
    ("02.center_columns", "def center_columns(x):\n    return x.float() - x.float().mean(dim=0)", ["dtype"]),
    ("02.center_columns", "def center_columns(x):\n    return x - x.median(dim=0).values", ["mean"]),
    # --- 02.pairwise_sq_dists
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return ((a - b) ** 2).sum(dim=-1)", ["None"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(dim=1)",
     ["dim=-1"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return ((a[None, :, :] - b[:, None, :]) ** 2).sum(dim=-1)",
     ["transposed"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return ((a[:, None] - b[None]) ** 2).sum(-1).sqrt()",
     ["squares"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return torch.cdist(a, b) ** 2", ["cdist"]),
    ("02.pairwise_sq_dists", """
        def pairwise_sq_dists(a, b):
            out = torch.zeros(len(a), len(b))
            for i in range(len(a)):
                for j in range(len(b)):
                    out[i, j] = ((a[i] - b[j]) ** 2).sum()
            return out""", ["loop"]),
    ("02.pairwise_sq_dists", """
        def pairwise_sq_dists(a, b):
            return torch.stack([((row - b) ** 2).sum(dim=1) for row in a])""", ["loop"]),
    ("02.pairwise_sq_dists", """
        def pairwise_sq_dists(a, b):
            return (a * a).sum(1, keepdim=True) + (b * b).sum(1) - a @ b.T""", ["wrong values"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return ((a[:, None] - b[None]) ** 2).sum()",
     ["shape"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return (a[:, None] - b[None]).abs().sum(-1)",
     ["square"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return ((a[:, None].float() - b[None].float()) ** 2).sum(-1)",
     ["dtype"]),
    # --- a finished function that forgets `return`
    ("02.per_sample_mse", "def per_sample_mse(pred, target):\n    n = len(pred)\n    loss = ((pred.reshape(n, -1) - target.reshape(n, -1)) ** 2).mean(dim=1)", ["return"]),
    ("02.center_columns", "def center_columns(x):\n    centered = x - x.mean(dim=0, keepdim=True)", ["return"]),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    d = ((a[:, None] - b[None]) ** 2).sum(-1)", ["return"]),
]

RIGHT = [
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            if pred.dim() == 1:
                pred = pred.unsqueeze(1)
            if target.dim() == 1:
                target = target.unsqueeze(1)
            return ((pred - target) ** 2).mean(dim=1)"""),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            pred = pred.flatten(1) if pred.dim() > 1 else pred[:, None]
            target = target.flatten(1) if target.dim() > 1 else target[:, None]
            return (pred - target).pow(2).mean(-1)"""),
    ("02.per_sample_mse", """
        def per_sample_mse(pred, target):
            n = len(pred)
            return F.mse_loss(pred.view(n, -1), target.view(n, -1), reduction="none").mean(1)"""),
    ("02.center_columns", "def center_columns(x):\n    return x - x.mean(axis=0)"),
    ("02.center_columns", "def center_columns(x):\n    return x - torch.mean(x, 0, True)"),
    ("02.center_columns", "def center_columns(x):\n    y = x.clone()\n    y -= y.mean(0)\n    return y"),
    ("02.center_columns", "def center_columns(x):\n    return (x.T - x.T.mean(dim=1, keepdim=True)).T"),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return (a.unsqueeze(1) - b.unsqueeze(0)).pow(2).sum(2)"),
    ("02.pairwise_sq_dists", "def pairwise_sq_dists(a, b):\n    return torch.einsum('nmd,nmd->nm', a[:, None] - b, a[:, None] - b)"),
    ("02.pairwise_sq_dists", """
        def pairwise_sq_dists(a, b):
            # |a|^2 - 2 a.b + |b|^2, one matrix product
            return (a ** 2).sum(-1)[:, None] - 2 * a @ b.T + (b ** 2).sum(-1)[None, :]"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_wrong_answer_is_rejected_with_what_to_fix(exercise_id: str, source: str, words: list[str]) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_correct_alternative_is_accepted(exercise_id: str, source: str) -> None:
    assert_accepted(exercise_id, source)


def test_per_sample_mse_other_correct_answers_pass() -> None:
    def via_view(pred, target):
        return ((pred.view(len(pred), -1) - target.view(len(target), -1)) ** 2).mean(dim=1)

    def via_functional(pred, target):
        n = pred.shape[0]
        return F.mse_loss(pred.reshape(n, -1), target.reshape(n, -1), reduction="none").mean(dim=1)

    for candidate in (via_view, via_functional):
        assert check("02.per_sample_mse", candidate).passed


def test_per_sample_mse_silent_broadcast_with_right_shape_is_named() -> None:
    # (N,1) - (N,) -> (N,N), then a mean over dim 1 gives shape (N,): right shape, wrong numbers.
    result = check("02.per_sample_mse", lambda p, t: ((p - t) ** 2).mean(dim=1))
    assert result.status == "fail"
    assert "Hint (result broadcast to (N,N))" in result.message


def test_per_sample_mse_mse_loss_default_is_mean_over_everything() -> None:
    result = check("02.per_sample_mse", lambda p, t: F.mse_loss(p.reshape(len(p), -1), t.reshape(len(t), -1)))
    assert "Hint (mean over everything)" in result.message


def test_center_columns_without_keepdim_is_correct() -> None:
    # dim 0 reduced -> shape (D,), which lines up with the last dim: broadcasting does the right thing.
    assert check("02.center_columns", lambda x: x - x.mean(dim=0)).passed


def test_center_columns_keepdim_mistakes() -> None:
    result = check("02.center_columns", lambda x: x - x.mean(dim=1))
    assert "Hint (row means without keepdim" in result.message
    result = check("02.center_columns", lambda x: x - x.mean(dim=1).unsqueeze(1))
    assert "Hint (subtracts row means)" in result.message


def test_center_columns_in_place_is_named() -> None:
    def in_place(x):
        return x.sub_(x.mean(dim=0, keepdim=True))

    assert "Hint (modifies the input in place)" in check("02.center_columns", in_place).message


def test_pairwise_sq_dists_alternatives() -> None:
    def expanded(a, b):
        return (a * a).sum(1, keepdim=True) - 2 * a @ b.T + (b * b).sum(1)

    assert check("02.pairwise_sq_dists", expanded).passed
    result = check("02.pairwise_sq_dists", lambda a, b: ((a.unsqueeze(1) - b) ** 2).sum(-1).T)
    assert "Hint (result transposed (M, N))" in result.message


def test_center_columns_in_place_then_copy_is_named() -> None:
    # Returning a copy does not undo the damage: the caller's x was overwritten first.
    def inplace_then_clone(x):
        x -= x.mean(dim=0, keepdim=True)
        return x.clone()

    result = check("02.center_columns", inplace_then_clone)
    assert result.status == "fail"
    assert "Hint (modifies the input in place)" in result.message
