"""Every registered exercise: the reference passes, a stub is [TODO], every listed mistake
fails with a hint that names it. Required ids (COURSE_DESIGN section 4) must be registered."""

from __future__ import annotations

import pytest

from course_utils.exercises import check, get_exercise, list_exercises

EXERCISES = list_exercises()

# Required ids and, for each, words that must appear in the names of its mistakes.
REQUIRED_MISTAKES: dict[str, list[str]] = {
    "01.independent_copy": ["from_numpy", "dtype"],
    "01.to_device": ["top level", "non-tensors"],
    "02.per_sample_mse": ["(N,N)", "mean over everything"],
    "02.center_columns": ["row means", "global mean"],
    "03.accumulated_grads": ["no division", "not zeroed first", "zeroing inside the loop"],
    "04.count_trainable": ["frozen", "shared params twice"],
    "04.kaiming_init": ["Xavier", "biases not zeroed", "non-Linear"],
    "05.normalization_stats": ["global instead of per-channel", "wrong axes"],
    "06.train_one_epoch": ["missing zero_grad", "missing model.train()", "softmax before", "last loss or a tensor"],
    "06.evaluate": ["missing eval()", "gradients tracked", "wrong dim"],
    "07.training_memory": ["Adam counted once", "grads forgotten", "dtype size ignored"],
    "07.amp_train_step": ["unscaled loss", "scaler.step", "scaler.update"],
    "08.save_checkpoint": ["optimizer state missing", "scheduler missing", "RNG state missing", "non-atomic write"],
    "08.load_checkpoint": ["optimizer state missing", "scheduler missing", "RNG state missing"],
    "09.seed_everything": ["numpy not seeded", "python `random` not seeded"],
}


def _stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_reference_passes(exercise_id: str) -> None:
    result = check(exercise_id, get_exercise(exercise_id).reference)
    assert result.status == "ok", result.message
    assert result.passed and result.message.startswith("[OK]")


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_is_todo(exercise_id: str) -> None:
    for stub in (_stub, lambda *a, **k: None, lambda *a, **k: ...):
        result = check(exercise_id, stub)
        assert result.status == "todo", result.message
        assert result.message.startswith("[TODO]") and not result.passed


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_every_mistake_fails_with_its_hint(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    assert len(exercise.mistakes) >= 1, "each exercise lists at least one typical mistake"
    for mistake in exercise.mistakes:
        result = check(exercise_id, mistake.example)
        assert result.status == "fail", (mistake.name, result.message)
        assert f"Hint ({mistake.name})" in result.message, (mistake.name, result.message)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_raising_candidate_is_reported_not_raised(exercise_id: str) -> None:
    def broken(*args, **kwargs):
        raise ValueError("learner bug")

    result = check(exercise_id, broken)
    assert result.status == "fail"
    assert "ValueError: learner bug" in result.message
    assert "Traceback" not in result.message


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_wrong_type_is_reported(exercise_id: str) -> None:
    result = check(exercise_id, lambda *a, **k: "a string")
    assert result.status == "fail"
    assert "Traceback" not in result.message


@pytest.mark.parametrize("exercise_id", sorted(REQUIRED_MISTAKES))
def test_required_exercise_and_mistakes_present(exercise_id: str) -> None:
    assert exercise_id in EXERCISES
    names = " | ".join(m.name for m in get_exercise(exercise_id).mistakes)
    for word in REQUIRED_MISTAKES[exercise_id]:
        assert word in names, f"{exercise_id}: no mistake named with {word!r} (have: {names})"
