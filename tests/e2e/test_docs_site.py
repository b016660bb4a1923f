"""The docs site as a reader meets it, in headless Chromium: the quick start in English (its tables as
wide as they need, copy buttons on the commands, the switch to Chinese and to dark mode) and the
Chinese home page, whose search finds Chinese words; and on every built Chinese page, each link lands on
the Chinese page where one exists. The site is built strictly from this checkout and served on
127.0.0.1; screenshots of both pages are kept in the report folder (`browser/docs-*.png`)."""

from __future__ import annotations

import contextlib
import functools
import html.parser
import http.server
import os
import posixpath
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser_session import headless_chromium
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from pudev.paths import REPO_ROOT

TIMEOUT = 30.0
CHINESE_QUERY = "镜像"  # "image": on nearly every Chinese page, and one word only once jieba has cut the text


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built as `make docs` builds it."""
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
                           cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # Material's notice of its own end
    assert built.returncode == 0, built.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def site(built_site: Path) -> Iterator[str]:
    """The built site, served on a free port of 127.0.0.1."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Links(html.parser.HTMLParser):
    """The targets of a page's links, less the language switch (its English link is meant)."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href") and "hreflang" not in found:
            self.targets.append(found["href"] or "")


def english_links_with_a_chinese_twin(site: Path, docs: Path) -> list[str]:
    """Each link on a built Chinese page that lands on an English page whose Chinese twin exists in `docs`,
    as 'page -> link'."""
    found = []
    for page in sorted((site / "zh").rglob("*.html")):
        url = "/" + page.relative_to(site).as_posix()
        links = _Links()
        links.feed(page.read_text())
        for href in links.targets:
            parts = urllib.parse.urlsplit(href)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # another site, or a place on this page
            target = posixpath.normpath(posixpath.join(posixpath.dirname(url), parts.path)).strip("/")
            if target != "zh" and not target.startswith("zh/") and _has_chinese_twin(target, docs):
                found.append(f"{url} -> {href}")
    return found


def _has_chinese_twin(target: str, docs: Path) -> bool:
    """Whether the English page at site path `target` ('using/mirrors', 'using/mirrors/index.html', '')
    has a Chinese source: its `.zh.md`, or its folder's `index.zh.md`."""
    stem = target.removesuffix(".html").removesuffix("index").strip("/")
    sources = [docs / f"{stem}.zh.md", docs / stem / "index.zh.md"] if stem else [docs / "index.zh.md"]
    return any(source.exists() for source in sources)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _shown(browser: Chrome, css: str) -> WebElement:
    def first_visible(_: Chrome) -> WebElement | bool:
        return next((element for element in browser.find_elements(By.CSS_SELECTOR, css) if element.is_displayed()),
                    False)

    wait = WebDriverWait(browser, TIMEOUT, ignored_exceptions=[StaleElementReferenceException])
    found = wait.until(first_visible, f"nothing visible matches {css!r} (within {TIMEOUT:.0f} s)")
    assert isinstance(found, WebElement)
    return found


@contextlib.contextmanager
def _page(report_dir: Path, name: str, record: Callable[[str, object], None]) -> Iterator[Chrome]:
    """A browser on one page; its screenshot kept, at the end or at the failure."""
    shots = report_dir / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    with headless_chromium() as browser:
        try:
            yield browser
        except Exception:
            with contextlib.suppress(WebDriverException):
                browser.save_screenshot(str(shots / f"docs-{name}-failed.png"))
            raise
        shot = shots / f"docs-{name}.png"
        assert browser.save_screenshot(str(shot)), f"Chromium wrote no screenshot to {shot}"
        record("screenshot", str(shot))
        print(f"screenshot: {shot}")


def test_the_quick_start_reads_well(browser_tools: None, site: str, report_dir: Path,
                                    record_property: Callable[[str, object], None]) -> None:
    with _page(report_dir, "quickstart", record_property) as browser:
        browser.get(f"{site}/quickstart/")
        assert _shown(browser, "h1").text.startswith("Quick start")
        # The tag table shows every column: none is cut off or scrolled out of a narrow text column.
        table = next(table for table in browser.find_elements(By.CSS_SELECTOR, ".md-content table")
                     if "arm64 GPUs" in table.text)
        headers = [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "th")]
        assert headers[0] == "tag" and headers[-1] == "arm64 GPUs", headers
        overflow = browser.execute_script(
            "const t = arguments[0], box = t.closest('.md-typeset__table') || t.parentElement;"
            "return t.scrollWidth - box.clientWidth;", table)
        assert overflow <= 1, f"the tag table is {overflow} px wider than its column: its last columns are hidden"
        # Copy buttons on the command blocks (the theme adds them where the browser lets scripts write the
        # clipboard, which headless Chromium does not: the page's theme config is what is checked), the
        # switch to Chinese, and a dark mode that works.
        assert browser.find_elements(By.CSS_SELECTOR, "div.highlight pre > code")
        assert "content.code.copy" in (browser.find_element(By.ID, "__config").get_attribute("textContent") or "")
        assert browser.find_elements(By.CSS_SELECTOR, "a[hreflang='zh'][href*='/zh/quickstart/']")
        scheme = browser.find_element(By.TAG_NAME, "body").get_attribute("data-md-color-scheme")
        _shown(browser, "label.md-header__button[for^='__palette']").click()
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-md-color-scheme") != scheme


def test_the_chinese_home_page_and_its_search(browser_tools: None, site: str, report_dir: Path,
                                              record_property: Callable[[str, object], None]) -> None:
    with _page(report_dir, "zh-home", record_property) as browser:
        browser.get(f"{site}/zh/")
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "zh"
        assert "快速上手" in _shown(browser, ".md-content").text  # the start pages, in Chinese
        search = _shown(browser, "input.md-search__input")  # in the header on a wide window
        search.click()
        search.send_keys(CHINESE_QUERY)
        # The results are drawn again as the index loads and each key arrives: read them inside the wait,
        # where an element replaced under the test is looked up again (a flake on a loaded machine).
        wait = WebDriverWait(browser, TIMEOUT, ignored_exceptions=[StaleElementReferenceException])
        wait.until(lambda _: [link for item in browser.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")
                              if item.is_displayed() and "/zh/" in (link := item.get_attribute("href") or "")],
                   f"searching {CHINESE_QUERY!r} found no Chinese page (within {TIMEOUT:.0f} s)")
        browser.find_element(By.CSS_SELECTOR, "input.md-search__input").clear()  # the screenshot shows the page
        browser.get(f"{site}/zh/")
        _shown(browser, ".md-content")


def test_every_link_of_a_chinese_page_stays_chinese_where_a_twin_exists(built_site: Path) -> None:
    # On GitHub nothing rewrites a link (README.zh-CN.md has a lint of its own); on the site the i18n plugin
    # should: a Chinese reader who follows a link lands on the Chinese page wherever one exists.
    wrong = english_links_with_a_chinese_twin(built_site, REPO_ROOT / "docs")
    assert not wrong, ("links on the Chinese site land on English pages that have a Chinese twin (link the "
                       "twin's .zh.md, or the page's .md from a .zh.md page):\n" + "\n".join(wrong[:40]))


def test_the_link_check_finds_an_english_link_with_a_twin(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "using").mkdir(parents=True)
    for name in ("using/mirrors.zh.md", "using/mirrors.md", "using/arm.md", "index.zh.md"):
        (docs / name).write_text("x")
    page = tmp_path / "site" / "zh" / "faq" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text('<a href="../../using/mirrors/">en</a> <a href="../using/mirrors/">zh</a> '
                    '<a href="../../using/arm/">no twin</a> <a href="../../" hreflang="en">switch</a> '
                    '<a href="../../">home</a> <a href="https://example.org/">away</a> <a href="#top">here</a>')
    assert english_links_with_a_chinese_twin(tmp_path / "site", docs) == [
        "/zh/faq/index.html -> ../../using/mirrors/", "/zh/faq/index.html -> ../../"]
