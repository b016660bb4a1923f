"""JupyterLab is installed and configured as the image's default command."""

from __future__ import annotations

import shutil
import subprocess
import sys


def test_jupyter_lab_is_installed() -> None:
    assert shutil.which("jupyter-lab") and shutil.which("start-jupyter") and shutil.which("pudev-healthcheck")


def test_server_settings() -> None:
    script = ("from jupyter_server.serverapp import ServerApp; app = ServerApp(); app.load_config_file(); "
              "print(app.ip, app.port, app.root_dir, app.base_url, app.open_browser, app.port_retries)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.split() == ["0.0.0.0", "8888", "/workspace", "/", "False", "0"]


def test_environment_overrides_port_and_base_url() -> None:
    script = ("from jupyter_server.serverapp import ServerApp; app = ServerApp(); app.load_config_file(); "
              "print(app.port, app.base_url)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "JUPYTER_PORT": "9999",
                              "JUPYTER_BASE_URL": "/nb/"}).stdout
    assert out.split() == ["9999", "/nb/"]
