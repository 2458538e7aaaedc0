# The two commands a user needs are `make run` and `make test` (see README).
GO      ?= go
BIN     := bin/silt
export CGO_ENABLED := 0

.PHONY: all build run test test-scale go-test race conformance bench bench-scale fmt vet lint clean etcd chromium

all: build

# silt version prints these; a plain go build falls back to Go's own
# build information (commit and its time).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/silt

# Start silt with embedded defaults: ./silt-data, API on 127.0.0.1:7070.
# The build is its own step so that a first run says why it is quiet.
run:
	@echo "building $(BIN) (the first build downloads modules and takes a minute or two)"
	@$(MAKE) --no-print-directory build
	./$(BIN) serve

# The whole suite: vet, gofmt, Go tests (also under -race), then the
# real-client conformance suites (which install their clients first:
# Debian packages with apt, Python tools into a private virtualenv and
# Maven's jars into a cache, both under $SILT_CACHE, ~/.cache/silt by
# default; see conformance/venv.sh).
test: vet fmt etcd chromium go-test race conformance

# etcd for the cluster tests (internal/etcdtest, conformance/suites/cluster.sh):
# etcd's own server, built once from its module (internal/etcdtest/etcdbin,
# which pins the version) into the suites' cache; a run that finds it
# there does nothing.
SILT_CACHE   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/silt
ETCD_VERSION := $(shell awk '$$1 == "require" && $$2 == "go.etcd.io/etcd/server/v3" {print $$3}' internal/etcdtest/etcdbin/go.mod)
ETCD_BIN     := $(SILT_CACHE)/etcd/etcd-$(ETCD_VERSION)
etcd: $(ETCD_BIN)
# The file name carries the version, so a new pin builds anew; a fresh
# clone's newer go.mod must not.
$(ETCD_BIN):
	@echo "building etcd $(ETCD_VERSION) into $(ETCD_BIN) (once; a minute or two)"
	cd internal/etcdtest/etcdbin && $(GO) build -trimpath -o $(ETCD_BIN).tmp . && mv $(ETCD_BIN).tmp $(ETCD_BIN)

# Debian's chromium for the web console's browser test
# (cmd/silt/console_browser_test.go, driven by chromedp), installed with
# apt as the conformance suites install their clients. The test skips
# without it only outside CI; with CI=true it fails.
chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian's chromium for the console's browser test"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# cmd/silt's tests include TestScale (20,000 streams in a server child,
# minutes on 2 cores), which with the crash tests can pass go test's
# default 10 minutes per package on a loaded machine.
go-test:
	$(GO) test -count=1 -timeout 30m ./...

# The scale test at full size: 100,000 streams of two segments under
# ulimit -n 4096 (go-test runs it with 20,000; see BENCHMARKS.md).
test-scale:
	SILT_SCALE_STREAMS=100000 $(GO) test -count=1 -run '^TestScale$$' -timeout 3h -v ./cmd/silt

race:
	CGO_ENABLED=1 $(GO) test -race -count=1 -short ./...

conformance: build etcd
	bash conformance/run.sh

bench: build
	$(GO) run ./bench/appendbench
	$(GO) run ./bench/s3bench -size 256
	$(GO) run ./bench/nfsbench -size 256
	bash bench/webhdfsbench/with-minicluster.sh -size 256
	$(GO) run ./bench/tierbench -pause 4m
	$(GO) run ./bench/scalebench -streams 10000
	$(GO) run ./bench/walobjbench
	$(GO) run ./bench/groupbench -backlog 268435456
	$(GO) run ./bench/kafkabench
	$(GO) run ./bench/querybench -bytes 1073741824

# The many-streams figures at full size: 100,000 idle streams.
bench-scale: build
	$(GO) run ./bench/scalebench -streams 10000
	$(GO) run ./bench/walobjbench0

# macOS is vetted too: developers run silt there, and the sync and
# vectored-write calls differ per system (core/vfs).
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
