package acceptance

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// The rollout of BenchmarkKubeApply: kubeApplyNodes kwok nodes in the four pools of
// kubeBenchPools, each pool's max_unavailable kubeApplyBudget, every agent taking
// kubeApplyStep for its update; kubeApplyRuns measured runs, then one with T doubled.
const (
	kubeApplyNodes  = 1000
	kubeApplyBudget = 25
	kubeApplyStep   = 5 * time.Second
	kubeApplyRuns   = 3
)

// BenchmarkKubeApply measures `mcp apply` of an in-place change on 1,000 kwok nodes of a
// real apiserver through the agent protocol, kubeApplyRuns times and once more with T
// doubled (MCP_KUBE_DOUBLED=N: N runs at 2T, 0 for none). Each node's agent is simulated
// in this process (benchAgents: its own watch of its Node, kagent.NodeState's reports),
// taking kubeApplyStep per update. It reports the API requests mcp made per node updated,
// the makespan against the limit the budgets set, ceil(N/k)·T, wave by wave, with the load
// beside each run, and writes the "kube-apply" section of docs/benchmarks.md. `make
// bench-kube` runs it.
func BenchmarkKubeApply(b *testing.B) {
	kr := &kubeRollout{fleet: kubeFleet{nodes: kubeApplyNodes, pools: kubeBenchPools}, k: kubeApplyBudget,
		step: kubeApplyStep, runs: kubeEnvInt(b, "MCP_KUBE_RUNS", kubeApplyRuns), doubled: kubeEnvInt(b, "MCP_KUBE_DOUBLED", 1),
		profiles: kubeProfileDir(b)}
	kr.start(b)
	kr.first(b)
	runs, doubled := kr.measureAll(b)

	var s strings.Builder
	fmt.Fprintf(&s, "## mcp apply against a real apiserver\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-kube` (acceptance/bench_kube_apply_test.go, BenchmarkKubeApply):\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "the control plane of acceptance/k8senv (etcd, kube-apiserver %s, kube-controller-manager,\n", kr.version)
	fmt.Fprintf(&s, "kwok) on loopback with %d kwok nodes in %d pools, each pool's `max_unavailable = %d`\n", kubeApplyNodes, len(kubeBenchPools), kubeApplyBudget)
	fmt.Fprintf(&s, "(k = %d nodes at once per pool, `-parallelism %s`), local state. The change is in place\n", kubeApplyBudget, kr.parallelism())
	fmt.Fprintf(&s, "(a file and a unit restart: no cordon, no drain). %s", kubeAgentsText)
	fmt.Fprintf(&s, "taking T = %s per update. The real `mcp apply -auto-approve -json` counts its own API\n", kubeApplyStep)
	fmt.Fprintf(&s, "requests (after its refresh and plan) and timestamps its events; the makespan is from the\n")
	fmt.Fprintf(&s, "first node's first step to the last node's end, after its health gates. %d runs at T, one\n", len(runs))
	fmt.Fprintf(&s, "change after the other on the same control plane, then %d at 2T. Everything shares the 2 cores;\n", len(doubled))
	fmt.Fprintf(&s, "the 1-minute load average is given when each apply started and ended.\n\n")
	kr.report(&s, runs, doubled, 0.03)
	fmt.Fprintf(&s, "\n%s", kubeApplyCostText)
	if err := benchdoc.WriteSection("../docs/benchmarks.md", "kube-apply", s.String()); err != nil {
		b.Fatal(err)
	}
	b.Logf("\n%s", s.String())
}

// measureAll makes the measured runs at T, then the runs at 2T.
func (kr *kubeRollout) measureAll(b *testing.B) (runs, doubled []kubeRolloutRun) {
	for range kr.runs {
		runs = append(runs, kr.measure(b, kr.step, false))
	}
	for range kr.doubled {
		doubled = append(doubled, kr.measure(b, 2*kr.step, false))
	}
	return runs, doubled
}

// kubeEnvInt is the environment variable name as a count, else def.
func kubeEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q is not a count", name, v)
	}
	return n
}

// kubeProfileDir is where mcp apply's profiles go: MCP_KUBE_PROFILES, else a temporary
// directory (the report shows their top entries).
func kubeProfileDir(b *testing.B) string {
	if d := os.Getenv("MCP_KUBE_PROFILES"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		return d
	}
	return b.TempDir()
}

const kubeAgentsText = `Each node's agent is simulated in the benchmark's process
(one process for all of them): as mcp-agent does, each lists and watches only its own Node
(field selector metadata.name=NODE; kagent.Agent.Run's informer), so the API server holds one
watch per node, and answers a hand-over through kagent.NodeState, the agent's own reporting
code (protocol version 2: Done alone, with Working and each step's progress before it
only when the update still runs after protocol.WorkingAfter = 10 s, or before a reboot), `

const kubeApplyCostText = `Per node the rollout makes one request of its own, the patch of its hand-over. The
start-of-node budget checks (each node's model made once per version of it), the look for
an earlier hand-over, the waits for the agents and the Ready gates read one shared watch of
the nodes, and the gates' DaemonSet pods one shared watch of the pods bound to nodes
(providers/kubernetes/watch.go, podwatch.go). mcp's client allows 200 requests a second. The
agent reports once per update when it ends within protocol.WorkingAfter (10 s): Done, with
every step's progress, in one patch (kagent.NodeState) — at T = 5 s an update costs 2 writes,
the hand-over and Done. A longer update (the run at 2T, when its steps outlast 10 s) writes
Working with the progress so far first, and each later step's progress off the steps' path.
`
