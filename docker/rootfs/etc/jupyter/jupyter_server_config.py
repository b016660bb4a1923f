"""JupyterLab settings for the image; environment variables override them at run time.

JUPYTER_PORT (default 8888), JUPYTER_BASE_URL (default /), JUPYTER_ROOT_DIR
(default /workspace); JUPYTER_TOKEN is read by Jupyter itself. Authentication is
only turned off by the explicit opt-in PUDEV_JUPYTER_NO_AUTH=1. A bad value stops
the start with one line naming the variable and what it needs (pudev.image.runenv).
"""

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Jupyter execs this file with traitlets' PyFileConfigLoader, which puts get_config (and c) into its
    # namespace; this declares it for the linters only. It returns a traitlets Config, whose attributes
    # are made on access (Any for the type checker either way, and traitlets is not on the host).
    def get_config() -> Any: ...

try:
    from pudev.image.runenv import settings_or_exit
except ImportError:  # a Jupyter from another environment (a user's venv) reads this file too
    sys.path.append("/opt/pudev/lib")
    from pudev.image.runenv import settings_or_exit

settings = settings_or_exit("jupyter")
c = get_config()

c.ServerApp.ip = "0.0.0.0"
c.ServerApp.port = settings.port
c.ServerApp.port_retries = 0  # a taken port is an error, not a silent move to 8889
c.ServerApp.base_url = settings.base_url
c.ServerApp.root_dir = settings.root_dir
c.ServerApp.open_browser = False
c.ServerApp.terminado_settings = {"shell_command": ["/usr/bin/zsh", "-l"]}
# Kernels talk to the server over Unix sockets in the runtime directory, not TCP ports on 127.0.0.1:
# nothing else sharing the container's network namespace (a pod's sidecar, `--network container:`)
# can reach them, and ipykernel has no "running over TCP without encryption" warning at each start.
c.KernelManager.transport = "ipc"
if settings.no_auth:
    c.IdentityProvider.token = ""
    c.PasswordIdentityProvider.hashed_password = ""
