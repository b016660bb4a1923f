"""The docs site as a reader meets it, in headless Chromium: the quick start in English (its tables as
wide as they need, copy buttons on the commands, the switch to Chinese and to dark mode) and the
Chinese home page, whose search finds Chinese words. The site is built strictly from this checkout and
served on 127.0.0.1; screenshots of both pages are kept in the report folder (`browser/docs-*.png`)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import subprocess
import sys
import threading
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
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built as `make docs` builds it, served on a free port of 127.0.0.1."""
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
                           cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # Material's notice of its own end
    assert built.returncode == 0, built.stderr[-3000:]
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


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
