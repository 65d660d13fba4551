"""Auto-checked exercises: ``check(exercise_id, candidate)`` and the checker framework.

Every exercise lives in ``course_utils/checks/nbNN.py`` (one module per lesson, in notebook order)
(NN = notebook number) and is registered with :func:`register`. An exercise has

* a **reference** implementation (the solution),
* **cases**: factories that build *fresh* inputs (the candidate never sees only the
  notebook's example, and mutating an input cannot leak into the next run),
* a **verify** function that compares the candidate's output with the reference's and
  returns ``None`` (correct) or a sentence "expected ... but found ...",
* **mistakes**: wrong implementations a learner typically writes. When the candidate is
  wrong, each mistake is run on the same case and, if it misbehaves the same way
  (its own ``detect`` or "verify says the same thing"), the feedback names it.

The learner sees one block::

    [OK] 01.independent_copy: ...
    [FAIL] 01.independent_copy: expected ..., found ...
      Hint (returns torch.from_numpy): ...
    [TODO] 01.independent_copy: replace the `raise NotImplementedError` with your code.

Example:
    >>> from course_utils.exercises import check
    >>> def double(x):
    ...     return 2 * x
    >>> check("00.double", double).status
    'ok'
    >>> check("00.double", lambda x: x + x + 1).passed
    False
    >>> check("00.no_such_exercise", double).status
    'fail'
"""

from __future__ import annotations

import copy
import difflib
import importlib
import pkgutil
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

Status = Literal["ok", "fail", "todo"]

#: A case factory returns (args, kwargs); it is called anew for every run.
CaseFactory = Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
#: verify(candidate_output, reference_output, args, kwargs) -> None | problem sentence.
Verifier = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], "str | None"]


@dataclass
class CheckResult:
    """What ``check`` returns; it displays as the feedback block."""

    exercise_id: str
    status: Status
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def __repr__(self) -> str:  # shown when a notebook cell ends with check(...)
        return self.message

    __str__ = __repr__


@dataclass
class Mistake:
    """A typical wrong answer: a name the learner recognises, a hint, and an example.

    ``example`` is a wrong implementation. It documents the mistake, the unit tests feed it
    to ``check`` to prove the hint appears, and by default it is also the detector: the
    candidate matches the mistake when both fail ``verify`` with the same sentence.
    ``detect(candidate_output, args, kwargs) -> bool`` overrides that with a direct test.
    """

    name: str
    hint: str
    example: Callable[..., Any]
    detect: Callable[[Any, tuple[Any, ...], dict[str, Any]], bool] | None = None
    #: When the candidate raises, the mistake matches if this text is in the error message.
    error_match: str | None = None


@dataclass
class Exercise:
    exercise_id: str
    task: str
    reference: Callable[..., Any]
    cases: list[CaseFactory]
    verify: Verifier
    mistakes: list[Mistake] = field(default_factory=list)
    #: Called with the candidate itself before it runs; returns a problem sentence or None.
    inspect: Callable[[Callable[..., Any]], "str | None"] | None = None


_REGISTRY: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the registry (called at import time of ``checks/nbNN.py``)."""
    _REGISTRY[exercise.exercise_id] = exercise
    return exercise


class _Todo(Exception):
    """The candidate is still the stub."""


def _load_module_for(exercise_id: str) -> None:
    prefix = exercise_id.split(".", 1)[0]
    if prefix.isdigit():
        try:
            importlib.import_module(f"course_utils.checks.nb{prefix}")
        except ModuleNotFoundError:
            pass


def _load_all() -> None:
    import course_utils.checks as checks

    for info in pkgutil.iter_modules(checks.__path__):
        if info.name.startswith("nb"):
            importlib.import_module(f"course_utils.checks.{info.name}")


def list_exercises() -> list[str]:
    """All exercise ids, sorted.

    >>> "01.independent_copy" in list_exercises()
    True
    """
    _load_all()
    return sorted(_REGISTRY)


def get_exercise(exercise_id: str) -> Exercise:
    """The registered exercise (raises ``KeyError`` with the known ids if unknown)."""
    _load_module_for(exercise_id)
    if exercise_id not in _REGISTRY:
        raise KeyError(exercise_id)
    return _REGISTRY[exercise_id]


def _is_stub_output(value: Any) -> bool:
    return value is None or value is Ellipsis


def _call(func: Callable[..., Any], factory: CaseFactory) -> tuple[Any, tuple, dict]:
    args, kwargs = factory()
    return func(*args, **kwargs), args, kwargs


def _describe_exception(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):  # the learner's own line: skip course_utils, torch, libraries
        if not any(part in frame.filename for part in ("course_utils", "site-packages", "/torch/")):
            line = (frame.line or "").strip()
            where = f" (in `{line}`)" if line else ""
            break
    return f"{type(exc).__name__}: {exc}{where}"


def _run_candidate(ex: Exercise, candidate: Callable[..., Any]) -> tuple[Status, str, str | None]:
    """Returns (status, detail, mistake_name)."""
    if ex.inspect is not None:
        problem = ex.inspect(candidate)
        if problem:
            return "fail", problem, None
    for number, factory in enumerate(ex.cases, start=1):
        try:
            out, args, kwargs = _call(candidate, factory)
        except NotImplementedError:
            raise _Todo from None
        except Exception as exc:  # the learner's code raised: report it, never a traceback
            named = next((m.name for m in ex.mistakes
                          if m.error_match and m.error_match in str(exc)), None)
            return "fail", f"on test case {number} your function raised {_describe_exception(exc)}", named
        if _is_stub_output(out):
            if number == 1:
                raise _Todo
            return "fail", f"on test case {number} your function returned {out!r}; expected a value", None
        ref_out, ref_args, ref_kwargs = _call(ex.reference, factory)
        try:
            problem = ex.verify(out, ref_out, args, kwargs)
        except Exception as exc:  # an unexpected type slipped past verify: say what it was
            problem = f"could not compare your result ({type(out).__name__}) with the expected one: {exc}"
        if problem is None:
            continue
        for mistake in ex.mistakes:
            if _matches(ex, mistake, factory, out, args, kwargs, problem):
                return "fail", f"on test case {number}: {problem}", mistake.name
        return "fail", f"on test case {number}: {problem}", None
    return "ok", f"passed {len(ex.cases)} test cases", None


def _matches(ex: Exercise, mistake: Mistake, factory: CaseFactory, out: Any,
             args: tuple, kwargs: dict, problem: str) -> bool:
    try:
        if mistake.error_match is not None and mistake.detect is None:
            return False
        if mistake.detect is not None:
            return bool(mistake.detect(out, args, kwargs))
        wrong_out, w_args, w_kwargs = _call(mistake.example, factory)
        ref_out, _, _ = _call(ex.reference, factory)
        return ex.verify(wrong_out, ref_out, w_args, w_kwargs) == problem
    except Exception:
        return False


def check(exercise_id: str, candidate: Callable[..., Any]) -> CheckResult:
    """Run the checker for ``exercise_id`` on the learner's ``candidate`` function.

    Never raises for a learner's mistake: unknown ids, non-callables, stubs, exceptions,
    wrong types and wrong shapes all come back as a :class:`CheckResult`.
    """
    try:
        ex = get_exercise(exercise_id)
    except KeyError:
        known = list_exercises()
        close = difflib.get_close_matches(str(exercise_id), known, n=3)
        suggestion = f" Did you mean {', '.join(close)}?" if close else ""
        return CheckResult(str(exercise_id), "fail",
                           f"[FAIL] unknown exercise id {exercise_id!r}.{suggestion} "
                           f"Known ids: {', '.join(known)}")
    if not callable(candidate):
        return CheckResult(exercise_id, "fail",
                           f"[FAIL] {exercise_id}: expected a function, found "
                           f"{type(candidate).__name__} {candidate!r:.60}. Pass the function "
                           f"itself, without calling it: check({exercise_id!r}, my_function)")
    try:
        status, detail, mistake_name = _run_candidate(ex, candidate)
    except _Todo:
        return CheckResult(exercise_id, "todo",
                           f"[TODO] {exercise_id}: not attempted yet. Task: {ex.task}\n"
                           f"  Replace the `raise NotImplementedError` with your code and run the cell again.")
    if status == "ok":
        return CheckResult(exercise_id, "ok", f"[OK] {exercise_id}: {detail}.")
    lines = [f"[FAIL] {exercise_id}: {detail}"]
    if mistake_name is not None:
        mistake = next(m for m in ex.mistakes if m.name == mistake_name)
        lines.append(f"  Hint ({mistake.name}): {mistake.hint}")
    else:
        lines.append(f"  Task: {ex.task}")
    return CheckResult(exercise_id, "fail", "\n".join(lines))


# --- small verify helpers shared by the checks/ modules -------------------------------

def describe(value: Any) -> str:
    """A short description of a value for feedback messages.

    >>> import torch
    >>> describe(torch.zeros(2, 3))
    'tensor of shape (2, 3), dtype torch.float32, device cpu'
    >>> describe([1, 2])
    'list of length 2'
    """
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor of shape {tuple(value.shape)}, dtype {value.dtype}, device {value.device}"
    if isinstance(value, (list, tuple, dict)):
        return f"{type(value).__name__} of length {len(value)}"
    return f"{type(value).__name__} {value!r:.60}"


def compare_tensors(out: Any, expected: "Any", *, atol: float = 1e-5, rtol: float = 1e-4,
                    name: str = "result") -> str | None:
    """None when ``out`` is a tensor matching ``expected`` in shape, dtype and values.

    >>> import torch
    >>> compare_tensors(torch.ones(2), torch.ones(2)) is None
    True
    >>> compare_tensors(torch.ones(2, 2), torch.ones(2))
    'expected result of shape (2,), found shape (2, 2)'
    """
    import torch

    if not isinstance(out, torch.Tensor):
        return f"expected {name} to be a torch.Tensor, found {describe(out)}"
    if out.shape != expected.shape:
        return f"expected {name} of shape {tuple(expected.shape)}, found shape {tuple(out.shape)}"
    if out.dtype != expected.dtype:
        return f"expected {name} with dtype {expected.dtype}, found {out.dtype}"
    if out.device.type != "meta" and not torch.allclose(out.detach(), expected.detach(), atol=atol, rtol=rtol):
        diff = (out.detach() - expected.detach()).abs().max().item()
        return f"{name} has the right shape but wrong values (largest difference {diff:.3g})"
    return None


def fresh_copy(value: Any) -> Any:
    """A deep copy (for case factories that reuse a prototype object)."""
    return copy.deepcopy(value)
