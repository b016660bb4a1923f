"""The image side of pudev: tools that run inside the container (never Docker)."""
