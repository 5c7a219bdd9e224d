# repl-mcp: build, check and measure. `make test` is what CI runs.
GO      ?= go
BIN     := bin/repl-mcp
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: build doctor test vet fmt-check unit bench clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) .

# Build, then run the real server in-process with a real cell on this machine's Python.
doctor: build
	./$(BIN) doctor

# Everything a change can break: formatting, vet, unit tests, the worker's unittest
# suite on every CPython >= 3.10 here, and the testscript contract suite against the
# binary on each of them.
test: fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 15m ./...

bench: build
	$(GO) run ./bench -binary ./$(BIN)

clean:
	rm -rf bin
