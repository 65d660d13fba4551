"""Build the course website from the executed notebooks: ``make site`` (``python -m tools.site``).

Nothing is re-executed: the committed ``notebooks/`` and ``solutions/`` are copied into a
staging folder (``build/site-src/<edition>/``), lightly prepared, and rendered by Sphinx +
myst-nb (``site/conf.py``, pinned in ``requirements-site.txt``) into ``build/site/``:

* one page per learner notebook, in order (``notebooks/NN_topic.html``); the solutions in a
  separate "Solutions" section whose every page starts with a spoiler warning;
* a home page with the curriculum table (the README's "what you learn" column, each lesson's
  minutes from its header, links to the pages and to Binder/Colab), the instructor guide
  (``docs/instructors.md``) and the licences (``LICENSE``, ``LICENSE-CONTENT``);
* nothing from a CDN: MathJax 3 and the ipywidgets HTML manager come from the npm registry at
  build time (``site/package.json`` + ``site/package-lock.json``, ``npm ci`` into
  ``build/site-npm``) and are served from ``_static/vendor/``; the launch links are plain text
  links (no badge images from other hosts);
* a widget output becomes a static snapshot with a note saying so and how to run it live
  (Binder/Colab). With saved widget state (``metadata.widgets``) the HTML manager draws it; without
  it the widget's own text fallback is shown, labelled as such;
* Sphinx's offline search per edition; a Chinese edition is built at ``zh/`` when
  ``zh/notebooks/`` exists (search segmented with jieba), with a language switch on every page.

``python -m tools.site --root ROOT --out DIR`` builds another course tree (the tests build small
fixtures); ``python -m tools.site --check DIR`` only runs :func:`check_site` on a built site.

Example:
    >>> external_urls('<script src="https://cdn.example.com/x.js"></script><a href="/a">a</a>')
    ['https://cdn.example.com/x.js']
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
SITE_CONF = ROOT / "site"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EDITIONS = {"en": "English", "zh": "中文"}
#: Where the Chinese edition lives in the repository (the English one is the repository root).
EDITION_DIRS = {"en": Path("."), "zh": Path("zh")}
_TQDM = re.compile(r"\d+%\|.*\|\s*\d+/\d+")
_NOTE_CLASS = "course-widget-note"


# --------------------------------------------------------------------------- what a page links to
def launch_links(root: Path, stem: str, edition: str = "en") -> dict[str, str]:
    """Binder and Colab URLs of ``notebooks/<stem>.ipynb`` (``zh/notebooks/`` for the Chinese edition),
    from ``root``'s ``[tool.course]``."""
    sys.path.insert(0, str(ROOT))
    from tools import badges

    repository, branch = badges.config(root / "pyproject.toml")
    return badges.links(repository, branch, stem, folder=f"{EDITION_DIRS[edition].as_posix()}/notebooks"
                        if edition != "en" else "notebooks")


def site_url(root: Path) -> str:
    import tomllib

    course = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["course"]
    return course.get("site", "")


# --------------------------------------------------------------------------- widgets
NOTES = {
    "en": {"state": "Static snapshot of an interactive widget, drawn from its saved state: its controls do nothing here.",
           "progress": "Static snapshot of a progress bar (a widget). This page was built without saved widget "
                       "state, so it shows the bar's text as it was when it first appeared; the lines after it "
                       "are the finished run's output.",
           "fallback": "Static snapshot of an interactive widget. This page was built without saved widget "
                       "state, so it shows the widget's text fallback.",
           "live": "To run it live, open this notebook on {links}.", "or": "or"},
    "zh": {"state": "交互控件的静态快照（根据保存的状态绘制）：这里的控件不会响应操作。",
           "progress": "进度条（控件）的静态快照。本页面构建时没有保存控件状态，因此显示的是进度条刚出现时的文字；"
                       "其后的几行是运行结束后的输出。",
           "fallback": "交互控件的静态快照。本页面构建时没有保存控件状态，因此显示控件的文字说明。",
           "live": "要实际运行，请在 {links} 上打开本笔记本。", "or": "或"},
}


def widget_note(kind: str, links: dict[str, str], edition: str = "en") -> str:
    """The sentence above every widget on the site (``kind``: "state", "fallback" or "progress")."""
    text = NOTES[edition]
    launch = (f'<a class="course-launch" href="{html.escape(links["binder"])}">Binder</a> {text["or"]} '
              f'<a class="course-launch" href="{html.escape(links["colab"])}">Colab</a>')
    return (f'<p class="{_NOTE_CLASS}"><strong>{text[kind]}</strong> '
            f'{text["live"].format(links=launch)}</p>')


def prepare_widgets(nb, links: dict[str, str], edition: str = "en") -> dict[str, int]:
    """Rewrite widget outputs in place (see the module docstring); returns counts per kind."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    counts = {"state": 0, "fallback": 0, "progress": 0}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW not in data:
                outputs.append(output)
                continue
            plain = data.get("text/plain", "")
            plain = "".join(plain) if isinstance(plain, list) else plain
            if data[WIDGET_VIEW].get("model_id") in state:
                kind = "state"
                outputs.append(_html_output(widget_note(kind, links, edition)))
                outputs.append(output)
            else:
                kind = "progress" if _TQDM.search(plain) else "fallback"
                outputs.append(_html_output(widget_note(kind, links, edition) +
                                            f'<pre class="course-widget-fallback">{html.escape(plain)}</pre>'))
            counts[kind] += 1
        cell.outputs = outputs
    return counts


def _html_output(text: str):
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/html": text})


# --------------------------------------------------------------------------- staging
def _title(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return fallback


SOLUTION_SUFFIX = {"en": " (solutions)", "zh": "（答案）"}


def _retitle(nb, suffix: str) -> None:
    """Append ``suffix`` to the notebook's first ``# `` heading."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^#\s+\S", cell.source, re.M):
            cell.source = re.sub(r"^(#\s+.+?)\s*$", lambda m: m.group(1) + suffix, cell.source, count=1, flags=re.M)
            return


def _edition_lessons(root: Path, edition: str) -> list[Path]:
    return sorted((root / EDITION_DIRS[edition] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def editions_present(root: Path) -> list[str]:
    return [e for e in EDITIONS if _edition_lessons(root, e)]


SPOILER = {
    "en": ("```{warning}\n**Spoiler: this page shows every exercise solved.** Try the exercise in the "
           "[learner notebook]({learner}) first, run its check and read its hint; come back here to compare.\n```"),
    "zh": ("```{warning}\n**剧透：本页给出所有练习的答案。** 请先在[学习者笔记本]({learner})里完成练习、运行检查并阅读提示，"
           "再回来对照。\n```"),
}
TEXT = {
    "en": {"lessons": "Lessons", "solutions": "Solutions (spoilers)", "guide": "Instructor guide",
           "licence": "Licence", "solutions_intro":
           "Every notebook with every exercise solved and every output saved. **Try each exercise in its "
           "lesson first**: these pages give the answers away.",
           "table": "| # | lesson | what you learn | min | run it |", "total":
           "About {total} minutes in all ({hours:.1f} hours), from the lessons' own estimates.",
           "read": "Read the lessons here; to run them, use the Binder or Colab link of a lesson (nothing to "
           "install), or your own machine (see the repository's README)."},
    "zh": {"lessons": "课程", "solutions": "答案（剧透）", "guide": "教师指南", "licence": "许可",
           "solutions_intro": "每个笔记本的全部练习答案与输出。**请先在课程里自己完成练习**：这些页面会直接给出答案。",
           "table": "| # | 课程 | 内容 | 分钟 | 运行 |", "total": "共约 {total} 分钟（{hours:.1f} 小时）。",
           "read": "在这里阅读课程；要运行它们，请使用每课的 Binder 或 Colab 链接，或在自己的电脑上运行。"},
}


def _readme_rows(root: Path) -> dict[str, str]:
    readme = root / "README.md"
    rows = {}
    if readme.exists():
        for line in readme.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 4 and re.fullmatch(r"\d\d", cells[0]):
                rows[cells[0]] = cells[2]
    return rows


def _minutes(root: Path, stem: str) -> int | None:
    lesson = root / "lessons" / f"{stem}.py"
    if not lesson.exists():
        return None
    found = re.search(r"^# #+ You will learn \(≈ (\d+) min\)", lesson.read_text(encoding="utf-8"), re.M)
    return int(found.group(1)) if found else None


def stage(root: Path, edition: str, dest: Path) -> dict:
    """Write the Sphinx source tree of one edition into ``dest``; returns what conf.py needs."""
    import nbformat

    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    base = root / EDITION_DIRS[edition]
    text = TEXT[edition]
    pages: list[str] = []
    counts = {"state": 0, "fallback": 0, "progress": 0}
    lessons = []
    for kind in ("notebooks", "solutions"):
        (dest / kind).mkdir()
        for path in sorted((base / kind).glob("[0-9][0-9]_*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            links = launch_links(root, path.stem, edition)
            for cell in nb.cells:  # the bootstrap, collapsed in JupyterLab, is a click-to-show toggle here too
                if cell.cell_type == "code" and cell.metadata.get("jupyter", {}).get("source_hidden"):
                    cell.metadata.setdefault("tags", [])
                    if "hide-input" not in cell.metadata["tags"]:
                        cell.metadata["tags"].append("hide-input")
            for key, value in prepare_widgets(nb, links, edition).items():
                counts[key] += value
            if kind == "solutions":
                learner = f"../notebooks/{path.name}"
                if not (base / "notebooks" / path.name).exists():
                    learner = "../index.md"
                _retitle(nb, SOLUTION_SUFFIX[edition])  # search results and navigation tell the two apart
                warning = nbformat.v4.new_markdown_cell(SPOILER[edition].replace("{learner}", learner))
                warning.pop("id", None)  # the notebooks are nbformat 4.4 (no cell ids)
                nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, warning)
            else:
                lessons.append((path.stem, _title(nb, path.stem)))
            nbformat.write(nb, dest / kind / path.name)
            pages.append(f"{kind}/{path.stem}")
    rows = _readme_rows(root) if edition == "en" else {}
    table = [text["table"], "|---|---|---|---|---|"]
    total = 0
    for stem, title in lessons:
        minutes = _minutes(root, stem)
        total += minutes or 0
        links = launch_links(root, stem, edition)
        table.append(f"| {stem[:2]} | [{title}](notebooks/{stem}.ipynb) | {rows.get(stem[:2], '')} | "
                     f"{minutes or ''} | [Binder]({links['binder']}) · [Colab]({links['colab']}) |")
    readme_intro = _readme_intro(root) if edition == "en" else ""
    title = _readme_title(root) if edition == "en" else "PyTorch 内部原理 —— 交互式笔记本课程"
    has_solutions = any(p.startswith("solutions/") for p in pages)
    index = [f"# {title}", "", readme_intro, "", text["read"], "", *table, ""]
    if total:
        index += [text["total"].format(total=total, hours=total / 60), ""]
    index += ["```{toctree}", f":caption: {text['lessons']}", ":maxdepth: 1", "",
              *[f"notebooks/{stem}" for stem, _ in lessons], "```", ""]
    if has_solutions:
        (dest / "solutions" / "index.md").write_text(
            f"# {text['solutions']}\n\n{text['solutions_intro']}\n\n```{{toctree}}\n:maxdepth: 1\n\n" +
            "\n".join(p.removeprefix("solutions/") for p in pages if p.startswith("solutions/")) + "\n```\n",
            encoding="utf-8")
        pages.append("solutions/index")
    extra = []
    if edition == "en" and (root / "docs" / "instructors.md").exists():
        guide = (root / "docs" / "instructors.md").read_text(encoding="utf-8")
        (dest / "instructors.md").write_text(_repo_links(guide, root), encoding="utf-8")
        extra.append("instructors")
    if (root / "LICENSE").exists():
        parts = [f"# {text['licence']}", "", _licence_summary(root), ""]
        for name in ("LICENSE", "LICENSE-CONTENT"):
            if (root / name).exists():
                parts += [f"## {name}", "", "```text", (root / name).read_text(encoding="utf-8").strip(), "```", ""]
        (dest / "licence.md").write_text("\n".join(parts), encoding="utf-8")
        extra.append("licence")
    index += ["```{toctree}", ":caption: " + ("Course" if edition == "en" else "课程信息"), ":maxdepth: 1", "",
              *(["solutions/index"] if has_solutions else []), *extra, "```", ""]
    (dest / "index.md").write_text("\n".join(index), encoding="utf-8")
    pages += ["index", *extra]
    return {"edition": edition, "pages": sorted(pages), "widgets": counts}


def _readme_title(root: Path) -> str:
    readme = root / "README.md"
    if readme.exists():
        first = readme.read_text(encoding="utf-8").splitlines()[0]
        return first.lstrip("# ").strip()
    return "Course"


def _readme_intro(root: Path) -> str:
    """The README's first paragraphs (after the badges), up to its first ``##`` section."""
    readme = root / "README.md"
    if not readme.exists():
        return ""
    body = readme.read_text(encoding="utf-8").split("\n## ", 1)[0]
    body = re.sub(r"<!-- launch:.*?<!-- end of launch -->", "", body, flags=re.S)
    lines = [line for line in body.splitlines()[1:] if not line.startswith("Read online")]
    return _repo_links("\n".join(lines).strip(), root)


def _licence_summary(root: Path) -> str:
    readme = root / "README.md"
    if readme.exists():
        text = readme.read_text(encoding="utf-8")
        if "\n## Licence\n" in text:
            return text.split("\n## Licence\n", 1)[1].split("\n## ", 1)[0].strip()
    return ""


def _repo_links(markdown: str, root: Path) -> str:
    """Links to files of the repository (``../README.md``, ``CONTRIBUTING.md``) point at GitHub."""
    from tools import badges

    repository, branch = badges.config(root / "pyproject.toml")

    def fix(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"[a-z]+:|#", target):
            return match.group(0)
        clean = target
        while clean.startswith("../"):
            clean = clean[3:]
        return f"[{label}]({repository}/blob/{branch}/{clean})"

    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", fix, markdown)


# --------------------------------------------------------------------------- vendored assets
VENDOR_MATHJAX = ["tex-chtml.js", "input", "output/chtml.js", "output/chtml", "ui", "a11y", "adaptors", "sre"]


def vendor(npm_dir: Path, static: Path) -> None:
    """``npm ci`` the pinned packages into ``npm_dir`` (if needed) and copy what the site serves."""
    lock = SITE_CONF / "package-lock.json"
    npm_dir.mkdir(parents=True, exist_ok=True)
    stamp = npm_dir / ".installed-lock"
    if not stamp.exists() or stamp.read_bytes() != lock.read_bytes():
        npm = shutil.which("npm")
        if not npm:
            raise SystemExit("make site needs npm (Node.js) to fetch MathJax and the widget manager from the "
                             "npm registry; Debian: `apt-get install npm`")
        shutil.copy(SITE_CONF / "package.json", npm_dir / "package.json")
        shutil.copy(lock, npm_dir / "package-lock.json")
        subprocess.run([npm, "ci", "--prefix", str(npm_dir), "--no-audit", "--no-fund", "--ignore-scripts",
                        "--loglevel=error"], check=True)
        stamp.write_bytes(lock.read_bytes())
    modules = npm_dir / "node_modules"
    if static.exists():
        shutil.rmtree(static)
    for part in VENDOR_MATHJAX:
        source = modules / "mathjax" / "es5" / part
        target = static / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    shutil.copytree(modules / "@jupyter-widgets" / "html-manager" / "dist", static / "html-manager",
                    ignore=shutil.ignore_patterns("*.map", "libembed-amd.js"))
    shutil.copy(modules / "requirejs" / "require.js", static / "require.js")
    for name, package in (("mathjax", "mathjax"), ("html-manager", "@jupyter-widgets/html-manager"),
                          ("requirejs", "requirejs")):
        licence = next((p for p in (modules / package).glob("LICENSE*")), None)
        if licence:
            shutil.copy(licence, static / f"LICENSE.{name}.txt")


# --------------------------------------------------------------------------- build
def build(root: Path = ROOT, out: Path = ROOT / "build" / "site", work: Path = ROOT / "build",
          quiet: bool = True, npm_dir: Path = ROOT / "build" / "site-npm") -> dict:
    """Stage, vendor and render every edition; returns a summary (pages, widgets, seconds)."""
    started = time.monotonic()
    root, out, work = root.resolve(), out.resolve(), work.resolve()
    editions = editions_present(root)
    if "en" not in editions:
        raise SystemExit(f"no notebooks in {root / 'notebooks'}: nothing to build")
    static = work / "site-vendor" / "vendor"
    vendor(npm_dir.resolve(), static)
    staged = {e: stage(root, e, work / "site-src" / e) for e in editions}
    if out.exists():
        shutil.rmtree(out)
    summary = {"editions": {}, "seconds": 0.0}
    for edition in editions:
        target = out if edition == "en" else out / edition
        settings = {
            "edition": edition, "editions": {e: EDITIONS[e] for e in editions},
            "pages": {e: staged[e]["pages"] for e in editions},
            "prefix": "" if edition == "en" else "../",  # from this edition's root to the site's root
            "repository": _config(root)[0],
            "branch": _config(root)[1], "site_url": site_url(root),
            "vendor": str(static.parent), "title": _readme_title(root) if edition == "en" else None,
        }
        env = dict(os.environ, COURSE_SITE=json.dumps(settings))
        command = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(SITE_CONF), "-j", "auto",
                   "-W", "--keep-going", "-E", *(["-q"] if quiet else []), str(work / "site-src" / edition),
                   str(target)]
        subprocess.run(command, check=True, env=env)
        shutil.rmtree(target / ".doctrees", ignore_errors=True)
        summary["editions"][edition] = {"pages": len(staged[edition]["pages"]), "widgets": staged[edition]["widgets"]}
    (out / ".nojekyll").write_text("")
    summary["seconds"] = round(time.monotonic() - started, 1)
    return summary


def _config(root: Path) -> tuple[str, str]:
    from tools import badges

    return badges.config(root / "pyproject.toml")


# --------------------------------------------------------------------------- static checks
class _Refs(HTMLParser):
    ATTRS = {"src", "href", "data", "poster", "srcset", "action"}

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str, str]] = []  # (tag, attribute, value, rel)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        rel = dict(attrs).get("rel") or ""
        for name, value in attrs:
            if name in self.ATTRS and value:
                self.refs.append((tag, name, value, rel))


def references(page_html: str) -> list[tuple[str, str, str, str]]:
    parser = _Refs()
    parser.feed(page_html)
    return parser.refs


def external_urls(page_html: str) -> list[str]:
    """URLs the page itself would load from another host (scripts, styles, images, fonts, frames).

    Plain ``<a href>`` links to other sites (and ``<link rel="canonical">``) are navigation, not loads.
    """
    found = []
    for tag, _, value, rel in references(page_html):
        if tag == "a" or (tag == "link" and rel in ("canonical", "alternate")):
            continue
        if re.match(r"(https?:)?//", value.strip()):
            found.append(value.strip())
    found += re.findall(r"""url\(\s*['"]?((?:https?:)?//[^'")\s]+)""", page_html)
    found += re.findall(r"""@import\s+['"]((?:https?:)?//[^'"]+)""", page_html)
    return found


def check_site(site: Path) -> list[str]:
    """Problems of a built site, as sentences: loads from other hosts, internal links that do not resolve."""
    problems = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(site)
        for url in external_urls(text):
            problems.append(f"{rel}: loads {url} from another host (serve it from the site itself)")
        for tag, attr, value, _ in references(text):
            parts = urlsplit(value)
            if parts.scheme or value.startswith(("//", "#", "mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{rel}: <{tag} {attr}=\"{value}\"> points at {target} which does not exist")
            elif parts.fragment and target.suffix == ".html":
                anchors = _anchors(target)
                if parts.fragment not in anchors:
                    problems.append(f"{rel}: link {value} names the anchor #{parts.fragment}, missing in "
                                    f"{target.relative_to(site)}")
    return problems


_ANCHOR_CACHE: dict[Path, set[str]] = {}


def _anchors(page: Path) -> set[str]:
    if page not in _ANCHOR_CACHE:
        text = page.read_text(encoding="utf-8", errors="replace")
        _ANCHOR_CACHE[page] = set(re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", text))
    return _ANCHOR_CACHE[page]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the course tree to build (default: this one)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    parser.add_argument("--work", type=Path, default=None, help="staging/npm folder (default: the parent of --out)")
    parser.add_argument("--check", type=Path, default=None, help="only check a built site")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.check:
        problems = check_site(args.check)
        print("\n".join(problems) or f"{args.check}: no problem found")
        return 1 if problems else 0
    summary = build(args.root, args.out, args.work or args.out.resolve().parent, quiet=not args.verbose)
    print(json.dumps(summary, ensure_ascii=False))
    problems = check_site(args.out)
    for problem in problems:
        print(problem)
    print(f"site: {args.out}/index.html ({summary['seconds']} s)" if not problems else
          f"{len(problems)} problems in {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
