"""Authoring: build both notebook sets from the plain-text lessons, and check they are in sync.

``lessons/NN_topic.py`` (jupytext percent format) is the only source of a lesson. From it,
``make notebooks NB=NN`` (``python -m tools.authoring build NN``) writes and executes

* ``solutions/NN_topic.ipynb``: every cell as written, solutions included;
* ``notebooks/NN_topic.ipynb``: the learner version, each solution block replaced by its stub.

In a code cell of a lesson::

    def double(x):
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION
        ### BEGIN STUB
        # return ...  # your code here
        ### END STUB

the learner version keeps everything outside the markers, drops the solution, and
un-comments the stub block (one leading ``# `` removed per line). Without a stub block the
solution becomes ``raise NotImplementedError("Your turn")`` at the marker's indentation.

Execution uses the same environment as ``make test`` (:func:`course_utils.netguard.kernel_env`):
a fresh ``python3`` kernel, a fixed hash seed, the network guard, an empty Inductor cache. The
saved outputs are then cleaned of machine state (:func:`scrub_outputs`): absolute paths of this
machine, memory addresses and random widget ids are replaced by stable text, and consecutive
stream outputs are merged by nbconvert's ``CoalesceStreamsPreprocessor``. The widget state
nbclient saves (``metadata.widgets``, what the website draws widgets from) is kept for the
displayed widgets only, with the same stable ids (:func:`stable_widget_state`).

Example:
    >>> learner_source('''def f(x):
    ...     ### BEGIN SOLUTION
    ...     return 2 * x
    ...     ### END SOLUTION''')
    'def f(x):\\n    raise NotImplementedError("Your turn: write this function")'
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterable

from tools.bootstrap import MARKER as BOOTSTRAP_MARKER

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"

#: What JupyterLab itself writes for the ipykernel kernel, so opening and saving changes nothing.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: jupytext writes only this metadata into a lesson's header (pyproject.toml says the same).
LESSON_FORMAT = {"extension": ".py", "format_name": "percent", "notebook_metadata_filter": "kernelspec,-all"}

_BEGIN_SOL = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$")
_END_SOL = re.compile(r"^\s*### END SOLUTION\s*$")
_BEGIN_STUB = re.compile(r"^\s*### BEGIN STUB\s*$")
_END_STUB = re.compile(r"^\s*### END STUB\s*$")
DEFAULT_STUB = 'raise NotImplementedError("Your turn: write this function")'
#: The cell tag nbval reads as "this output varies by design" (``tools/tag_markers.py`` sets it).
IGNORE_TAG = "nbval-ignore-output"
_ADDRESS = re.compile(r"\b(at|object at) 0x[0-9a-fA-F]{6,16}\b")
ADDRESS_TEXT = "0x…"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"


class AuthoringError(ValueError):
    """A lesson's solution markers are malformed."""


# --------------------------------------------------------------------------- solution -> learner
def learner_source(source: str) -> str:
    """Replace every solution block of one cell's source with its stub."""
    lines = source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        begin = _BEGIN_SOL.match(lines[i])
        if not begin:
            if _END_SOL.match(lines[i]) or _BEGIN_STUB.match(lines[i]) or _END_STUB.match(lines[i]):
                raise AuthoringError(f"marker without a matching BEGIN SOLUTION: {lines[i]!r}")
            out.append(lines[i])
            i += 1
            continue
        indent = begin.group(1)
        i += 1
        while i < len(lines) and not _END_SOL.match(lines[i]):
            i += 1
        if i == len(lines):
            raise AuthoringError("### BEGIN SOLUTION without ### END SOLUTION")
        i += 1
        if i < len(lines) and _BEGIN_STUB.match(lines[i]):
            i += 1
            while i < len(lines) and not _END_STUB.match(lines[i]):
                line = lines[i]
                stripped = line.lstrip()
                lead = line[: len(line) - len(stripped)]
                if stripped.startswith("# "):
                    stripped = stripped[2:]
                elif stripped.startswith("#"):
                    stripped = stripped[1:]
                out.append(lead + stripped)
                i += 1
            if i == len(lines):
                raise AuthoringError("### BEGIN STUB without ### END STUB")
            i += 1
        else:
            out.append(indent + DEFAULT_STUB)
    return "\n".join(out)


def solution_source(source: str) -> str:
    """A solution cell as instructors read it: the learner's ``### BEGIN/END STUB`` blocks removed.

    >>> solution_source("def f(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION\\n"
    ...                 "    ### BEGIN STUB\\n    # return ...\\n    ### END STUB\\nprint(1)")
    'def f(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION\\nprint(1)'
    """
    out, skipping = [], False
    for line in source.split("\n"):
        if _BEGIN_STUB.match(line):
            skipping = True
        elif _END_STUB.match(line):
            skipping = False
        elif not skipping:
            out.append(line)
    return "\n".join(out)


def solution_view(solution_nb: Any) -> Any:
    """What ``solutions/`` holds: the lesson's cells without the stub blocks meant for learners."""
    nb = copy.deepcopy(solution_nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = solution_source(cell.source)
    return nb


def learner_notebook(solution_nb: Any) -> Any:
    """A learner copy of a solution notebook: stubs in place, changed cells' outputs cleared."""
    nb = copy.deepcopy(solution_nb)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        new = learner_source(cell.source)
        if new != cell.source:
            cell.source = new
            cell.outputs = []
            cell.execution_count = None
    return nb


# --------------------------------------------------------------------------- lesson -> notebook
def lesson_paths(names: Iterable[str] | None = None, folder: Path | None = None) -> list[Path]:
    """The lesson sources, optionally limited to prefixes such as ``03`` or ``03_autograd``."""
    paths = sorted((folder or LESSONS).glob("[0-9][0-9]_*.py"))
    wanted = list(names or [])
    if wanted:
        paths = [p for p in paths if any(p.stem.startswith(n) for n in wanted)]
    return paths


def solution_notebook(lesson: Path) -> Any:
    """The solution notebook a lesson generates, without outputs (nbformat 4.4, no cell ids)."""
    import jupytext

    text = jupytext.read(lesson, fmt="py:percent")
    cells = [_plain_cell(c) for c in text.cells]
    for cell in cells:
        if cell.cell_type == "code" and cell.source.startswith(BOOTSTRAP_MARKER):
            # The bootstrap is plumbing: JupyterLab and Notebook 7 show it collapsed (its one printed
            # line says what it did); a click on the "..." opens it.
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            break
    return _notebook(cells, {
        "course": {"generated_from": f"lessons/{lesson.name}",
                   "edit": f"edit lessons/{lesson.name}, then run `make notebooks NB={lesson.name[:2]}`"},
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
    })


def _notebook(cells: list, metadata: dict) -> Any:
    import nbformat

    return nbformat.from_dict({"nbformat": 4, "nbformat_minor": 4, "metadata": metadata, "cells": cells})


def _plain_cell(cell: Any) -> Any:
    """A copy of a cell as nbformat 4.4 stores it: no id, no outputs."""
    import nbformat

    new: dict[str, Any] = {"cell_type": cell.cell_type, "metadata": copy.deepcopy(dict(cell.metadata)),
                           "source": cell.source}
    if cell.cell_type == "code":
        new.update(execution_count=None, outputs=[])
    return nbformat.from_dict(new)


def lesson_text(nb: Any) -> str:
    """A notebook written as a lesson source (used once to convert the old notebooks)."""
    import jupytext

    clean = _notebook([_plain_cell(c) for c in nb.cells], {"kernelspec": dict(KERNELSPEC)})
    return jupytext.writes(clean, fmt=dict(LESSON_FORMAT))


def lesson_of(notebook: Path) -> Path:
    return LESSONS / (notebook.stem + ".py")


# --------------------------------------------------------------------------- machine state
def _path_replacements() -> list[tuple[str, str]]:
    """Absolute paths of this machine, longest first, with the stable text that replaces them."""
    paths = sysconfig.get_paths()
    pairs = {
        paths["purelib"]: "<site-packages>",
        paths["platlib"]: "<site-packages>",
        paths["stdlib"]: "<python>",
        paths["platstdlib"]: "<python>",
        str(ROOT): "<course>",
        sys.prefix: "<venv>",
        sys.base_prefix: "<python-home>",
        tempfile.gettempdir(): "<tmp>",
    }
    home = str(Path.home())
    for path, text in list(pairs.items()):
        if home not in ("", "/") and path.startswith(home + os.sep):
            pairs["~" + path[len(home):]] = text  # IPython shortens paths under $HOME to ~
    return sorted(((p, t) for p, t in pairs.items() if len(p) > 1), key=lambda pt: -len(pt[0]))


def scrub_text(text: str, replacements: list[tuple[str, str]] | None = None) -> str:
    """Replace this machine's absolute paths and memory addresses in one output text.

    >>> scrub_text("<MeanBackward0 object at 0x7fe5ebcaf280>", [])
    '<MeanBackward0 object at 0x…>'
    >>> scrub_text("File /opt/venv/lib/x.py:3", [("/opt/venv/lib", "<site-packages>")])
    'File <site-packages>/x.py:3'
    """
    for path, stable in (_path_replacements() if replacements is None else replacements):
        text = text.replace(path, stable)
    return _ADDRESS.sub(lambda m: f"{m.group(1)} {ADDRESS_TEXT}", text)


def scrub_outputs(nb: Any, name: str) -> Any:
    """Merge streams (nbconvert) and remove machine state from every saved output, in place."""
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    replacements = _path_replacements()
    views: list[tuple[str, str]] = []  # (nbclient's model id, the stable one) of every widget output
    raw_state = nb.metadata.get("widgets", {}).get(WIDGET_STATE_MIME, {})

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return scrub_text(value, replacements)
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    for index, cell in enumerate(nb.cells):
        for number, output in enumerate(cell.get("outputs", [])):
            if output.output_type == "stream":
                output.text = clean(output.text)
            elif output.output_type == "error":
                output.evalue = clean(output.evalue)
                output.traceback = clean(output.traceback)
            else:
                data = output.get("data", {})
                for mime in ("text/plain", "text/html", "text/markdown"):
                    if mime in data:
                        data[mime] = clean(data[mime])
                if WIDGET_MIME in data:  # a random id per run: a stable one instead (and in the state)
                    old_id = data[WIDGET_MIME].get("model_id", "")
                    final = progress_text(raw_state.get("state", {}), old_id)
                    if final is not None and "text/plain" in data:  # static views show the bar as it ended
                        data["text/plain"] = clean(final)
                    new_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{name}#{index}.{number}").hex
                    data[WIDGET_MIME]["model_id"] = new_id
                    views.append((old_id, new_id))
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE_MIME, {})
    if state.get("state") and views:
        nb.metadata["widgets"] = {WIDGET_STATE_MIME: stable_widget_state(state, views, name, clean)}
    return nb


def progress_text(state: dict, model_id: str) -> str | None:
    """The text form of a tqdm notebook bar as it ended, from the saved widget state; None if not one.

    A notebook's saved ``text/plain`` of a tqdm bar is its form when first displayed ("0/188"), which
    is what GitHub, nbconvert and a kernel-less viewer show; the saved state holds how it ended.

    >>> state = {"b": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]}},
    ...          "l": {"model_name": "HTMLModel", "state": {"value": "CNN:\u2007100%"}},
    ...          "p": {"model_name": "FloatProgressModel", "state": {"value": 188, "max": 188}},
    ...          "r": {"model_name": "HTMLModel", "state": {"value": "\u2007188/188\u2007[00:10&lt;00:00]"}}}
    >>> progress_text(state, "b")
    'CNN: 100%|##########| 188/188 [00:10<00:00]'
    """
    import html

    box = state.get(model_id, {})
    children = [c.removeprefix("IPY_MODEL_") for c in box.get("state", {}).get("children", [])]
    if box.get("model_name") != "HBoxModel" or len(children) != 3:
        return None
    left, bar, right = (state.get(c, {}) for c in children)
    if [m.get("model_name") for m in (left, bar, right)] != ["HTMLModel", "FloatProgressModel", "HTMLModel"]:
        return None
    value, top = bar["state"].get("value") or 0, bar["state"].get("max") or 0
    filled = int(10 * value / top) if top else 0
    text = (f"{html.unescape(left['state'].get('value', ''))}|{'#' * filled}{' ' * (10 - filled)}|"
            f"{html.unescape(right['state'].get('value', ''))}")
    return text.replace("\u2007", " ")


def stable_widget_state(state: dict, views: list[tuple[str, str]], name: str, clean: Any = None) -> dict:
    """The saved widget state with stable model ids, keeping only models the displayed views use.

    nbclient (``store_widget_state=True``) saves every widget model under a random id; the website
    draws the displayed widgets from it (``make site``). Each view keeps the id its output now names;
    every model it refers to (``"IPY_MODEL_<id>"``: layouts, styles, children) gets an id derived from
    the notebook's name and the order in which a depth-first walk from the views meets it, so
    re-executing an unchanged lesson writes the same ids.

    >>> saved = {"version_major": 2, "version_minor": 0, "state": {
    ...     "aaaa01": {"model_name": "IntSliderModel", "state": {"layout": "IPY_MODEL_bbbb02", "value": 3}},
    ...     "bbbb02": {"model_name": "LayoutModel", "state": {}},
    ...     "cccc03": {"model_name": "LayoutModel", "state": {}}}}
    >>> out = stable_widget_state(saved, [("aaaa01", "f" * 32)], "nb.ipynb")
    >>> layout = out["state"]["f" * 32]["state"]["layout"]
    >>> layout == "IPY_MODEL_" + uuid.uuid5(uuid.NAMESPACE_URL, "nb.ipynb#model0").hex, len(out["state"])
    (True, 2)
    """
    import json

    models = state.get("state", {})
    mapping: dict[str, str] = dict(views)  # a view shown twice, or inside another, keeps its own id
    order: list[str] = []
    derived = 0

    def walk(model_id: str) -> None:
        nonlocal derived
        if model_id in order or model_id not in models:
            return
        order.append(model_id)
        for ref in re.findall(r"IPY_MODEL_([0-9a-f]{6,})", json.dumps(models[model_id], sort_keys=True)):
            if ref not in mapping:
                mapping[ref] = uuid.uuid5(uuid.NAMESPACE_URL, f"{name}#model{derived}").hex
                derived += 1
            walk(ref)

    for old_id, _ in views:
        walk(old_id)
    text = json.dumps({mapping[m]: models[m] for m in order}, sort_keys=True)
    text = re.sub(r"IPY_MODEL_([0-9a-f]{6,})", lambda m: f"IPY_MODEL_{mapping.get(m.group(1), m.group(1))}", text)
    kept = json.loads(text)
    if clean is not None:
        kept = _clean_strings(kept, clean)
    return _as_javascript_numbers({**{k: v for k, v in state.items() if k != "state"}, "state": kept})


def _as_javascript_numbers(value: Any) -> Any:
    """Integral floats as ints (188.0 -> 188), as JupyterLab's JSON writes them on save.

    >>> _as_javascript_numbers({"max": 188.0, "step": 0.5, "n": [1.0, True]})
    {'max': 188, 'step': 0.5, 'n': [1, True]}
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    if isinstance(value, dict):
        return {k: _as_javascript_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_javascript_numbers(v) for v in value]
    return value


def _clean_strings(value: Any, clean: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean_strings(v, clean) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_strings(v, clean) for v in value]
    return clean(value) if isinstance(value, str) else value


# --------------------------------------------------------------------------- execution
def execute(nb: Any, workdir: Path, name: str, timeout: int = 300) -> Any:
    """Execute a notebook in a fresh kernel (cwd ``workdir``), then scrub its outputs.

    The kernel gets an empty Inductor cache, so the saved outputs show what a learner's first
    run measures (``torch.compile`` compiling from scratch), not a warm cache of this machine.
    """
    from nbclient import NotebookClient

    from course_utils.netguard import kernel_env

    nb = copy.deepcopy(nb)
    saved = dict(os.environ)
    cache = tempfile.mkdtemp(prefix="course-inductor-cache-")
    os.environ.update(kernel_env())
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}},
                            record_timing=False, store_widget_state=True)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(cache, ignore_errors=True)
    for cell in nb.cells:
        cell.pop("id", None)
    nb.nbformat_minor = 4
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    return scrub_outputs(nb, name)


def build(lesson: Path, solutions: Path = SOLUTIONS, notebooks: Path = NOTEBOOKS,
          run: bool = True) -> list[Path]:
    """Generate (and by default execute) both notebooks of one lesson; returns the paths written."""
    import nbformat

    solution = solution_notebook(lesson)
    learner = learner_notebook(solution)
    written = []
    for nb, folder in ((solution_view(solution), solutions), (learner, notebooks)):
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{lesson.stem}.ipynb"
        if run:
            print(f"executing {folder.name}/{target.name} ...", flush=True)
            # Executed where the committed notebook lives, so relative paths behave the same.
            nb = execute(nb, (SOLUTIONS if folder == solutions else NOTEBOOKS), f"{folder.name}/{target.name}")
        nbformat.write(nb, target)
        written.append(target)
    return written


# --------------------------------------------------------------------------- comparisons
def structure(nb: Any) -> list[tuple[str, str, dict]]:
    """What a lesson decides about a notebook: cell types, sources and cell metadata."""
    return [(c.cell_type, c.source, dict(c.get("metadata", {}))) for c in nb.cells]


def sync_problems(lesson: Path, solutions: Path = SOLUTIONS, notebooks: Path = NOTEBOOKS) -> list[str]:
    """Where the committed notebooks differ from what ``lesson`` generates (empty: in sync)."""
    import nbformat

    expected_solution = solution_notebook(lesson)
    problems = []
    for expected, folder in ((solution_view(expected_solution), solutions),
                             (learner_notebook(expected_solution), notebooks)):
        path = folder / f"{lesson.stem}.ipynb"
        where = f"{folder.name}/{path.name}"
        if not path.exists():
            problems.append(f"{where} is missing")
            continue
        actual = nbformat.read(path, as_version=4)
        for key in ("course", "kernelspec"):
            if actual.metadata.get(key) != expected.metadata.get(key):
                problems.append(f"{where}: notebook metadata {key!r} is {actual.metadata.get(key)!r}, "
                                f"the lesson gives {expected.metadata.get(key)!r}")
        got, want = structure(actual), structure(expected)
        if len(got) != len(want):
            problems.append(f"{where}: {len(got)} cells, the lesson gives {len(want)}")
        for index, (g, w) in enumerate(zip(got, want)):
            if g != w:
                what = "type" if g[0] != w[0] else "source" if g[1] != w[1] else "metadata"
                problems.append(f"{where}: cell {index} {what} differs from lessons/{lesson.name}")
                break
    return problems


def variable_by_design(cell: Any) -> bool:
    """Cells whose outputs may change between runs (nbval's ignore marker)."""
    return IGNORE_TAG in cell.get("metadata", {}).get("tags", []) or "NBVAL_IGNORE_OUTPUT" in cell.get("source", "")


def normal_outputs(outputs: list, sanitize: list[tuple[str, str]] | None = None) -> str:
    """One cell's outputs as text for comparing: images exactly, everything else after ``sanitize``.

    The sanitize rules (regex, replacement) are applied to text only, never to base64 images.
    Tracebacks are left out, as nbval does (the error's name and value are compared): their
    syntax highlighting depends on the Python version (3.12 tokenizes f-strings anew).
    """
    import json

    texts, images = [], []
    for output in outputs:
        output = copy.deepcopy(dict(output))
        output.pop("traceback", None)
        data = dict(output.get("data", {}))
        images.append({k: data.pop(k) for k in list(data) if k.startswith("image/")})
        data.pop(WIDGET_MIME, None)  # model ids: compared by the widget tests, not here
        output["data"] = data
        texts.append(output)
    text = json.dumps(texts, sort_keys=True)
    for pattern, repl in sanitize or []:
        text = re.sub(pattern, repl, text)
    return text + json.dumps(images, sort_keys=True)


def output_differences(old: Any, new: Any, sanitize: list[tuple[str, str]] | None = None) -> list[int]:
    """Indices of cells whose outputs differ (text after ``sanitize``), excluding variable cells."""
    return [i for i, (a, b) in enumerate(zip(old.cells, new.cells))
            if a.cell_type == "code" and not variable_by_design(a)
            and normal_outputs(a.outputs, sanitize) != normal_outputs(b.outputs, sanitize)]


def nbval_sanitizers(cfg: Path = ROOT / "tests" / "nbval_sanitize.cfg") -> list[tuple[str, str]]:
    """The (regex, replacement) pairs of the nbval sanitize file."""
    import configparser

    parser = configparser.ConfigParser()
    parser.read(cfg, encoding="utf-8")
    return [(parser[s]["regex"], parser[s]["replace"]) for s in parser.sections()]


def idempotence_problems(lesson: Path) -> list[str]:
    """Re-execute a lesson into a temporary folder and list cells whose saved outputs changed."""
    import nbformat

    tmp = Path(tempfile.mkdtemp(prefix="course-idempotence-"))
    try:
        build(lesson, tmp / "solutions", tmp / "notebooks")
        problems = []
        for folder in ("solutions", "notebooks"):
            old = nbformat.read(ROOT / folder / f"{lesson.stem}.ipynb", as_version=4)
            new = nbformat.read(tmp / folder / f"{lesson.stem}.ipynb", as_version=4)
            if old.metadata.get("course") != new.metadata.get("course"):
                problems.append(f"{folder}/{lesson.stem}.ipynb: metadata differs")
            for index in output_differences(old, new, nbval_sanitizers()):
                problems.append(f"{folder}/{lesson.stem}.ipynb: cell {index}'s outputs changed on re-execution "
                                f"(tag it `nbval-ignore-output` and assert its key property, or make it deterministic)")
        return problems
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["build", "generate", "sync", "idempotence"],
                        help="build: generate and execute both notebooks; generate: write them without "
                             "executing (outputs empty); sync: report notebooks that differ from their lesson; "
                             "idempotence: re-execute into a temp folder and report changed outputs")
    parser.add_argument("names", nargs="*", help="lesson prefixes such as 01 or 01_tensors (default: all)")
    args = parser.parse_args(argv)
    lessons = lesson_paths(args.names)
    if not lessons:
        print(f"no lesson in lessons/ matches {args.names}", file=sys.stderr)
        return 2
    problems: list[str] = []
    for lesson in lessons:
        if args.command in ("build", "generate"):
            for path in build(lesson, run=args.command == "build"):
                print(f"wrote {path.relative_to(ROOT)}", flush=True)
        elif args.command == "sync":
            problems += sync_problems(lesson)
        else:
            problems += idempotence_problems(lesson)
    for problem in problems:
        print(problem)
    if args.command in ("sync", "idempotence"):
        print(f"{len(lessons)} lessons, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
