"""JupyterLab in a real browser: the image started as a user starts it, its logged URL opened in headless
Chromium, a notebook made from the Launcher runs torch and a tqdm.auto loop (drawn as a jupyter-widgets
progress bar), and a terminal runs zsh. Once each as the image's user, in the documented hardened read-only
run and as an arbitrary uid in group 0. One container and one browser per way of running; a screenshot of
the notebook is kept in the report folder (`browser/jupyterlab-<way>.png`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_session import JupyterLabPage, headless_chromium, show_terminal_text
from e2e_support import QUICK_HEALTH, LocalImage, profile_variant
from jupyter_client_lite import JupyterServer, free_port
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from shards import newest_profile
from test_any_user import USERS
from test_jupyter import _hardened_options

from pudev.engine.containers import TrackedContainer

pytestmark = [pytest.mark.engine, pytest.mark.slow]
HEALTH = "{{.State.Health.Status}}"
LOGGED_URL = re.compile(r"http://127\.0\.0\.1:8888/lab\?token=[0-9a-f]{32,}")
IMAGE_UID = "1000"  # the image's `dev`
ANY_USER = "4242:0"  # OpenShift's random uid in group 0 (test_any_user.py)


@dataclass(frozen=True)
class WayOfRunning:
    options: Callable[[], list[str]]  # read when the test runs: the hardened ones come from the docs
    uid: str  # who the terminal's shell runs as


WAYS_OF_RUNNING = {
    "default": WayOfRunning(list, IMAGE_UID),
    # The documented hardened run; a tmpfs workspace stands in for its `-v "$PWD":/workspace`.
    "hardened-read-only": WayOfRunning(lambda: [*_hardened_options(), "--tmpfs", "/workspace:uid=1000,gid=1000"],
                                       IMAGE_UID),
    "any-uid": WayOfRunning(lambda: USERS[ANY_USER], ANY_USER.split(":")[0]),
}


def _start(image: LocalImage, way: WayOfRunning) -> tuple[TrackedContainer, int]:
    port = free_port()
    container = TrackedContainer(image.tag, purpose="browser", options=[
        *QUICK_HEALTH, "--publish", f"127.0.0.1:{port}:8888", *way.options()])
    container.start()
    return container, port


@pytest.mark.parametrize("way", WAYS_OF_RUNNING)
def test_jupyterlab_in_a_browser(browser_tools: None, newest_image: LocalImage, report_dir: Path, way: str,
                                 record_property: Callable[[str, object], None]) -> None:
    container, port = _start(newest_image, WAYS_OF_RUNNING[way])
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        logged = LOGGED_URL.search(container.logs())
        assert logged, f"no tokenized URL in the log:\n{container.logs()[-3000:]}"
        url = logged.group(0).replace(":8888/", f":{port}/", 1)  # the port published on the host
        show_terminal_text(JupyterServer(port=port, token=url.rpartition("token=")[2]))
        with headless_chromium() as browser:
            page = JupyterLabPage(browser)
            screenshots = report_dir / "browser"
            try:
                _notebook_runs_torch_and_draws_a_progress_bar(page, url)
                shot = page.screenshot(screenshots / f"jupyterlab-{way}.png")
                record_property("screenshot", str(shot))
                print(f"screenshot of the notebook: {shot}")
                _terminal_runs_zsh(page, WAYS_OF_RUNNING[way].uid)
            except Exception:
                with contextlib.suppress(WebDriverException):  # a browser that died keeps the test's own error
                    print(f"screenshot at the failure: {page.screenshot(screenshots / f'jupyterlab-{way}-failed.png')}")
                raise


def _notebook_runs_torch_and_draws_a_progress_bar(page: JupyterLabPage, url: str) -> None:
    page.open(url)
    notebook = page.new_notebook()
    output = page.run_cell(notebook, 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)')
    variant = profile_variant(newest_profile())
    printed = re.fullmatch(r"torch (\S+) cuda (\S+)", output.text.strip())
    assert printed, f"the torch cell showed {output.text!r}"
    assert printed.group(1).split("+")[0] == variant.torch and printed.group(2) == variant.cuda, printed.group(0)

    output = page.run_cell(notebook, "from tqdm.auto import tqdm; [step for step in tqdm(range(3))]")
    # Without ipywidgets' front end, tqdm.auto falls back to text and prints this warning instead of a bar.
    assert "IProgress not found" not in output.text, output.text
    bar = page.shown(".widget-hprogress .progress-bar", within=output)
    assert bar.value_of_css_property("width") != "0px", "the progress bar stayed empty"
    assert "3/3" in output.text and output.text.strip().endswith("[0, 1, 2]"), output.text
    assert not output.find_elements(By.CSS_SELECTOR, "[data-mime-type='application/vnd.jupyter.stderr']"), output.text


def _terminal_runs_zsh(page: JupyterLabPage, uid: str) -> None:
    terminal = page.new_terminal()
    # The typed line shows "$(...)"; only the shell's answer reads "shell=zsh uid=N".
    page.type_in_terminal(terminal, 'echo "shell=$(ps -p $$ -o comm=) uid=$(id -u)"')
    answer = f"shell=zsh uid={uid}"
    try:
        page.wait_until(lambda _: answer in (line.strip() for line in page.terminal_lines(terminal)),
                        f"the terminal never showed {answer!r}")
    except TimeoutException:
        shown = "\n".join(line.rstrip() for line in page.terminal_lines(terminal) if line.strip())
        raise AssertionError(f"the terminal never showed {answer!r}; it shows:\n{shown}") from None
