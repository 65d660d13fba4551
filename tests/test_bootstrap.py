"""The first cell of every lesson works where course_utils is not installed (COURSE_DESIGN section 5).

A fresh virtual environment sees the course's dependencies (torch, ipykernel, ... through a
path line to this venv's site-packages) but not course_utils: the editable install's finder is
a ``.pth`` hook that a plain path line does not run, and ``PYTHONPATH`` is removed. Notebook 00,
copied outside the repository, then runs in a kernel of that environment:

* JupyterHub after nbgitpuller: the copy sits in ``course/notebooks/`` beside ``course/course_utils/``;
  the bootstrap finds the folder and puts it on ``sys.path``;
* Colab: no course folder anywhere above; the bootstrap pip-installs ``--no-deps`` from a local
  git repository standing in for the course's repository (``COURSE_REPO_URL=git+file://...``,
  ``PIP_NO_INDEX=1``: no network), and torch stays the one the environment had;
* installed (laptop, Binder): the committed notebooks' first cells say "nothing to do" (their
  outputs come from execution under the network guard).

Each kernel runs under the course's network guard, loaded from its file (course_utils itself must
stay hidden); its log must stay empty.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from notebook_files import ALL_NOTEBOOKS, ROOT, nb_id

pytestmark = pytest.mark.slow
FIRST_LINE = "course_utils: already installed, nothing to do"


def _first_code_output(nb) -> str:
    cell = next(c for c in nb.cells if c.cell_type == "code")
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=nb_id)
def test_installed_bootstrap_says_nothing_to_do(path: Path) -> None:
    text = _first_code_output(nbformat.read(path, as_version=4))
    assert text.splitlines()[0] == FIRST_LINE, text
    assert sum(line.startswith("course_utils:") for line in text.splitlines()) == 1, text


@pytest.fixture(scope="module")
def hidden_env(tmp_path_factory):
    """(python of a venv without course_utils, environment for its kernels, git stand-in URL)."""
    base = tmp_path_factory.mktemp("bootstrap")
    venv = base / "venv"
    # No pip of its own: `python -m pip` and setuptools come from the shared site-packages below.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "course_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # The stand-in repository: what a clone of the course holds for pip (committed).
    repo = base / "standin"
    repo.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, repo / name)
    shutil.copytree(ROOT / "course_utils", repo / "course_utils", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "stand-in"], check=True)
    # A kernelspec for the venv, and an IPython startup file that loads the network guard by path.
    kernels = base / "jupyter" / "kernels" / "course-bootstrap"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bootstrap test", "language": "python"}))
    startup = base / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-netguard.py").write_text(
        "import importlib.util as _u\n"
        f"_s = _u.spec_from_file_location('_course_netguard', {str(ROOT / 'course_utils' / 'netguard.py')!r})\n"
        "_m = _u.module_from_spec(_s); _s.loader.exec_module(_m); _m.install()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(JUPYTER_PATH=str(base / "jupyter"), IPYTHONDIR=str(base / "ipython"),
               COURSE_NETGUARD_LOG=str(base / "netguard.log"), MPLBACKEND="module://matplotlib_inline.backend_inline",
               PYTHONHASHSEED="0", PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",
               PIP_DISABLE_PIP_VERSION_CHECK="1", COURSE_REPO_URL=f"git+file://{repo}")
    hidden = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('course_utils'))"],
                            env=env, cwd=base, capture_output=True, text=True, check=True).stdout.strip()
    assert hidden == "None", f"course_utils is visible in the fresh venv: {hidden}"
    return python, env, base


def _run(nb, cwd: Path, env: dict) -> None:
    from nbclient import NotebookClient

    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=300, kernel_name="course-bootstrap",
                       resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _where_cell():
    return nbformat.v4.new_code_cell("import course_utils, torch\nprint(course_utils.__file__)\n"
                                     "print(torch.__file__)")


def _strip_ids(nb):
    for cell in nb.cells:
        cell.pop("id", None)
    return nb


def test_jupyterhub_folder_is_found(hidden_env) -> None:
    python, env, base = hidden_env
    course = base / "hub" / "course"
    shutil.copytree(ROOT / "course_utils", course / "course_utils", ignore=shutil.ignore_patterns("__pycache__"))
    (course / "notebooks").mkdir()
    nb = nbformat.read(ROOT / "notebooks" / "00_welcome.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    nb.cells = [first, _where_cell()]
    _run(nb, course / "notebooks", env)
    said = _first_code_output(nb).splitlines()
    assert said[0] == f"course_utils: using the course folder {course}", said
    where = "".join(o.get("text", "") for o in nb.cells[1].outputs).splitlines()
    assert where[0] == str(course / "course_utils" / "__init__.py"), where
    assert not Path(env["COURSE_NETGUARD_LOG"]).exists()


def test_colab_installs_from_the_repository_and_notebook_00_runs(hidden_env) -> None:
    python, env, base = hidden_env
    colab = base / "content"  # Colab's working folder: the notebook alone, no course folder above
    colab.mkdir()
    shutil.copyfile(ROOT / "notebooks" / "00_welcome.ipynb", colab / "00_welcome.ipynb")
    nb = nbformat.read(colab / "00_welcome.ipynb", as_version=4)
    torch_before = subprocess.run([str(python), "-c", "import torch; print(torch.__file__, torch.__version__)"],
                                  env=env, cwd=base, capture_output=True, text=True, check=True).stdout
    nb.cells.append(_where_cell())
    _run(_strip_ids(nb), colab, env)
    said = _first_code_output(nb).splitlines()
    print("\n".join(said))
    assert said[0] == (f"course_utils: installed from {env['COURSE_REPO_URL']} "
                       "(--no-deps: torch and the rest left as they are)"), said
    errors = [(i, o.ename) for i, c in enumerate(nb.cells) if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error" and "raises-exception" not in c.metadata.get("tags", [])]
    assert not errors, errors
    where = "".join(o.get("text", "") for o in nb.cells[-1].outputs).splitlines()
    assert where[0].startswith(str(base / "venv")), where  # installed into the fresh venv
    torch_after = subprocess.run([str(python), "-c", "import torch; print(torch.__file__, torch.__version__)"],
                                 env=env, cwd=base, capture_output=True, text=True, check=True).stdout
    assert torch_after == torch_before, "the install replaced torch"
    assert not Path(env["COURSE_NETGUARD_LOG"]).exists(), Path(env["COURSE_NETGUARD_LOG"]).read_text()
