"""Serve a built website on localhost and read its pages in headless chromium: the machinery behind
``tests/test_site.py`` (and the screenshots of ``python -m tests.site_browser``).

:func:`load_page` opens one page with every request to another host blocked (and recorded), and
returns what a reader would meet as sentences: console errors, uncaught exceptions, requests that
failed or left the server, images that did not draw. A page with
``<script src="https://cdn.example.com/x.js">`` gives a problem naming that URL.

Screenshots: ``python tests/site_browser.py build/site runs/site-shots index.html notebooks/02_...html``.
"""

from __future__ import annotations

import functools
import http.server
import socketserver
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_lab import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the same chromium and flags as the Lab test)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class SiteServer:
    """A static file server for ``folder`` on 127.0.0.1 (a free port), in a thread."""

    def __init__(self, folder: Path) -> None:
        handler = functools.partial(_Quiet, directory=str(folder))
        self.httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "SiteServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def new_page(browser: Any, base: str) -> tuple[Any, list[str]]:
    """A page whose requests to any host but ``base``'s are aborted; returns (page, problems list)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    own = urlsplit(base).netloc

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("data:", "blob:", "about:")) or urlsplit(url).netloc == own:
            r.continue_()
        else:
            problems.append(f"request to another host: {url} (serve it from the site itself)")
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
    pending: set[Any] = set()
    page.__dict__["course_pending"] = pending  # requests still in flight: load_page waits for none
    page.on("request", lambda r: pending.add(r))
    page.on("requestfinished", lambda r: pending.discard(r))

    def failed(r: Any) -> None:
        pending.discard(r)
        if urlsplit(r.url).netloc == own:
            problems.append(f"request failed: {r.url} ({r.failure})")

    page.on("requestfailed", failed)
    page.on("response", lambda r: problems.append(f"HTTP {r.status} for {r.url}") if r.status >= 400 else None)
    return page, problems


def load_page(page: Any, problems: list[str], url: str, settle_ms: int = 300) -> list[str]:
    """Open ``url``; returns the problems seen while loading it (and clears the list)."""
    problems.clear()
    page.goto(url, wait_until="networkidle")
    # MathJax typesets after load and only then fetches its fonts: wait for both, so the next page's
    # navigation does not abort them.
    page.evaluate("""async () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
        await document.fonts.ready; }""")
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(settle_ms)
    # Late requests (fonts a script asks for after typesetting) must finish before the next navigation,
    # which would otherwise abort them.
    pending = page.__dict__.get("course_pending", set())
    for _ in range(100):
        if not pending:
            break
        page.wait_for_timeout(100)
    else:
        problems.append(f"requests still pending 10 s after load: {[r.url for r in pending][:3]}")
    broken = page.evaluate("""() => [...document.images]
        .filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.currentSrc || img.src)""")
    found = list(problems) + [f"image not drawn: {src[:120]}" for src in broken]
    problems.clear()
    return found


DETAILS = {"widget": ".course-widget-note", "figure": "article img", "math": "mjx-container"}


def screenshots(site: Path, out: Path, pages: list[str]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with SiteServer(site) as server, sync_playwright() as p:
        browser = launch(p)
        page, problems = new_page(browser, server.base)
        for name in pages:
            for problem in load_page(page, problems, server.base + name, settle_ms=1500):
                print(f"{name}: {problem}")
            shot = out / (Path(name).stem + ".png")
            page.screenshot(path=str(shot))
            written.append(shot)
            # Then the first widget, figure and formula of the page, each scrolled to the top.
            for label, selector in DETAILS.items():
                element = page.locator(selector).first
                if element.count():
                    element.evaluate("""e => window.scrollTo({behavior: 'instant',
                        top: e.getBoundingClientRect().top + window.scrollY - 80})""")
                    page.wait_for_timeout(800)
                    shot = out / f"{Path(name).stem}-{label}.png"
                    page.screenshot(path=str(shot))
                    written.append(shot)
        browser.close()
    return written


if __name__ == "__main__":
    for path in screenshots(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]):
        print(path)
