"""Drive JupyterLab in headless chromium: the machinery behind ``tests/test_browser.py``.

* :class:`LabServer` starts ``jupyter lab`` on a free localhost port (empty token, fresh
  workspaces/settings/config dirs, kernels get :func:`course_utils.netguard.kernel_env`)
  over a folder of notebook copies, and stops it with all its kernels.
* :func:`expectations` reads what the committed ``.ipynb`` promises: which cells may show an
  error (``raises-exception`` / ``stderr-is-the-lesson`` tags) and how many widgets each cell
  displays.
* :class:`LabDriver` opens one notebook at a time in a single browser page, runs all cells,
  waits until the kernel is idle and every cell has executed, then reads the page: error
  outputs per cell, every widget rendered, and every control of every widget operated once
  (slider moved, another option picked, button clicked) with the widget's ``Output`` area
  (text or image) required to change. Problems come back as sentences, not exceptions.

Widgets are discovered on the page (and counted from the file), never listed by hand; the
convention they follow is in ``course_utils/widgets/__init__.py``.

Example:
    >>> Control("c1", "slider", "n").describe()
    "slider 'n'"
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
REQUIRE_ENV = "REQUIRE_BROWSER_TESTS"
ERROR_TAGS = ("raises-exception", "stderr-is-the-lesson")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: How a course explorer's text/plain form starts (course_utils/widgets/base.py), and where its readout begins.
INTERACTIVE_NOTE = "Interactive widget: it needs a running kernel."
READOUT_PREFIX = "It starts at: "
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?")

#: Seconds; override with the environment variables of the same name (e.g. on a slow machine).
TIMEOUTS = {
    "BROWSER_SERVER_TIMEOUT": 120,   # jupyter lab answering /api/status
    "BROWSER_LOAD_TIMEOUT": 120,     # the Lab page restored, a kernel started and idle
    "BROWSER_RUN_TIMEOUT": 480,      # "Run All Cells" of one notebook finished
    "BROWSER_WIDGET_TIMEOUT": 30,    # one widget interaction reflected in its Output
}


def timeout(name: str) -> float:
    return float(os.environ.get(name, TIMEOUTS[name]))


def browser_unavailable() -> str | None:
    """Why the browser test cannot run here, or None when it can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (Debian: `apt-get install chromium`)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"the playwright Python package is not importable ({exc})"
    return None


# --- what the committed notebook promises --------------------------------------------------

@dataclass
class Expected:
    """Facts read from the ``.ipynb`` file (cell indices count every cell, markdown included)."""

    name: str
    cell_types: list[str]
    error_cells: set[int] = field(default_factory=set)    # may show an error or stderr
    raising_cells: set[int] = field(default_factory=set)  # must show an error
    widgets: dict[int, int] = field(default_factory=dict)  # cell -> widget views in the file
    readouts: dict[int, str] = field(default_factory=dict)  # cell -> a course explorer's saved readout


def expectations(path: Path, nb: Any = None) -> Expected:
    """What ``path`` promises (pass ``nb`` when it is already read, to use that very version)."""
    if nb is None:
        nb = nbformat.read(path, as_version=4)
    exp = Expected(path.name, [c.cell_type for c in nb.cells])
    for index, cell in enumerate(nb.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if any(tag in tags for tag in ERROR_TAGS):
            exp.error_cells.add(index)
        if "raises-exception" in tags:
            exp.raising_cells.add(index)
        if cell.cell_type == "code":
            views = [out["data"] for out in cell.get("outputs", []) if WIDGET_MIME in out.get("data", {})]
            if views:
                exp.widgets[index] = len(views)
            for data in views:
                plain = "".join(data.get("text/plain", ""))
                if plain.startswith(INTERACTIVE_NOTE):  # a course explorer: its readout is in the file
                    exp.readouts[index] = plain.split(READOUT_PREFIX, 1)[-1]
    return exp


def numbers(text: str) -> list[str]:
    """The numbers in a readout, as written (``545,098``, ``30.1``, ``1e-05``).

    >>> numbers("Adam, 545,098 parameters, batch 64: total 30.1 MiB, lr 1e-05")
    ['545,098', '64', '30.1', '1e-05']
    """
    return _NUMBER.findall(text)


def _strip(nb: Any) -> Any:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            # A collapsed input (the bootstrap cell) hides its prompt, which the run check reads.
            cell.metadata.pop("jupyter", None)
    nb.metadata.pop("widgets", None)
    return nb


def copy_without_outputs(sources: list[Path], root: Path) -> dict[Path, tuple[str, Expected]]:
    """Copy each notebook's folder under ``root`` with outputs stripped.

    Returns ``{source notebook: (path relative to root, its Expected)}``; both come from the
    same read of the file, so a notebook edited while the test runs cannot make them disagree.
    The copies start blank, so every output on the page comes from this run, and autosave can
    never touch the committed files.
    """
    mapping: dict[Path, tuple[str, Expected]] = {}
    folders: dict[Path, str] = {}
    for source in sources:
        folder = source.resolve().parent
        if folder not in folders:
            name = folder.name
            while name in folders.values():
                name += "_"
            folders[folder] = name
            shutil.copytree(folder, root / name,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
            for other in (root / name).rglob("*.ipynb"):
                nbformat.write(_strip(nbformat.read(other, as_version=4)), other)
    for source in sources:
        lab_path = f"{folders[source.resolve().parent]}/{source.name}"
        nb = nbformat.read(source, as_version=4)
        expected = expectations(source, nb)
        nbformat.write(_strip(nb), root / lab_path)
        mapping[source] = (lab_path, expected)
    return mapping


# --- the server ------------------------------------------------------------------------------

_LAB_SETTINGS = {
    # Every cell attached to the DOM, so the page can be read cell by cell.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # No news or update checks (no network), no pop-up over the notebook.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
_LAB_CONFIG = ("c.LabApp.news_url = None\n"
               "c.LabApp.check_for_updates_class = "
               "'jupyterlab.handlers.announcements.NeverCheckForUpdate'\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """``jupyter lab`` over ``root``; state (config, settings, workspaces, runtime) in ``workdir``."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.root, self.workdir = root, workdir
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.log_path = workdir / "jupyter-lab.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _command(self) -> list[str]:
        jupyter = Path(sys.executable).with_name("jupyter")  # the venv running the tests
        lab = [str(jupyter), "lab"] if jupyter.exists() else [sys.executable, "-m", "jupyterlab"]
        return lab + [
            "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0", "--IdentityProvider.token=",
            "--PasswordIdentityProvider.hashed_password=", "--ServerApp.disable_check_xsrf=True",
            "--ServerApp.allow_root=True", f"--ServerApp.root_dir={self.root}",
            f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
            f"--LabApp.user_settings_dir={self.workdir / 'settings'}",
            "--LabApp.expose_app_in_browser=True",
        ]

    def _environment(self) -> dict[str, str]:
        from course_utils.netguard import kernel_env

        env = dict(os.environ)
        env.update(kernel_env(self.workdir / "ipython"))
        env.update(JUPYTER_CONFIG_DIR=str(self.workdir / "config"),
                   JUPYTER_RUNTIME_DIR=str(self.workdir / "runtime"),
                   JUPYTER_DATA_DIR=str(self.workdir / "data"),
                   JUPYTER_PLATFORM_DIRS="1")
        env.pop("JUPYTER_PATH", None)
        return env

    def start(self) -> None:
        for name, content in _LAB_SETTINGS.items():
            target = self.workdir / "settings" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(content))
        (self.workdir / "config").mkdir(parents=True, exist_ok=True)
        (self.workdir / "config" / "jupyter_lab_config.py").write_text(_LAB_CONFIG)
        (self.workdir / "workspaces").mkdir(exist_ok=True)
        env = self._environment()
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = _free_port()
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(self._command(), env=env, cwd=self.root,
                                                stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)
            if self._wait_ready():
                return
        raise RuntimeError(f"jupyter lab did not start; its log ends with:\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + timeout("BROWSER_SERVER_TIMEOUT")
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                self.api("GET", "/api/status")
                return True
            except OSError:
                time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"jupyter lab did not answer within {timeout('BROWSER_SERVER_TIMEOUT'):.0f} s; "
                           f"log:\n{self.log_tail()}")

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Delete every session and kernel of this server (best effort)."""
        for kind in ("sessions", "kernels"):
            try:
                for item in self.api("GET", f"/api/{kind}") or []:
                    self.api("DELETE", f"/api/{kind}/{item['id']}")
            except OSError:
                pass

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.shutdown_kernels()
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        try:  # kernels the server left behind share its process group
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process = None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


# --- the page ----------------------------------------------------------------------------------

@dataclass
class Control:
    mark: str    # value of the data-course-control attribute set on the element
    kind: str    # slider, dropdown, select, toggle-buttons, toggle, button, checkbox, radio, number, text
    label: str

    def describe(self) -> str:
        return f"{self.kind} {self.label!r}" if self.label else self.kind


@dataclass
class Report:
    notebook: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    widgets: int = 0
    interactions: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    page_errors: list[str] = field(default_factory=list)
    checked_pictures: int = 0
    screenshots: list[str] = field(default_factory=list)

    def format(self) -> str:
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in self.phases.items())
        lines = [f"{self.notebook}: {len(self.problems)} problem(s) in JupyterLab (headless chromium); "
                 f"{self.widgets} widget(s), {self.interactions} interaction(s), "
                 f"{self.checked_pictures} picture check(s); {phases}"]
        lines += [f"  - {p}" for p in self.problems]
        if self.page_errors:
            lines.append("  browser console errors (for diagnosis):")
            lines += [f"    {e[:300]}" for e in self.page_errors[:5]]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


_JS_OPEN = """async (path) => {
  const app = window.jupyterapp;
  const panel = await app.commands.execute('docmanager:open',
      {path, factory: 'Notebook', kernel: {name: 'python3'}});
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  window.__coursePanel = panel;
  window.__courseRun = null;
  window.__courseMessages = null;
  return panel.id;
}"""

# Cheap enough to poll while a notebook runs (no DOM walk, no layout).
_JS_PROGRESS = """() => {
  const p = window.__coursePanel;
  const k = p && p.sessionContext.session && p.sessionContext.session.kernel;
  return {kernel: k ? k.status : 'none', run: window.__courseRun, messages: window.__courseMessages};
}"""

_JS_KERNEL = """() => {
  const p = window.__coursePanel;
  const k = p && p.sessionContext.session && p.sessionContext.session.kernel;
  return k ? k.status : 'none';
}"""

# Counts the execute requests this run sends and their replies (ok, error or aborted): the
# prompts alone cannot tell "queued" from "aborted" once a tagged error reset them to [ ].
_JS_RUN_ALL = """() => {
  const app = window.jupyterapp, panel = window.__coursePanel;
  app.shell.activateById(panel.id);
  window.__courseRun = null;
  const count = {sent: 0, replies: 0}, ids = new Set();
  window.__courseMessages = count;
  panel.sessionContext.session.kernel.anyMessage.connect((_, args) => {
    const msg = args.msg;
    if (args.direction === 'send' && msg.header.msg_type === 'execute_request') {
      ids.add(msg.header.msg_id); count.sent += 1;
    } else if (args.direction === 'recv' && msg.header.msg_type === 'execute_reply'
               && ids.has(msg.parent_header.msg_id)) {
      count.replies += 1;
    }
  });
  app.commands.execute('notebook:run-all-cells').then(
      ok => { window.__courseRun = {ok: String(ok)}; },
      err => { window.__courseRun = {error: String(err)}; });
}"""

# Cells in model order; what the page shows for each.
_JS_STATE = """() => {
  const panel = window.__coursePanel;
  const k = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.map((cell, index) => {
    const node = cell.node;
    const prompt = node.querySelector('.jp-InputArea-prompt, .jp-InputPrompt');
    const errors = [...node.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
        .map(e => e.textContent.trim().slice(-600));
    const tops = [...node.querySelectorAll(
        '.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output')];
    const widgets = tops.filter(o => o.classList.contains('jupyter-widgets')
        || o.querySelector(':scope > .jupyter-widgets')
        || /^(Loading widget|Error displaying widget)/.test(o.textContent.trim()))
      .map(o => {
        const text = o.textContent.trim();
        const box = o.getBoundingClientRect();
        return {broken: /^(Loading widget|Error displaying widget)/.test(text) ? text.slice(0, 200) : '',
                visible: box.width > 0 && box.height > 0};
      });
    return {type: cell.model.type, prompt: prompt ? prompt.textContent.trim() : '', errors, widgets};
  });
  return {kernel: k ? k.status : 'none', run: window.__courseRun, messages: window.__courseMessages, cells};
}"""

# Marks every operable control of the widgets in one cell, returns them in page order.
_JS_CONTROLS = """(index) => {
  const node = window.__coursePanel.content.widgets[index].node;
  const area = node.querySelector('.jp-Cell-outputArea');
  const found = [];
  const label = el => {
    const box = el.closest('.widget-inline-hbox, .widget-inline-vbox, .widget-toggle-buttons, .widget-radio-box');
    const lab = box && box.querySelector(':scope > .widget-label');
    const text = (lab && lab.textContent.trim()) || el.getAttribute('title') || el.textContent.trim();
    return (text || '').slice(0, 60);
  };
  const add = (el, kind, lab) => {
    if (el.closest('.widget-output') || el.disabled || el.closest('.mod-disabled, [disabled]')) return;
    const mark = 'c' + index + '-' + found.length;
    el.setAttribute('data-course-control', mark);
    found.push({mark, kind, label: lab === undefined ? label(el) : lab});
  };
  // (a SelectionSlider's element carries widget-slider but not jupyter-widgets)
  for (const el of area.querySelectorAll('.jupyter-widgets, .widget-slider, .widget-hslider, .widget-vslider, .widget-toggle-buttons, .widget-radio-box, button, select, input, textarea')) {
    if (el.hasAttribute('data-course-control')) continue;
    const cls = el.classList;
    if (cls.contains('widget-slider') || cls.contains('widget-hslider') || cls.contains('widget-vslider')) {
      const handle = el.querySelector('.noUi-handle');
      if (handle) add(handle, 'slider', label(el));
    } else if (cls.contains('widget-toggle-buttons')) {
      add(el, 'toggle-buttons');
    } else if (cls.contains('widget-radio-box')) {
      add(el, 'radio');
    } else if (el.tagName === 'SELECT') {
      add(el, el.closest('.widget-dropdown') ? 'dropdown' : 'select');
    } else if (el.tagName === 'BUTTON' && !el.closest('.widget-toggle-buttons, .noUi-target')) {
      add(el, cls.contains('widget-toggle-button') ? 'toggle' : 'button', el.textContent.trim() || el.title);
    } else if (el.tagName === 'INPUT' && el.type === 'checkbox' && el.closest('.widget-checkbox')) {
      add(el, 'checkbox');
    } else if (el.tagName === 'INPUT' && el.type === 'number' && el.closest('.widget-text')) {
      add(el, 'number');
    } else if (el.tagName === 'INPUT' && el.type === 'text' && el.closest('.widget-text')) {
      add(el, 'text');
    }
  }
  return found;
}"""

# What the widget Output areas of one cell show: text plus a fingerprint of every image.
_JS_SIGNATURE = """(index) => {
  const node = window.__coursePanel.content.widgets[index].node;
  const hash = s => { let h = 2166136261; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return (h >>> 0).toString(16) + ':' + s.length; };
  const outs = [...node.querySelectorAll('.widget-output')].filter(o => !o.parentElement.closest('.widget-output'));
  if (!outs.length) return null;
  return outs.map(o => o.innerText.trim() + ' | ' +
      [...o.querySelectorAll('img')].map(i => hash(i.src)).join(',') + ' | ' +
      [...o.querySelectorAll('svg, canvas')].map(s => hash(s.outerHTML)).join(',')).join(' || ');
}"""

# What the top-level widget Outputs of one cell show: their text, and for every image whether it
# is blank (one colour; drawn into a canvas, sampled on a grid), plus the explorers' model ids.
_JS_PICTURES = """async (index) => {
  const cell = window.__coursePanel.content.widgets[index];
  const outs = [...cell.node.querySelectorAll('.widget-output')].filter(o => !o.parentElement.closest('.widget-output'));
  const ids = [];
  for (let i = 0; i < cell.model.outputs.length; i++) {
    const data = cell.model.outputs.get(i).data || {};
    const view = data['application/vnd.jupyter.widget-view+json'];
    if (view) ids.push(view.model_id);
  }
  const blank = async img => {
    if (!img.complete) await new Promise(r => { img.onload = r; img.onerror = r; setTimeout(r, 2000); });
    const w = img.naturalWidth, h = img.naturalHeight;
    if (!w || !h) return {width: w, height: h, blank: true};
    const canvas = document.createElement('canvas'); canvas.width = w; canvas.height = h;
    const ctx = canvas.getContext('2d'); ctx.drawImage(img, 0, 0);
    const px = ctx.getImageData(0, 0, w, h).data, first = px.slice(0, 4);
    let differ = 0, total = 0;
    for (let y = 0; y < h; y += 2) for (let x = 0; x < w; x += 2) {
      const k = 4 * (y * w + x); total += 1;
      if (Math.abs(px[k] - first[0]) + Math.abs(px[k + 1] - first[1]) + Math.abs(px[k + 2] - first[2]) > 30) differ += 1;
    }
    return {width: w, height: h, blank: differ < 0.002 * total};
  };
  const result = [];
  for (const o of outs) {
    const images = [];
    for (const img of o.querySelectorAll('img')) images.push(await blank(img));
    result.push({text: o.innerText.trim(), images});
  }
  return {outputs: result, ids};
}"""

# The readout a live course explorer computes for its current control values (None if it is none).
_JS_READOUT = """async (modelId) => {
  const kernel = window.__coursePanel.sessionContext.session.kernel;
  const code = 'from course_utils.widgets.base import readout as _course_readout\\n'
             + 'print(repr(_course_readout(' + JSON.stringify(modelId) + ')))';
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let text = '';
  future.onIOPub = msg => { if (msg.header.msg_type === 'stream') text += msg.content.text; };
  await future.done;
  return text.trim();
}"""

_JS_CLOSE = """async () => {
  const panel = window.__coursePanel;
  if (!panel) return;
  window.__coursePanel = null;
  try { await panel.sessionContext.shutdown(); } catch (e) {}
  panel.context.model.dirty = false;
  panel.dispose();
}"""


# What the widget outputs of a notebook show before anything ran: ``root`` is "panel" (the
# JupyterLab panel this driver opened) or "page" (a Notebook 7 page). Top-level outputs only.
_JS_UNRUN = """([root, texts]) => {
  const base = root === 'panel' ? (window.__coursePanel && window.__coursePanel.node) : document.body;
  if (!base) return null;
  const outs = [...base.querySelectorAll('.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output')];
  const count = {drawn: 0, fallback: 0, loading: 0, broken: 0, cells: base.querySelectorAll('.jp-Cell').length};
  for (const o of outs) {
    const text = o.textContent.trim();
    if (/^Error displaying widget/.test(text)) count.broken += 1;
    else if (/^Loading widget/.test(text)) count.loading += 1;
    else if (o.classList.contains('jupyter-widgets') || o.querySelector(':scope > .jupyter-widgets')) count.drawn += 1;
    else if (texts.some(t => text.startsWith(t))) count.fallback += 1;
  }
  count.errorLines = base.innerText.split('\\n').map(t => t.trim()).filter(t => t.includes('Error displaying widget'));
  return count;
}"""

# Scrolls the first widget output (drawn, broken or its text fallback) into view; true if found.
_JS_SCROLL_TO_WIDGET = """(texts) => {
  const o = [...document.querySelectorAll('.jp-OutputArea-output')].find(o => o.closest('.jp-Cell-outputArea')
      && (o.classList.contains('jupyter-widgets') || o.querySelector(':scope > .jupyter-widgets')
          || /^(Loading widget|Error displaying widget)/.test(o.textContent.trim()) || texts.some(t => o.textContent.trim().startsWith(t))));
  if (o) o.closest('.jp-Cell').scrollIntoView({block: 'start'});
  return !!o;
}"""

#: Browser console errors that concern widgets (others, e.g. Notebook 7's own start-up noise, are not ours).
WIDGET_CONSOLE_ERROR = re.compile(r"widget|model not found", re.I)


@dataclass
class UnrunView:
    """What one client shows of a notebook opened and not run (kernel started and idle)."""

    client: str              # "JupyterLab" or "Notebook 7"
    path: str
    trusted: bool
    texts: list[str]         # the text form (first line) of each widget output in the file
    drawn: int = 0           # ... drawn as widgets (from the saved widget state)
    fallback: int = 0        # ... shown as their text/plain form (what an untrusted notebook shows)
    loading: int = 0         # ... still "Loading widget..."
    error_lines: list[str] = field(default_factory=list)      # page lines with "Error displaying widget"
    console_errors: list[str] = field(default_factory=list)   # browser console errors about widgets
    screenshot: str = ""

    @property
    def saved(self) -> int:
        return len(self.texts)

    def where(self) -> str:
        return f"{self.client}, {'trusted' if self.trusted else 'untrusted'} {self.path}"

    def problems(self) -> list[str]:
        """Sentences for everything a learner should not see; empty when the view is clean."""
        found = []
        if self.error_lines:
            found.append(f"{self.where()}: opened without running, the page shows "
                         f"{sorted(set(self.error_lines))} ({len(self.error_lines)} time(s)); the saved widget "
                         f"state (metadata.widgets, tools/authoring.py stable_widget_state) lacks a model the "
                         f"outputs refer to: rebuild the notebook")
        if self.console_errors:
            found.append(f"{self.where()}: browser console errors about widgets: "
                         f"{[e[:200] for e in self.console_errors[:3]]}")
        if self.loading:
            found.append(f"{self.where()}: {self.loading} widget output(s) still say 'Loading widget...'")
        shown = self.drawn if self.trusted else self.fallback
        if not self.error_lines and shown != self.saved:
            how = "drawn from the saved widget state" if self.trusted else "shown as their saved text form"
            found.append(f"{self.where()}: the file holds {self.saved} widget output(s), {shown} are {how} "
                         f"(drawn {self.drawn}, text {self.fallback})")
        if found and self.screenshot:
            found.append(f"{self.where()}: screenshot {self.screenshot}")
        return found


def widget_texts(path: Path) -> list[str]:
    """The text form (first line, at most 40 characters) of every widget output in ``path``: what
    JupyterLab shows for it while the notebook is untrusted."""
    nb = nbformat.read(path, as_version=4)
    return ["".join(o["data"].get("text/plain", "")).strip().split("\n")[0][:40].strip()
            for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if WIDGET_MIME in o.get("data", {})]


def trust_notebook(path: Path, server: "LabServer") -> None:
    """Sign ``path`` for ``server`` (as ``jupyter trust`` does): its outputs are then trusted,
    as they are once a learner has run and saved the notebook, and widget views are rendered."""
    from nbformat.sign import NotebookNotary

    notary = NotebookNotary(data_dir=str(server.workdir / "data"))
    notary.sign(nbformat.read(path, as_version=4))


class LabDriver:
    """One browser page on a running :class:`LabServer`; notebooks are opened one after another."""

    def __init__(self, browser: Any, server: LabServer, screenshots: Path) -> None:
        self.browser, self.server, self.screenshots = browser, server, screenshots
        self.page: Any = None
        self._page_errors: list[str] = []
        #: Seconds one widget interaction may take to show in its Output.
        self.widget_timeout = timeout("BROWSER_WIDGET_TIMEOUT")

    def open_lab(self) -> None:
        if self.page is not None:
            self.page.close()
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(timeout("BROWSER_LOAD_TIMEOUT") * 1000)
        self.page.on("pageerror", lambda exc: self._page_errors.append(str(exc)))
        self.page.on("console", lambda msg: msg.type == "error" and self._page_errors.append(msg.text))
        self.page.goto(f"{self.server.url}/lab?reset", wait_until="domcontentloaded")
        self.page.wait_for_function("() => window.jupyterapp !== undefined")
        self.page.evaluate("() => window.jupyterapp.restored.then(() => true)")

    def close(self) -> None:
        if self.page is not None:
            self.page.close()
            self.page = None

    # -- one notebook ------------------------------------------------------------------------

    def run_notebook(self, lab_path: str, expected: Expected) -> Report:
        """Open, run all, check errors and widgets; the kernel is shut down afterwards."""
        report = Report(expected.name)
        start = time.monotonic()
        self._page_errors = []
        healthy = False
        try:
            if self.page is None:
                self.open_lab()
            self.page.evaluate(_JS_OPEN, lab_path)
            self._wait(lambda: self.page.evaluate(_JS_KERNEL) == "idle", timeout("BROWSER_LOAD_TIMEOUT"),
                       "the kernel to start and become idle")
            report.phases["open"] = time.monotonic() - start
            self.page.evaluate(_JS_RUN_ALL)
            state = self._wait_run_finished()
            report.phases["run all"] = time.monotonic() - start - report.phases["open"]
            self._check_cells(state, expected, report)
            self._check_widgets(state, expected, report)
            report.phases["widgets"] = time.monotonic() - start - sum(report.phases.values())
            healthy = True
        except TimeoutError as exc:
            report.problems.append(str(exc))
        finally:
            report.seconds = time.monotonic() - start
            report.phases["total"] = report.seconds
            report.page_errors = list(self._page_errors)
            if report.problems:
                self._screenshot(expected.name, report)
            self._close_notebook(healthy)
        return report

    def _wait(self, predicate, seconds: float, what: str, poll: float = 0.25):
        deadline = time.monotonic() + seconds
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {seconds:.0f} s waiting for {what}")
            time.sleep(poll)

    def _wait_run_finished(self) -> dict:
        """Until Run All returned, every execute request sent got its reply and the kernel is idle
        (three polls in a row)."""
        streak = 0

        def finished() -> bool:
            nonlocal streak
            progress = self.page.evaluate(_JS_PROGRESS)
            messages = progress["messages"] or {"sent": 0, "replies": 0}
            settled = (progress["run"] is not None and progress["kernel"] == "idle"
                       and 0 < messages["sent"] <= messages["replies"])
            streak = streak + 1 if settled else 0
            return streak >= 3

        try:
            self._wait(finished, timeout("BROWSER_RUN_TIMEOUT"), "Run All Cells to finish", poll=0.5)
        except TimeoutError as exc:
            state = self.page.evaluate(_JS_STATE)
            busy = [i for i, c in enumerate(state["cells"]) if c["prompt"] == "[*]:"]
            raise TimeoutError(f"{exc} (kernel {state['kernel']}, cells still running: {busy}, "
                               f"execute requests/replies: {state['messages']}); "
                               f"set BROWSER_RUN_TIMEOUT to allow more") from None
        return self._wait_widgets_loaded()

    def _wait_widgets_loaded(self) -> dict:
        """The page state once no widget says "Loading widget..." (or the widget timeout passed)."""
        deadline = time.monotonic() + self.widget_timeout
        while True:
            state = self.page.evaluate(_JS_STATE)
            loading = any(v["broken"].startswith("Loading widget") for c in state["cells"] for v in c["widgets"])
            if not loading or time.monotonic() > deadline:
                return state
            time.sleep(0.3)

    def _check_cells(self, state: dict, expected: Expected, report: Report) -> None:
        cells = state["cells"]
        if [c["type"] for c in cells] != expected.cell_types:
            report.problems.append(f"the page shows {len(cells)} cells, the file has {len(expected.cell_types)}")
            return
        for index, cell in enumerate(cells):
            if cell["type"] != "code":
                continue
            if not cell["prompt"].strip("[]: ").isdigit():
                report.problems.append(f"cell {index} did not run (prompt {cell['prompt']!r}); "
                                       f"an earlier cell probably raised an untagged error")
            if cell["errors"] and index not in expected.error_cells:
                report.problems.append(f"cell {index} shows an error/stderr output: ...{cell['errors'][0][-400:]}")
            if index in expected.raising_cells and not cell["errors"]:
                report.problems.append(f"cell {index} is tagged raises-exception but showed no error")

    def _check_widgets(self, state: dict, expected: Expected, report: Report) -> None:
        cells = state["cells"]
        for index in sorted(set(expected.widgets) | {i for i, c in enumerate(cells) if c["widgets"]}):
            views = cells[index]["widgets"]
            want = expected.widgets.get(index, 0)
            rendered = [v for v in views if not v["broken"] and v["visible"]]
            for view in views:
                if view["broken"]:
                    report.problems.append(f"cell {index}: a widget did not render ({view['broken']!r})")
                elif not view["visible"]:
                    report.problems.append(f"cell {index}: a widget rendered with zero size")
            if len(views) < want:
                report.problems.append(f"cell {index}: the committed notebook displays {want} widget(s), "
                                       f"the page shows {len(views)}")
            report.widgets += len(rendered)
            if rendered:
                self._operate(index, expected, report)

    def _check_pictures(self, index: int, expected: Expected, report: Report, when: str) -> None:
        """Every image non-blank; a course explorer shows a picture and the numbers it should."""
        shown = self.page.evaluate(_JS_PICTURES, index)
        if when == "on first display":
            self._cell_screenshot(index, expected.name, report)
        for number, output in enumerate(shown["outputs"]):
            blank = [i for i, image in enumerate(output["images"]) if image["blank"]]
            if blank:
                report.problems.append(f"cell {index}: {when}, the widget's picture is blank "
                                       f"(image {blank[0] + 1} of {len(output['images'])} is one colour)")
            if index not in expected.readouts or number > 0:
                continue
            if not output["images"]:
                report.problems.append(f"cell {index}: {when}, the explorer shows no picture "
                                       f"(text: {output['text'][:120]!r})")
            if when == "on first display":
                want, source = expected.readouts[index], "the committed notebook's static rendering"
            else:
                ids = shown["ids"]
                raw = self.page.evaluate(_JS_READOUT, ids[0]) if ids else "None"
                if raw in ("", "None"):
                    report.problems.append(f"cell {index}: {when}, the kernel knows no explorer for this widget")
                    continue
                want, source = ast.literal_eval(raw), "what the kernel computes for the controls' values"
            if numbers(output["text"]) != numbers(want):
                report.problems.append(f"cell {index}: {when}, the readout's numbers {numbers(output['text'])} "
                                       f"differ from {source}: {numbers(want)}")
        report.checked_pictures += 1

    def _cell_screenshot(self, index: int, name: str, report: Report) -> None:
        """A picture of the cell's output as the learner sees it on first display (runs/browser/widgets/)."""
        try:
            target = self.screenshots / "widgets" / f"{Path(name).stem}_cell{index}_first_display.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            self.page.evaluate("(i) => window.__coursePanel.content.widgets[i].node"
                               ".setAttribute('data-course-cell', String(i))", index)
            self.page.locator(f'[data-course-cell="{index}"] .jp-Cell-outputArea').first.screenshot(path=str(target))
            report.screenshots.append(str(target))
        except Exception as exc:  # a convenience; never mask the real result
            report.notes.append(f"no widget screenshot for cell {index} ({type(exc).__name__})")

    def _operate(self, index: int, expected: Expected, report: Report) -> None:
        controls = [Control(**c) for c in self.page.evaluate(_JS_CONTROLS, index)]
        if self._signature(index) is not None:
            before = self._settled_signature(index)
            self._check_pictures(index, expected, report, "on first display")
        if not controls:
            if index in expected.readouts:
                report.problems.append(f"cell {index}: an explorer without operable controls on the page "
                                       f"(see tests/browser_lab.py _JS_CONTROLS for what it looks for)")
            else:
                report.notes.append(f"cell {index}: widget without controls (e.g. a progress bar): render checked only")
            return
        if self._signature(index) is None:
            report.problems.append(f"cell {index}: the widget has controls ({', '.join(c.describe() for c in controls)}) "
                                   f"but no ipywidgets.Output area; see course_utils/widgets/__init__.py")
            return
        for control in controls:
            done = self._interact(control)
            if done is None:
                report.problems.append(f"cell {index}: could not operate {control.describe()} "
                                       f"(see tests/browser_lab.py LabDriver._interact for what it tries)")
                continue
            report.interactions += 1
            try:
                self._wait(lambda: self._signature(index) != before, self.widget_timeout,
                           "the Output to change", poll=0.2)
            except TimeoutError:
                report.problems.append(f"cell {index}: after {done} the widget's Output did not change "
                                       f"within {self.widget_timeout:.0f} s")
                continue
            before = self._settled_signature(index)
            self._check_pictures(index, expected, report, f"after {done}")
            errors = self.page.evaluate(_JS_STATE)["cells"][index]["errors"]
            if errors:
                report.problems.append(f"cell {index}: after {done} the widget shows an error: "
                                       f"...{errors[-1][-400:]}")
                return

    def _signature(self, index: int) -> str | None:
        return self.page.evaluate(_JS_SIGNATURE, index)

    def _settled_signature(self, index: int) -> str | None:
        """The Output's content once the kernel is idle and it stopped changing (best effort)."""
        deadline = time.monotonic() + self.widget_timeout
        last = self._signature(index)
        while time.monotonic() < deadline:
            time.sleep(0.3)
            current = self._signature(index)
            if current == last and self.page.evaluate(_JS_KERNEL) == "idle":
                return current
            last = current
        return last

    def _interact(self, control: Control) -> str | None:
        """Operate one control like a user; returns what was done, or None if impossible."""
        element = self.page.locator(f'[data-course-control="{control.mark}"]').first
        element.scroll_into_view_if_needed()
        kind = control.kind
        if kind == "slider":
            # The readout shows the value with the widget's format; aria-valuenow is rounded.
            state = ("e => { const box = e.closest('.widget-slider, .widget-hslider, .widget-vslider'); const r = box && box.querySelector('.widget-readout');"
                     " return (r && r.textContent.trim()) || e.getAttribute('aria-valuetext') || e.getAttribute('aria-valuenow'); }")
            before = element.evaluate(state)
            element.focus()
            for key in ("ArrowRight", "ArrowLeft"):  # left when the handle sits at the maximum
                element.press(key)
                time.sleep(0.1)
                after = element.evaluate(state)
                if after != before:
                    return f"moving {control.describe()} {before} -> {after}"
            return None
        if kind in ("dropdown", "select"):
            # The last other option: a first option is often a placeholder such as "(pick one)".
            index, options = element.evaluate("el => [el.selectedIndex, [...el.options].map(o => o.text)]")
            others = [i for i in range(len(options)) if i != index]
            if not others:
                return None
            element.select_option(index=others[-1])
            was = repr(options[index]) if 0 <= index < len(options) else "nothing"
            return f"picking {options[others[-1]]!r} in {control.describe()} (was {was})"
        if kind in ("toggle-buttons", "radio"):
            selector = ("button:not(.mod-active)" if kind == "toggle-buttons" else "input[type=radio]:not(:checked)")
            choice = element.locator(selector).first
            if choice.count() == 0:
                return None
            text = choice.text_content() or choice.get_attribute("value") or ""
            choice.click()
            return f"choosing {text.strip()!r} in {control.describe()}"
        if kind in ("toggle", "button", "checkbox"):
            element.click()
            return f"clicking {control.describe()}"
        if kind == "number":
            element.focus()
            element.press("ArrowUp")
            element.press("Enter")
            return f"incrementing {control.describe()}"
        if kind == "text":  # keep a number-like value number-like ("32, 1" -> "32, 11")
            value = element.input_value() or ""
            element.fill(value + ("1" if value[-1:].isdigit() else "x"))
            element.press("Enter")
            return f"typing into {control.describe()}"
        return None

    def open_and_save(self, lab_path: str) -> None:
        """Open a notebook with its kernel (as a learner does), save it unchanged, close it."""
        healthy = False
        try:
            if self.page is None:
                self.open_lab()
            self.page.evaluate(_JS_OPEN, lab_path)
            self._wait(lambda: self.page.evaluate(_JS_KERNEL) == "idle", timeout("BROWSER_LOAD_TIMEOUT"),
                       "the kernel to start and become idle")
            time.sleep(0.5)  # the kernel's language_info reaches the model right after it is idle
            self.page.evaluate("async () => { await window.__coursePanel.context.save(); }")
            healthy = True
        finally:
            self._close_notebook(healthy)

    def open_unrun(self, lab_path: str, texts: list[str], client: str = "JupyterLab", trusted: bool = False,
                   screenshot: Path | None = None) -> UnrunView:
        """Open a notebook as a learner first does, in JupyterLab or Notebook 7: nothing is run; wait
        until the kernel is idle and every widget output has settled (drawn, text, or an error),
        then read the page. ``texts``: :func:`widget_texts` of the file."""
        view = UnrunView(client, lab_path, trusted, texts)
        self._page_errors = []
        if client == "JupyterLab":
            healthy = False
            try:
                if self.page is None:
                    self.open_lab()
                self._page_errors = []
                self.page.evaluate(_JS_OPEN, lab_path)
                self._wait(lambda: self.page.evaluate(_JS_KERNEL) == "idle", timeout("BROWSER_LOAD_TIMEOUT"),
                           "the kernel to start and become idle")
                self._read_unrun(view, "panel", screenshot)
                healthy = True
            finally:
                self._close_notebook(healthy)
            return view
        if client != "Notebook 7":
            raise ValueError(f"client is 'JupyterLab' or 'Notebook 7', not {client!r}")
        page, previous = self.browser.new_page(viewport={"width": 1400, "height": 1000}), self.page
        page.on("pageerror", lambda exc: self._page_errors.append(str(exc)))
        page.on("console", lambda msg: msg.type == "error" and self._page_errors.append(msg.text))
        self.page = page
        try:
            page.set_default_timeout(timeout("BROWSER_LOAD_TIMEOUT") * 1000)
            page.goto(f"{self.server.url}/notebooks/{lab_path}", wait_until="domcontentloaded")
            page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached")
            self._wait(lambda: self._session_idle(lab_path), timeout("BROWSER_LOAD_TIMEOUT"),
                       f"Notebook 7 to start a kernel for {lab_path} and the kernel to become idle")
            self._read_unrun(view, "page", screenshot)
        finally:
            self.page = previous
            page.close()
            self.server.shutdown_kernels()
        return view

    def _session_idle(self, path: str) -> bool:
        sessions = self.server.api("GET", "/api/sessions") or []
        return any(s.get("path") == path and s.get("kernel", {}).get("execution_state") == "idle" for s in sessions)

    def _read_unrun(self, view: UnrunView, root: str, screenshot: Path | None) -> None:
        """Poll until every saved widget output settled (or the widget timeout passed), then read."""
        deadline = time.monotonic() + self.widget_timeout
        while True:
            state = self.page.evaluate(_JS_UNRUN, [root, view.texts])
            settled = state and not state["loading"] and \
                state["drawn"] + state["fallback"] + state["broken"] >= view.saved
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        time.sleep(1.0)  # a late "model not found" replaces a drawn view only after its lookup failed
        state = self.page.evaluate(_JS_UNRUN, [root, view.texts]) or {}
        view.drawn, view.fallback = state.get("drawn", 0), state.get("fallback", 0)
        view.loading, view.error_lines = state.get("loading", 0), state.get("errorLines", [])
        view.console_errors = [e for e in self._page_errors if WIDGET_CONSOLE_ERROR.search(e)]
        if screenshot is not None or view.problems():
            target = screenshot or self.screenshots / f"unrun-{view.client.replace(' ', '')}-{Path(view.path).stem}.png"
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                self.page.evaluate(_JS_SCROLL_TO_WIDGET, view.texts)
                time.sleep(0.5)
                self.page.screenshot(path=str(target))
                view.screenshot = str(target)
            except Exception as exc:  # a screenshot is a convenience; never mask the real finding
                view.screenshot = f"(no screenshot: {type(exc).__name__})"

    # -- clean-up ----------------------------------------------------------------------------

    def _screenshot(self, name: str, report: Report) -> None:
        try:
            self.screenshots.mkdir(parents=True, exist_ok=True)
            target = self.screenshots / f"{Path(name).stem}.png"
            self.page.screenshot(path=str(target))
            report.notes.append(f"screenshot of the page: {target}")
        except Exception as exc:  # a screenshot is a convenience; never mask the real failure
            report.notes.append(f"no screenshot ({type(exc).__name__})")

    def _close_notebook(self, healthy: bool) -> None:
        try:
            if self.page is not None:
                self.page.evaluate(_JS_CLOSE)
        except Exception:
            healthy = False
        self.server.shutdown_kernels()
        if not healthy:  # start the next notebook from a fresh Lab page
            try:
                self.close()
            except Exception:
                self.page = None


def require_browser() -> None:
    """Skip (or, with ``REQUIRE_BROWSER_TESTS=1``, fail) when chromium/playwright are missing."""
    import pytest

    reason = browser_unavailable()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"browser test required ({REQUIRE_ENV}=1) but cannot run: {reason}. "
                    f"Install chromium (.ci/run does: apt-get install -y chromium) or unset {REQUIRE_ENV}.",
                    pytrace=False)
    pytest.skip(f"browser test skipped: {reason} (with {REQUIRE_ENV}=1 this is a failure)")
