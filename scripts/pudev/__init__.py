"""PyTorch Universal Dev: build, test and publish dual-CUDA PyTorch development images.

The package follows the stages of the work, one folder per stage. What each folder may
import is written in one place, the import-linter contracts in pyproject.toml, which a lint
gate checks and docs/maintaining/architecture.md renders as a table:

  cli/       the command line: parsed once into a typed request, one handler per command
  config/    the variant matrix as declared: loading, schema, rules, overrides, profiles
  building/  a plan per variant, its labels and record, the input images' digests, the builder
  engine/    the Docker CLI: images, builds, tracked containers, layers; `pudev jupyter`
  registry/  the Registry HTTP API client: tokens, docker's credentials, TLS, retries
  testing/   the in-image suite run against a local build, and the passes this machine recorded
  release/   a built image released by digest, one module per command: push, test, promote
  reports/   what a built image holds: build manifest and its diff, SBOM
  policy/    supply-chain policy: bases pinned by digest, the vulnerability gate's exceptions
  devtools/  what maintains the checkout: locks, stand-ins, release day (benchmarks: tools/)
  host/      the host a user runs images on: its GPUs, driver and engine, and the tag for it (`pudev pick`)
  image/     runs INSIDE the container (verify, bench, gpumon, cuda-switch, record, selftest)
  mirror/    mirror rendering and switching, at build time and inside the image
  common/    standard-library code both sides share: errors, image refs, the variant and its fields
"""

__version__ = "0.2.0"
