"""Reports on what a built image holds, read from the image itself: its build
manifest and the diff between two manifests, and its SBOM (written, attached to
the image's digest in the registry, fetched back)."""
