"""Stage 3, releasing: tags read from a built image, its manifest, the registry
API client, publishing by digest, and pinning base images by digest."""
