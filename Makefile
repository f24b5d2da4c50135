# Strata. `make run` starts a dev cluster and runs the demo; `make test` is
# what CI runs. See README.md.

GO      ?= go
MPICC   ?= mpicc
BIN     := bin/strata
FUZZTIME ?= 5s
# The version from git (contrib/version.sh), linked into the binary and the
# C libraries; `strata version` prints and compares them.
# Computed once per make run, unless given (make deb STRATA_VERSION=...).
ifeq ($(origin STRATA_VERSION),undefined)
STRATA_VERSION := $(shell contrib/version.sh)
endif
ifeq ($(origin STRATA_COMMIT),undefined)
STRATA_COMMIT  := $(shell contrib/version.sh --commit)
endif
LDFLAGS := -X main.version=$(STRATA_VERSION) -X main.commit=$(STRATA_COMMIT)
export STRATA_VERSION

.PHONY: all build run demo test lint fuzz bench clean mpiio spank deb

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/strata

# Start `strata dev` on the default loopback ports with data in a fresh
# temporary directory, run contrib/demo.sh, then keep Strata up until
# Ctrl-C.
run: build
	contrib/run.sh

# The same, but stop after the demo; exits 0 when the demo passed.
demo: build
	contrib/run.sh --demo

test:
	contrib/test-deps.sh
	$(MAKE) spank
	$(MAKE) lint
	@if command -v $(MPICC) >/dev/null 2>&1; then $(MAKE) mpiio; else \
	echo "*** make test: $(MPICC) not found, NOT building libstrata_mpiio.so; the OpenMPI tests will skip (apt-get install openmpi-bin libopenmpi-dev) ***"; fi
	$(GO) test -race -count=1 -timeout 25m ./...
	$(MAKE) fuzz

# spank/spank_strata.so, the SPANK plugin (-Wall -Wextra -Werror against
# /usr/include/slurm/spank.h). See docs/slurm.md.
spank:
	$(MAKE) -C spank

# libstrata_mpiio.so (the MPI-IO hints shim) and the MPI-IO test programs,
# into bin/, with Open MPI's mpicc. See docs/mpiio.md.
mpiio:
	$(MAKE) -C mpiio/shim OUT=$(CURDIR)/bin MPICC=$(MPICC)

# go vet, gofmt, a tidy go.mod (direct dependencies listed as direct) and
# the import rules of ARCHITECTURE.md.
lint:
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit the result" >&2; exit 1; }
	@out="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) run ./internal/importcheck ./...

# Every fuzz target in the tree, briefly (FUZZTIME each).
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) contrib/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 90m ./internal/bench/...

# dist/strata_VERSION_ARCH.deb: the binary (a PIE, stripped), the SPANK
# plugin, the MPI-IO shim, systemd units, configuration, docs, man pages
# and bash completion (contrib/deb/build.sh; docs/install.md).
deb: spank mpiio
	$(GO) build -trimpath -buildmode=pie -ldflags '$(LDFLAGS) -s -w' -o dist/build/strata ./cmd/strata
	contrib/deb/build.sh $(STRATA_VERSION) dist/build/strata spank/spank_strata.so bin/libstrata_mpiio.so dist

clean:
	rm -rf bin dist
