# payload-applier developer entry points. `make run` and `make test` are the
# two commands a newcomer needs; everything else is for working on the code.

SHELL := /bin/bash
GO ?= go
BIN_DIR := bin
CLI := $(BIN_DIR)/payload-applier
# Generous: the first e2e run may build the control plane (a few minutes).
E2E_TIMEOUT ?= 30m

.PHONY: all build test unit e2e vet fmt run cluster-tools bench soak check-go clean tools image

all: build

check-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "error: the Go toolchain ($(GO)) is not on PATH; install Go 1.24 or newer from https://go.dev/dl" >&2; exit 1; }

build: check-go
	$(GO) build -o $(CLI) ./cmd/payload-applier

vet: check-go
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "error: gofmt would change:" $$out >&2; exit 1; fi

# Debian tools the tests run, as command:package: skopeo reads the images
# `release pack` and `make image` write; gpg makes the keys signatures are
# tested with; prometheus (with promtool) is the real Prometheus that risk
# queries, metrics and alert rules are tested with; pre-commit runs the
# payload-applier-lint hook (test/precommit). Installed when missing;
# a test that needs one fails without it.
DEBIAN_TOOLS := skopeo:skopeo gpg:gnupg prometheus:prometheus promtool:prometheus pre-commit:pre-commit

tools:
	@missing=""; for t in $(DEBIAN_TOOLS); do command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "tools: installing$$missing"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  { $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq$$missing >/dev/null; } \
	    || { echo "error: the tests need the Debian packages$$missing; install them with apt-get install$$missing" >&2; exit 1; }; \
	fi

unit: check-go tools
	$(GO) test ./pkg/... ./cmd/... ./manifests/... ./hack/...

# Builds etcd, kube-apiserver and kube-controller-manager from the pinned tools
# module into the cache, unless the cached build is current.
cluster-tools: check-go
	$(GO) run ./test/cluster/cmd/localcluster build

e2e: cluster-tools
	@mkdir -p $(BIN_DIR)
	$(GO) test -timeout $(E2E_TIMEOUT) -v -count=1 ./test/... 2>&1 | tee $(BIN_DIR)/e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic|\s+\S+_test.go)' ; exit $${PIPESTATUS[0]}

test: tools vet unit e2e

# The operator's image, built without a container daemon (hack/image): an
# empty base, the static binary, this machine's CA certificates, user 65532.
# Written as an OCI layout to bin/image/layout, or pushed to
# $(REGISTRY)/payload-applier:$(VERSION) when REGISTRY is set (for example
# REGISTRY=quay.io/payload-applier, the image manifests/ runs).
VERSION ?= $(shell sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p' manifests/release-metadata)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
image: check-go
	@mkdir -p $(BIN_DIR)/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN_DIR)/image/payload-applier ./cmd/payload-applier
	$(GO) run ./hack/image -binary $(BIN_DIR)/image/payload-applier -ca $(CA_BUNDLE) -version $(VERSION) -arch $$($(GO) env GOARCH) \
	  -to $(if $(REGISTRY),$(REGISTRY)/payload-applier:$(VERSION),oci:$(BIN_DIR)/image/layout)

run: build cluster-tools
	$(GO) run ./test/cluster/cmd/localcluster run

bench: build cluster-tools
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...
	$(GO) run ./test/bench

# Load + filter + graph of a payload beside the CVO's LoadUpdate + task
# graph, in one run (test/cvobench, its own module; docs/benchmarks.md).
# Set CVO_GIT to a local clone of openshift/cluster-version-operator.
.PHONY: bench-load
bench-load:
	test/cvobench/run.sh

# The real cluster-version-operator, built once into the binary cache from
# CVO_GIT at CVO_COMMIT (hack/build-cvo.sh); never part of make test.
.PHONY: cvo bench-cvo
cvo:
	@hack/build-cvo.sh

# The real oc, built once into the binary cache from OC_GIT at OC_COMMIT
# (hack/build-oc.sh), for the client checks; never part of make test.
.PHONY: oc oc-check
oc:
	@hack/build-oc.sh

# The real oc reads what the operator writes: oc adm upgrade and oc adm
# upgrade status after each step of an update that waits on its operators
# (test/e2e/oc_test.go); their output goes to bin/oc-check.txt.
oc-check: cluster-tools
	@mkdir -p $(BIN_DIR)
	PAYLOAD_APPLIER_OC="$$(hack/build-oc.sh)" PAYLOAD_APPLIER_OC_RECORD=$(abspath $(BIN_DIR))/oc-check.txt \
	  $(GO) test -count=1 -timeout 15m -run '^TestOC' -v ./test/e2e/

# The CVO and payload-applier side by side on the real payload, each on a
# fresh control plane with stub operators (test/bench/cvo.go); REPS runs
# each, default 3; IDLE, e.g. 10m, also counts each one's requests per
# minute once it completed; DIFF, a directory, also dumps both operators'
# objects after the install and after they undid hand edits, and compares
# them (DIFF/diff.md), and with UPDATE=1 after an update to a z-stream made
# from the payload; PAYLOAD, a payload directory, replaces ocp-real (e.g.
# examples/payloads/1.0.0); OPERATOR_DELAY, e.g. 5s, delays each stub
# operator's report, and OPERATOR_EPISODES scripts their troubles, e.g.
# network:Degraded:0s:20s. Prints the table; writes no docs.
bench-cvo: build cluster-tools
	$(GO) run ./test/bench -cvo "$$(hack/build-cvo.sh)" -reps $(or $(REPS),3) -idle $(or $(IDLE),0) $(if $(DIFF),-diff $(DIFF)) $(if $(UPDATE),-update) $(if $(PAYLOAD),-real $(PAYLOAD)) $(if $(OPERATOR_DELAY),-operator-delay $(OPERATOR_DELAY)) $(if $(OPERATOR_EPISODES),-operator-episodes $(OPERATOR_EPISODES))

# One run of each tool at 1000 manifests, for a quick look; writes no docs.
.PHONY: bench-quick
bench-quick: build cluster-tools
	$(GO) run ./test/bench -quick

# The full reliability harness (test/chaos, docs/testing.md): 50 operator
# SIGKILLs, 200 random release pairs and 5 kube-apiserver restarts, where
# `make test` runs 10, 20 and 2. Set SOAK_TIMEOUT on a slow machine.
soak: cluster-tools
	@mkdir -p $(BIN_DIR)
	$(GO) test -timeout $(or $(SOAK_TIMEOUT),120m) -v -count=1 ./test/chaos/ -args -chaos.crashes=50 -chaos.pairs=200 -chaos.restarts=5 2>&1 | tee $(BIN_DIR)/soak.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic|\s+\S+_test.go)' ; exit $${PIPESTATUS[0]}

clean:
	rm -rf $(BIN_DIR)
