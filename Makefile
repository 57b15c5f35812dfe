# fieldwork's build and test entry points.
#   make test     start the real services (Kafka, PostgreSQL) if needed, then vet and run every
#                 test with the race detector against them
#   make build    build ./bin/fieldwork
GO ?= go
SHELL := /bin/bash

.PHONY: build test vet services stop-services fuzz docs

build:
	$(GO) build -o bin/fieldwork .

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

test: vet
	@set -euo pipefail; eval "$$(scripts/services.sh start)"; \
	  export FIELDWORK_TEST_REQUIRE=1; \
	  $(GO) test -race -count=1 -timeout 30m ./...

services:
	@scripts/services.sh start

stop-services:
	@scripts/services.sh stop

# A short fuzzing pass over the decoders that read bytes from a broker.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./internal/envelope

# The markdown reference and man pages, generated from the command tree (a test checks them).
docs:
	$(GO) run . docs --markdown-dir docs/reference --man-dir docs/man
