"""JupyterLab settings for the image; environment variables override them at run time.

JUPYTER_PORT (default 8888), JUPYTER_BASE_URL (default /), JUPYTER_ROOT_DIR
(default /workspace); JUPYTER_TOKEN is read by Jupyter itself. Authentication is
only turned off by the explicit opt-in PUDEV_JUPYTER_NO_AUTH=1.
"""

import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821 - provided by Jupyter's config loader

c.ServerApp.ip = "0.0.0.0"
c.ServerApp.port = int(os.environ.get("JUPYTER_PORT", "8888"))
c.ServerApp.port_retries = 0  # a taken port is an error, not a silent move to 8889
c.ServerApp.base_url = os.environ.get("JUPYTER_BASE_URL", "/")
c.ServerApp.root_dir = os.environ.get("JUPYTER_ROOT_DIR", "/workspace")
c.ServerApp.open_browser = False
c.ServerApp.terminado_settings = {"shell_command": ["/usr/bin/zsh", "-l"]}
if os.environ.get("PUDEV_JUPYTER_NO_AUTH") == "1":
    c.IdentityProvider.token = ""
    c.PasswordIdentityProvider.hashed_password = ""
