"""PyTorch Universal Dev: build, test and publish dual-CUDA PyTorch development images.

The package follows the stages of the work; each folder has one rule:

  cli/       the command line: parsed once into a typed request, one handler per command.
             Nothing imports it; the only folder that imports devtools/.
  config/    the variant matrix: model, loading, schema and rules, overrides, profiles,
             selection. Pure: no Docker, no network.
  building/  a plan per variant (pure: assembly, labels, the image record as planned, the
             facts it still lacks, CA bundle and lock checks, the bake and CI exports), the
             input images' digests and the builder that runs a plan. Only builder.py and
             digests.py reach the engine or a registry.
  engine/    the Docker CLI and nothing else talks to the engine (only engine/ runs
             `docker`): images, builds, tracked containers, layers
  registry/  the Registry HTTP API client on requests: per-scope Bearer tokens, docker's
             credential resolution (credHelpers, credsStore, auths), TLS, retries
  testing/   the in-image suite run against an image in a throwaway container, tallied per
             half (CPU, GPU), through engine/ only
  release/   a built image released by digest: tags read from it, the candidate pushed,
             tested (via testing/) and its results recorded in the registry, promotion
  reports/   what a built image holds, read from the image: build manifest and its diff,
             SBOM (attached to the image's digest through release/'s artifacts)
  policy/    supply-chain policy: bases pinned by digest (via registry/), the
             vulnerability gate's reviewed exceptions
  devtools/  tools for developing the images: locks, stand-ins, build benchmark; beside
             the production path, which never imports them
  image/     runs INSIDE the container (verify, bench, gpumon, cuda-switch, record,
             selftest); never touches Docker, never imported by the host side
  mirror/    mirror rendering and switching, used at build time and inside the image
  common/    standard-library helpers shared by both sides (errors, image refs, tables,
             checked file inputs)

Host side never imports torch; the image side never imports docker or the host folders.
"""

__version__ = "0.2.0"
