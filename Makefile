# repl-mcp: build, check and measure. `make test` is what CI runs.
GO      ?= go
BIN     := bin/repl-mcp
# The release's one source of truth: [project] version in pyproject.toml.
VERSION ?= $(shell awk -F'"' '/^\[/ { p = ($$0 == "[project]") } p && /^version *=/ { print $$2; exit }' pyproject.toml)
# What a build of this checkout calls itself (internal/buildversion): the release on a
# clean checkout of its tag, else <VERSION>.dev<commit time>+g<commit>[.dirty], as
# `go install` at the same commit does. Outside a git checkout it is empty, and the
# binary reads Go's build information instead. Evaluated in recipes only.
BUILD_VERSION = $$($(GO) run ./pywheel version 2>/dev/null)

# Go tools pinned in their own modfile, so go.mod stays small (the first run compiles
# goreleaser: minutes; after that it is cached).
GORELEASER  := $(GO) tool -modfile=tools.mod goreleaser
STATICCHECK := $(GO) tool -modfile=tools.mod staticcheck

.PHONY: build doctor check test vet fmt-check staticcheck lint-py short verify wheel wheelhouse wheelhouse-deps sdist unit interop interop-deps interop-lock data-deps data-lock bench bench-micro bench-peers bench-load peers-deps peers-lock clean

build:
	v=$(BUILD_VERSION); CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$$v" -o $(BIN) .

# Build, then run the real server in-process with a real cell on this machine's Python.
doctor: build
	./$(BIN) doctor

# The fast tier, for every edit: formatting, vet, staticcheck, the worker's lint, and
# `go test -short` (the Go unit tests, the worker's own suite and the contract scripts on
# one interpreter). Offline once it has run once (staticcheck's modules, the pinned ruff);
# what needs npm, uv's venvs or PyPI skips and says so (internal/tier).
check: fmt-check vet staticcheck lint-py short

short:
	$(GO) test -short -count=1 -p 8 ./...

# Everything a change can break: formatting, vet, unit tests, the worker's unittest
# suite on every CPython >= 3.10 here, the testscript contract suite against the
# binary on each of them, and the interop suite against third-party MCP software.
test: interop-deps fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# vet for macOS too: the release builds it, and a Linux-only call (a syscall field, a
# /proc reader without its !linux twin) would otherwise break only the release.
vet:
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

# Everything before a release: formatting, vet, staticcheck, the worker's lint and the
# whole test suite.
verify: fmt-check vet staticcheck lint-py test

# Wheels for every shipped platform, in dist/: goreleaser cross-compiles the static
# binaries (.goreleaser.yaml), pywheel wraps each into a wheel (platform read from the
# binary) and verifies them all; binaries and wheels carry BUILD_VERSION. A snapshot by
# default: on any commit, a development build of pyproject.toml's version
# (X.dev<commit time>+g<commit>, before the X release); `make wheel SNAPSHOT=` on a clean
# checkout of a release tag builds that release, whose version must equal
# pyproject.toml's. goreleaser reads tags only when the repository has a remote: a
# clone without one gets a placeholder origin through git's environment (nothing is
# written to .git/config, and nothing is fetched). Works offline once the module cache
# holds tools.mod's modules.
SNAPSHOT       ?= --snapshot
ORIGIN_URL     := https://github.com/iota-uz/repl-mcp.git
GIT_ORIGIN_ENV := $(if $(shell git remote get-url origin 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=$(ORIGIN_URL))

# The source distribution: Go sources, an in-tree PEP 517 backend that builds the
# binary with the installing machine's Go toolchain. Into sdist/, since `make wheel`
# empties dist/.
sdist:
	$(GO) run ./packaging/sdist -out sdist

wheel:
	$(GO) build -o bin/pywheel ./pywheel
	@v=$$(bin/pywheel version) || exit 1; \
	if [ -z "$(SNAPSHOT)" ] && [ "$$v" != "$(VERSION)" ]; then \
		echo "wheel: this checkout is $$v, not the release $(VERSION): build a release from a clean checkout of tag v$(VERSION)"; exit 1; fi; \
	echo "wheel: version $$v"; \
	REPL_MCP_VERSION=$$v $(GIT_ORIGIN_ENV) $(GORELEASER) build $(SNAPSHOT) --clean || exit 1; \
	for b in dist/*/repl-mcp; do bin/pywheel build --binary "$$b" --version "$$v" --out dist || exit 1; done
	bin/pywheel verify dist/*.whl

# The race detector is on for every Go test: the contract scripts then run a
# race-instrumented server, guardian and client against real Python. A race-built
# program sleeps 1 s at exit by default (GORACE's atexit_sleep_ms), which every server,
# guardian and client a test starts would add to its time (the root package's scripts
# took three times as long) and to every exit a test bounds; a GORACE of the caller's
# own still wins, as it comes after.
unit: interop-deps
	GORACE="atexit_sleep_ms=0 $(GORACE)" $(GO) test -race -count=1 -timeout 15m ./...

# The interop suite alone (interop/doc.go says what it runs).
interop: interop-deps
	$(GO) test -count=1 -v ./interop/

# Third-party software for the interop suite, each step redone only when its inputs
# change: npm ci in interop/ (pinned by package-lock.json), and a venv made by a pinned
# uv holding the Python MCP SDK (pinned with hashes by requirements.txt). Nothing is
# installed into a system interpreter.
UV_VERSION     := 0.13.9
INTEROP_PYTHON ?= python3
UV             := UV_CACHE_DIR=$(CURDIR)/interop/.cache/uv interop/.venv-uv/bin/uv
UV_STAMP       := interop/.venv-uv/.interop-uv-$(UV_VERSION)

interop-deps: interop/node_modules/.interop-stamp interop/.venv/.interop-stamp data-deps wheelhouse-deps

interop/node_modules/.interop-stamp: interop/package.json interop/package-lock.json
	@command -v npm >/dev/null || { echo "interop-deps: npm not found: install Node.js >= 20 with npm"; exit 1; }
	cd interop && npm ci --no-audit --no-fund
	touch $@

$(UV_STAMP):
	test -x interop/.venv-uv/bin/python || $(INTEROP_PYTHON) -m venv interop/.venv-uv
	interop/.venv-uv/bin/pip install --quiet uv==$(UV_VERSION)
	touch $@

# The worker's lint (worker/ruff.toml), by a ruff pinned beside the pinned uv.
RUFF_VERSION := 0.17.5
RUFF_STAMP   := interop/.venv-uv/.ruff-$(RUFF_VERSION)

lint-py: $(RUFF_STAMP)
	interop/.venv-uv/bin/ruff check --no-cache worker/

$(RUFF_STAMP): | $(UV_STAMP)
	interop/.venv-uv/bin/pip install --quiet ruff==$(RUFF_VERSION)
	touch $@

interop/.venv/.interop-stamp: interop/requirements.txt | $(UV_STAMP)
	test -x interop/.venv/bin/python || $(UV) venv --no-python-downloads \
		--python "$$($(INTEROP_PYTHON) -c 'import sys; print(sys.executable)')" interop/.venv
	$(UV) pip sync --python interop/.venv/bin/python interop/requirements.txt
	touch $@

# The libraries of real data work (pandas, numpy, matplotlib, pillow, tqdm, Dask) in a
# venv of their own, made by the same pinned uv from requirements-data.txt: the tests
# that drive them inside cells use it as the session's interpreter.
data-deps: interop/.venv-data/.interop-stamp

interop/.venv-data/.interop-stamp: interop/requirements-data.txt | $(UV_STAMP)
	test -x interop/.venv-data/bin/python || $(UV) venv --no-python-downloads \
		--python "$$($(INTEROP_PYTHON) -c 'import sys; print(sys.executable)')" interop/.venv-data
	$(UV) pip sync --python interop/.venv-data/bin/python interop/requirements-data.txt
	touch $@

# A directory for offline installs: this host's wheel of the checkout (BUILD_VERSION)
# and the wheels of every pinned dependency, for any Python (make wheelhouse DIR=...):
#   REPL_MCP_WHEEL_BASE_URL=DIR UV_FIND_LINKS=DIR UV_OFFLINE=1 sh plugin/scripts/repl-mcp-launch.sh
# The dependency wheels come from PyPI through the pip of the pinned uv's venv, and are
# kept in WHEELHOUSE_DEPS (redone only when pyproject.toml changes), which the plugin
# tests use too.
WHEELHOUSE_DEPS := interop/.wheelhouse
wheelhouse: wheelhouse-deps
	@test -n "$(DIR)" || { echo "wheelhouse: say where: make wheelhouse DIR=/path/to/dir"; exit 1; }
	mkdir -p "$(DIR)"
	$(GO) build -o bin/pywheel ./pywheel
	v=$$(bin/pywheel version) || exit 1; \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$$v" -o bin/wheelhouse/repl-mcp . && \
	bin/pywheel build --binary bin/wheelhouse/repl-mcp --version "$$v" --out "$(DIR)"
	cp $(WHEELHOUSE_DEPS)/*.whl "$(DIR)/"
	bin/pywheel verify "$(DIR)"/repl_mcp-*.whl

wheelhouse-deps: $(WHEELHOUSE_DEPS)/.stamp

$(WHEELHOUSE_DEPS)/.stamp: pyproject.toml | $(UV_STAMP)
	rm -rf $(WHEELHOUSE_DEPS) && mkdir -p $(WHEELHOUSE_DEPS)
	interop/.venv-uv/bin/pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
		--dest $(WHEELHOUSE_DEPS) $$($(GO) run ./pywheel deps)
	touch $@

data-lock: | $(UV_STAMP)
	$(UV) pip compile --generate-hashes --python-version 3.11 \
		--custom-compile-command "make data-lock" interop/requirements-data.in -o interop/requirements-data.txt

# Re-resolve requirements.txt from requirements.in (for a version bump).
interop-lock: | $(UV_STAMP)
	$(UV) pip compile --universal --generate-hashes --python-version 3.10 \
		--custom-compile-command "make interop-lock" interop/requirements.in -o interop/requirements.txt

bench: build
	$(GO) run ./bench -binary ./$(BIN)

# The hand-written fast paths against the plain path each replaces, on the same
# input: every Benchmark*/fast beside its Benchmark*/plain, in the *_bench_test.go
# files of the packages below (docs/design.md, "Fast paths, and what each saves").
# Five rounds of each at 200 ms; compare the pairs within one run, since other work
# on the machine moves both. Then the worker's Python fast paths, each a timeit pair
# (worker/bench_micro.py, on this machine's python3), in interleaved rounds. Offline.
BENCH_MICRO_PKGS := ./server/ ./server/transport/ ./repl/ ./broker/ ./broker/argcheck/ ./internal/jsonscan/
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 200ms -count 5 $(BENCH_MICRO_PKGS)
	$(GO) test -count=1 -v -run '^TestWorkerBenchMicro$$' ./worker/ -args -bench-micro

# The peers measured beside repl-mcp (not part of `make test`): each in a venv of its
# own, made by the pinned uv from its lock file in bench/ (mcp-python-interpreter needs
# mcp<2, jupyter-mcp-server mcp 2.x; posit's mcp-repl is a binary in its wheel). bench/peers drives every server with the same
# lean client and cells, in interleaved rounds, and starts and stops the Jupyter server
# jupyter-mcp-server needs, on 127.0.0.1. PEERS_OUT names the report file.
PEERS       := interpreter jupyter posit
PEERS_OUT   ?= bench/peers-report.txt
PEER_STAMPS := $(foreach p,$(PEERS),bench/.venv-peers-$(p)/.bench-stamp)

peers-deps: $(PEER_STAMPS)

bench/.venv-peers-%/.bench-stamp: bench/requirements-peers-%.txt | $(UV_STAMP)
	test -x bench/.venv-peers-$*/bin/python || $(UV) venv --no-python-downloads \
		--python "$$($(INTEROP_PYTHON) -c 'import sys; print(sys.executable)')" bench/.venv-peers-$*
	$(UV) pip sync --python bench/.venv-peers-$*/bin/python bench/requirements-peers-$*.txt
	touch $@

peers-lock: | $(UV_STAMP)
	for p in $(PEERS); do $(UV) pip compile --generate-hashes --python-version 3.11 \
		--custom-compile-command "make peers-lock" bench/requirements-peers-$$p.in -o bench/requirements-peers-$$p.txt || exit 1; done

# The load figures (not part of `make test`; about 3 minutes on 2 cores): HTTP servers
# with 8, 32 and 64 concurrent clients of 200 mixed cells each, and a stdio soak of
# 20,000 cells, every answer checked (bench/load); the report is README's "Load" table.
LOAD_OUT ?= bench/load-report.txt
bench-load: build
	$(GO) run ./bench/load -binary ./$(BIN) -out $(LOAD_OUT)

bench-peers: build peers-deps
	$(GO) run ./bench -peers -binary ./$(BIN) -venvs bench -budget 20m -out $(PEERS_OUT)

clean:
	rm -rf bin dist
