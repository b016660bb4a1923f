# PyTorch Universal Dev: thin aliases over the `pudev` CLI. `make help` lists them.
# The first target that needs it creates .venv: a user's targets (build, jupyter, pick) install pudev
# and its own few dependencies alone; the maintainers' targets add the test toolset (requirements/dev.txt).

PYTHON ?= python3
VENV ?= .venv
# The docker client to use. Empty: the first on PATH that can run BuildKit builds.
DOCKER ?=
PUDEV := $(VENV)/bin/pudev
PYTEST := $(VENV)/bin/python -m pytest
# Where `make docs` writes the site (git-ignored).
DOCS_OUT ?= site

ifneq ($(strip $(DOCKER)),)
export PUDEV_DOCKER := $(DOCKER)
endif

.DEFAULT_GOAL := help
.PHONY: help cli venv host-setup pick build build-all build-local jupyter check test test-2024 test-arm64 test-podman test-all test-local lint unit e2e lock standins bench-build bench-ext dist-stress docs docs-serve clean

help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_%-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "  Variants: see 'make venv && $(PUDEV) variants'. Docker client: make DOCKER=/path/to/docker ..."

$(VENV)/.cli: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.installed: requirements/dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements/dev.txt -e .
	@touch $@ $(VENV)/.cli

cli: $(VENV)/.cli ## create .venv with pudev alone: what building and running an image needs

venv: $(VENV)/.installed ## create .venv with the maintainers' test toolset too

host-setup: ## install/start what the tests need (Docker engine, debootstrap, shellcheck, registry)
	sh scripts/host-setup.sh all

# Behind a Docker Hub block: a registry mirror or pull-through proxy that serves Docker Hub's images under a prefix.
PULL_MIRROR ?=
# What `make jupyter` runs: IMAGE=REF (any image), VARIANT=NAME (its build here), PROFILE=NAME (a stand-in
# build, by name only), else the build of the tag `pudev pick` takes for this host.
IMAGE ?=
VARIANT ?=
PROFILE ?=

pick: cli ## which tag runs on this host (its GPUs and driver), and what would break a first docker run --gpus
	$(PUDEV) pick

build: cli ## build the tag `make pick` takes, from the official images (PULL_MIRROR=HOST/PATH behind a Docker Hub block)
	tag=$$($(PUDEV) pick --tag) && $(PUDEV) build "$$tag" $(if $(PULL_MIRROR),--pull-mirror $(PULL_MIRROR))

build-%: cli ## build one variant from the official images, e.g. make build-cu118 (PULL_MIRROR as above)
	$(PUDEV) build $* $(if $(PULL_MIRROR),--pull-mirror $(PULL_MIRROR))

jupyter: cli ## JupyterLab on `make build`'s image (or IMAGE=REF, VARIANT=NAME, PROFILE=NAME), with the quick start's docker run flags
	$(if $(IMAGE),$(PUDEV) jupyter --image $(IMAGE),$(if $(PROFILE),$(PUDEV) jupyter --profile $(PROFILE),$(if $(VARIANT),$(PUDEV) jupyter $(VARIANT),tag=$$($(PUDEV) pick --tag) && $(PUDEV) jupyter "$$tag")))

build-all: cli ## build every variant in docker/variants.toml
	$(PUDEV) build all $(if $(PULL_MIRROR),--pull-mirror $(PULL_MIRROR))

build-local: venv host-setup ## build what `make test` proves: the newest line's stand-ins and its stand-in build (no registry or NVIDIA access needed)
	@profile=$$($(VENV)/bin/python tests/e2e/shards.py newest) && \
		$(PUDEV) standins --profile $$profile && $(PUDEV) build --profile $$profile

test-%: venv ## run the in-image test suite on a built variant, e.g. make test-cu121
	$(PUDEV) test $*

test-local: venv ## run the in-image test suite on every stand-in build
	@for profile in $$($(PUDEV) profiles); do $(PUDEV) test --profile $$profile || exit 1; done

check: venv ## the quick loop for everyday work: lint gates and unit tests, no engine (under a minute)
	$(PYTEST) tests/lint tests/unit

# The proof in shards, one line each (tests/e2e/shards.py): each builds what it proves and releases its images at
# its end, so the next one has the disk. Each writes its times and disk to reports/test-times-SHARD.json.
# --opt=VALUE as one word: apart, pytest would take VALUE for a test path before tests/conftest.py declares it.
test: venv host-setup ## the newest line (amd64) end to end: lint gates, unit, and every cross-cutting e2e test
	$(PYTEST) --shard=newest --times-report=reports/test-times-newest.json

test-2024: venv host-setup ## the 2024 line (torch 2.5.1, CUDA 11.8 + 12.1 toolkits, conda base): its build and its e2e
	$(PYTEST) tests/e2e --shard=2024 --times-report=reports/test-times-2024.json

test-arm64: venv host-setup ## the newest line on arm64 (emulated here): its platform scope and the two-platform tag
	$(PYTEST) tests/e2e --shard=arm64 --times-report=reports/test-times-arm64.json

test-podman: venv host-setup ## the newest image under rootless podman (PUDEV_CREATE_PODMAN_USER=1 creates its user)
	$(PYTEST) tests/e2e --shard=podman --times-report=reports/test-times-podman.json

test-all: ## every shard in turn, as the workflow's proof job runs them; the newest build is made once, for the first three
	$(MAKE) test
	$(MAKE) test-podman
	$(MAKE) test-arm64
	$(MAKE) test-2024

lint: venv ## the lint gates only (ruff, mypy, import layering, shellcheck, hadolint, workflow schema)
	$(PYTEST) tests/lint

unit: venv ## host unit tests only (no engine)
	$(PYTEST) tests/unit

e2e: venv host-setup ## end-to-end tests only (real engine)
	$(PYTEST) tests/e2e

lock: venv ## regenerate the locks: each variant's against its base, each profile's against its stand-in
	$(PUDEV) lock all
	@for profile in $$($(PUDEV) profiles); do $(PUDEV) lock --profile $$profile || exit 1; done

standins: venv ## build the stand-in images (idempotent)
	$(PUDEV) standins

bench-build: venv host-setup standins ## time cold and incremental builds of every profile, on a copy of the context (reports/bench-build-*.json; empties the engine's cache mounts)
	@for profile in $$($(PUDEV) profiles); do \
		$(VENV)/bin/python tools/bench_build.py --profile $$profile --out reports/bench-build-$$profile.json || exit 1; done

bench-ext: venv host-setup standins ## compile a real CUDA extension in each profile's image (reports/bench-ext-*.json)
	@for profile in $$($(PUDEV) profiles); do \
		$(PUDEV) build --profile $$profile && \
		$(VENV)/bin/python tools/bench_ext.py --profile $$profile --out reports/bench-ext-$$profile.json || exit 1; done

dist-stress: venv ## run `pudev dist` (2 gloo ranks) RUNS times (30) per built profile under --cpus 1 (benchmarks/dist-stress.json)
	sh scripts/dist-stress.sh $(if $(RUNS),-n $(RUNS)) $(OUT)

docs: venv ## refresh the generated tables (README, docs) and build the site strictly into $(DOCS_OUT)
	$(VENV)/bin/python tools/docs_tables.py
	$(VENV)/bin/python -m mkdocs build --strict --site-dir $(DOCS_OUT)

docs-serve: venv ## serve the docs site on 127.0.0.1:8000, rebuilt on every edit
	$(VENV)/bin/python -m mkdocs serve --strict

clean: ## remove the virtual environment and the locally built images (keeps stand-ins)
	-$(PUDEV) clean 2>/dev/null
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
