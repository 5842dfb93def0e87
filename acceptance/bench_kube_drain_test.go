package acceptance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// kubeDrainRuns is how many draining, rebooting rollouts BenchmarkKubeScale measures
// (MCP_KUBE_DRAIN_RUNS).
const kubeDrainRuns = 3

// drainAll makes the measured rollouts that reboot: each changes a file whose change
// reboots, so every node is cordoned, drained, handed its write and reboot, verified after
// its agent's T and uncordoned.
func (kr *kubeRollout) drainAll(b *testing.B, n int) []kubeRolloutRun {
	var runs []kubeRolloutRun
	for range n {
		runs = append(runs, kr.measure(b, kr.step, true))
	}
	return runs
}

// drainCheck reads what a rollout that rebooted did beyond an in-place one: the replaced
// pods, each node's engine-side steps; it fails unless every pod is back and no node is
// left cordoned.
func (kr *kubeRollout) drainCheck(b *testing.B, run *kubeRolloutRun, spans []benchdoc.NodeSpan) {
	kr.replacer.waitLive(b, kr.fleet.nodes*kr.fleet.podsPerNode)
	run.replaced = kr.replacer.takeStats()
	run.steps = map[string][]time.Duration{}
	for _, sp := range spans {
		for kind, d := range sp.Steps {
			run.steps[kind] = append(run.steps[kind], d)
		}
	}
	if len(run.steps["drain"]) != kr.fleet.nodes {
		b.Fatalf("%d nodes drained, want %d", len(run.steps["drain"]), kr.fleet.nodes)
	}
	run.drain = medianOf(run.steps["drain"])
	list, err := kr.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range list.Items {
		if n.Spec.Unschedulable {
			b.Fatalf("node %s left cordoned", n.Name)
		}
	}
}

// evictionsPerPod is the run's evictions (the API server's 201s to POST pods/eviction)
// per pod of the fleet.
func (kr *kubeRollout) evictionsPerPod(r kubeRolloutRun) float64 {
	return r.evictions["201"] / float64(kr.fleet.nodes*kr.fleet.podsPerNode)
}

const kubeDrainText = `Each node: cordon (mcp's PATCH), drain (mcp lists the node's pods and evicts each through
the eviction API, retrying a refusal every 5 s as kubectl drain does, then polls the node's pods
every second until the evicted ones are gone; kwok, playing the kubelet, deletes an evicted pod
at once), the hand-over of its write and reboot, the agent's reboot, uncordon. The reboot is
simulated as far as a kwok node allows: the agent runs its steps up to the reboot and reports
through kagent.NodeState.Rebooting (the Working report, with its progress, that mcp-agent lands
on the API server before it asks for a reboot), then its watch of its Node ends (the machine is
down); T later a new NodeState — the agent after boot, from the update id and progress the
real agent records before the reboot — reports the verify step and Done, and lists and watches
its Node again. Not simulated: the Node going NotReady and its boot id changing (kwok keeps the
Node Ready; nothing reads a boot id here), the pods' containers stopping.

Evicted pods come back as a ReplicaSet and the scheduler would put them back: the control
plane here runs neither (etcd, the apiserver, kwok, and the controller manager's disruption
and serviceaccount controllers only), so the benchmark's pod replacer does it, the way the
fleet's own pods were made. It watches the pods and the nodes; the moment a fleet pod is being
deleted it creates one like it (namespace, labels — so the same PodDisruptionBudget —, spec),
bound to the schedulable node with the fewest live pods (kube-scheduler's default scoring,
least allocated, every pod requesting the same), and kwok makes it Running and Ready. A pod
put back on a node not yet drained is evicted again when that node's turn comes: evictions
per pod counts that. The fleet's 30 PodDisruptionBudgets are as the plan saw them
(minAvailable 1 over their ~N/10 pods each): they never refuse here; the 429s column counts
any refusal. A budget allowing 1 disruption each would let the 30 of them evict 30 pods at a
time over the whole fleet, against the 3·8·k = 600 pods a wave drains: with mcp's 5 s retry
that is about 15,000/30 × 5 s ≈ 40 minutes a run at 5,000 nodes, the budgets' pace and not the
rollout's, and no per-node drain time would make a limit of it.

The drain time D is the median node's drain step as apply times it (its start event to its done
event: listing the node's pods, the evictions, the wait until they are gone); the limit is
ceil(N/k)·(T + D), every slot of a pool busy from start to end, each node taking T and D.
Cordon and uncordon, and the hand-over's own round trips, are not in it: they are in what the
makespan has above it.
`

// drainReport writes the draining, rebooting rollout's part of the report.
func (kr *kubeRollout) drainReport(s *strings.Builder, runs []kubeRolloutRun) {
	perPool := kr.perPool()
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	mb := func(kib int64) string { return fmt.Sprintf("%.1f MB", float64(kib)/1024) }
	f2 := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	f3 := func(x float64) string { return fmt.Sprintf("%.3f×", x) }
	fmt.Fprintf(s, "| run | T | 1-min load at start → end | makespan | drain D, median node (p90) | limit ceil(N/k)·(T + D) | makespan / limit | evictions per pod (429s) | mcp requests per node | mcp CPU | mcp peak RSS | apiserver CPU |\n")
	fmt.Fprintf(s, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var ratios, evictions []float64
	var rss []int64
	var above, perWave []time.Duration
	for i, r := range runs {
		fmt.Fprintf(s, "| %d | %s | %s → %s | %s | %s (%s) | %s | %.3f× | %.2f (%.0f) | %.2f | %s | %s | %s |\n", i+1, r.step,
			r.load1, r.loadEnd, ms(r.makespan), secs(r.drain), secs(quantile(r.steps["drain"], 0.9)), ms(r.limit(perPool, kr.k)),
			kr.ratio(r), kr.evictionsPerPod(r), r.evictions["429"], float64(r.requests)/float64(r.updated), ms(r.cpu), mb(r.rss),
			ms(r.plane["kube-apiserver"]))
		ratios, evictions, rss = append(ratios, kr.ratio(r)), append(evictions, kr.evictionsPerPod(r)), append(rss, r.rss)
		a := r.makespan - r.limit(perPool, kr.k)
		above, perWave = append(above, a), append(perWave, a/time.Duration(max(len(r.waves), 1)))
	}
	fmt.Fprintf(s, "\n| measure, median of the %d runs (min–max) | result | target |\n|---|---|---|\n", len(runs))
	fmt.Fprintf(s, "| makespan / ceil(N/k)·(T + D) | %s | ≤ 1.1× (%s) |\n", medianSpread(ratios, f3), verdict(medianOf(ratios) <= 1.1))
	fmt.Fprintf(s, "| mcp apply peak RSS | %s | ≤ 300 MB (%s) |\n", medianSpread(rss, mb), verdict(medianOf(rss) <= 300*1024))
	fmt.Fprintf(s, "| evictions per pod of the fleet | %s | |\n", medianSpread(evictions, f2))
	fmt.Fprintf(s, "| makespan above the limit | %s | |\n", medianSpread(above, secs))
	fmt.Fprintf(s, "| … per wave | %s | |\n", medianSpread(perWave, secs))

	fmt.Fprintf(s, "\nPods put back, by the evictions of their line in the run (1: a fleet pod evicted once; 2: put back\n")
	fmt.Fprintf(s, "on a node not yet drained and evicted again), per run: ")
	var lines []string
	for i, r := range runs {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(r.replaced)) {
			parts = append(parts, fmt.Sprintf("%d× %d", n, r.replaced[n]))
		}
		lines = append(lines, fmt.Sprintf("run %d: %s", i+1, strings.Join(parts, ", ")))
	}
	fmt.Fprintf(s, "%s.\n", strings.Join(lines, "; "))

	fmt.Fprintf(s, "\nEach node's steps as apply times them (start event to done event; the reboot's is the hand-over\n")
	fmt.Fprintf(s, "to the agent's Done as mcp sees it), median of the runs' figures:\n\n| step | median | p90 | max |\n|---|---|---|---|\n")
	for _, kind := range []string{"cordon", "drain", "write", "reboot", "verify", "uncordon"} {
		stat := func(q float64) string {
			return runsQuantile(runs, func(r kubeRolloutRun) []time.Duration { return r.steps[kind] }, q)
		}
		fmt.Fprintf(s, "| %s | %s | %s | %s |\n", kind, stat(0.5), stat(0.9), stat(1))
	}

	fmt.Fprintf(s, "\nPer wave (the w-th %d nodes each pool started, over the %d pools), median of the runs (min–max):\n", kr.k, len(kr.fleet.pools))
	fmt.Fprintf(s, "duration is the wave's first cordon to its last node's end, less T + D of its run.\n\n")
	fmt.Fprintf(s, "| wave | nodes | duration − (T + D) | spread | gap to next |\n|---|---|---|---|---|\n")
	nw := 0
	for _, r := range runs {
		nw = max(nw, len(r.waves))
	}
	col := func(i int, f func(benchdoc.Wave, kubeRolloutRun) time.Duration) string {
		var xs []time.Duration
		for _, r := range runs {
			if i < len(r.waves) {
				xs = append(xs, f(r.waves[i], r))
			}
		}
		return medianSpread(xs, secs)
	}
	for i := range nw {
		nodes := 0
		if i < len(runs[0].waves) {
			nodes = runs[0].waves[i].Nodes
		}
		g := col(i, func(w benchdoc.Wave, _ kubeRolloutRun) time.Duration { return w.Gap })
		if i == nw-1 {
			g = "–"
		}
		fmt.Fprintf(s, "| %d | %d | %s | %s | %s |\n", i+1, nodes,
			col(i, func(w benchdoc.Wave, r kubeRolloutRun) time.Duration { return w.Duration() - r.step - r.drain }),
			col(i, func(w benchdoc.Wave, _ kubeRolloutRun) time.Duration { return w.Spread() }), g)
	}

	fmt.Fprintf(s, "\nThe API server's side during each apply (apiserver_request_total before and after, every client),\n")
	fmt.Fprintf(s, "median of the runs per node updated:\n\n")
	serverTable(s, runs)
	fmt.Fprintf(s, "\nBy client, per node updated, median of the runs (min–max):\n\n")
	clientTable(s, runs)
	plane := map[string]time.Duration{}
	for _, r := range runs {
		for k, v := range r.plane {
			plane[k] = max(plane[k], v)
		}
	}
	var cs []string
	for _, k := range sortedKeys(plane) {
		var xs []time.Duration
		for _, r := range runs {
			xs = append(xs, r.plane[k])
		}
		cs = append(cs, fmt.Sprintf("%s %s", k, medianSpread(xs, secs)))
	}
	fmt.Fprintf(s, "\nCPU (user + system) during each apply, median (min–max): %s (\"agents\" is the benchmark's process:\n", strings.Join(cs, ", "))
	fmt.Fprintf(s, "the agents and the pod replacer).\n")
	if last := runs[len(runs)-1]; last.cpuProf != "" {
		fmt.Fprintf(s, "\nmcp apply's CPU profile of run %d, top entries:\n\n```\n%s\n```\n", len(runs), pprofTop(kr.mcp, last.cpuProf, 12))
	}
}
