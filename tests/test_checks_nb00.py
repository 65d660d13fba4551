"""Notebook 00 exercises: learner-style right and wrong answers (required ids: tests/test_exercise_checks.py).

Each wrong answer must get [FAIL] with a message naming what to fix; each right answer [OK].
"""

from __future__ import annotations

import pytest

from course_utils.exercises import check
from tests.learner_code import assert_accepted, assert_rejected, define

WRONG = [
    # --- 00.double
    ("00.double", "def double(x):\n    x.mul_(2)\n    return x", ["in place"]),
    ("00.double", "def double(x):\n    x *= 2\n    return x", ["in place"]),
    ("00.double", "def double(x):\n    x *= 2\n    return x.clone()", ["in place"]),
    ("00.double", "def double(x):\n    y = x\n    y += y\n    return y", ["in place"]),
    ("00.double", "def double(x):\n    return x + 2", ["wrong values"]),
    ("00.double", "def double(x):\n    return x ** 2", ["wrong values"]),
    ("00.double", "def double(x):\n    return (2 * x).tolist()", ["tensor"]),
    ("00.double", "def double(x):\n    return 2 * x.numpy()", ["tensor"]),
    ("00.double", "def double(x):\n    return (2 * x).double()", ["dtype"]),
    ("00.double", "def double(x):\n    return (2 * x).sum()", ["shape"]),
    # --- 00.shrink_until_small
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            for _ in range(max_steps):
                x = layer(x)
            return x, max_steps""", ["while"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while True:
                x = layer(x)
                steps += 1
                if x.norm() <= 1 or steps >= max_steps:
                    return x, steps""", ["condition first"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() >= 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps""", ["> 1", "exactly 1"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps <= max_steps:
                x = layer(x)
                steps += 1
            return x, steps""", ["max_steps"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1:
                x = layer(x)
                steps += 1
            return x, steps""", ["max_steps"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                layer(x)
                steps += 1
            return x, steps""", ["x = layer(x)"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return steps, x""", ["(x, steps)"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.abs().sum() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps""", ["norm"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return [x, steps]""", ["tuple"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = torch.tensor(0)
            while x.norm() > 1 and steps < max_steps:
                x = layer(x)
                steps += 1
            return x, steps""", ["int"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            steps = 0
            while steps < max_steps:  # counts only when the layer runs: never ends once x is small
                if x.norm() > 1:
                    x = layer(x)
                    steps += 1
            return x, steps""", ["never ends"]),
    # --- 00.layer_shapes
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                shapes.append(tuple(x.shape))
                x = layer(x)
            return shapes""", ["after"]),
    ("00.layer_shapes", "def layer_shapes(model, x):\n    return [tuple(model(x).shape)]", ["loop"]),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(list(x.shape))
            return shapes""", ["tuple"]),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                shapes.append(tuple(layer(x).shape))
            return shapes""", ["x = layer(x)"]),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model.modules():
                x = layer(x)
                shapes.append(tuple(x.shape))
            return shapes""", ["modules()"]),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape[1:]))
            return shapes""", ["expected"]),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = {}
            for name, layer in model.named_children():
                x = layer(x)
                shapes[name] = tuple(x.shape)
            return shapes""", ["list"]),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(tuple(x.shape))
                return shapes""", ["one per layer"]),
    # --- a finished function that forgets `return`
    ("00.double", "def double(x):\n    y = 2 * x", ["return"]),
    ("00.shrink_until_small", "def shrink_until_small(x, layer, max_steps=10):\n    steps = 0\n    while x.norm() > 1 and steps < max_steps:\n        x = layer(x)\n        steps += 1", ["return"]),
    ("00.layer_shapes", "def layer_shapes(model, x):\n    shapes = []\n    for layer in model:\n        x = layer(x)\n        shapes.append(tuple(x.shape))", ["return"]),
]

RIGHT = [
    ("00.double", "def double(x):\n    return x * 2"),
    ("00.double", "def double(x):\n    return x + x"),
    ("00.double", "def double(x):\n    return x.clone().mul_(2)"),
    ("00.double", "def double(x):\n    return torch.mul(x, 2)"),
    ("00.double", "def double(x):\n    y = x.clone()\n    y *= 2\n    return y"),
    ("00.double", "def double(x):\n    return 2.0 * x"),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            for steps in range(max_steps):
                if x.norm() <= 1:
                    return x, steps
                x = layer(x)
            return x, max_steps"""),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            if x.norm() <= 1 or max_steps == 0:
                return x, 0
            y, n = shrink_until_small(layer(x), layer, max_steps - 1)
            return y, n + 1"""),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            n = 0
            while n < max_steps and torch.linalg.norm(x).item() > 1.0:
                x = layer(x)
                n += 1
            return (x, n)"""),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(x.shape)
            return shapes"""),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            out = []
            for name, layer in model.named_children():
                x = layer(x)
                out.append(tuple(x.size()))
            return out"""),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            with torch.no_grad():
                for i in range(len(model)):
                    x = model[i](x)
                    shapes.append(tuple(x.shape))
            return shapes"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_wrong_answer_is_rejected_with_what_to_fix(exercise_id: str, source: str, words: list[str]) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_correct_alternative_is_accepted(exercise_id: str, source: str) -> None:
    assert_accepted(exercise_id, source)


def test_double_in_place_then_copy_is_named() -> None:
    result = assert_rejected("00.double", "def double(x):\n    x *= 2\n    return x.clone()", [])
    assert "Hint (modifies the input in place)" in result.message


def test_double_returning_input_unchanged_is_not_called_in_place() -> None:
    result = check("00.double", define("def double(x):\n    return x"))
    assert result.status == "fail"
    assert "in place" not in result.message


# --- more answers written as a learner would ----------------------------------------------------------

MORE_WRONG = [
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            n = 0
            while x.norm() > 1:          # max_steps forgotten
                x = layer(x)
                n += 1
            return x, n""", ["at most max_steps"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            n = 0
            while x.norm() > 1 and n <= max_steps:   # one application too many
                x = layer(x)
                n += 1
            return x, n""", ["at most max_steps"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            n = 0
            while x.norm() >= 1 and n < max_steps:
                x = layer(x)
                n += 1
            return x, n""", ["x.norm() > 1"]),
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            n = 0
            while x.norm() > 1 and n < max_steps:
                x = layer(x)
                n += 1
            return n, x""", ["(x, steps)"]),
]

MORE_RIGHT = [
    ("00.shrink_until_small", """
        def shrink_until_small(x, layer, max_steps=10):
            for n in range(max_steps):
                if x.norm() <= 1:
                    return x, n
                x = layer(x)
            return x, max_steps"""),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            for layer in model:
                x = layer(x)
                shapes.append(x.shape)      # torch.Size is a tuple
            return shapes"""),
    ("00.layer_shapes", """
        def layer_shapes(model, x):
            shapes = []
            with torch.no_grad():
                for layer in model.children():
                    x = layer(x)
                    shapes.append(tuple(x.size()))
            return shapes"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), MORE_WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(MORE_WRONG)])
def test_more_wrong_answers_are_named(exercise_id, source, words) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), MORE_RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(MORE_RIGHT)])
def test_more_right_answers_pass(exercise_id, source) -> None:
    assert_accepted(exercise_id, source)
