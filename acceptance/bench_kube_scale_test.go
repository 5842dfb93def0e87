package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// The fleet of BenchmarkKubeScale: MCP_KUBE_SCALE kwok nodes (default kubeScaleNodes) in
// the pools of kubeScalePools, kubeScalePodsPerNode pods on each, kubeScalePDBs PDBs; each
// pool updates kubeApplyBudget nodes at once, each taking kubeApplyStep.
const (
	kubeScaleNodes       = 5000
	kubeScalePodsPerNode = 3
	kubeScalePDBs        = 30
	kubeScalePlanRuns    = 3
)

var kubeScalePools = []string{"worker", "infra", "storage", "gpu", "edge", "batch", "db", "ml"}

// BenchmarkKubeScale is the cluster-scale benchmark: a real apiserver holding 5,000 kwok
// nodes in 8 pools, 15,000 pods and 30 PodDisruptionBudgets, with an agent per node
// watching its own Node. It measures `mcp plan` against `kubectl get nodes,pods -A -o json`
// on the same apiserver, then rolls an in-place change out kubeApplyRuns times (and with T
// doubled, MCP_KUBE_DOUBLED times, default 1), then MCP_KUBE_DRAIN_RUNS (default 3) changes
// that cordon, drain, reboot and uncordon every node (bench_kube_drain_test.go), with the
// API server's side of each rollout, wave timings and mcp's profiles, and writes the
// "kube-scale" section of docs/benchmarks.md. `make bench-kube SCALE=5000` runs it (SCALE=N for another size).
func BenchmarkKubeScale(b *testing.B) {
	n := kubeEnvInt(b, "MCP_KUBE_SCALE", kubeScaleNodes)
	kr := &kubeRollout{fleet: kubeFleet{nodes: n, pools: kubeScalePools, podsPerNode: kubeScalePodsPerNode, pdbs: kubeScalePDBs},
		k: kubeApplyBudget, step: kubeApplyStep, runs: kubeEnvInt(b, "MCP_KUBE_RUNS", kubeApplyRuns),
		doubled: kubeEnvInt(b, "MCP_KUBE_DOUBLED", 1), profiles: kubeProfileDir(b)}
	kr.start(b)

	plan := kr.plan(b)
	kr.first(b)
	runs, doubled := kr.measureAll(b)
	drains := kr.drainAll(b, kubeEnvInt(b, "MCP_KUBE_DRAIN_RUNS", kubeDrainRuns))

	var s strings.Builder
	fmt.Fprintf(&s, "## %d nodes on a real apiserver\n\n", n)
	fmt.Fprintf(&s, "Measured %s by `make bench-kube SCALE=%d` (acceptance/bench_kube_scale_test.go,\n", time.Now().UTC().Format("2006-01-02"), n)
	fmt.Fprintf(&s, "BenchmarkKubeScale): the control plane of acceptance/k8senv (etcd, kube-apiserver %s,\n", kr.version)
	fmt.Fprintf(&s, "kube-controller-manager, kwok) on loopback holding %d kwok nodes in %d pools and 3 zones,\n", n, len(kubeScalePools))
	fmt.Fprintf(&s, "%d pods bound to them (kwok makes them Running and Ready) in %d namespaces and %d\n", n*kubeScalePodsPerNode, len(kubeBenchNS), kubeScalePDBs)
	fmt.Fprintf(&s, "PodDisruptionBudgets. %s", kubeAgentsText)
	fmt.Fprintf(&s, "taking T = %s per update. Everything — etcd, the apiserver, kwok, the agents, mcp and\n", kubeApplyStep)
	fmt.Fprintf(&s, "kubectl — shares the machine's 2 cores; the 1-minute load average is given beside each run.\n\n")
	s.WriteString(plan)
	fmt.Fprintf(&s, "\n### apply\n\n")
	fmt.Fprintf(&s, "An in-place change (a file and a unit restart: no cordon, no drain) to every node, each\n")
	fmt.Fprintf(&s, "pool's `max_unavailable = %d` (k = %d at once per pool, `-parallelism %s`), local state; the\n", kr.k, kr.k, kr.parallelism())
	fmt.Fprintf(&s, "fleet was first rolled onto its first config (agents instant, not measured), then %d\n", len(runs))
	fmt.Fprintf(&s, "changes one after the other at T and %d at 2T on the same control plane. mcp's requests are\n", len(doubled))
	fmt.Fprintf(&s, "its own count after its refresh and plan; its CPU and peak RSS are the whole process's\n")
	fmt.Fprintf(&s, "(rusage), refresh and plan included; the makespan is from the first node's first step to\n")
	fmt.Fprintf(&s, "the last node's end, after its health gates.\n\n")
	kr.report(&s, runs, doubled, 0)
	fmt.Fprintf(&s, "\n%s", kubeApplyCostText)
	if len(drains) > 0 {
		fmt.Fprintf(&s, "\n### a draining, rebooting rollout\n\n")
		fmt.Fprintf(&s, "After the in-place runs, on the same control plane and fleet, %d changes one after the other of a\n", len(drains))
		fmt.Fprintf(&s, "file whose change reboots (`on_change = [\"reboot\"]`): every node cordoned, drained (%d pods each\n", kr.fleet.podsPerNode)
		fmt.Fprintf(&s, "before the first run; what was put back since, after), written, rebooted (T = %s), verified and\n", kr.step)
		fmt.Fprintf(&s, "uncordoned, k = %d per pool (`max_unavailable = %d`, `-parallelism %s`).\n\n%s\n", kr.k, kr.k, kr.parallelism(), kubeDrainText)
		kr.drainReport(&s, drains)
	}
	if err := benchdoc.WriteSection("../docs/benchmarks.md", "kube-scale", s.String()); err != nil {
		b.Fatal(err)
	}
	b.Logf("\n%s", s.String())
}

// plan measures `mcp plan` against `kubectl get nodes,pods -A -o json`, alternately, after
// one unmeasured run of each, and returns its part of the report.
func (kr *kubeRollout) plan(b *testing.B) string {
	kubectl := os.Getenv("MCP_KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join(kr.env.BinDir, "kubectl")
	}
	if _, err := os.Stat(kubectl); err != nil {
		b.Fatalf("kubectl not found (%v): run `scripts/build-k8s-tools.sh kubectl` (make bench-kube does), or set MCP_KUBECTL", err)
	}
	want := func(p kubePlanRun) {
		rs := p.stats
		if rs.Nodes != kr.fleet.nodes || rs.Pods != kr.fleet.nodes*kr.fleet.podsPerNode || rs.PDBs != kr.fleet.pdbs {
			b.Fatalf("plan refreshed %d nodes, %d pods, %d PDBs; want %d, %d, %d", rs.Nodes, rs.Pods, rs.PDBs,
				kr.fleet.nodes, kr.fleet.nodes*kr.fleet.podsPerNode, kr.fleet.pdbs)
		}
	}
	want(kubeBenchPlan(b, kr.mcp, kr.dir, kr.runEnv, ""))
	kubeBenchKubectl(b, kubectl, kr.dir, kr.runEnv)
	kubectlRequests := kubeBenchKubectlRequests(b, kubectl, kr.dir, kr.runEnv)
	var walls, cpus, kwalls, kcpus []time.Duration
	var rss, reqs []int64
	var loads []string
	var ksize int64
	for i := range kubeScalePlanRuns {
		loads = append(loads, benchdoc.LoadAverage())
		p := kubeBenchPlan(b, kr.mcp, kr.dir, kr.runEnv, "")
		want(p)
		kw, kc, size := kubeBenchKubectl(b, kubectl, kr.dir, kr.runEnv)
		walls, cpus, rss, reqs = append(walls, p.wall), append(cpus, p.cpu), append(rss, p.rss), append(reqs, p.stats.APIRequests)
		kwalls, kcpus, ksize = append(kwalls, kw), append(kcpus, kc), size
		b.Logf("plan run %d (load %s): mcp plan %v (CPU %v, %d requests, RSS %.1f MB), kubectl get %v (CPU %v)", i+1, loads[i],
			p.wall.Round(time.Millisecond), p.cpu.Round(time.Millisecond), p.stats.APIRequests, float64(p.rss)/1024,
			kw.Round(time.Millisecond), kc.Round(time.Millisecond))
	}
	ratio := float64(medianOf(walls)) / float64(medianOf(kwalls))
	cpuRatio := float64(medianOf(cpus)) / float64(medianOf(kcpus))
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	mb := func(kib int64) string { return fmt.Sprintf("%.1f MB", float64(kib)/1024) }
	n := func(x int64) string { return fmt.Sprint(x) }
	var s strings.Builder
	fmt.Fprintf(&s, "### plan\n\n")
	fmt.Fprintf(&s, "`mcp plan -json -lock=false` (every node needing an update) and `kubectl get nodes,pods -A -o json`\n")
	fmt.Fprintf(&s, "(kubectl %s, built from the same release by `make bin/kubectl`), alternately, %d times each after\n", kr.version, kubeScalePlanRuns)
	fmt.Fprintf(&s, "one unmeasured run of each; output to a file; 1-minute load at the runs' starts: %s.\n\n", strings.Join(loads, ", "))
	fmt.Fprintf(&s, "| measure, median of %d (min–max) | mcp plan | kubectl get | mcp / kubectl |\n|---|---|---|---|\n", kubeScalePlanRuns)
	fmt.Fprintf(&s, "| wall | %s | %s | %.2f× |\n", medianSpread(walls, ms), medianSpread(kwalls, ms), ratio)
	fmt.Fprintf(&s, "| CPU, user + system | %s | %s | %.2f× |\n", medianSpread(cpus, ms), medianSpread(kcpus, ms), cpuRatio)
	fmt.Fprintf(&s, "| API requests | %s | %d (discovery cached) | |\n", medianSpread(reqs, n), kubectlRequests)
	fmt.Fprintf(&s, "| peak RSS | %s | | |\n", medianSpread(rss, mb))
	fmt.Fprintf(&s, "| output | plan JSON | %.1f MB of JSON | |\n", float64(ksize)/1e6)
	slices.Sort(reqs)
	fmt.Fprintf(&s, "\nmcp's requests are one LIST per page of 500 (nodes, pods and PDBs side by side) and the two LISTs\n")
	fmt.Fprintf(&s, "of machine templates: %d nodes and %d pods are %d and %d pages.\n", kr.fleet.nodes, kr.fleet.nodes*kr.fleet.podsPerNode,
		(kr.fleet.nodes+499)/500, (kr.fleet.nodes*kr.fleet.podsPerNode+499)/500)
	return s.String()
}
