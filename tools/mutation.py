"""Mutation gate: every exercise's reference solution, mutated with generic operators, must be rejected
by its checker (or listed as equivalent, with a reason, in ``tools/mutation_equivalents.toml``).

``python -m tools.mutation [--only 03] [--jobs 2] [--threshold 0.99]`` takes the source of each registered
exercise's reference (``inspect.getsource``), applies one operator at a time (arithmetic and comparison
swaps, constants, ``dim=``/``keepdim=``, deleted and swapped statements, removed ``no_grad`` blocks,
removed ``.clone()``/``.detach()``/``.to()``/``.item()`` calls, in-place variants, changed return values),
compiles each mutant in the reference's module globals and runs ``check(id, mutant)``. A mutant is
*killed* when the result is not ``[OK]``, *survives* when it is. Mutants that do not compile, or that are
the same program as the reference or as an earlier mutant, are skipped. The score is
killed / (total - equivalent). The command exits 1 below the threshold, when a mutant hangs past the hard
timeout (the framework's time limit should have stopped it) or when ``check`` itself raised.

Each mutant runs in a worker process (``--jobs``; ``--jobs 0`` runs them in this process, without the
hard timeout); a worker that passes the hard timeout is killed and replaced.

Example:
    >>> def f(x, y):
    ...     return x + y * 2
    >>> keys = [m.key for m in mutants_of(f, "00.toy")]
    >>> "arith:1:Add->Sub" in keys and "const:1:2->3" in keys and "return:1:None" in keys
    True
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import inspect
import linecache
import multiprocessing
import sys
import textwrap
import time
import tomllib
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterator

EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.toml")

_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_COMPARE = {ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
            ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,),
            ast.IsNot: (ast.Is,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,)}
_DIM_KEYWORDS = {"dim", "axis", "start_dim", "end_dim"}
_GRAD_CONTEXTS = {"no_grad", "inference_mode", "enable_grad", "set_grad_enabled"}
_REMOVABLE_CALLS = {"clone", "detach", "to", "cpu", "item", "float"}
_INPLACE = {"add", "sub", "mul", "div", "clamp", "neg", "abs", "exp", "relu", "sigmoid", "tanh", "sqrt",
            "pow", "zero", "fill", "copy", "masked_fill", "squeeze", "unsqueeze", "t", "transpose"}


@dataclass(frozen=True)
class Mutant:
    """One mutated version of a reference: ``key`` is stable (operator:line offset:description)."""

    exercise_id: str
    key: str
    source: str
    line: str
    #: the module that defines the reference (imported first in a worker: it may register the exercise)
    module: str = ""


@dataclass
class Outcome:
    """What ``check`` said about one mutant."""

    mutant: Mutant
    verdict: str  # "killed", "survived", "equivalent", "skipped", "hang", "raised"
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    stale_equivalents: list[str] = field(default_factory=list)

    def counts(self, exercise_id: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for o in self.outcomes:
            if exercise_id is None or o.mutant.exercise_id == exercise_id:
                counts[o.verdict] = counts.get(o.verdict, 0) + 1
        return counts

    def score(self, exercise_id: str | None = None) -> float:
        c = self.counts(exercise_id)
        counted = sum(v for k, v in c.items() if k not in ("equivalent", "skipped"))
        return c.get("killed", 0) / counted if counted else 1.0


# --- mutant generation -------------------------------------------------------------------------------

def _function_node(tree: ast.Module) -> ast.FunctionDef | ast.AsyncFunctionDef:
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ValueError("not a function definition")
    return node


def _nodes(func: ast.AST) -> list[ast.AST]:
    """Every node of the function body in a stable order (the same on a deep copy)."""
    return [n for n in ast.walk(func)]


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _blocks(func: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(owner, field name) of every statement list in the function (bodies, else branches, ...)."""
    for node in ast.walk(func):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, name


def _sites(func: ast.FunctionDef | ast.AsyncFunctionDef
           ) -> Iterator[tuple[str, int, str, Callable[[ast.AST], None]] | tuple[str, int, str, Callable, int]]:
    """(operator, node index, description, edit[, line]) for every mutation; ``edit`` changes the
    copied node at that index (the line is the node's unless given)."""
    nodes = _nodes(func)
    dim_constants = {id(k.value) for n in nodes if isinstance(n, ast.Call) for k in n.keywords
                     if k.arg in _DIM_KEYWORDS | {"keepdim"}}
    first_arg = func.args.args[0].arg if func.args.args else None
    signature = {id(n) for part in (func.args, func.returns) if part is not None for n in ast.walk(part)}
    for index, node in enumerate(nodes):
        if id(node) in signature:  # defaults and annotations: not the function's behaviour on the cases
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
            new = _ARITH[type(node.op)]
            yield ("arith", index, f"{type(node.op).__name__}->{new.__name__}",
                   lambda n, new=new: setattr(n, "op", new()))
        elif isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                for new in _COMPARE.get(type(op), ()):
                    def edit(n: ast.AST, position: int = position, new: type = new) -> None:
                        n.ops[position] = new()
                    yield "compare", index, f"{type(op).__name__}->{new.__name__}", edit
        elif isinstance(node, ast.Constant) and id(node) not in dim_constants:
            value = node.value
            if isinstance(value, bool):
                yield "const", index, f"{value}->{not value}", lambda n: setattr(n, "value", not n.value)
            elif isinstance(value, (int, float)):
                replacements = {value + 1}
                if value == 1:
                    replacements.add(type(value)(0))
                for new_value in sorted(replacements):
                    yield ("const", index, f"{value}->{new_value}",
                           lambda n, v=new_value: setattr(n, "value", v))
        elif isinstance(node, ast.Call):
            yield from _call_sites(node, index)
        elif isinstance(node, ast.With):
            names = [_called_name(item.context_expr) for item in node.items]
            if any(name in _GRAD_CONTEXTS for name in names):
                yield "no_grad", index, f"removed `with {names[0]}`", lambda n: setattr(n, "items", [])
        elif isinstance(node, ast.Return) and node.value is not None and index > 0:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                yield "return", index, "None", lambda n: setattr(n, "value", ast.Constant(None))
            if first_arg and not (isinstance(node.value, ast.Name) and node.value.id == first_arg):
                yield ("return", index, f"first argument `{first_arg}`",
                       lambda n, a=first_arg: setattr(n, "value", ast.Name(a, ast.Load())))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if (isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name)
                    and value.left.id == node.targets[0].id):
                yield "inplace", index, f"`{node.targets[0].id} {_symbol(value.op)}=`", _to_augassign
    for owner, name in _blocks(func):
        block = getattr(owner, name)
        owner_index = nodes.index(owner) if owner in nodes else -1
        for position, statement in enumerate(block):
            if _is_docstring(statement) or isinstance(statement, (ast.Import, ast.ImportFrom)):
                continue
            text = ast.unparse(statement).split("\n")[0][:50]
            yield ("delete", owner_index, f"`{text}`",
                   lambda n, name=name, position=position: _delete(n, name, position), statement.lineno)
            if position + 1 < len(block) and not _is_docstring(block[position + 1]) \
                    and not _independent(statement, block[position + 1]):
                yield ("swap", owner_index, f"`{text}` with the next statement",
                       lambda n, name=name, position=position: _swap(n, name, position), statement.lineno)


#: calls that neither change their arguments nor depend on hidden state (for "pure bindings")
_PURE_CALLS = {"len", "sum", "tuple", "list", "dict", "set", "frozenset", "range", "enumerate", "zip", "min", "max",
               "int", "float", "str", "bool", "sorted", "isinstance", "Path", "abs", "round", "numel",
               "element_size", "size", "dim", "parameters", "named_parameters", "buffers", "keys", "items",
               "values", "tensor", "zeros", "ones", "empty", "full", "data_ptr", "untyped_storage", "nbytes"}


def _names(node: ast.AST) -> set[str]:
    """The names a node uses, without the loop variables of its comprehensions (local to them)."""
    local = {n.id for c in ast.walk(node) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)
             if isinstance(n, ast.Name)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - local


def _pure_binding(statement: ast.stmt) -> set[str] | None:
    """The names a statement binds when all it does is bind them to a value computed without side
    effects (no calls other than ``_PURE_CALLS``); None otherwise."""
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return None
    if not all(isinstance(n, (ast.Name, ast.Tuple)) for n in targets):
        return None
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and _called_name(node) not in _PURE_CALLS:
            return None
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return None
    return set().union(*(_names(t) for t in targets))


def _independent(first: ast.stmt, second: ast.stmt) -> bool:
    """Whether swapping two neighbours is the same program: one of them only binds local names to a pure
    value, the other neither uses those names nor rebinds or changes (``x.attr =``, ``x.f()``) the names
    the value reads. (Such a swap is never generated: it would only fill the equivalents list.)"""
    for pure, other in ((first, second), (second, first)):
        bound = _pure_binding(pure)
        if bound is None:
            continue
        reads = _names(pure.value) - bound  # type: ignore[attr-defined]
        if not (bound & _names(other)) and not (reads & _changed_names(other)):
            return True
    return False


def _changed_names(statement: ast.stmt) -> set[str]:
    """Names a statement may rebind or change: stored names, bases of stored attributes/items, and every
    name inside a call that is not pure (``x.step()``, ``f(x)``)."""
    changed: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            changed.add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            changed |= _names(node.value)
        elif isinstance(node, ast.Call) and _called_name(node) not in _PURE_CALLS:
            changed |= _names(node)
    local = {n.id for c in ast.walk(statement) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)
             if isinstance(n, ast.Name)}
    return changed - local


def _call_sites(node: ast.Call, index: int) -> Iterator[tuple[str, int, str, Callable[[ast.AST], None]]]:
    for k_index, keyword in enumerate(node.keywords):
        value = keyword.value
        if keyword.arg in _DIM_KEYWORDS and isinstance(value, ast.Constant) and type(value.value) is int:
            for new in sorted({value.value + 1, value.value - 1}):
                yield ("dim", index, f"{keyword.arg}={value.value}->{new}",
                       lambda n, k=k_index, v=new: setattr(n.keywords[k].value, "value", v))
        if keyword.arg == "keepdim" and isinstance(value, ast.Constant) and isinstance(value.value, bool):
            yield ("dim", index, f"keepdim={value.value}->{not value.value}",
                   lambda n, k=k_index: setattr(n.keywords[k].value, "value", not n.keywords[k].value.value))
    names = {k.arg for k in node.keywords}
    if names & {"dim", "axis"} and "keepdim" not in names:
        yield ("dim", index, "added keepdim=True",
               lambda n: n.keywords.append(ast.keyword("keepdim", ast.Constant(True))))
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in _REMOVABLE_CALLS:
            yield "remove_call", index, f"removed `.{func.attr}()`", _unwrap_call
        if func.attr in _INPLACE:
            yield ("inplace", index, f"`.{func.attr}` -> `.{func.attr}_`",
                   lambda n: setattr(n.func, "attr", n.func.attr + "_"))


def _called_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _symbol(op: ast.operator) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
            ast.Pow: "**", ast.MatMult: "@"}.get(type(op), type(op).__name__)


def _to_augassign(node: ast.AST) -> None:
    """Marker edit: the Assign is replaced by an AugAssign in ``_apply`` (a node cannot change class)."""
    node._to_augassign = True  # type: ignore[attr-defined]


def _unwrap_call(node: ast.AST) -> None:
    node._unwrap = True  # type: ignore[attr-defined]


def _delete(owner: ast.AST, name: str, position: int) -> None:
    block = getattr(owner, name)
    block[position] = ast.Pass()


def _swap(owner: ast.AST, name: str, position: int) -> None:
    block = getattr(owner, name)
    block[position], block[position + 1] = block[position + 1], block[position]


class _Rewrite(ast.NodeTransformer):
    """Applies the marker edits (nodes replaced by nodes of another class)."""

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        if getattr(node, "_to_augassign", False):
            value = node.value
            assert isinstance(value, ast.BinOp)
            return ast.AugAssign(ast.Name(node.targets[0].id, ast.Store()), value.op, value.right)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if getattr(node, "_unwrap", False) and isinstance(node.func, ast.Attribute):
            return node.func.value
        return node

    def visit_With(self, node: ast.With) -> Any:
        self.generic_visit(node)
        if not node.items:
            return node.body
        return node


def mutants_of(func: Callable[..., Any], exercise_id: str) -> list[Mutant]:
    """The distinct, compilable mutants of ``func``'s source (same program twice counts once)."""
    source = textwrap.dedent(inspect.getsource(func))
    tree = ast.parse(source)
    original = _function_node(tree)
    seen = {ast.unparse(tree)}
    keys: dict[str, int] = {}
    mutants: list[Mutant] = []
    for site in list(_sites(original)):
        operator, index, description, edit = site[:4]
        copied = copy.deepcopy(tree)
        target = _nodes(_function_node(copied))[index] if index >= 0 else None
        if target is None:
            continue
        lineno = site[4] if len(site) > 4 else getattr(_nodes(original)[index], "lineno", original.lineno)
        line_offset = lineno - original.lineno
        try:
            edit(target)
            mutated = ast.fix_missing_locations(_Rewrite().visit(copied))
            text = ast.unparse(mutated)
            compile(text, "<mutant>", "exec")
        except (SyntaxError, ValueError, TypeError, AssertionError, AttributeError, IndexError):
            continue
        if text in seen:
            continue
        seen.add(text)
        key = f"{operator}:{line_offset}:{description}"
        keys[key] = keys.get(key, 0) + 1
        if keys[key] > 1:
            key = f"{key}#{keys[key]}"
        lines = source.splitlines()
        line = lines[line_offset + (original.lineno - 1)].strip() if line_offset >= 0 else ""
        mutants.append(Mutant(exercise_id, key, text, line, getattr(func, "__module__", "") or ""))
    return mutants


def compile_mutant(mutant: Mutant, reference: Callable[..., Any]) -> Callable[..., Any]:
    """The mutant as a function defined in (a copy of) the reference's module globals, with its source
    in ``linecache`` (so ``inspect.getsource`` works on it, as on a notebook cell)."""
    filename = f"<mutant {mutant.exercise_id} {mutant.key}>"
    linecache.cache[filename] = (len(mutant.source), None, mutant.source.splitlines(True), filename)
    namespace = dict(reference.__globals__)
    exec(compile(mutant.source, filename, "exec"), namespace)
    return namespace[reference.__name__]


# --- running ------------------------------------------------------------------------------------------

def load_equivalents(path: Path = EQUIVALENTS) -> dict[tuple[str, str], str]:
    """{(exercise id, mutant key): reason} from the TOML file (``[[equivalent]]`` tables)."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {(entry["exercise"], entry["mutant"]): entry["reason"] for entry in data.get("equivalent", [])}


def judge(mutant: Mutant) -> tuple[str, str, float]:
    """(verdict, first line of the message, seconds) of ``check`` on one mutant, in this process."""
    from course_utils.exercises import check, get_exercise

    if mutant.module:
        importlib.import_module(mutant.module)
    reference = get_exercise(mutant.exercise_id).reference
    try:
        candidate = compile_mutant(mutant, reference)
    except Exception as exc:  # noqa: BLE001 - a mutant that cannot be defined is skipped
        return "skipped", f"{type(exc).__name__}: {exc}", 0.0
    started = time.perf_counter()
    try:
        result = check(mutant.exercise_id, candidate)
    except BaseException as exc:  # noqa: BLE001 - the gate reports it; check() must never raise
        if isinstance(exc, KeyboardInterrupt):
            raise
        return "raised", "".join(traceback.format_exception_only(type(exc), exc)).strip(), 0.0
    seconds = time.perf_counter() - started
    verdict = "survived" if result.status == "ok" else "killed"
    return verdict, result.message.split("\n")[0][:200], seconds


def _worker(conn: Connection) -> None:
    import course_utils.exercises  # noqa: F401 - the slow imports, before saying "ready"

    conn.send("ready")
    while True:
        try:
            mutant = conn.recv()
        except EOFError:
            return
        if mutant is None:
            return
        conn.send(judge(mutant))


class _Worker:
    def __init__(self, context: Any) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.task: Mutant | None = None
        self.started = 0.0
        self.ready = False

    def poll_ready(self) -> bool:
        if not self.ready and self.conn.poll():
            try:
                self.ready = self.conn.recv() == "ready"
            except (EOFError, OSError) as exc:
                raise RuntimeError("a mutation worker died while starting (import error?)") from exc
        return self.ready

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


def _run_parallel(mutants: list[Mutant], jobs: int, hard_timeout: float,
                  progress: Callable[[Outcome], None]) -> list[Outcome]:
    context = multiprocessing.get_context("spawn")
    pending = deque(mutants)
    workers = [_Worker(context) for _ in range(min(jobs, len(mutants)))]
    outcomes: list[Outcome] = []
    try:
        while pending or any(w.task is not None for w in workers):
            for worker in workers:
                if worker.task is None and pending and worker.poll_ready():
                    worker.task, worker.started = pending.popleft(), time.monotonic()
                    worker.conn.send(worker.task)
            busy = [w for w in workers if w.task is not None]
            ready = wait([w.conn for w in busy], timeout=0.5) if busy else time.sleep(0.2) or []
            for index, worker in enumerate(workers):
                if worker.task is None:
                    continue
                outcome = None
                if worker.conn in ready:
                    try:
                        verdict, detail, seconds = worker.conn.recv()
                        outcome = Outcome(worker.task, verdict, detail, seconds)
                    except (EOFError, OSError):
                        outcome = Outcome(worker.task, "raised", "the worker process died")
                elif time.monotonic() - worker.started > hard_timeout:
                    outcome = Outcome(worker.task, "hang", f"still running after {hard_timeout:g} s")
                if outcome is None:
                    continue
                outcomes.append(outcome)
                progress(outcome)
                if outcome.verdict == "hang" or not worker.process.is_alive():
                    worker.stop()
                    workers[index] = _Worker(context)
                else:
                    worker.task = None
    finally:
        for worker in workers:
            try:
                worker.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            worker.stop()
    return outcomes


def run(exercise_ids: list[str], *, jobs: int = 2, hard_timeout: float = 60.0,
        equivalents: dict[tuple[str, str], str] | None = None,
        progress: Callable[[Outcome], None] = lambda outcome: None) -> Report:
    """Generate and judge the mutants of ``exercise_ids``; equivalents are not run."""
    from course_utils.exercises import get_exercise

    equivalents = load_equivalents() if equivalents is None else equivalents
    report = Report()
    to_run: list[Mutant] = []
    generated: set[tuple[str, str]] = set()
    for exercise_id in exercise_ids:
        for mutant in mutants_of(get_exercise(exercise_id).reference, exercise_id):
            generated.add((exercise_id, mutant.key))
            if (exercise_id, mutant.key) in equivalents:
                report.outcomes.append(Outcome(mutant, "equivalent", equivalents[(exercise_id, mutant.key)]))
            else:
                to_run.append(mutant)
    report.stale_equivalents = sorted(f"{e} {k}" for e, k in equivalents
                                      if e in exercise_ids and (e, k) not in generated)
    if jobs <= 0:
        for mutant in to_run:
            verdict, detail, seconds = judge(mutant)
            report.outcomes.append(Outcome(mutant, verdict, detail, seconds))
            progress(report.outcomes[-1])
    else:
        report.outcomes.extend(_run_parallel(to_run, jobs, hard_timeout, progress))
    order = {e: i for i, e in enumerate(exercise_ids)}
    report.outcomes.sort(key=lambda o: (order[o.mutant.exercise_id], o.mutant.key))
    return report


def select(only: list[str] | None) -> list[str]:
    """Registered ids, limited to those equal to or starting with one of ``only`` (``03``, ``06.evaluate``)."""
    from course_utils.exercises import list_exercises

    ids = list_exercises()
    if not only:
        return ids
    return [i for i in ids if any(i == o or i.startswith(o.rstrip(".") + ".") for o in only)]


def format_report(report: Report, exercise_ids: list[str], threshold: float) -> str:
    lines = []
    for exercise_id in exercise_ids:
        c = report.counts(exercise_id)
        total = sum(c.values())
        lines.append(f"{exercise_id:28s} mutants {total:3d}  killed {c.get('killed', 0):3d}  "
                     f"equivalent {c.get('equivalent', 0):2d}  survived {c.get('survived', 0):2d}  "
                     f"score {100 * report.score(exercise_id):5.1f} %")
    bad = [o for o in report.outcomes if o.verdict in ("survived", "hang", "raised")]
    if bad:
        lines.append("")
        lines.append("Survivors, hangs and errors (add a case to the checker, or list a true equivalent "
                     "in tools/mutation_equivalents.toml with a reason):")
        for o in bad:
            lines.append(f"  {o.verdict.upper():8s} {o.mutant.exercise_id} {o.mutant.key}   [{o.mutant.line}]"
                         + (f"  {o.detail}" if o.verdict != "survived" else ""))
    if report.stale_equivalents:
        lines.append("")
        lines.append("Listed as equivalent but no longer generated (remove them):")
        lines.extend(f"  {s}" for s in report.stale_equivalents)
    c = report.counts()
    counted = sum(v for k, v in c.items() if k not in ("equivalent", "skipped"))
    lines.append("")
    lines.append(f"TOTAL: {c.get('killed', 0)} killed of {counted} non-equivalent mutants "
                 f"({c.get('equivalent', 0)} equivalent, {c.get('hang', 0)} hang, {c.get('raised', 0)} raised): "
                 f"score {100 * report.score():.1f} % (threshold {100 * threshold:.1f} %)")
    return "\n".join(lines)


def passed(report: Report, threshold: float) -> bool:
    c = report.counts()
    return report.score() >= threshold and not c.get("hang") and not c.get("raised")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="exercise ids or lesson prefixes (03, 06.evaluate)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (0: run in this process)")
    parser.add_argument("--threshold", type=float, default=0.99)
    parser.add_argument("--hard-timeout", type=float, default=60.0, help="seconds before a mutant is a hang")
    parser.add_argument("--list", action="store_true", help="only list the mutants' keys")
    parser.add_argument("--quiet", action="store_true", help="no progress line per mutant")
    args = parser.parse_args(argv)
    ids = select(args.only)
    if not ids:
        print(f"no registered exercise matches {args.only}", file=sys.stderr)
        return 2
    if args.list:
        from course_utils.exercises import get_exercise
        for exercise_id in ids:
            for mutant in mutants_of(get_exercise(exercise_id).reference, exercise_id):
                print(f"{exercise_id} {mutant.key}   [{mutant.line}]")
        return 0
    started = time.monotonic()

    def progress(outcome: Outcome) -> None:
        if not args.quiet:
            print(f"  {outcome.verdict:9s} {outcome.seconds:5.2f}s {outcome.mutant.exercise_id} {outcome.mutant.key}",
                  flush=True)

    report = run(ids, jobs=args.jobs, hard_timeout=args.hard_timeout, progress=progress)
    print(format_report(report, ids, args.threshold))
    print(f"took {time.monotonic() - started:.0f} s with {args.jobs} job(s)")
    return 0 if passed(report, args.threshold) else 1


if __name__ == "__main__":
    sys.exit(main())
