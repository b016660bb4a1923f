"""A notebook kernel gets a widget progress bar from tqdm.auto: ipywidgets is
there, so tqdm renders an IProgress widget instead of printing
"IProgress not found. Please update jupyter and ipywidgets"."""

from __future__ import annotations

from typing import Any

WIDGET = "application/vnd.jupyter.widget-view+json"
CELL = "from tqdm.auto import tqdm\nfor _ in tqdm(range(3)):\n    pass\n"


def test_tqdm_auto_shows_a_widget_in_a_kernel() -> None:
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=120)
    try:
        messages: list[dict[str, Any]] = []
        reply = client.execute_interactive(CELL, timeout=120, output_hook=messages.append)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    widgets = [m for m in messages if m["msg_type"] == "display_data" and WIDGET in m["content"]["data"]]
    streams = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
    assert widgets, f"no widget was displayed; the kernel printed: {streams!r}"
    assert "IProgress not found" not in streams
