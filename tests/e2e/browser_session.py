"""JupyterLab in headless Chromium, driven through Selenium as a user clicks and types.

Debian's chromium and chromium-driver (scripts/host-setup.sh tools). The driver is named explicitly, so
Selenium Manager, which would try to download one, never runs. Every wait is a WebDriverWait on what the
page shows; there are no fixed sleeps.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

from jupyter_client_lite import JupyterServer
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome, ChromeOptions
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

# The commands the browser tests run, and the Debian packages that ship them.
BROWSER_TOOLS = {"chromium": "chromium", "chromedriver": "chromium-driver"}
# Loading JupyterLab's bundles and a kernel's first `import torch` take seconds; a cell gets more room.
PAGE_TIMEOUT = 60.0
CELL_TIMEOUT = 120.0
# A code cell's input prompt reads "[*]:" while it runs and "[N]:" once the kernel has replied.
RAN_PROMPT = re.compile(r"^\[\d+\]:$")
TERMINAL_SETTINGS = "lab/api/settings/@jupyterlab/terminal-extension:plugin"

Found = TypeVar("Found")


def missing_browser_tools() -> list[str]:
    """The Debian packages of the browser tools that are not on PATH."""
    return [package for command, package in BROWSER_TOOLS.items() if shutil.which(command) is None]


@contextmanager
def headless_chromium() -> Iterator[Chrome]:
    """One headless Chromium with a throwaway profile, quit (and the profile removed) afterwards."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and chromedriver, f"missing {' and '.join(missing_browser_tools())}"
    with tempfile.TemporaryDirectory(prefix="pudev-chromium-") as profile:
        options = ChromeOptions()
        options.binary_location = chromium
        # Chromium's sandbox refuses to start as root (the test machines); /dev/shm is small in containers
        # and CI, so Chromium keeps its shared memory in /tmp instead.
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                         "--window-size=1400,1000"):
            options.add_argument(argument)
        browser = Chrome(options=options, service=Service(executable_path=chromedriver))
        try:
            yield browser
        finally:
            browser.quit()


def show_terminal_text(server: JupyterServer) -> None:
    """Turn on the terminal's screen reader mode (a user setting, through JupyterLab's settings API).
    xterm.js draws its text on a canvas; this mode also writes each line into an accessibility tree in the
    DOM, which is what the test reads."""
    status, _ = server.request("PUT", TERMINAL_SETTINGS, {"raw": json.dumps({"screenReaderMode": True})})
    assert status == 204, f"JupyterLab refused the terminal setting: HTTP {status}"


class JupyterLabPage:
    """The JupyterLab page open in a browser, and what a user does there."""

    def __init__(self, browser: Chrome) -> None:
        self.browser = browser

    def wait_until(self, condition: Callable[[Chrome], Literal[False] | Found], failure: str, *,
                   timeout: float = PAGE_TIMEOUT) -> Found:
        """What `condition` returns once it is truthy; a TimeoutException saying `failure` otherwise."""
        wait = WebDriverWait(self.browser, timeout, ignored_exceptions=[StaleElementReferenceException])
        return wait.until(condition, f"{failure} (within {timeout:.0f} s)")

    def shown(self, css: str, *, within: WebElement | None = None, timeout: float = PAGE_TIMEOUT) -> WebElement:
        """The first visible element matching `css`, once there is one."""
        root = within or self.browser

        def first_visible(_: Chrome) -> WebElement | Literal[False]:
            return next((element for element in root.find_elements(By.CSS_SELECTOR, css) if element.is_displayed()),
                        False)

        return self.wait_until(first_visible, f"nothing visible matches {css!r}", timeout=timeout)

    def open(self, url: str) -> None:
        """Load JupyterLab and wait for the Launcher a fresh server shows."""
        self.browser.get(url)
        self.shown(".jp-Launcher")

    def _menu_item(self, *path: str, command: str) -> None:
        """Open the menu bar's `path[0]`, hover through the submenus `path[1:]` and click the item that runs
        `command` (Lumino marks each item with its command)."""
        top, *submenus = path
        bar = self.shown(".lm-MenuBar-content")
        next(item for item in bar.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item") if item.text.strip() == top
             ).click()
        for label in submenus:
            def submenu(_: Chrome, label: str = label) -> WebElement | Literal[False]:
                items = self.browser.find_elements(By.CSS_SELECTOR, ".lm-Menu-item[data-type='submenu']")
                return next((item for item in items if item.is_displayed() and item.text.strip() == label), False)

            ActionChains(self.browser).move_to_element(self.wait_until(submenu, f"no submenu {label!r}")).perform()
        self.shown(f".lm-Menu-item[data-command='{command}']").click()

    def new_notebook(self) -> WebElement:
        """Click the Launcher's notebook tile (Python 3); the new notebook, once its kernel is idle."""
        self.shown(".jp-LauncherCard[data-category='Notebook']").click()
        notebook = self.shown(".jp-NotebookPanel")

        def kernel_ready(_: Chrome) -> bool:
            # The indicator reads idle for a moment before any kernel is attached ("No Kernel"), and a
            # cell run then is dropped: wait for the Python kernel itself to report idle.
            name = notebook.find_element(By.CSS_SELECTOR, ".jp-Toolbar-kernelName").text
            status = notebook.find_element(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator")
            return name.startswith("Python 3") and status.get_attribute("data-status") == "idle"

        self.wait_until(kernel_ready, "the notebook's Python kernel never became idle")
        return notebook

    def run_cell(self, notebook: WebElement, code: str) -> WebElement:
        """Type `code` into the notebook's last cell, run it with Shift+Enter and wait until the kernel has
        replied; that cell's output area."""
        cell = notebook.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")[-1]
        editor = cell.find_element(By.CSS_SELECTOR, ".cm-content")
        editor.click()
        editor.send_keys(code)
        editor.send_keys(Keys.SHIFT, Keys.ENTER)
        prompt = cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt")
        self.wait_until(lambda _: RAN_PROMPT.match(prompt.text.strip()) is not None,
                        f"the cell {code!r} did not finish", timeout=CELL_TIMEOUT)
        return cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea")

    def new_terminal(self) -> WebElement:
        """File > New > Terminal; the terminal, once its shell has drawn its prompt."""
        self._menu_item("File", "New", command="terminal:create-new")
        terminal = self.shown(".jp-Terminal")
        self.wait_until(lambda _: any(row.strip() for row in self.terminal_lines(terminal)),
                        "the terminal shows no prompt")
        return terminal

    def type_in_terminal(self, terminal: WebElement, line: str) -> None:
        """Click into the terminal and type `line` and Enter (xterm.js reads keys from a hidden textarea)."""
        terminal.find_element(By.CSS_SELECTOR, ".xterm-screen").click()
        terminal.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea").send_keys(line + Keys.ENTER)

    def terminal_lines(self, terminal: WebElement) -> list[str]:
        """The terminal's lines as its accessibility tree holds them (see show_terminal_text)."""
        return [row.get_attribute("textContent") or "" for row in
                terminal.find_elements(By.CSS_SELECTOR, ".xterm-accessibility-tree > div")]

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        assert self.browser.save_screenshot(str(path)), f"Chromium wrote no screenshot to {path}"
        return path
