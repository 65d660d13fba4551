"""Notebook 02 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch.nn.functional as F

from course_utils.exercises import check


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
