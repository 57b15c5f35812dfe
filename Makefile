# fieldwork's build and test entry points.
#   make test     start the real services (Kafka, PostgreSQL) if needed, then vet and run every
#                 test with the race detector against them (the module's, then the example
#                 module's in examples/taskboard), then make fuzz-ci
#   make example  run examples/taskboard against a running `fieldwork dev` (its broker, and the
#                 store it created in this directory) until it has consumed tasks
#   make fuzz-ci  run each fuzz target for FUZZTIME (3000 inputs) beyond its seed corpus
#   make build    build ./bin/fieldwork, stamped with version, commit and date
#   make ldflags  print those -ldflags (go install -ldflags "$(make -s ldflags)" .)
#   make bench    start the real services, run every benchmark side by side against them and
#                 write docs/benchmarks.md (not part of make test; BENCH_SCALE=0.05 for a
#                 quick pass over smaller data sets, BENCH_ROUNDS for the rounds, default 3)
#   make api      rewrite api/*.txt, the snapshot of each public package's exported API (one
#                 line per exported name, as Go's own api/*.txt). internal/apicheck's test (in
#                 make test) fails when the code's API differs from it: a removed or changed
#                 line breaks the packages' users. Run it only for a change made on purpose,
#                 read the diff and commit api/ with the change (docs/architecture.md)
GO ?= go
SHELL := /bin/bash

.PHONY: build ldflags test vet services stop-services fuzz fuzz-ci docs architecture api bench example

# The stamps `fieldwork version` prints (cmd/version); outside a git checkout, "dev" and none.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BIN     ?= bin/fieldwork
VERSION_PKG := github.com/fieldwork/fieldwork/cmd/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(DATE)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

ldflags:
	@echo '$(LDFLAGS)'

# The example is a module of its own (a team's service): go vet ./... and go test ./... of this
# module do not reach it, so it is vetted and tested in its directory. gofmt covers it (git ls-files).
EXAMPLE := examples/taskboard

vet:
	$(GO) vet ./...
	cd $(EXAMPLE) && $(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

test: vet
	@set -euo pipefail; eval "$$(scripts/services.sh start)"; \
	  export FIELDWORK_TEST_REQUIRE=1; \
	  $(GO) test -race -count=1 -timeout 30m ./...; \
	  cd $(EXAMPLE) && $(GO) test -race -count=1 -timeout 10m ./...
	@$(MAKE) --no-print-directory fuzz-ci

services:
	@scripts/services.sh start

# The example service against `fieldwork dev` (started from this directory, with its defaults):
# it consumes tasks as group taskboard and stops once it has caught up. EXAMPLE_FLAGS adds or
# overrides flags (e.g. EXAMPLE_FLAGS='--stop-when-idle 0' to keep it running).
EXAMPLE_FLAGS ?=
example:
	cd $(EXAMPLE) && $(GO) run . --dsn sqlite:$(CURDIR)/fieldwork-dev.db --stop-when-idle 3s $(EXAMPLE_FLAGS)

# Every benchmark in one run, against the real services; writes docs/benchmarks.md.
# The fault tests leave their three-node cluster running (they start it when they need it):
# its JVMs would take the CPU the benchmarks measure, so it is stopped first.
bench:
	@scripts/services.sh cluster stop
	$(GO) run ./internal/benchsuite

stop-services:
	@scripts/services.sh stop

# Every fuzz target, as PACKAGE:TARGET. Their seed corpora (testdata/fuzz/TARGET in each
# package) also run as ordinary tests in go test.
FUZZ_TARGETS := \
	./internal/envelope:FuzzDecode \
	./internal/dlq:FuzzParse \
	./internal/dlq:FuzzParseKey \
	./internal/kafka:FuzzPlanRanges \
	./internal/config:FuzzConfig \
	./internal/timespec:FuzzParseDuration \
	./internal/timespec:FuzzParseTime \
	./internal/output:FuzzPrintable
# A count of inputs, not a duration: a duration ends the run with a deadline that a worker busy
# with a slow input on a loaded machine reports as "context deadline exceeded", a failure.
FUZZTIME ?= 3000x

# A short pass of every fuzz target beyond its seeds, one target per go test (-fuzz takes one).
# A failing input is written to the package's testdata/fuzz/TARGET: commit it with the fix.
fuzz-ci:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "fuzz-ci: $${t##*:} in $${t%%:*} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t##*:}\$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

# A short fuzzing pass over the decoders that read bytes from a broker.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./internal/envelope

# The markdown reference and man pages, generated from the command tree (a test checks them).
docs:
	$(GO) run . docs --markdown-dir docs/reference --man-dir docs/man

# The import table of docs/architecture.md, rewritten from the code (internal/architecture's
# test checks it, and the layer rules, in make test).
architecture:
	$(GO) test -count=1 ./internal/architecture -run '^TestArchitecture$$' -update

# The snapshots of the public packages' exported API, api/*.txt, rewritten from the code
# (internal/apicheck's test checks them in make test; it also removes the snapshot of a
# package that is no longer public).
api:
	$(GO) test -count=1 ./internal/apicheck -run '^TestAPI$$' -update
