"""Sphinx configuration of the course website. Built by ``make site`` (tools/site.py), which stages the
executed notebooks and passes this edition's settings in the COURSE_SITE environment variable."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

SITE = json.loads(os.environ.get("COURSE_SITE", "{}"))
EDITION = SITE.get("edition", "en")
HERE = Path(__file__).resolve().parent

project = SITE.get("title") or "PyTorch from the inside"
author = "The course's authors"
copyright = "the course's authors; code MIT, lesson text and figures CC BY 4.0"
language = "zh_CN" if EDITION == "zh" else "en"
# Chinese search: Sphinx's zh indexer segments words with jieba (pinned in requirements-site.txt).
html_search_language = "zh" if EDITION == "zh" else "en"

extensions = ["myst_nb"]
# The notebooks were executed by `make notebooks`; the site only renders what they saved.
nb_execution_mode = "off"
nb_merge_streams = True
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
# Tracebacks saved in the notebooks do not always lex as IPython tracebacks; Pygments falls back to plain text.
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure"]

html_theme = "furo"
html_title = project
html_static_path = [str(HERE / "_static")] + ([SITE["vendor"]] if SITE.get("vendor") else [])
html_css_files = ["course.css"]
html_js_files = ["mathjax2-shim.js"]
html_favicon = str(HERE / "_static" / "favicon.svg")  # else the browser asks for /favicon.ico (a 404)
templates_path = [str(HERE / "_templates")]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
# The "view" button's template is replaced by the course bar (site/_templates/components/view-this-page.html).
html_theme_options = {"sidebar_hide_name": False, "navigation_with_keys": True, "top_of_page_buttons": ["view"]}

# Served by the site itself (tools/site.py copies them from the npm registry's packages): no CDN.
mathjax_path = "vendor/mathjax/tex-chtml.js"
mathjax3_config = {"options": {"menuOptions": {"settings": {"assistiveMml": False}}}}
nb_ipywidgets_js = {
    "vendor/require.js": {},
    "vendor/html-manager/embed-amd.js": {"data-jupyter-widgets-cdn": "_static/vendor/none/",
                                         "data-jupyter-widgets-cdn-only": "true"},
}

UI = {
    "en": {"switch": "Language", "run": "Run this notebook live:", "read": "Read online"},
    "zh": {"switch": "语言", "run": "在线运行本笔记本：", "read": "在线阅读"},
}


def _launch(pagename: str) -> str:
    """Binder/Colab links of a lesson page (a solutions page links to its learner notebook)."""
    parts = pagename.split("/")
    if len(parts) != 2 or parts[0] not in ("notebooks", "solutions") or parts[1] == "index":
        return ""
    owner_repo = SITE["repository"].removeprefix("https://github.com/").removesuffix(".git")
    branch = SITE.get("branch", "main")
    path = f"{'zh/' if EDITION == 'zh' else ''}notebooks/{parts[1]}.ipynb"  # the Chinese pages run the Chinese notebook
    binder = f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath=lab/tree/{path}"
    colab = f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{path}"
    return (f'<span class="course-run">{UI[EDITION]["run"]} '
            f'<a class="course-launch" data-launch="binder" href="{html.escape(binder)}">Binder</a> '
            f'<a class="course-launch" data-launch="colab" href="{html.escape(colab)}">Colab</a></span>')


def _switch(pagename: str) -> str:
    """Links to the same page in the other editions (or their home page when it has no such page)."""
    editions = SITE.get("editions", {})
    if len(editions) < 2:
        return ""
    up = "../" * pagename.count("/")
    site_root = up + SITE.get("prefix", "")
    links = []
    for edition, label in editions.items():
        if edition == EDITION:
            links.append(f'<span class="course-lang-current" lang="{edition}">{label}</span>')
            continue
        root = site_root + ("" if edition == "en" else f"{edition}/")
        page = pagename if pagename in SITE["pages"].get(edition, []) else "index"
        links.append(f'<a class="course-lang" hreflang="{edition}" lang="{edition}" href="{root}{page}.html">{label}</a>')
    return f'<span class="course-switch" aria-label="{UI[EDITION]["switch"]}">' + " · ".join(links) + "</span>"


def _page_context(app, pagename, templatename, context, doctree):
    parts = [p for p in (_switch(pagename), _launch(pagename)) if p]
    context["course_bar"] = f'<div class="course-bar">{"".join(parts)}</div>' if parts else ""


def _fix_chinese_search(app):
    """Sphinx 9.0 writes ``window.Stemmer = ChineseStemmer`` although Chinese search ships the English
    stemmer for Latin words, so the search page throws (sphinx-doc/sphinx#14229, fixed after 9.0.4,
    whose successors need Python 3.12)."""
    from sphinx.search.zh import SearchChinese

    class SearchChineseFixed(SearchChinese):
        language_name = "English"  # names the JS stemmer class only: EnglishStemmer

    app.add_search_language(SearchChineseFixed)


def setup(app):
    app.connect("html-page-context", _page_context)
    _fix_chinese_search(app)
