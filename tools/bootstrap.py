"""The bootstrap: the lines at the top of every lesson's first code cell.

They make ``course_utils`` importable wherever the notebook runs, and record what they did in
``$COURSE_BOOTSTRAP``; ``course_utils.setup.setup()``, called on the same cell's last line, prints it
as one line in the learner's language (the bootstrap itself runs before ``course_utils`` exists, so it
cannot translate):

* installed already (``make lab``, Binder's ``postBuild``): nothing to do, no network;
* a folder above the notebook holds ``course_utils/`` (a JupyterHub after nbgitpuller pulled
  the repository): that folder goes on ``sys.path``;
* otherwise (Google Colab opens only the notebook): ``pip install --no-deps git+<repository>``,
  so the host's torch is never replaced. ``COURSE_REPO_URL`` overrides the source (a fork, a
  mirror, or a local ``git+file://`` stand-in in the tests).

The repository comes from ``[tool.course] repository`` in ``pyproject.toml``;
``python -m tools.badges`` writes it into every lesson (:func:`update_lessons`), and
``tests/test_readme.py`` checks the lessons are up to date.

Example:
    >>> cell = bootstrap_lines("https://github.com/someone/fork")
    >>> cell.splitlines()[3]
    'COURSE_REPO = "git+https://github.com/someone/fork"  # a fork: see pyproject.toml [tool.course]'
    >>> compile(cell, "bootstrap", "exec") is not None
    True
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"

#: The first line of the bootstrap (how the tools find it in a cell).
MARKER = "# Makes course_utils importable: installed (laptop, Binder), in a folder above (JupyterHub),"

_TEMPLATE = '''{marker}
# or installed from the course's repository without touching torch (Colab). setup() says which.
import importlib.util, os, pathlib, subprocess, sys
COURSE_REPO = "git+{url}"  # a fork: see pyproject.toml [tool.course]
if importlib.util.find_spec("course_utils"):
    os.environ["COURSE_BOOTSTRAP"] = "installed"
elif here := next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
                   if (p / "course_utils" / "__init__.py").is_file()), None):
    sys.path.insert(0, str(here))
    os.environ["COURSE_BOOTSTRAP"] = f"folder:{{here}}"
else:
    source = os.environ.get("COURSE_REPO_URL", COURSE_REPO)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", source], check=True)
    importlib.invalidate_caches()
    os.environ["COURSE_BOOTSTRAP"] = f"pip:{{source}}"
'''
#: How the bootstrap ends, now and before (``with_bootstrap`` replaces either).
_ENDS = ('    os.environ["COURSE_BOOTSTRAP"] = f"pip:{source}"\n',
         '(--no-deps: torch and the rest left as they are)")\n')


def repository(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The course's repository URL, configured once in ``pyproject.toml``."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return config["tool"]["course"]["repository"].rstrip("/")


def bootstrap_lines(url: str | None = None) -> str:
    """The bootstrap code (ends with a newline) for a repository URL (default: the configured one)."""
    return _TEMPLATE.format(marker=MARKER, url=url or repository())


def with_bootstrap(lesson_text: str, url: str | None = None) -> str:
    """A lesson's text whose first code cell starts with the current bootstrap (added or replaced)."""
    cells = re.split(r"(?m)^(?=# %%)", lesson_text)
    for i, cell in enumerate(cells):
        header, _, body = cell.partition("\n")
        if header.strip() != "# %%" and not header.startswith("# %% tags"):
            continue
        if body.startswith(MARKER):  # replace the old bootstrap: it ends at its last line
            end_mark = next(mark for mark in _ENDS if mark in body)
            body = body[body.index(end_mark) + len(end_mark):].lstrip("\n")
        cells[i] = f"{header}\n{bootstrap_lines(url)}\n{body}"
        return "".join(cells)
    raise ValueError("the lesson has no code cell")


def update_lessons(url: str | None = None, lessons: Path = LESSONS) -> list[Path]:
    """Write the current bootstrap into every lesson's first code cell; returns the files changed."""
    changed = []
    for path in sorted(lessons.glob("[0-9][0-9]_*.py")):
        text = path.read_text(encoding="utf-8")
        new = with_bootstrap(text, url)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed
