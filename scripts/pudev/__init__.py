"""PyTorch Universal Dev: build, test and publish dual-CUDA PyTorch development images.

The package follows the stages of the work; each folder has one rule:

  cli/       the command line: parsed once into a typed request, one handler per command
  config/    the variant matrix: model, loading, schema and rules, overrides, profiles,
             selection. Pure: no Docker, no network.
  build/     a plan per variant (pure: assembly, labels, CA bundle and lock checks, the
             bake and CI exports), the input images' digests and the builder that runs a
             plan. Only builder.py and digests.py reach the engine or a registry.
  engine/    the Docker CLI and nothing else talks to the engine: images, tracked
             containers, layers
  registry/  the Registry HTTP API client on requests: per-scope Bearer tokens, docker's
             credential resolution (credHelpers, credsStore, auths), TLS, retries
  release/   what happens to a built image: tags read from it, its manifest, candidates,
             test results and promotion by digest, SBOMs, pinning bases (via registry/)
  devtools/  tools for developing the images: locks, stand-ins, build benchmark, test runs
  image/     runs INSIDE the container (verify, bench, gpumon, cuda-switch, record,
             selftest); never touches Docker, never imported by the host side
  mirror/    mirror rendering and switching, used at build time and inside the image
  common/    standard-library helpers shared by both sides (errors, image refs, tables,
             checked file inputs)

Host side never imports torch; the image side never imports docker or the host folders.
"""

__version__ = "0.2.0"
