"""The course website (``make site``, tools/site.py) in headless chromium (COURSE_DESIGN section 11).

Reads the built site in ``build/site`` (``make site`` first; ``.ci/run`` does): every page loads with
no console error and no request to another host, images draw, math is typeset by the site's own
MathJax, widgets show as labelled static snapshots, search finds a lesson-03 term, internal links
resolve, and launch links point at ``[tool.course]``'s repository. A small fixture course (English +
Chinese, one notebook with saved widget state) is built into a temporary folder to test the Chinese
search (jieba), the language switch and the HTML widget manager. The checkers are shown to fail on
a page that loads a script from a CDN.

Without ``build/site``, Sphinx or chromium these tests skip, unless ``REQUIRE_BROWSER_TESTS=1``
(set by ``.ci/run``), which turns a skip into a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from pathlib import Path

import nbformat
import pytest

import browser_lab
from browser_lab import REQUIRE_ENV
from notebook_files import ROOT
from tools import site as site_tool

# Another built site and the course tree it was built from (e.g. notebooks regenerated into a temp folder).
SITE = Path(os.environ.get("COURSE_SITE_DIR", ROOT / "build" / "site"))
COURSE = Path(os.environ.get("COURSE_SITE_ROOT", ROOT))
LEARNER = sorted((COURSE / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((COURSE / "solutions").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = site_tool.WIDGET_VIEW
LESSON_03_TERM = "gradcheck"


def _require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"site test required ({REQUIRE_ENV}=1) but cannot run: {reason}", pytrace=False)
    pytest.skip(f"site test skipped: {reason} (with {REQUIRE_ENV}=1 this is a failure)")


def _require_site() -> Path:
    _require((SITE / "index.html").exists(), f"no built site at {SITE}: run `make site` first")
    return SITE


def _require_sphinx() -> None:
    try:
        import myst_nb  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError as exc:
        _require(False, f"the site's packages are not installed ({exc}): `make site` installs requirements-site.txt")


@pytest.fixture(scope="module")
def browser():
    browser_lab.require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = site_browser.launch(p)
        yield chromium
        chromium.close()


import site_browser  # noqa: E402  (after browser_lab: it reuses its chromium flags)


def _pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))


def _course() -> tuple[str, str]:
    course = tomllib.loads((COURSE / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["course"]
    return course["repository"].rstrip("/"), course.get("branch", "main")


# --- the checkers can fail --------------------------------------------------------------------

BAD_PAGE = """<!doctype html><html><head><title>bad</title>
<script src="https://cdn.example.com/x.js"></script></head>
<body><p>A page that loads a script from a CDN.</p><a href="missing.html">a broken link</a>
<a href="https://example.org/">a plain link elsewhere is fine</a></body></html>"""


def test_static_checker_reports_a_cdn_script_and_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(BAD_PAGE, encoding="utf-8")
    problems = site_tool.check_site(tmp_path)
    assert any("https://cdn.example.com/x.js" in p and "another host" in p for p in problems), problems
    assert any("missing.html" in p for p in problems), problems
    assert not any("example.org" in p for p in problems), "a plain link to another site is not a load"


def test_browser_checker_reports_a_cdn_script(tmp_path: Path, browser) -> None:
    (tmp_path / "index.html").write_text(BAD_PAGE, encoding="utf-8")
    with site_browser.SiteServer(tmp_path) as server:
        page, problems = site_browser.new_page(browser, server.base)
        found = site_browser.load_page(page, problems, server.base + "index.html")
        page.close()
    assert any("request to another host: https://cdn.example.com/x.js" in p for p in found), found


# --- the course's own site ----------------------------------------------------------------------

def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.\-]+", line), f"{path.name}: not an exact pin: {line!r}"
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name.lower())] = version
    return pins


def test_site_requirements_are_exact_pins_that_keep_the_course_pins() -> None:
    site, course = _pins(ROOT / "requirements-site.txt"), _pins(ROOT / "requirements.txt")
    assert {"sphinx", "myst-nb", "jieba"} <= set(site)
    clash = {name: (site[name], course[name]) for name in set(site) & set(course) if site[name] != course[name]}
    assert not clash, f"requirements-site.txt changes pins of requirements.txt: {clash}"
    lock = json.loads((ROOT / "site" / "package-lock.json").read_text(encoding="utf-8"))
    wanted = json.loads((ROOT / "site" / "package.json").read_text(encoding="utf-8"))["dependencies"]
    for name, version in wanted.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"site/package.json: pin {name} exactly, found {version!r}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, f"package-lock.json disagrees on {name}"


def test_readme_links_the_site_url() -> None:
    url = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["course"]["site"]
    head = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert f"Read online: <{url}>" in head, f"the README's top should link the website {url}"


def test_site_has_every_page_and_no_static_problem() -> None:
    site = _require_site()
    pages = set(_pages(site))
    for nb in LEARNER:
        assert f"notebooks/{nb.stem}.html" in pages, f"no page for notebooks/{nb.name}: run `make site`"
    for nb in SOLUTIONS:
        assert f"solutions/{nb.stem}.html" in pages, f"no page for solutions/{nb.name}: run `make site`"
    assert {"index.html", "instructors.html", "licence.html", "search.html", "solutions/index.html"} <= pages
    problems = site_tool.check_site(site)
    assert not problems, "\n".join(problems[:30])


def test_lessons_are_in_order_and_solutions_are_folded() -> None:
    site = _require_site()
    home = (site / "index.html").read_text(encoding="utf-8")
    positions = [home.find(f'href="notebooks/{nb.stem}.html"') for nb in LEARNER]
    assert -1 not in positions and positions == sorted(positions), "the home page lists the lessons out of order"
    for nb in SOLUTIONS:
        text = (site / "solutions" / f"{nb.stem}.html").read_text(encoding="utf-8")
        body = text.split('<article', 1)[1]
        warning = body.find("Spoiler")
        first_code = body.find('class="cell')
        assert warning != -1 and (first_code == -1 or warning < first_code), \
            f"solutions/{nb.stem}.html must start with its spoiler warning, before any code"


def test_launch_links_point_at_the_configured_repository() -> None:
    site = _require_site()
    repository, branch = _course()
    owner_repo = repository.removeprefix("https://github.com/")
    for nb in LEARNER:
        text = (site / "notebooks" / f"{nb.stem}.html").read_text(encoding="utf-8")
        assert (f'href="https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath=lab/tree/notebooks/{nb.name}"'
                in text), f"{nb.stem}.html: no Binder link to {owner_repo}@{branch}"
        assert f'href="https://colab.research.google.com/github/{owner_repo}/blob/{branch}/notebooks/{nb.name}"' in text
    launches = re.findall(r'href="(https://(?:mybinder\.org|colab\.research\.google\.com)/[^"]+)"',
                          "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html")))
    assert launches and all(owner_repo in url for url in launches), \
        [url for url in launches if owner_repo not in url][:5]


def test_widgets_are_labelled_static_snapshots() -> None:
    site = _require_site()
    for nb_path in LEARNER:
        nb = nbformat.read(nb_path, as_version=4)
        views = sum(WIDGET_VIEW in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
        text = (site / "notebooks" / f"{nb_path.stem}.html").read_text(encoding="utf-8")
        notes = text.count('class="course-widget-note"')
        assert notes == views, f"{nb_path.stem}: {views} widget(s) in the notebook, {notes} labelled on the page"
        if views and not nb.metadata.get("widgets"):
            assert text.count('class="course-widget-fallback"') == views
        if views and nb.metadata.get("widgets"):  # drawn by the HTML manager from the saved state
            assert 'type="application/vnd.jupyter.widget-state+json"' in text
            assert "vendor/html-manager/embed-amd.js" in text
    if not nbformat.read(COURSE / "notebooks" / "06_training_loop.ipynb", as_version=4).metadata.get("widgets"):
        page = (site / "notebooks" / "06_training_loop.html").read_text(encoding="utf-8")
        assert "Static snapshot of a progress bar" in page, "a progress bar's first frame must say what it is"


@pytest.fixture(scope="module")
def site_page(browser):
    site = _require_site()
    with site_browser.SiteServer(site) as server:
        page, problems = site_browser.new_page(browser, server.base)
        yield page, problems, server.base
        page.close()


def test_every_page_loads_offline_without_errors(site_page) -> None:
    page, problems, base = site_page
    found = []
    for name in _pages(SITE):
        found += [f"{name}: {p}" for p in site_browser.load_page(page, problems, base + name, settle_ms=100)]
    assert not found, "\n".join(found[:30])


def test_math_is_typeset_by_the_sites_mathjax(site_page) -> None:
    page, problems, base = site_page
    assert not site_browser.load_page(page, problems, base + "notebooks/03_autograd.html")
    page.wait_for_selector("mjx-container", timeout=20_000)
    assert page.evaluate("document.querySelectorAll('mjx-container').length") > 5
    raw = page.evaluate("document.querySelector('article').innerText")
    assert "\\frac" not in raw and "\\partial" not in raw, "TeX source is showing instead of typeset math"
    sources = page.evaluate("[...document.scripts].map(s => s.src).filter(Boolean)")
    assert any(s.startswith(base) and "mathjax" in s for s in sources), sources


def test_widget_snapshot_and_figures_are_drawn(site_page) -> None:
    page, problems, base = site_page
    assert not site_browser.load_page(page, problems, base + "notebooks/02_broadcasting_pitfalls.html", 800)
    note = page.locator(".course-widget-note").first
    assert note.is_visible() and "Static snapshot" in note.inner_text()
    assert "Binder" in note.inner_text() and "Colab" in note.inner_text()
    if nbformat.read(COURSE / "notebooks" / "02_broadcasting_pitfalls.ipynb", as_version=4).metadata.get("widgets"):
        page.wait_for_selector(".widget-output", timeout=20_000)  # the explorer drawn from its saved state
        assert page.locator(".widget-text input").first.is_visible()
    else:
        fallback = page.locator("pre.course-widget-fallback").first
        assert fallback.is_visible() and "It starts at:" in fallback.inner_text()
    widths = page.evaluate("[...document.querySelectorAll('article img')].map(i => i.naturalWidth)")
    assert widths and min(widths) > 0, f"saved figures not drawn: natural widths {widths}"


def test_search_finds_a_lesson_03_term(site_page) -> None:
    page, problems, base = site_page
    site_browser.load_page(page, problems, base + f"search.html?q={LESSON_03_TERM}")
    page.wait_for_selector("#search-results li", timeout=30_000)
    hits = page.evaluate("[...document.querySelectorAll('#search-results li a')].map(a => a.getAttribute('href'))")
    assert any("notebooks/03_autograd" in h for h in hits), hits


# --- a fixture course: Chinese search, language switch, saved widget state ------------------------

_ZH_TEXT = "# 00 · 自动求导\n\n梯度会累积：每次调用 `backward()` 都把新的梯度加到 `grad` 上，所以训练循环要先清零。"
_EN_TEXT = "# 00 · Autograd demo\n\nGradients accumulate. The loss is $L = \\frac{1}{N}\\sum_i (y_i - t_i)^2$."
_WIDGET_CODE = "import ipywidgets as widgets\nwidgets.IntSlider(value=7, min=0, max=10, description='steps')"


def _fixture_course(root: Path) -> None:
    """notebooks/00_demo.ipynb executed with its widget state saved; zh/notebooks/ the same in Chinese, no state."""
    from nbclient import NotebookClient

    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "docs").mkdir()
    (root / "docs" / "instructors.md").write_text("# Teaching\n\nOnly in English.\n", encoding="utf-8")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(_EN_TEXT),
                                         nbformat.v4.new_code_cell(_WIDGET_CODE)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    assert nb.metadata["widgets"][site_tool.WIDGET_STATE]["state"], "nbclient saved no widget state"
    (root / "notebooks").mkdir(parents=True)
    nbformat.write(nb, root / "notebooks" / "00_demo.ipynb")
    nb.cells[0].source = _ZH_TEXT
    del nb.metadata["widgets"]
    (root / "zh" / "notebooks").mkdir(parents=True)
    nbformat.write(nb, root / "zh" / "notebooks" / "00_demo.ipynb")


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_sphinx()
    _require(shutil.which("npm") is not None or (ROOT / "build" / "site-npm" / ".installed-lock").exists(),
             "npm is needed once to fetch MathJax and the widget manager")
    base = tmp_path_factory.mktemp("site-fixture")
    root = base / "course"
    root.mkdir()
    _fixture_course(root)
    summary = site_tool.build(root, base / "site", base / "work")
    assert summary["editions"]["en"]["widgets"]["state"] == 1, summary
    assert set(summary["editions"]) == {"en", "zh"}
    return base / "site"


def test_fixture_chinese_search_index_is_segmented(fixture_site: Path) -> None:
    index = (fixture_site / "zh" / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(index[index.index("(") + 1:index.rindex(")")])["terms"]
    assert "梯度" in terms and "累积" in terms, sorted(terms)[:40]
    assert not site_tool.check_site(fixture_site)


def test_fixture_language_switch_links_the_same_page(fixture_site: Path) -> None:
    en = (fixture_site / "notebooks" / "00_demo.html").read_text(encoding="utf-8")
    zh = (fixture_site / "zh" / "notebooks" / "00_demo.html").read_text(encoding="utf-8")
    assert 'hreflang="zh" lang="zh" href="../zh/notebooks/00_demo.html"' in en
    assert 'hreflang="en" lang="en" href="../../notebooks/00_demo.html"' in zh
    # A page with no counterpart links to the other edition's home page.
    guide = (fixture_site / "instructors.html").read_text(encoding="utf-8")
    assert 'hreflang="zh" lang="zh" href="zh/index.html"' in guide


def test_fixture_chinese_search_and_saved_widget_in_chromium(fixture_site: Path, browser) -> None:
    with site_browser.SiteServer(fixture_site) as server:
        page, problems = site_browser.new_page(browser, server.base)
        assert not site_browser.load_page(page, problems, server.base + "zh/search.html?q=梯度")
        page.wait_for_selector("#search-results li", timeout=30_000)
        hits = page.evaluate("[...document.querySelectorAll('#search-results li a')].map(a => a.href)")
        assert any("zh/notebooks/00_demo" in h for h in hits), hits
        found = site_browser.load_page(page, problems, server.base + "notebooks/00_demo.html", 1000)
        assert not found, found
        page.wait_for_selector(".widget-slider", timeout=20_000)  # drawn by the vendored HTML manager
        assert page.locator(".widget-readout").first.inner_text().strip() == "7"
        assert page.locator(".course-widget-note").first.is_visible()
        page.wait_for_selector("mjx-container", timeout=20_000)
        # The Chinese page has no saved state: its widget shows the text fallback, labelled.
        found = site_browser.load_page(page, problems, server.base + "zh/notebooks/00_demo.html")
        assert not found, found
        assert page.locator("pre.course-widget-fallback").first.is_visible()
        page.close()
