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
  (its own ``detect`` or "the same problem sentence"), the feedback names it.

What the framework checks on every run of a candidate, before ``verify`` sees the output:

* **stubs** are recognised by what they are: a body of only ``...``/``pass``/a docstring/
  ``return ...``, or a ``raise NotImplementedError`` of the learner's own (``[TODO]``);
  a finished function that returns ``None`` where the reference returns a value is told
  "returned None: did you forget `return`?" (``Exercise(returns=False)`` for side-effect tasks);
* a **time limit** (``Exercise.time_limit`` seconds per run): an endless loop is a ``[FAIL]``
  and the kernel stays usable;
* **inputs modified in place** (tensors, modules' weights and buffers, optimizers, containers,
  also through a view), except the arguments named in ``Exercise.may_modify`` and those the
  reference itself changes on the same case;
* **global state left changed**: grad mode, inference mode, anomaly detection, default dtype,
  the train/eval flag of the modules passed in, hooks left registered on them (unless
  ``Exercise.keeps_hooks``); the framework restores what it can, so the kernel is not left broken.

Batches that must be moved to ``device`` can be wrapped in :class:`HostTensor`, which records a
use before the move even on a machine without a GPU.

The learner sees one block (coloured in Jupyter, see :meth:`CheckResult._repr_html_`)::

    [OK] 01.independent_copy: ...
    [FAIL] 01.independent_copy: expected ..., found ...
      Hint (returns torch.from_numpy): ...
    [TODO] 01.independent_copy: not attempted yet. Task: ...
      Replace the `raise NotImplementedError` (or the `...`, the `pass`) with your code and run the cell again.

Example:
    >>> from course_utils.exercises import check
    >>> def double(x):
    ...     return 2 * x
    >>> check("00.double", double).status
    'ok'
    >>> check("00.double", lambda x: x + x + 1).passed
    False
    >>> def forgot(x):
    ...     y = 2 * x
    >>> "did you forget `return`" in check("00.double", forgot).message
    True
    >>> def stub(x):
    ...     ...
    >>> check("00.double", stub).status
    'todo'
    >>> check("00.no_such_exercise", double).status
    'fail'
"""

from __future__ import annotations

import ast
import copy
import difflib
import dis
import html
import importlib
import inspect as _inspect
import pkgutil
import re
import signal
import sys
import textwrap
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal

import torch
from torch import nn

from course_utils.i18n import t, tn

Status = Literal["ok", "fail", "todo"]

#: A case factory returns (args, kwargs); it is called anew for every run.
CaseFactory = Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
#: verify(candidate_output, reference_output, args, kwargs) -> None | problem sentence.
Verifier = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], "str | None"]

_COLOURS: dict[str, tuple[str, str, str]] = {  # status -> (border/badge, background, badge text)
    "ok": ("#1a7f37", "#e9f7ec", "OK"),
    "fail": ("#c62828", "#fdecea", "FAIL"),
    "todo": ("#5f6368", "#f1f3f4", "TODO"),
}
_EXPECTED_FOUND = re.compile(r"^(?P<before>.*?)\bexpected (?P<expected>.+?),? (?:but )?found (?P<found>.+)$",
                             re.DOTALL)
#: The same in Chinese: "应为 X，实际为 Y" (the framework's and the checkers' wording).
_EXPECTED_FOUND_ZH = re.compile(r"^(?P<before>.*?)应为\s*(?P<expected>.+?)，\s*实际为\s*(?P<found>.+)$", re.DOTALL)
_HEAD_SEPARATOR = re.compile(r": |：")


@dataclass
class CheckResult:
    """What ``check`` returns; it displays as the feedback block (text, or coloured HTML in Jupyter).

    >>> result = CheckResult("00.double", "fail", "[FAIL] 00.double: expected 2, found 3\\n  Hint (x): y")
    >>> result.passed, repr(result).splitlines()[0]
    (False, '[FAIL] 00.double: expected 2, found 3')
    >>> "<b>expected</b>" in result._repr_html_() and "[FAIL]" in result._repr_html_()
    True
    """

    exercise_id: str
    status: Status
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def __repr__(self) -> str:  # shown when a notebook cell ends with check(...)
        return self.message

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """The same message as a coloured block: a status badge, the message, expected/found aligned.

        The ``[OK]``/``[FAIL]``/``[TODO]`` text stays in the block, so colour is never the only cue.
        """
        border, background, badge = _COLOURS.get(self.status, _COLOURS["fail"])
        first, *rest = self.message.split("\n")
        tag = f"[{badge}]"
        head = first[len(tag):].lstrip() if first.startswith(tag) else first
        split = _HEAD_SEPARATOR.search(head)
        label, detail = (head[:split.start()], head[split.end():]) if split else ("", head)
        text_style = "white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere;"
        parts = [
            f'<div class="course-check course-check-{html.escape(self.status)}" style="border-left: 6px solid '
            f'{border}; background: {background}; color: #1f1f1f; padding: 8px 12px; margin: 4px 0; '
            f'border-radius: 4px; font-family: var(--jp-content-font-family, sans-serif); line-height: 1.45;">',
            f'<div><span style="background: {border}; color: #ffffff; font-weight: bold; padding: 1px 8px; '
            f'border-radius: 3px; font-family: monospace;">{html.escape(tag)}</span> '
            f'<code style="background: transparent;">{html.escape(label)}</code></div>',
        ]
        match = _EXPECTED_FOUND.match(detail) or _EXPECTED_FOUND_ZH.match(detail)
        if match and self.status == "fail":
            before = match.group("before").strip()
            if before:
                parts.append(f'<div style="{text_style}">{html.escape(before)}</div>')
            parts.append(
                '<table style="border-collapse: collapse; margin: 4px 0;">'
                f'<tr><td style="padding: 0 8px 0 0; vertical-align: top;"><b>{html.escape(t("expected"))}</b></td>'
                f'<td style="{text_style} font-family: monospace;">{html.escape(match.group("expected"))}</td></tr>'
                f'<tr><td style="padding: 0 8px 0 0; vertical-align: top;"><b>{html.escape(t("found"))}</b></td>'
                f'<td style="{text_style} font-family: monospace;">{html.escape(match.group("found"))}</td></tr>'
                '</table>')
        elif detail:
            parts.append(f'<div style="{text_style}">{html.escape(detail)}</div>')
        hint_word, task_word = t("Hint"), t("Task")
        for line in rest:
            line = line.strip()
            if not line:
                continue
            labelled = [(name, colon, body) for name, colon, body in (line.partition(": "), line.partition("："))
                        if colon and (name.startswith(hint_word) or name == task_word)]
            if labelled:   # "Hint (name): ..." / "提示（name）：...": the label ends at the first separator
                name, colon, body = min(labelled, key=lambda item: len(item[0]))
                parts.append(f'<div style="{text_style} margin-top: 4px;"><b>{html.escape(name)}'
                             f'{colon.strip()}</b> {html.escape(body)}</div>')
            else:
                parts.append(f'<div style="{text_style} margin-top: 4px;">{html.escape(line)}</div>')
        parts.append("</div>")
        return "".join(parts)


@dataclass
class Mistake:
    """A typical wrong answer: a name the learner recognises, a hint, and an example.

    ``example`` is a wrong implementation. It documents the mistake, the unit tests feed it
    to ``check`` to prove the hint appears, and by default it is also the detector: the
    candidate matches the mistake when both get the same problem sentence on the same case.
    ``detect(candidate_output, args, kwargs) -> bool`` overrides that with a direct test.
    A candidate that raises matches only through ``error_match``.
    """

    name: str
    hint: str
    example: Callable[..., Any]
    detect: Callable[[Any, tuple[Any, ...], dict[str, Any]], bool] | None = None
    #: When the candidate raises, the mistake matches if this text is in the error message.
    error_match: str | None = None


@dataclass
class Exercise:
    """One checked exercise (see the module docstring).

    The keyword fields after ``inspect`` tell the framework what the task allows:

    * ``returns``: False for side-effect tasks (an init function for ``model.apply``): a ``None``
      result is fine and ``verify`` receives ``None`` as the output.
    * ``may_modify``: names of the reference's parameters the task may change in place
      (``("model", "optimizer")``). Any other argument changed in place is a ``[FAIL]``. An
      argument the reference itself changes on the same case is allowed as well.
    * ``time_limit``: seconds per run of the candidate.
    * ``keeps_hooks``: True when the task is to leave hooks registered.
    """

    exercise_id: str
    task: str
    reference: Callable[..., Any]
    cases: list[CaseFactory]
    verify: Verifier
    mistakes: list[Mistake] = field(default_factory=list)
    #: Called with the candidate itself before it runs; returns a problem sentence or None.
    inspect: Callable[[Callable[..., Any]], "str | None"] | None = None
    returns: bool = True
    may_modify: tuple[str, ...] = ()
    #: Seconds per candidate run: generous, so a slow or busy machine never fails a correct answer.
    time_limit: float = 10.0
    keeps_hooks: bool = False
    #: Seconds for ``inspect`` (it may compile the candidate, e.g. torch.export: slow on a first call).
    inspect_time_limit: float = 120.0
    #: Arguments whose final train/eval flags the task leaves open although the reference changes them
    #: (by default a candidate must leave every submodule in the mode the reference leaves it in).
    free_flags: tuple[str, ...] = ()
    #: A cheap stand-in for the reference where only its effects matter: called instead of the reference
    #: to learn what the task allows (arguments changed, train/eval flags, globals, hooks) when ``verify``
    #: does not use the reference's output (it receives the stand-in's). For a reference that is slow
    #: only because of work whose effects are not watched (12.onnx_parity: an ONNX export to a file);
    #: ``tests/test_exercises.py`` checks that it allows exactly what the reference allows.
    reference_effects: Callable[..., Any] | None = None


_REGISTRY: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the registry (called at import time of ``checks/nbNN.py``)."""
    _REGISTRY[exercise.exercise_id] = exercise
    return exercise


class _Todo(Exception):
    """The candidate is still the stub."""


class _Timeout(BaseException):
    """Raised inside the candidate when its time is up (a BaseException: `except Exception` cannot eat it)."""


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


# --- stubs --------------------------------------------------------------------------------------

def _stub_statement(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return node.value.value is Ellipsis or isinstance(node.value.value, str)
    if isinstance(node, ast.Return):
        return isinstance(node.value, ast.Constant) and node.value.value is Ellipsis
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def _stub_by_source(func: Callable[..., Any]) -> bool | None:
    """True/False from the function's source, None when the source cannot be read or parsed."""
    try:
        tree = ast.parse(textwrap.dedent(_inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    name = getattr(func, "__name__", "")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return all(_stub_statement(statement) for statement in node.body)
    return None


_SETUP_OPS = {"RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "MAKE_CELL", "EXTENDED_ARG"}


def _stub_by_code(func: Callable[..., Any]) -> bool:
    """True when the code object only returns ``None`` or ``...`` (a body of pass/.../docstring)."""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in _SETUP_OPS]
    if ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("LOAD_CONST", Ellipsis), ("RETURN_VALUE", None)]):
        return True
    return len(ops) == 1 and ops[0][0] == "RETURN_CONST" and ops[0][1] in (None, Ellipsis)


def _stub_words(func: Callable[..., Any]) -> str:
    """What the learner has to replace, as the stub says it: "the `raise NotImplementedError`", "the `...`"."""
    func = getattr(func, "__func__", func)
    try:
        tree = ast.parse(textwrap.dedent(_inspect.getsource(func)))
        node = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.name == getattr(func, "__name__", ""))
    except (OSError, TypeError, SyntaxError, IndentationError, StopIteration):
        return t("the placeholder")
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
                                         and isinstance(n.value.value, str))]
    for statement in body:
        if isinstance(statement, ast.Raise):
            return t("the `raise NotImplementedError`")
        if isinstance(statement, ast.Return):
            return t("the `return ...`")
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            return t("the `...`")
        if isinstance(statement, ast.Pass):
            return t("the `pass`")
    if isinstance(node, ast.Lambda) or not body:
        return t("the placeholder") if body else t("the docstring-only body")
    return t("the placeholder")


def is_stub(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is still a stub: its body is only ``...``/``pass``/a docstring/``return ...``
    or ``raise NotImplementedError`` (read from the source where there is one, else from the code).

    >>> def todo(x):
    ...     '''Double x.'''
    ...     return ...  # your code here
    >>> def done(x):
    ...     y = 2 * x
    >>> is_stub(todo), is_stub(done), is_stub(lambda x: ...)
    (True, False, True)
    """
    func = getattr(func, "__func__", func)
    if not _inspect.isfunction(func):
        return False
    by_source = _stub_by_source(func)
    return by_source if by_source is not None else _stub_by_code(func)


# --- time limit ---------------------------------------------------------------------------------

def _importing(frame: Any) -> bool:
    """True while ``frame`` or a caller is inside the import machinery (retry the alarm later)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """SIGALRM after ``seconds`` (then every 0.1 s until disarmed), restoring any previous timer."""
    active = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if active[0] and not _importing(frame):  # never break a module import half-way
            raise _Timeout

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, seconds, 0.1)
    started = time.monotonic()
    try:
        yield
    finally:
        # Disarm first. The timer repeats every 0.1 s, so on a slow unwind a second alarm can land here
        # before `active` is cleared: it would escape this block, skip the restore, and go on firing
        # into whatever runs next (seen once under load on Python 3.13, in the framework's own checks).
        while True:
            try:
                active[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                break
            except _Timeout:
                continue
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            remaining = max(previous_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, remaining, previous_interval)


@contextmanager
def _trace_deadline(seconds: float) -> Iterator[None]:
    """A ``sys.settrace`` deadline (for threads other than the main one): stops pure-Python loops."""
    deadline = time.monotonic() + seconds
    previous = sys.gettrace()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline and not _importing(frame):
            raise _Timeout
        return tracer

    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds`` with a private exception that ``check`` reports.

    On the main thread of a Unix process (where Jupyter runs cells) this is a SIGALRM timer, which
    also interrupts ``time.sleep``; elsewhere a ``sys.settrace`` deadline. Both restore what was
    there before.

    >>> with time_limit(1.0):
    ...     total = sum(range(1000))
    >>> total
    499500
    """
    if seconds is None or seconds <= 0:
        yield
    elif hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        with _alarm(seconds):
            yield
    else:
        with _trace_deadline(seconds):
            yield


# --- snapshots: inputs modified in place, global state, hooks -------------------------------------

_MAX_DEPTH = 4
_MAX_ITEMS = 256


def _walk(value: Any, depth: int = 0) -> Iterator[Any]:
    """The value and what it contains (containers, modules), depth- and size-limited."""
    yield value
    if depth >= _MAX_DEPTH:
        return
    if isinstance(value, dict):
        items: Any = list(value.values())[:_MAX_ITEMS]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)[:_MAX_ITEMS]
    else:
        return
    for item in items:
        yield from _walk(item, depth + 1)


def _plain(fn: Callable[[], Any]) -> Any:
    with torch._C.DisableTorchFunctionSubclass():
        return fn()


def _layout(t: torch.Tensor) -> tuple[Any, ...]:
    """Strides and device: what a view, ``.contiguous()`` or a move through ``p.data = ...`` changes."""
    try:
        strides = tuple(t.stride()) if not t.is_sparse else None
    except RuntimeError:
        strides = None
    return (strides, t.device)


def _tensor_snapshot(t: torch.Tensor) -> tuple[Any, ...]:
    if t.is_sparse or t.device.type == "meta":
        return (tuple(t.shape), t.dtype, t.requires_grad, None, _layout(t))
    return (tuple(t.shape), t.dtype, t.requires_grad, _plain(lambda: t.detach().clone()), _layout(t))


def _storage_key(t: torch.Tensor) -> Any:
    """What two tensors that share memory (tied weights, views) have in common."""
    try:
        if t.device.type == "meta" or t.is_sparse:
            return ("object", id(t))
        return ("storage", t.device, t.untyped_storage().data_ptr())
    except RuntimeError:
        return ("object", id(t))


def _aliasing(tensors: dict[str, torch.Tensor]) -> dict[str, str]:
    """name -> the first name sharing its memory (a tie), for every tensor of a module's state_dict."""
    first: dict[Any, str] = {}
    return {name: first.setdefault(_storage_key(t), name) for name, t in tensors.items()}


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    def compare() -> bool:
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        if b.is_sparse or b.device.type == "meta":
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return torch.equal(a, b)
    try:
        return _plain(compare)
    except RuntimeError:  # not comparable (e.g. replaced by a tensor of another kind): it changed
        return False


_STATEFUL = (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, torch.amp.GradScaler)


def _state_of(value: Any) -> Any:
    """A deep copy of an optimizer's, scheduler's or grad scaler's ``state_dict()``."""
    try:
        return _plain(lambda: copy.deepcopy(value.state_dict()))
    except Exception:  # a state that cannot be copied (e.g. a closure over a lock): not compared
        return None


def _snapshot(value: Any, depth: int = 0, identity: bool = True) -> Any:
    """A copy of everything in ``value`` that a function could change in place (``identity``: also which
    objects a list holds; off inside a state_dict copy, whose objects are new at every copy)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", _tensor_snapshot(value))
    if isinstance(value, nn.Module):
        tensors = {name: t for name, t in value.state_dict(keep_vars=True).items() if isinstance(t, torch.Tensor)}
        return ("module", {name: _tensor_snapshot(t) for name, t in tensors.items()},
                dict(tensors), _aliasing(tensors))
    if isinstance(value, _STATEFUL):
        return ("state", _snapshot(_state_of(value), identity=False))
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ("value", value)
    if depth >= _MAX_DEPTH:
        return ("opaque", None)
    if isinstance(value, dict):
        keys = list(value)[:_MAX_ITEMS]
        return ("dict", len(value), {k: _snapshot(value[k], depth + 1, identity) for k in keys})
    if isinstance(value, (list, tuple)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        items = list(value)[:_MAX_ITEMS]
        return (kind, len(value), [_snapshot(v, depth + 1, identity) for v in items], items if identity else None)
    if isinstance(value, (set, bytearray)):
        return ("copy", copy.copy(value))
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return ("ndarray", value.copy(), value.dtype, value.strides, value.flags.writeable)
    pil = sys.modules.get("PIL.Image")
    if pil is not None and isinstance(value, pil.Image):
        try:
            return ("pil", value.mode, value.size, value.tobytes())
        except Exception:  # an image that cannot be read (closed file): not compared
            return ("opaque", None)
    return ("opaque", None)


class _RanInTraining(str):
    """What changed in a module's running statistics because it ran in training mode (any language)."""


def _inside(index: object, what: str) -> str:
    """What changed at ``[index]`` of a container (still marked when it is a module's running statistics)."""
    text = t("[{index}]: {what}", index=index, what=what)
    return _RanInTraining(text) if isinstance(what, _RanInTraining) else text


#: buffers that a forward pass in training mode updates (BatchNorm's running statistics)
_RUNNING_STATS = {"running_mean", "running_var", "num_batches_tracked"}


def _changed(before: Any, value: Any, depth: int = 0) -> str | None:
    """None when ``value`` still matches its snapshot, else what changed (a short phrase)."""
    kind = before[0]
    if kind == "tensor":
        shape, dtype, requires_grad, data, (strides, device) = before[1]
        if not isinstance(value, torch.Tensor):
            return t("it was replaced")
        if tuple(value.shape) != shape or value.dtype != dtype:
            return t("its shape/dtype changed from {shape}/{dtype} to {new_shape}/{new_dtype}", shape=shape,
                     dtype=dtype, new_shape=tuple(value.shape), new_dtype=value.dtype)
        if value.device != device:
            return t("it was moved from {device} to {new_device}", device=device, new_device=value.device)
        if data is not None and not _same_values(value.detach(), data):
            return t("its values changed")
        if value.requires_grad != requires_grad:
            return t("its requires_grad changed to {value}", value=value.requires_grad)
        if strides is not None and _layout(value)[0] != strides:
            return t("its memory layout (strides) changed from {strides} to {new_strides}", strides=strides,
                     new_strides=_layout(value)[0])
        return None
    if kind == "module":
        now = {name: t for name, t in value.state_dict(keep_vars=True).items() if isinstance(t, torch.Tensor)}
        if set(now) != set(before[1]):
            return t("its parameters/buffers were replaced or renamed")
        for name, snap in before[1].items():
            what = _changed(("tensor", snap), now[name])
            if what is not None and name.rsplit(".", 1)[-1] in _RUNNING_STATS:
                return _RanInTraining(t("`{name}`: {what}, because it ran in training mode", name=name, what=what))
            if what is not None:
                return t("`{name}`: {what}", name=name, what=what)
        for name, original in before[2].items():
            if now[name] is not original and isinstance(original, nn.Parameter):
                return t("`{name}`: it was replaced by a new tensor object (an optimizer or another module "
                         "holding the old one no longer sees it)", name=name)
        ties = _aliasing(now)
        for name, first in before[3].items():
            if ties[name] != first:
                if first != name:
                    return t("`{name}`: the weight tie changed (it shared its memory with `{first}`; change values "
                             "in place, keep the objects)", name=name, first=first)
                return t("`{name}`: the weight tie changed (it had its own memory; change values in place, keep "
                         "the objects)", name=name)
        return None
    if kind == "state":
        return None if _changed(before[1], _state_of(value), depth + 1) is None else t("its state changed")
    if kind == "value":
        same = value == before[1] or (isinstance(value, float) and value != value and before[1] != before[1])
        return None if type(value) is type(before[1]) and same else t("it was replaced")
    if kind == "dict":
        if not isinstance(value, dict) or len(value) != before[1] or not set(before[2]) <= set(value):
            return t("its keys changed")
        for key, snap in before[2].items():
            what = _changed(snap, value[key], depth + 1)
            if what is not None:
                return _inside(repr(key), what)
        return None
    if kind in ("list", "tuple"):
        if len(value) != before[1]:
            return t("its length changed from {before} to {now}", before=before[1], now=len(value))
        originals = before[3] if before[3] is not None else [None] * len(before[2])
        for index, (snap, original) in enumerate(zip(before[2], originals)):
            if before[3] is not None and value[index] is not original and snap[0] not in ("value",):
                return t("[{index}]: it was replaced by another object", index=index)
            what = _changed(snap, value[index], depth + 1)
            if what is not None:
                return _inside(index, what)
        return None
    if kind == "copy":
        return None if value == before[1] else t("its contents changed")
    if kind == "ndarray":
        import numpy as np
        if not isinstance(value, np.ndarray):
            return t("it was replaced")
        if value.dtype != before[2] or value.shape != before[1].shape:
            return t("its dtype/shape changed from {dtype}/{shape} to {new_dtype}/{new_shape}", dtype=before[2],
                     shape=before[1].shape, new_dtype=value.dtype, new_shape=value.shape)
        if not np.array_equal(value, before[1], equal_nan=value.dtype.kind in "fc"):
            return t("its values changed")
        if value.strides != before[3] or value.flags.writeable != before[4]:
            return t("its memory layout or writeable flag changed")
        return None
    if kind == "pil":
        try:
            same = (value.mode, value.size, value.tobytes()) == before[1:]
        except Exception:
            same = False
        return None if same else t("the image changed (its mode, size or pixels)")
    return None


_MODULE_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_TENSOR_HOOK_DICTS = ("_backward_hooks", "_post_accumulate_grad_hooks")
_GLOBAL_HOOK_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks")
# dicts keyed by the same handle id as _forward_hooks / _forward_pre_hooks
_COMPANION_DICTS = {"_forward_hooks": ("_forward_hooks_with_kwargs", "_forward_hooks_always_called"),
                    "_forward_pre_hooks": ("_forward_pre_hooks_with_kwargs",),
                    "_global_forward_hooks": ("_global_forward_hooks_always_called",)}


def _hook_dicts(values: list[Any]) -> list[tuple[Any, str]]:
    """(owner, attribute) of every hook dict on the modules and tensors in ``values``, and global ones."""
    owners: dict[int, Any] = {}
    for value in values:
        for item in _walk(value):
            if isinstance(item, nn.Module):
                for module in item.modules():
                    owners.setdefault(id(module), module)
                    for p in module.parameters(recurse=False):
                        owners.setdefault(id(p), p)
            elif isinstance(item, torch.Tensor):
                owners.setdefault(id(item), item)
    found: list[tuple[Any, str]] = []
    for owner in owners.values():
        names = _MODULE_HOOK_DICTS if isinstance(owner, nn.Module) else _TENSOR_HOOK_DICTS
        found.extend((owner, name) for name in names)
    found.extend((nn.modules.module, name) for name in _GLOBAL_HOOK_DICTS)
    return found


def _hook_keys(owner: Any, name: str) -> set[Any]:
    hooks = getattr(owner, name, None)
    return set(hooks) if isinstance(hooks, dict) else set()


def _remove_hooks(owner: Any, name: str, keys: set[Any]) -> None:
    for attr in (name, *_COMPANION_DICTS.get(name, ())):
        hooks = getattr(owner, attr, None)
        if isinstance(hooks, dict):
            for key in keys:
                hooks.pop(key, None)


def _torch_globals() -> dict[str, Any]:
    return {"grad": torch.is_grad_enabled(), "inference": torch.is_inference_mode_enabled(),
            "anomaly": torch.is_anomaly_enabled(), "dtype": torch.get_default_dtype()}


def _restore_global(name: str, value: Any) -> None:
    if name == "grad":
        torch.set_grad_enabled(value)
    elif name == "anomaly":
        torch.autograd.set_detect_anomaly(value)
    elif name == "dtype":
        torch.set_default_dtype(value)
    # inference mode is a guard object the candidate holds; it cannot be reset from outside


def _global_message(name: str, before: Any, now: Any) -> str:
    if name == "grad" and before:
        return t("grad mode was left off: use `with torch.no_grad():` (or `torch.inference_mode()`) "
                 "instead of `torch.set_grad_enabled(False)`, so it switches back on by itself")
    if name == "grad":
        return t("grad mode was left on: use `with torch.enable_grad():` around the part that needs it")
    if name == "inference":
        return t("inference mode was left on: use it as a block, `with torch.inference_mode():`")
    if name == "anomaly":
        return t("anomaly detection was left changed: use `with torch.autograd.detect_anomaly():` "
                 "instead of `torch.autograd.set_detect_anomaly(...)`")
    return t("the default dtype was left changed from {before} to {now}: pass `dtype=` to the tensors you "
             "create instead of calling `torch.set_default_dtype`", before=before, now=now)


def _argument_names(reference: Callable[..., Any], args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """(parameter name of the reference, value) for every argument of a case."""
    try:
        bound = _inspect.signature(reference).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return [(f"argument {i}", a) for i, a in enumerate(args, start=1)] + list(kwargs.items())
    named: list[tuple[str, Any]] = []
    for name, value in bound.arguments.items():
        kind = _inspect.signature(reference).parameters[name].kind
        if kind is _inspect.Parameter.VAR_POSITIONAL:
            named.extend((f"{name}[{i}]", v) for i, v in enumerate(value))
        elif kind is _inspect.Parameter.VAR_KEYWORD:
            named.extend(value.items())
        else:
            named.append((name, value))
    return named


@dataclass
class _Changes:
    """What one run changed: arguments (by name), train flags (by argument), hooks, torch globals."""

    arguments: dict[str, str] = field(default_factory=dict)
    train_flags: dict[str, str] = field(default_factory=dict)
    hooks: dict[str, int] = field(default_factory=dict)
    globals: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    #: argument -> [(submodule name, training flag after the run)] for every module it holds
    final_flags: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    #: how to copy each changed argument, by its type (`x.clone()`, `dict(d)`, `copy.deepcopy(m)`)
    copies: dict[str, str] = field(default_factory=dict)
    #: undo the changes made to the case's own objects (after verify and the mistakes have seen them)
    undo: list[Callable[[], None]] = field(default_factory=list)

    def restore_local(self) -> None:
        while self.undo:
            self.undo.pop()()

    @contextmanager
    def as_left(self) -> Iterator[None]:
        """The global state as the run left it (for verify and detect), restored afterwards."""
        for name, (_, now) in self.globals.items():
            _restore_global(name, now)
        try:
            yield
        finally:
            for name, (before, _) in self.globals.items():
                _restore_global(name, before)


def _copy_hint(name: str, value: Any) -> str:
    """How to work on a copy of ``value`` (an argument changed in place), as code."""
    if isinstance(value, torch.Tensor):
        return f"`{name}.clone()`"
    if isinstance(value, dict):
        return t("a new dict, `{{k: ... for k, v in {name}.items()}}`", name=name)
    if isinstance(value, list):
        return t("a new list, `[... for item in {name}]`", name=name)
    if isinstance(value, nn.Module):
        return f"`copy.deepcopy({name})`"
    if type(value).__module__ == "numpy":
        return f"`{name}.copy()`"
    return f"`copy.deepcopy({name})`"


class _Watch:
    """Snapshot of the arguments and global state before a run; ``finish()`` compares and restores."""

    def __init__(self, named: list[tuple[str, Any]], watch_hooks: bool) -> None:
        self.named = named
        self.values = [_snapshot(value) for _, value in named]
        self.flags = [[(m, m.training, sub_name) for item in _walk(value) if isinstance(item, nn.Module)
                       for sub_name, m in item.named_modules()] for _, value in named]
        self.hook_dicts = _hook_dicts([v for _, v in named]) if watch_hooks else []
        self.hook_keys = [_hook_keys(owner, name) for owner, name in self.hook_dicts]
        self.globals = _torch_globals()

    def finish(self) -> _Changes:
        """What changed. Global state (grad mode, default dtype, global hooks) is restored at once;
        hooks and train flags left on the case's own objects are undone by ``restore_local()``."""
        changes = _Changes()
        for name, now in _torch_globals().items():
            if now != self.globals[name]:
                changes.globals[name] = (self.globals[name], now)
                _restore_global(name, self.globals[name])
        for (owner, attr), keys in zip(self.hook_dicts, self.hook_keys):
            extra = _hook_keys(owner, attr) - keys
            if extra:
                label = self._owner_label(owner)
                changes.hooks[label] = changes.hooks.get(label, 0) + len(extra)
                if owner is nn.modules.module:
                    _remove_hooks(owner, attr, extra)
                else:
                    changes.undo.append(lambda o=owner, a=attr, e=extra: _remove_hooks(o, a, e))
        for (name, value), snap, flags in zip(self.named, self.values, self.flags):
            what = _changed(snap, value)
            if what is not None:
                changes.arguments[name] = what
                changes.copies[name] = _copy_hint(name, value)
            changes.final_flags[name] = [(sub, m.training) for m, _, sub in flags]
            flipped = [(m, was) for m, was, _ in flags if m.training != was]
            if flipped:
                changes.train_flags[name] = "train" if flipped[0][1] else "eval"
                changes.undo.append(lambda f=flipped: [setattr(m, "training", w) for m, w in f] and None)
        return changes

    def _owner_label(self, owner: Any) -> str:
        if owner is nn.modules.module:
            return t("every module (a global hook)")
        for name, value in self.named:
            for item in _walk(value):
                if item is owner:
                    return f"`{name}`"
                if isinstance(item, nn.Module):
                    for sub_name, sub in item.named_modules():
                        if sub is owner:
                            return f"`{name}.{sub_name}`" if sub_name else f"`{name}`"
                    for p_name, p in item.named_parameters():
                        if p is owner:
                            return f"`{name}.{p_name}`"
        return t("a tensor")


def _flag_problem(name: str, now: list[tuple[str, bool]], want: list[tuple[str, bool]]) -> str | None:
    """The first submodule whose train/eval flag differs from the one the task leaves it in."""
    for (sub, flag), (_, wanted) in zip(now, want):
        if flag != wanted:
            where = f"`{name}.{sub}`" if sub else f"`{name}`"
            mode, wanted_mode = ("train" if flag else "eval"), ("train" if wanted else "eval")
            return t("{where} was left in {mode} mode, but the task leaves `{name}` (every submodule) in "
                     "{wanted_mode} mode: call `{name}.{wanted_mode}()` on the whole model, and do not switch it "
                     "back or change a submodule afterwards", where=where, mode=mode, name=name,
                     wanted_mode=wanted_mode)
    return None


def _problems(changes: _Changes, allowed: set[str], allowed_globals: set[str], keeps_hooks: bool,
              allowed_flags: set[str] | None = None,
              wanted_flags: dict[str, list[tuple[str, bool]]] | None = None) -> list[str]:
    """The problem sentences of a candidate's run (changes not allowed by the task). ``allowed`` names the
    arguments that may change in place, ``allowed_flags`` those whose train/eval flag may change (default:
    the same)."""
    allowed_flags = allowed if allowed_flags is None else allowed_flags
    problems = [_global_message(name, before, now) for name, (before, now) in changes.globals.items()
                if name not in allowed_globals]
    if changes.hooks and not keeps_hooks:
        where = ", ".join(changes.hooks)
        count = sum(changes.hooks.values())
        problems.append(t("{count} hook(s) were left registered on {where}: keep the handles that "
                          "`register_..._hook` returns and call `handle.remove()` in a `finally:` block",
                          count=count, where=where))
    for name, want in (wanted_flags or {}).items():
        problem = _flag_problem(name, changes.final_flags.get(name, []), want)
        if problem:
            problems.append(problem)
    for name, was in changes.train_flags.items():
        if name in (wanted_flags or {}):
            continue
        if name not in allowed_flags:
            now = "eval" if was == "train" else "train"
            problems.append(t("`{name}` was left in {now} mode (it came in {was} mode): remember "
                              "`was_training = {name}.training` and call `{name}.train(was_training)` at the end",
                              name=name, now=now, was=was))
    for name, what in changes.arguments.items():
        if name not in allowed:
            if isinstance(what, _RanInTraining):
                problems.append(t("your function modified its input `{name}` in place ({what}): call "
                                  "`{name}.eval()` before running it, so BatchNorm uses its running statistics "
                                  "instead of updating them", name=name, what=what))
                continue
            copy_hint = changes.copies.get(name, f"`{name}.clone()`")
            problems.append(t("your function modified its input `{name}` in place ({what}); "
                              "work on a copy (e.g. {copy_hint}) or use out-of-place operations",
                              name=name, what=what, copy_hint=copy_hint))
    return problems


# --- running candidates ---------------------------------------------------------------------------

def _call(func: Callable[..., Any], factory: CaseFactory) -> tuple[Any, tuple, dict]:
    args, kwargs = factory()
    return func(*args, **kwargs), args, kwargs


def _learner_frame(frame: traceback.FrameSummary) -> bool:
    return not any(part in frame.filename for part in ("course_utils", "site-packages", "/torch/"))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ORT_PREFIX = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*(?P<code>[A-Z_]+)\s*:\s*")


def plain_text(text: str) -> str:
    """``text`` without terminal colour codes, and ONNX Runtime's error prefix in words.

    >>> plain_text("\\x1b[1;31m[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions\\x1b[m")
    'ONNX Runtime refused the call (INVALID_ARGUMENT): Got invalid dimensions'
    """
    text = _ANSI.sub("", str(text))
    return _ORT_PREFIX.sub(lambda m: t("ONNX Runtime refused the call ({code}): ", code=m.group("code")), text)


def _describe_exception(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):  # the learner's own line: skip course_utils, torch, libraries
        if _learner_frame(frame):
            line = (frame.line or "").strip()
            where = line
            break
    error = f"{type(exc).__name__}: {exc}"
    return plain_text(t("{error} (in `{line}`)", error=error, line=where) if where else error)


def _own_not_implemented(exc: BaseException) -> bool:
    """A NotImplementedError raised by the learner's code (a stub), not by a library it called."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and _learner_frame(frames[-1])


@dataclass
class _Reference:
    output: Any
    allowed: set[str]
    allowed_globals: set[str]
    keeps_hooks: bool
    #: arguments whose train/eval flag the task may change (those it may modify, and those the reference flips)
    allowed_flags: set[str] = field(default_factory=set)
    #: the train/eval flags the reference leaves on the arguments whose flags it changes (the task's result)
    wanted_flags: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)


@dataclass
class _Run:
    """One run of a function on one case."""

    output: Any = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    error: BaseException | None = None
    problem: str | None = None
    todo: bool = False
    changes: _Changes = field(default_factory=_Changes)


def _reference_run(ex: Exercise, factory: CaseFactory, stand_in: bool = True) -> _Reference:
    """The reference on a fresh case: its output and what it changes (which the task therefore allows).

    ``stand_in``: use ``ex.reference_effects`` where the exercise has one (the tests compare both)."""
    args, kwargs = factory()
    watch = _Watch(_argument_names(ex.reference, args, kwargs), watch_hooks=True)
    run = ex.reference_effects if stand_in and ex.reference_effects is not None else ex.reference
    try:
        output = run(*args, **kwargs)
    finally:
        changes = watch.finish()
        changes.restore_local()
    allowed = set(ex.may_modify) | set(changes.arguments)
    # a task that switches a model to eval mode (evaluate) still may not change its weights
    wanted = {name: changes.final_flags[name] for name in changes.train_flags if name not in ex.free_flags}
    return _Reference(output, allowed, set(changes.globals), ex.keeps_hooks or bool(changes.hooks),
                      allowed | set(changes.train_flags), wanted)


def _timeout_message(ex: Exercise, seconds: float | None = None) -> str:
    seconds = ex.time_limit if seconds is None else seconds
    return t("your function did not finish within {seconds} s: is there a loop that never ends?",
             seconds=f"{seconds:g}")


def _run_case(ex: Exercise, func: Callable[..., Any], factory: CaseFactory) -> _Run:
    """Run ``func`` on a fresh case under the time limit and the watch (global state restored at once)."""
    args, kwargs = factory()
    run = _Run(args=args, kwargs=kwargs)
    watch = _Watch(_argument_names(ex.reference, args, kwargs), watch_hooks=not ex.keeps_hooks)
    try:
        with time_limit(ex.time_limit):
            run.output = func(*args, **kwargs)
    except _Timeout as exc:
        run.error = exc
        run.problem = _timeout_message(ex)
    except NotImplementedError as exc:
        run.error = exc
        if _own_not_implemented(exc):
            run.todo = True
        else:
            run.problem = t("your function raised {error}", error=_describe_exception(exc))
    except Exception as exc:  # the learner's code raised: report it, never a traceback
        run.error = exc
        run.problem = t("your function raised {error}", error=_describe_exception(exc))
    finally:
        run.changes = watch.finish()
    if run.error is None and run.output is Ellipsis:
        run.todo = True
    return run


def _judge(ex: Exercise, run: _Run, ref: _Reference) -> None:
    """Set ``run.problem``: what the framework saw first (None result, state left changed), else verify's.

    ``verify`` always runs (seeing the global state as the candidate left it), so checkers that record
    what they observe keep working.
    """
    if run.error is not None or run.todo:
        return
    problems = _problems(run.changes, ref.allowed, ref.allowed_globals, ref.keeps_hooks, ref.allowed_flags,
                         ref.wanted_flags)
    if run.output is None and ex.returns and ref.output is not None:
        problems.insert(0, t("your function returned None: did you forget `return`?"))
    try:
        with run.changes.as_left():
            verified = ex.verify(run.output, ref.output, run.args, run.kwargs)
    except Exception as exc:  # an unexpected type slipped past verify: say what it was
        verified = t("could not compare your result ({kind}) with the expected one: {error}",
                     kind=type(run.output).__name__, error=exc)
    run.problem = _joined(problems) if problems else verified


def _joined(problems: list[str]) -> str:
    """Several problem sentences as one ("a; b"; in Chinese "a；b")."""
    text = problems[0]
    for problem in problems[1:]:
        text = t("{first}; {then}", first=text, then=problem)
    return text


def _evaluate(ex: Exercise, func: Callable[..., Any], factory: CaseFactory) -> _Run:
    """One case: ``func``, then the reference on its own fresh case (in that order), then the judgement."""
    run = _run_case(ex, func, factory)
    if run.todo:
        return run
    _judge(ex, run, _reference_run(ex, factory))
    return run


def _matching_mistake(ex: Exercise, run: _Run, factory: CaseFactory) -> Mistake | None:
    """The first mistake whose fingerprint matches this run (never a fall-through to another hint)."""
    if run.error is not None:
        if isinstance(run.error, _Timeout):
            return None
        return next((m for m in ex.mistakes if m.error_match and m.error_match in str(run.error)), None)
    for mistake in ex.mistakes:
        try:
            if mistake.detect is not None:
                with run.changes.as_left():
                    if mistake.detect(run.output, run.args, run.kwargs):
                        return mistake
                continue
            if mistake.error_match is not None:
                continue
            wrong = _evaluate(ex, mistake.example, factory)
            wrong.changes.restore_local()
            if wrong.error is None and not wrong.todo and wrong.problem == run.problem:
                return mistake
        except Exception:
            continue
    return None


def _inspected_mistake(ex: Exercise, problem: str) -> Mistake | None:
    """The mistake whose example the inspection refuses with the same sentence (its fingerprint)."""
    for mistake in ex.mistakes:
        if mistake.detect is not None or mistake.error_match is not None:
            continue
        try:
            with time_limit(ex.inspect_time_limit):
                if ex.inspect(mistake.example) == problem:
                    return mistake
        except (Exception, _Timeout):
            continue
    return None


def _run_candidate(ex: Exercise, candidate: Callable[..., Any]) -> tuple[Status, str, Mistake | None]:
    """Returns (status, detail, mistake)."""
    if is_stub(candidate):
        raise _Todo
    if ex.inspect is not None:
        try:
            with time_limit(ex.inspect_time_limit):  # an inspection may run the candidate (torch.export does)
                problem = ex.inspect(candidate)
        except _Timeout:
            return "fail", _timeout_message(ex, ex.inspect_time_limit), None
        if problem:
            # an inspection that names its own hint needs no second one
            named = "Hint (" in problem or "提示（" in problem   # its own hint, in English or Chinese
            return "fail", problem, None if named else _inspected_mistake(ex, problem)
    for number, factory in enumerate(ex.cases, start=1):
        run = _evaluate(ex, candidate, factory)
        if run.todo:
            run.changes.restore_local()
            if isinstance(run.error, NotImplementedError):
                raise _Todo(t("the `raise NotImplementedError`"))
            raise _Todo(t("the `...` your function returns"))
        if run.problem is None:
            run.changes.restore_local()
            continue
        mistake = _matching_mistake(ex, run, factory)
        run.changes.restore_local()
        if run.error is not None and not isinstance(run.error, _Timeout):
            return "fail", t("on test case {number} {problem}", number=number, problem=run.problem), mistake
        return "fail", t("on test case {number}: {problem}", number=number, problem=run.problem), mistake
    count = len(ex.cases)
    return "ok", tn("passed {n} test case", "passed {n} test cases", count), None


@contextmanager
def _one_thread() -> Iterator[None]:
    """torch's intra-op threads set to 1 while a check runs, then restored.

    A check's cases are tiny, so a thread pool only adds waiting: on a busy machine an OpenMP worker
    that is not scheduled makes every small ``backward``/``cross_entropy`` wait for it (measured: a
    checkpoint check took 3.5 s of CPU with 2 threads at load 9, 1.2 s with one). It is also the
    arithmetic the notebooks use (``setup()`` sets one thread).
    """
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def check(exercise_id: str, candidate: Callable[..., Any]) -> CheckResult:
    """Run the checker for ``exercise_id`` on the learner's ``candidate`` function.

    Never raises for a learner's mistake: unknown ids, non-callables, stubs, exceptions,
    endless loops, wrong types and wrong shapes all come back as a :class:`CheckResult`.
    """
    try:
        ex = get_exercise(exercise_id)
    except KeyError:
        known = list_exercises()
        close = difflib.get_close_matches(str(exercise_id), known, n=3)
        suggestion = t(" Did you mean {close}?", close=", ".join(close)) if close else ""
        return CheckResult(str(exercise_id), "fail",
                           t("[FAIL] unknown exercise id {exercise_id}.{suggestion} Known ids: {known}",
                             exercise_id=repr(exercise_id), suggestion=suggestion, known=", ".join(known)))
    if not callable(candidate):
        return CheckResult(exercise_id, "fail",
                           t("[FAIL] {exercise_id}: expected a function, found {kind} {value}. Pass the function "
                             "itself, without calling it: check({exercise_id_repr}, my_function)",
                             exercise_id=exercise_id, kind=type(candidate).__name__, value=f"{candidate!r:.60}",
                             exercise_id_repr=repr(exercise_id)))
    try:
        with _one_thread():
            status, detail, mistake = _run_candidate(ex, candidate)
    except _Todo as todo:
        what = todo.args[0] if todo.args else _stub_words(candidate)
        return CheckResult(exercise_id, "todo",
                           t("[TODO] {exercise_id}: not attempted yet. Task: {task}\n"
                             "  Replace {what} with your code and run the cell again.",
                             exercise_id=exercise_id, task=t(ex.task), what=what))
    if status == "ok":
        return CheckResult(exercise_id, "ok", t("[OK] {exercise_id}: {detail}.", exercise_id=exercise_id,
                                                detail=detail))
    lines = [t("[FAIL] {exercise_id}: {detail}", exercise_id=exercise_id, detail=plain_text(detail))]
    if mistake is not None:
        lines.append(t("  Hint ({name}): {hint}", name=t(mistake.name), hint=t(mistake.hint)))
    else:
        lines.append(t("  Task: {task}", task=t(ex.task)))
    return CheckResult(exercise_id, "fail", "\n".join(lines))


# --- moving batches to the device, checked without a GPU ------------------------------------------

class _HostRecord:
    """Shared by a wrapped tensor and every tensor computed from it alone."""

    __slots__ = ("used", "moved", "where")

    def __init__(self) -> None:
        self.used = False
        self.moved = False
        self.where = ""


_MOVE_METHODS = {"to", "cuda", "cpu", "mps", "xpu"}
#: operations that only read metadata or copy to Python: never "a use on the wrong device"
_METADATA = {"__get__", "__len__", "__repr__", "__format__", "__hash__", "size", "dim", "numel", "element_size",
             "is_floating_point", "is_complex", "tolist", "item", "__bool__", "__index__", "__int__", "__float__",
             "data_ptr", "untyped_storage", "stride", "is_contiguous", "__reduce_ex__", "__deepcopy__",
             "__array__", "numpy"}


class HostTensor(torch.Tensor):
    """A tensor that stands for a batch still on the host: it records being used before ``.to(device)``.

    ``HostTensor.wrap(t)`` behaves like ``t``. ``.to(...)``, ``.cuda()``, ``.cpu()`` return a plain
    tensor (the moved batch is clean; without a GPU ``.cuda()``/``.to("cuda")`` stay on the CPU). A
    tensor computed from wrapped tensors alone is still "on the host"; an operation that mixes one with
    an ordinary tensor (a model's weights, a moved tensor) is what would fail on a GPU, and it is
    recorded: :meth:`used_unmoved` turns True. Reading metadata (``shape``, ``len``, ``.item()``,
    indexing, iterating) is not a use. Wrap the final batches (a DataLoader's ``default_collate`` would
    count as a use), e.g. ``loader = [(HostTensor.wrap(x), HostTensor.wrap(y)) for x, y in batches]``.

    >>> import torch
    >>> w = torch.ones(3)
    >>> x = HostTensor.wrap(torch.arange(3.0))
    >>> moved = x.to("cpu")
    >>> type(moved) is torch.Tensor, HostTensor.used_unmoved(x)
    (True, False)
    >>> _ = moved * w                       # the moved copy is clean
    >>> HostTensor.used_unmoved(x)
    False
    >>> y = HostTensor.wrap(torch.arange(3.0))
    >>> _ = y.to("cpu")                     # moved, but the result was never assigned
    >>> _ = y * w
    >>> HostTensor.used_unmoved(y)
    True
    """

    _all_records: list[_HostRecord] = []

    @staticmethod
    def wrap(t: torch.Tensor) -> torch.Tensor:
        """A HostTensor sharing ``t``'s data."""
        wrapped = _plain(lambda: t.as_subclass(HostTensor))
        record = _HostRecord()
        HostTensor._all_records.append(record)
        wrapped._host_records = (record,)
        return wrapped

    @staticmethod
    def used_unmoved(t: torch.Tensor) -> bool:
        """Whether ``t`` (or a tensor computed from it) was used with ordinary tensors before moving."""
        return any(r.used for r in getattr(t, "_host_records", ()))

    @staticmethod
    def any_used_unmoved() -> bool:
        """Whether any tensor wrapped since the last :meth:`reset` was used before being moved."""
        return any(r.used for r in HostTensor._all_records)

    @staticmethod
    def reset() -> None:
        """Forget the records kept for :meth:`any_used_unmoved`."""
        HostTensor._all_records.clear()

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        flat = list(_flatten((args, kwargs)))
        hosts = [a for a in flat if isinstance(a, HostTensor)]
        records = tuple({id(r): r for h in hosts for r in getattr(h, "_host_records", ())}.values())
        if name in _MOVE_METHODS and args and isinstance(args[0], HostTensor):
            for record in getattr(args[0], "_host_records", ()):
                record.moved = True
            return _plain(lambda: _move(name, args, kwargs))
        mixed = any(isinstance(a, torch.Tensor) and not isinstance(a, HostTensor) for a in flat)
        if mixed and name not in _METADATA:
            for record in records:
                record.used = True
                record.where = record.where or name
        result = _plain(lambda: func(*args, **kwargs))
        if mixed:
            return result
        return _rewrap(result, records)


def _move(name: str, args: tuple, kwargs: dict) -> Any:
    """``Tensor.to``/``.cuda``/... on a HostTensor: the moved plain tensor (CPU when there is no GPU)."""
    tensor = args[0].as_subclass(torch.Tensor)
    if name != "to":
        return tensor
    rest = [a for a in args[1:] if isinstance(a, torch.dtype) or (isinstance(a, torch.Tensor))]
    dtype = kwargs.get("dtype") or next((a if isinstance(a, torch.dtype) else a.dtype for a in rest), None)
    try:
        return torch.Tensor.to(tensor, *args[1:], **kwargs)
    except (RuntimeError, AssertionError):  # no such device here: the batch stays on the CPU
        return tensor.to(dtype) if dtype is not None else tensor


def _rewrap(result: Any, records: tuple[_HostRecord, ...]) -> Any:
    """Tensors computed from host tensors alone are host tensors too (with the same records)."""
    def convert(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
            wrapped = value.as_subclass(HostTensor)
            wrapped._host_records = records
            return wrapped
        return value

    def walk(value: Any) -> Any:
        if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
            return type(value)(walk(v) for v in value)
        return convert(value)

    with torch._C.DisableTorchFunctionSubclass():
        return walk(result)


def _flatten(value: Any) -> Iterator[Any]:
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _flatten(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _flatten(item)
    else:
        yield value


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
        return t("tensor of shape {shape}, dtype {dtype}, device {device}", shape=tuple(value.shape),
                 dtype=value.dtype, device=value.device)
    if isinstance(value, (list, tuple, dict)):
        return t("{kind} of length {length}", kind=type(value).__name__, length=len(value))
    return f"{type(value).__name__} {value!r:.60}"


def compare_tensors(out: Any, expected: "Any", *, atol: float = 1e-5, rtol: float = 1e-4,
                    name: str | None = None) -> str | None:
    """None when ``out`` is a tensor matching ``expected`` in shape, dtype and values.

    ``name`` is how the message names ``out``, already in the learner's language (``t("the output")``);
    by default "result".

    >>> import torch
    >>> compare_tensors(torch.ones(2), torch.ones(2)) is None
    True
    >>> compare_tensors(torch.ones(2, 2), torch.ones(2))
    'expected result of shape (2,), found shape (2, 2)'
    """
    import torch

    name = t("result") if name is None else name
    if not isinstance(out, torch.Tensor):
        return t("expected {name} to be a torch.Tensor, found {found}", name=name, found=describe(out))
    if out.shape != expected.shape:
        return t("expected {name} of shape {shape}, found shape {found}", name=name, shape=tuple(expected.shape),
                 found=tuple(out.shape))
    if out.dtype != expected.dtype:
        return t("expected {name} with dtype {dtype}, found {found}", name=name, dtype=expected.dtype,
                 found=out.dtype)
    if out.device.type != "meta" and not torch.allclose(out.detach(), expected.detach(), atol=atol, rtol=rtol):
        diff = (out.detach() - expected.detach()).abs().max().item()
        return t("{name} has the right shape but wrong values (largest difference {diff})", name=name,
                 diff=f"{diff:.3g}")
    return None


def fresh_copy(value: Any) -> Any:
    """A deep copy (for case factories that reuse a prototype object)."""
    return copy.deepcopy(value)
