# Weft — see README.md. Every target is safe to run on a fresh machine.
SHELL := /bin/bash
GO ?= go
MODULE := github.com/weft-sh/weft
BIN := bin
PROTO_FILES := $(sort $(wildcard protos/hadoop/common/*.proto protos/hadoop/yarn/*.proto))

.PHONY: all build generate verify-generate test unit-test e2e-test fuzz fuzz-long bench sim sim-truth run run-embedded stop newcomer-test deploy images deps clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Regenerates the committed protobuf Go code byte for byte. protoc comes from
# Debian's protobuf-compiler (3.21), protoc-gen-go is pinned as a go.mod tool.
# controller-gen (pinned as a go.mod tool) makes the Queue and TidePool
# APIs' deepcopy and their CRDs.
generate: deps
	protoc -I protos --plugin=protoc-gen-go=$$($(GO) tool -n protoc-gen-go) \
		--go_out=. --go_opt=module=$(MODULE) $(PROTO_FILES)
	$(GO) tool controller-gen object paths=./quota/api/... paths=./scheduler/tide/api/...
	$(GO) tool controller-gen crd paths=./quota/api/... paths=./scheduler/tide/api/... output:crd:dir=deploy/crds
	@# The chart ships the CRDs and the dashboard as copies: a chart reads
	@# nothing outside its directory (go test ./deploy checks they match).
	cp deploy/crds/*.yaml deploy/chart/weft/crds/
	cp deploy/monitoring/weft-dashboard.json deploy/chart/weft/dashboards/

verify-generate: generate
	@git diff --exit-code -- protos quota/api scheduler/tide/api deploy/crds deploy/chart/weft/crds deploy/chart/weft/dashboards || { echo "generated code is stale: run make generate"; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- protos quota/api scheduler/tide/api deploy/crds deploy/chart/weft/crds deploy/chart/weft/dashboards)" || { echo "make generate made files that are not in git"; exit 1; }

# Installs what the tests need from Debian when missing (CI runs as root).
# Debian's packages: protoc (make generate), and chromium, the headless
# browser the web UI's tests render its pages in (test/browser).
deps:
	@missing=; command -v protoc >/dev/null || missing="$$missing protobuf-compiler"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then echo "deps: apt-get install$$missing"; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; fi

test: deps verify-generate helm-check unit-test e2e-test newcomer-test

unit-test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
		if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /test/) ./test/e2e/cmd/... ./test/hadoop/cmd/... ./test/kube ./test/layering ./test/bench/groundtruth ./test/bench/kwokfleet ./test/bench/binding

# The end-to-end suites narrate: each spec as it runs and ends, with its
# time, then ginkgo's summary with counts and the failures' key lines. On a
# failure the last lines printed are a digest (seed, each failure's message
# and the spec that ran before it), for logs read from their tail.
E2E_REPORT := $(CURDIR)/.weft/e2e-report.json
e2e-test: build
	@mkdir -p $(dir $(E2E_REPORT)) && rm -f $(E2E_REPORT)
	$(GO) test -count=1 -timeout 75m -v ./test/e2e/ -ginkgo.v -ginkgo.json-report=$(E2E_REPORT) || \
		{ rc=$$?; [ ! -f $(E2E_REPORT) ] || $(GO) run ./test/e2e/cmd/e2e-digest $(E2E_REPORT); exit $$rc; }

# A new user's first hour, scripted: make run, the printed pi command,
# make stop, make run-embedded (test/newcomer.sh).
newcomer-test:
	test/newcomer.sh

# Short fuzzing pass over the wire parsers (seed corpora are committed).
fuzz:
	$(GO) test ./protos/ipc -run '^$$' -fuzz FuzzReadFrame -fuzztime 30s

# Every fuzz target for FUZZ_TIME each: the wire parsers, and arbitrary
# requests of the client, AM and NodeManager protocols into their real
# handlers. Prints each target's executions; a crash stops it, and the
# input that caused it is kept under the package's testdata/fuzz as seed
# corpus (commit it with the fix).
FUZZ_TIME ?= 5m
FUZZ_TARGETS := ./protos/ipc:FuzzReadFrame ./protos/ipc:FuzzConnection ./rmfacade/clientrm:FuzzClientProtocol \
	./rmfacade/amrm:FuzzAMProtocol ./bigdataplugin/nodemanager:FuzzNMProtocol
fuzz-long:
	@total=0; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  out=$$($(GO) test $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZ_TIME) 2>&1) || { echo "$$out" | tail -40; exit 1; }; \
	  n=$$(echo "$$out" | grep -o 'execs: [0-9]*' | tail -1 | grep -o '[0-9]*'); \
	  echo "$$fn: $$n executions, no crash"; total=$$((total + n)); \
	done; echo "total: $$total executions over $(words $(FUZZ_TARGETS)) targets, 0 crashes"

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./rmfacade/...
	$(GO) run ./test/bench/rmrpc
	$(GO) run ./test/bench/mrjobs
	$(GO) run ./test/bench/binding
	$(GO) run ./test/bench/colocation
	$(GO) run ./test/bench/tide
	$(GO) run ./test/bench/failover
	$(GO) run ./test/bench/retention
	$(GO) run ./test/bench/scale

# A day of colocation replayed on a virtual clock under each policy
# (scheduler/sim): prints the policies' table and writes PNGs and CSV to
# SIM_OUT. 5,000 nodes by default; SIM_FLAGS passes weft-sim's flags
# (e.g. -nodes 500 -policies weft-tide,weft-tide+reclaim).
SIM_CONFIG ?= scheduler/sim/testdata/day.yaml
SIM_OUT ?= .weft/sim
sim:
	$(GO) run ./cmd/weft-sim -config $(SIM_CONFIG) -out $(SIM_OUT) $(SIM_FLAGS)

# weft-sim's ground truth, so that its numbers are trusted only as far as
# a real run bears them out: SIM_CONFIG's day shrunk to a few kwok nodes
# and hours compressed to minutes, simulated, then run for
# real on kwokfleet's private control plane (never the e2e cluster)
# through weft-rm, weft-tide and the node agent; prints both runs'
# utilization and kill rate with their ratio, exit 1 if one is >15% off.
# SIM_TRUTH_FLAGS passes its flags (-nodes, -hour, -from, -hours, -warm-up,
# -notice, -real-node); the default is docs/benchmarks/sim-truth.md's run: 24 kwok
# nodes and this machine's kubelet, 02:00-14:00 of the day, a 2-minute
# notice so that the tide's kills are many enough for a 15% comparison
# (about 17 minutes of wall time).
SIM_TRUTH_FLAGS ?= -nodes 24 -from 2h -hours 12h -warm-up 2h -hour 1m -notice 2m -real-node
sim-truth:
	$(GO) run ./test/bench/groundtruth -config $(SIM_CONFIG) $(SIM_TRUTH_FLAGS)

# Weft's main job on this machine: the kind-style cluster of three real
# nodes (test/kube/up.sh --nodes 3), a MiniDFSCluster and Weft deployed
# from deploy/ (the chart with deploy/nodes.yaml), then an unmodified
# DistributedShell job run through Weft by Hadoop's own client, its
# containers spread over the nodes; prints where they ran and where to
# look, and keeps HDFS up until Ctrl-C.
run:
	@$(GO) build -o $(BIN)/weft-demo ./cmd/weft-demo
	@# Run directly, not through go run, which exits 1 after Ctrl-C even when
	@# the demo stops cleanly.
	$(BIN)/weft-demo

# Stops everything make run started, also from another terminal: the demo
# (and its HDFS) if it still runs, Weft in the cluster (whose pods would
# otherwise start again with it), the cluster's daemons and containers and
# its network; then checks that no namespace or process of the run is
# left, naming what is.
stop:
	@$(GO) build -o $(BIN)/weft-demo ./cmd/weft-demo
	@$(BIN)/weft-demo -stop

# The embedded default without Kubernetes: weft-rm alone on this machine
# (state in .weft/data), a demo application submitted by the real Hadoop
# client, then serving until Ctrl-C. HADOOP_CLIENT runs any yarn command
# against it.
HADOOP_CLIENT := $(GO) run ./test/hadoop/cmd/hadoop-client
run-embedded: build
	@mkdir -p .weft
	@if curl -sf -o /dev/null http://127.0.0.1:8088/ws/v1/cluster/info; then \
	  echo "run-embedded: 127.0.0.1:8088 already answers as a ResourceManager (an earlier weft-rm or make run?): stop it first"; exit 1; fi
	@# 250m a vcore, as the one-node cluster's Weft (deploy/local.yaml) counts them.
	@$(BIN)/weft-rm --data-dir .weft/data --milli-cpu-per-vcore 250 2>.weft/weft-rm.log & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid; exit 0' EXIT INT TERM; \
	for i in $$(seq 50); do curl -sf http://127.0.0.1:8088/ws/v1/cluster/info >/dev/null && break; sleep 0.2; done; \
	kill -0 $$pid 2>/dev/null || { cat .weft/weft-rm.log; exit 1; }; \
	echo "== weft-rm is up; submitting a demo application with Hadoop's own YarnClient"; \
	app=$$($(HADOOP_CLIENT) java sh.weft.interop.SubmitApp --name weft-demo --type MAPREDUCE --tags demo 2>/dev/null | \
	  sed -n 's/.*"applicationId" *: *"\([^"]*\)".*/\1/p'); \
	echo "== yarn application -list -appStates ALL"; \
	$(HADOOP_CLIENT) yarn application -list -appStates ALL 2>/dev/null; \
	echo "== yarn application -status $$app   (without a cluster it stays ACCEPTED, and says why)"; \
	$(HADOOP_CLIENT) yarn application -status $$app 2>/dev/null | grep -E 'Application-Id|State|Diagnostics'; \
	echo "== yarn node -list -all"; \
	$(HADOOP_CLIENT) yarn node -list -all 2>/dev/null; \
	echo; echo "Look: REST http://127.0.0.1:8088/ws/v1/cluster/apps   UI http://127.0.0.1:8088/cluster"; \
	echo "      yarn:  $(HADOOP_CLIENT) yarn application -status <id>"; \
	echo "      logs:  .weft/weft-rm.log     (Ctrl-C stops weft-rm; state stays in .weft/data)"; \
	wait $$pid

# Installs (or upgrades) Weft through its Helm chart, release weft, on the
# current kubeconfig ($$KUBECONFIG or ~/.kube/config). PROFILE: weft
# (default: Weft's own node agent), plain, katalyst, koordinator; VALUES: a
# values file, e.g. deploy/local.yaml for test/kube's loopback cluster
# (KUBECONFIG=$$(test/kube/up.sh) make images deploy VALUES=deploy/local.yaml).
# Kubernetes forbids changing a PriorityClass's value: to switch a
# cluster's profile, delete the weft-high/medium/low PriorityClasses first.
PROFILE ?= weft
VALUES ?=
deploy: helm
	$(HELM) upgrade --install weft deploy/chart/weft --set profile=$(PROFILE) $(if $(VALUES),-f $(VALUES))

# Builds Weft's image (weft.local/weft:dev) into the local cluster's
# containerd. The archive it leaves in $(WEFT_KUBE_STATE)/images loads
# into kind with `kind load image-archive`.
WEFT_KUBE_STATE ?= $(HOME)/.cache/weft/kube
images:
	$(GO) run ./cmd/kube-images -address $(WEFT_KUBE_STATE)/containerd/containerd.sock -dir $(WEFT_KUBE_STATE)/images -weft

clean:
	rm -rf $(BIN)

# The Helm chart (deploy/chart/weft), the user-facing install: helm is
# built from its Go module, pinned, into the tool cache (once: a few
# minutes at the lowest CPU priority; later runs find that version's
# binary and skip it), linted with each profile and with the optional
# parts on, and rendered with each profile into a temporary directory.
# go test ./deploy (chart_test.go) compares the rendering with deploy/
# itself, with the helm this leaves in $(HOME)/.cache/weft/bin.
HELM_VERSION := v3.22.0
HELM_KUBE := 1 37
WEFT_TOOLS := $(HOME)/.cache/weft
HELM := $(WEFT_TOOLS)/helm/$(HELM_VERSION)/helm
HELM_PROFILES := weft plain katalyst koordinator
.PHONY: helm helm-check
helm:
	@test -x $(HELM) || { echo "helm-check: building helm $(HELM_VERSION) into $(dir $(HELM)) (once)"; \
	  GOBIN=$(dir $(HELM)) nice -n 19 $(GO) install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$(word 1,$(HELM_KUBE)) -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(word 2,$(HELM_KUBE)) \
	    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$(word 1,$(HELM_KUBE)) -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(word 2,$(HELM_KUBE))" \
	    helm.sh/helm/v3/cmd/helm@$(HELM_VERSION); }
	@mkdir -p $(WEFT_TOOLS)/bin && ln -sfn $(HELM) $(WEFT_TOOLS)/bin/helm

helm-check: helm
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for p in $(HELM_PROFILES); do \
	  $(HELM) lint --strict deploy/chart/weft --set profile=$$p >$$tmp/lint.log 2>&1 || { cat $$tmp/lint.log; exit 1; }; \
	  $(HELM) template weft deploy/chart/weft --include-crds --set profile=$$p --output-dir $$tmp/$$p >/dev/null || exit 1; \
	  echo "helm-check: $$p: lint clean, $$(cat $$(find $$tmp/$$p -name '*.yaml') | grep -c '^kind:') objects rendered"; \
	done; \
	opt="monitoring.serviceMonitor.enabled=true,monitoring.dashboard.enabled=true,nodePlugin.colocation.enabled=false,rm.replicas=1"; \
	$(HELM) lint --strict deploy/chart/weft --set $$opt >$$tmp/lint.log 2>&1 || { cat $$tmp/lint.log; exit 1; }; \
	$(HELM) template weft deploy/chart/weft --set $$opt >/dev/null || exit 1; \
	echo "helm-check: with $$opt: lint clean, rendered"; \
	$(HELM) lint --strict deploy/chart/weft -f deploy/local.yaml >$$tmp/lint.log 2>&1 || { cat $$tmp/lint.log; exit 1; }; \
	echo "helm-check: with deploy/local.yaml (the one-node cluster's machine): lint clean"; \
	$(HELM) lint --strict deploy/chart/weft -f deploy/nodes.yaml >$$tmp/lint.log 2>&1 || { cat $$tmp/lint.log; exit 1; }; \
	echo "helm-check: with deploy/nodes.yaml (make run's kind-style cluster): lint clean"
