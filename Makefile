# mcp — build, test, demo and benchmark. Everything a target needs is installed or built
# here, so a fresh clone needs nothing but Go.
GO      ?= go
SHELL   := /bin/bash
BIN     := $(CURDIR)/bin
MCP     := $(BIN)/mcp
VERSION ?= 0.1.0-dev
LDFLAGS := -X github.com/mcpfleet/mcp/engine.Version=$(VERSION)

.PHONY: all build test vet chaos chaos-vm fuzz fuzz-short bin/ignition bin/k8s bin/kubectl bin/vm graphviz demo demo-fleet bench bench-plan bench-apply bench-rollout bench-staging bench-estimate bench-agent bench-serve bench-kube bench-size bench-fleet clean

all: build

# mcp, and mcp-agent: the node agent alone, for the DaemonSet (docs/agent.md).
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(MCP) ./cmd/mcp
	$(GO) build -o $(BIN)/mcp-agent ./cmd/mcp-agent

vet:
	$(GO) vet ./...

# The container image, built without a container daemon (scripts/image, go-containerregistry):
# mcp and mcp-agent for linux/amd64 and linux/arm64 as one OCI image index, in build/image/oci
# (an OCI layout) and build/image/mcp-oci.tar; every timestamp is SOURCE_DATE_EPOCH (default:
# the commit's time), so one commit gives one digest, which goes into deploy/kustomization.yaml.
# IMAGE_REPO is where the manifests pull it from; IMAGE_PUSH=REF also pushes it.
IMAGE_REPO ?= ghcr.io/mcpfleet/mcp
.PHONY: image
image:
	GO=$(GO) $(GO) run ./scripts/image -version $(VERSION) -repo $(IMAGE_REPO) $(if $(IMAGE_PUSH),-push $(IMAGE_PUSH))

# The acceptance tests run the real Ignition client and a real Kubernetes control plane
# (etcd, kube-apiserver, kube-controller-manager, kwok), all built once from the module
# proxy and cached in bin/ (the apiserver takes ~5 min the first time), and QEMU machines
# booting a Debian OSTree image (bin/vm, below). MCP_REQUIRE_K8S=1 and MCP_REQUIRE_VM=1: a
# missing control plane, image, QEMU or debugfs fails the tests instead of skipping them.
#
# The kube tests share one control plane per package, and acceptance/'s tests run side by
# side in classes (acceptance/main_test.go; docs/decisions.md, "One control plane per test
# package"). go test's JSON is kept in build/test.json, shown as go test shows it, and ends
# with each package's time; `make test-timing` writes that table into docs/test-timing.md.
# The exit status is the tests' (pipefail).
test: vet bin/ignition bin/k8s bin/kubectl bin/vm graphviz tmux prometheus doc-tools
	@mkdir -p build
	set -o pipefail; MCP_REQUIRE_K8S=1 MCP_REQUIRE_VM=1 $(GO) test -count=1 -timeout 75m -json -skip '^TestMachine$$' ./... \
		| $(GO) run ./scripts/testtiming -save build/test.json
	$(MAKE) fuzz-short

# docs/test-timing.md from the last make test's build/test.json: each package's time, the
# slowest tests, the machine and its load.
.PHONY: test-timing
test-timing:
	$(GO) run ./scripts/testtiming -in build/test.json -doc docs/test-timing.md

# Real machines: QEMU nodes booting a Debian OSTree image (bin/vm) with the real mcp-agent,
# updated through the real apiserver (acceptance/vm_*_test.go, acceptance/vmnode).
# make test runs them with the rest, but for vmnode's own TestMachine (the harness's boot
# loader through a reboot and a power loss, which the acceptance machines also go through:
# it held a machine slot 3–7 minutes); test-vm runs them all alone.
.PHONY: test-vm
test-vm: bin/k8s bin/vm
	MCP_REQUIRE_K8S=1 MCP_REQUIRE_VM=1 $(GO) test -count=1 -timeout 90m -run '^(TestVM|TestMachine)' ./acceptance/ ./acceptance/vmnode/

# The crash harness: SIGKILL mcp apply at 50 seeded random moments on a local fleet of 100
# nodes in 3 pools, re-run until the plan is empty, judge from the nodes' event logs
# (make test runs a 10-kill pass: acceptance/chaos_test.go). SEED=N picks other moments.
chaos: build
	MCP=$(MCP) $(GO) run ./scripts/chaos -kills $${KILLS:-50} -seed $${SEED:-1}

# Power loss on a real machine (acceptance/vm_powerloss_test.go): KILLS seeded random
# SIGKILLs of a VM node's QEMU during updates (make test runs 3, one in each phase), SEED=N for
# other moments.
chaos-vm: bin/k8s bin/vm
	MCP_REQUIRE_K8S=1 MCP_REQUIRE_VM=1 MCP_VM_POWERLOSS=$${KILLS:-30} MCP_VM_SEED=$${SEED:-1} \
		$(GO) test -count=1 -timeout 180m -run '^TestVMPowerLoss$$' ./acceptance/

# A real machine's update (kargs + a new OS commit: write, pull, deploy, reboot, verify)
# against its bare reboot, RUNS times each: the node's time out of service read from the
# Node (cordon → uncordon) against bare reboot + drain, issue 46's target (≤ 1.15×) said
# met or not, each phase and the agent's start inside the guest logged
# (acceptance/vm_bench_test.go; docs/benchmarks.md).
.PHONY: bench-vm
bench-vm: bin/k8s bin/vm
	MCP_REQUIRE_K8S=1 MCP_REQUIRE_VM=1 MCP_VM_BENCH=1 MCP_VM_BENCH_RUNS=$${RUNS:-3} \
		$(GO) test -count=1 -timeout 90m -v -run '^TestVMBenchUpdateVsReboot$$' ./acceptance/

# Every fuzz target (found in the test files): a short pass in make test, long runs here.
# Seeds live in each package's testdata/fuzz/. The short pass counts executions instead of
# seconds: a count has no wall-clock deadline for Go 1.26's fuzz coordinator to race
# (go.dev/issue/75804), so a loaded CI machine is slower, never red. 20000 runs take 1-13s
# per target here (about 70s in all).
fuzz-short:
	FUZZTIME=20000x GO=$(GO) bash scripts/fuzz.sh

fuzz:
	FUZZTIME=$${FUZZTIME:-5m} GO=$(GO) bash scripts/fuzz.sh

# tmux: the live-progress test reads mcp apply's screen from it (acceptance/live_test.go).
.PHONY: tmux
tmux:
	bash scripts/need-deb.sh tmux tmux

# prometheus: the alert gate's test runs Debian's Prometheus server on loopback, evaluating
# a rule that fires and stops (acceptance/alertgate_test.go).
.PHONY: prometheus
prometheus:
	bash scripts/need-deb.sh prometheus prometheus

# jq and openssl: the tests that run docs/kubernetes.md's commands run them as a user would
# (TestInstallFromZero, TestStateMoveToOwnNamespace).
.PHONY: doc-tools
doc-tools:
	bash scripts/need-deb.sh jq jq
	bash scripts/need-deb.sh openssl openssl

bin/ignition:
	bash scripts/build-ignition.sh

# opa, for examples/ci's policy step: the OPA version go.mod requires (the one examples/ci's
# test evaluates the policy with), built from the module proxy outside this module (its CLI
# needs modules mcp does not), cached in bin/.
.PHONY: opa
opa: $(BIN)/opa
$(BIN)/opa:
	v=$$($(GO) list -m -f '{{.Version}}' github.com/open-policy-agent/opa) && \
		cd "$$(mktemp -d)" && GOBIN=$(BIN) GOFLAGS= $(GO) install github.com/open-policy-agent/opa@$$v

# examples/ci's job on the quickstart, locally: plan, show -json, show -markdown (the
# comment, with its diffs), the Rego policy with opa (scripts/ci-example.sh).
.PHONY: ci-example
ci-example: build opa
	MCP=$(MCP) OPA=$(BIN)/opa bash scripts/ci-example.sh

# Graphviz's dot, which the test of mcp graph renders its output with: Debian's package,
# installed when dot is missing (as bench-serve installs nginx and wrk).
graphviz:
	@command -v dot >/dev/null || { echo "installing graphviz (Debian package)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; }

bin/k8s:
	bash scripts/build-k8s-tools.sh

# The VM nodes' image (acceptance/vmnode, scripts/build-vm-image.sh): a Debian root from
# Debian's packages (mmdebstrap), made an OSTree system, as a raw disk, and an archive
# repository of the commits the tests deploy; installs qemu-system-x86, mmdebstrap, ostree
# and apt-utils; needs root. Cached in bin/vm-<hash of its inputs>, Debian's packages in
# ~/.cache/mcp/vm-debcache as Go keeps its module cache (rebuilds need no network).
bin/vm:
	bash scripts/build-vm-image.sh

# kubectl of the same release: the acceptance tests run it as users do (kubectl apply -k
# deploy/, the install page's commands), and bench-kube. ~1.5 min the first time here.
bin/kubectl: bin/k8s
	bash scripts/build-k8s-tools.sh kubectl

# The main job: plan and apply the quickstart on the embedded local fleet, no cluster.
demo: build
	MCP=$(MCP) bash scripts/demo.sh

# examples/fleet without a cluster: three local fleets planned across clusters and applied
# stage by stage, stopping for a soak and going on with -ignore-soak.
demo-fleet: build
	MCP=$(MCP) bash scripts/demo-fleet.sh

# Benchmarks; results go to docs/benchmarks.md with the machine described.
bench: bench-size bench-plan bench-apply bench-rollout bench-staging bench-estimate bench-agent bench-serve bench-kube bench-fleet

# A plan across 50 clusters of 200 local nodes each (clusters/bench_test.go); creating the
# fleets takes minutes: MCP_BENCH_FLEET=DIR keeps them for the next run. Its section of
# docs/benchmarks.md is written by hand from the output.
bench-fleet:
	$(GO) test ./clusters/ -run '^$$' -bench PlanFleet -benchtime 5x -count 3

# mcp and mcp-agent built unstripped and stripped, in a temporary directory: their sizes,
# failing when a stripped one is over its target (mcp 60 MB, mcp-agent 20 MB).
bench-size:
	GO=$(GO) $(GO) run ./scripts/benchsize -mcp-ldflags "$(LDFLAGS)" -out docs/benchmarks.md

# mcp plan on generated fleets of 10,000 and 100,000 nodes.
bench-plan: build
	MCP=$(MCP) $(GO) run ./scripts/benchplan -out docs/benchmarks.md

# mcp apply -auto-approve on generated fleets of 1,000 to 10,000 nodes, every node changing,
# steps instant, at -parallelism 10 and 40: wall and CPU time, CPU per node (about 10 minutes).
bench-apply: build
	MCP=$(MCP) $(GO) run ./scripts/benchapply -out docs/benchmarks.md

bench-rollout: build
	MCP=$(MCP) $(GO) run ./scripts/benchrollout -out docs/benchmarks.md

# An OS image rollout of 20 local nodes staged in the slot and ahead of it (max_staging
# 0 and k): scripts/benchstaging. ~2.5 minutes.
bench-staging: build
	MCP=$(MCP) $(GO) run ./scripts/benchstaging -out docs/benchmarks.md

# The plan's estimate against what apply then takes, on 300 local nodes that drain and
# reboot, 3 rollouts (the first from defaults): scripts/benchestimate. ~2.5 minutes.
bench-estimate: build
	MCP=$(MCP) $(GO) run ./scripts/benchestimate -out docs/benchmarks.md

# The plan's estimate against apply's makespan on the 1,000 kwok nodes of bench-kube, 2
# measured rollouts (acceptance/bench_kube_estimate_test.go). ~3 minutes on 2 cores.
.PHONY: bench-kube-estimate
bench-kube-estimate: build bin/k8s bin/kubectl
	MCP=$(MCP) MCP_REQUIRE_K8S=1 $(GO) test -count=1 -run '^$$' -bench BenchmarkKubeEstimate -benchtime 1x -timeout 60m ./acceptance/

# The node agent: drift check against sha256sum, idle RSS.
bench-agent: build
	MCP=$(MCP) MCP_AGENT=$(BIN)/mcp-agent $(GO) run ./scripts/benchagent -out docs/benchmarks.md

clean:
	rm -rf $(BIN) .demo build

# The boot server against nginx with wrk, and a 1,000-connection boot storm (installs nginx
# and wrk from Debian's packages when missing).
bench-serve: build
	MCP=$(MCP) $(GO) run ./scripts/benchserve -out docs/benchmarks.md

# mcp plan on 1,000 nodes (3,000 pods, 10 PDBs) in a real apiserver, against
# `kubectl get nodes,pods -A -o json` on the same apiserver (acceptance/bench_kube_test.go),
# and apply on 1,000 kwok nodes, 3 runs and one with T doubled (bench_kube_apply_test.go).
# SCALE=N runs the cluster-scale benchmark instead (bench_kube_scale_test.go): N kwok nodes
# (5000: the size Kubernetes supports) in 8 pools with 3 pods each and 30 PDBs, plan against
# kubectl, 3 in-place rollouts and one at 2T, then 3 rollouts that cordon, drain, reboot and
# uncordon every node (bench_kube_drain_test.go); 40 minutes or more at 5000 on 2 cores.
# MCP_KUBE_RUNS, MCP_KUBE_DOUBLED and MCP_KUBE_DRAIN_RUNS set the counts of each.
bench-kube: build bin/k8s bin/kubectl
	MCP=$(MCP) MCP_REQUIRE_K8S=1 $(if $(SCALE),MCP_KUBE_SCALE=$(SCALE)) $(GO) test -count=1 -run '^$$' \
		-bench '$(if $(SCALE),BenchmarkKubeScale,BenchmarkKube(Plan|Apply))' -benchtime 1x -timeout 90m ./acceptance/
