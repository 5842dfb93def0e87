package acceptance

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// BenchmarkKubeEstimate compares the plan's estimate of a rollout on 1,000 kwok nodes of a
// real apiserver (the fleet, budgets and simulated agents of BenchmarkKubeApply, each
// agent taking T per update) with the makespan of the apply that follows. The first
// measured rollout is estimated from the times of the unmeasured first one (agents
// instant), the next from those of the one before at T. Writes the "kube-estimate"
// section of docs/benchmarks.md. `make bench-kube-estimate` runs it.
func BenchmarkKubeEstimate(b *testing.B) {
	kr := &kubeRollout{fleet: kubeFleet{nodes: kubeApplyNodes, pools: kubeBenchPools}, k: kubeApplyBudget,
		step: kubeApplyStep, profiles: ""}
	kr.start(b)
	kr.first(b)
	type result struct {
		est       *planner.Estimate
		run       kubeRolloutRun
		estimated time.Duration
	}
	var rs []result
	for range kubeEnvInt(b, "MCP_KUBE_RUNS", 2) {
		est, longest := kr.nextEstimate(b)
		run := kr.measure(b, kr.step, false)
		b.Logf("estimated %v (from %d observed nodes per pool), took %v", longest, est.ObservedNodes, run.makespan)
		rs = append(rs, result{est, run, longest})
	}
	var s strings.Builder
	fmt.Fprintf(&s, "## Estimate against actual at 1,000 kwok nodes\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-kube-estimate` (acceptance/bench_kube_estimate_test.go):\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "the fleet, budgets and simulated agents of \"mcp apply against a real apiserver\" (%d kwok\n", kubeApplyNodes)
	fmt.Fprintf(&s, "nodes in %d pools, max_unavailable %d, each agent taking T = %s for an in-place change).\n", len(kubeBenchPools), kubeApplyBudget, kubeApplyStep)
	fmt.Fprintf(&s, "`mcp plan -json`'s estimate (the longest pool's) against the makespan of the apply that\n")
	fmt.Fprintf(&s, "follows. Rollout 1 is estimated from the unmeasured first rollout, whose agents answered\n")
	fmt.Fprintf(&s, "at once: the times recorded are a past that no longer holds. Each later one is estimated\n")
	fmt.Fprintf(&s, "from the rollout before it. Load: the 1-minute load average when the apply started (the\n")
	fmt.Fprintf(&s, "control plane and the simulated agents share the 2 cores with mcp).\n\n")
	fmt.Fprintf(&s, "| rollout | estimated from | estimate | took | estimate / took | load |\n|---|---|--:|--:|--:|--:|\n")
	for i, r := range rs {
		fmt.Fprintf(&s, "| %d | %d observed nodes per pool | %s | %s | %.2f× | %s |\n", i+1, r.est.ObservedNodes,
			r.estimated.Round(10*time.Millisecond), r.run.makespan.Round(10*time.Millisecond),
			float64(r.estimated)/float64(r.run.makespan), r.run.load1)
	}
	fmt.Fprintln(&s)
	if err := benchdoc.WriteSection("../docs/benchmarks.md", "kube-estimate", s.String()); err != nil {
		b.Fatal(err)
	}
	b.Logf("\n%s", s.String())
}

// nextEstimate writes the configuration of the next change (as measure will) and returns
// the plan's estimate of it: one pool's, and the longest pool's duration.
func (kr *kubeRollout) nextEstimate(b *testing.B) (*planner.Estimate, time.Duration) {
	kr.serial++
	kr.write(b)
	kr.serial--
	cmd := exec.Command(kr.mcp, "plan", "-json", "-lock=false")
	cmd.Dir, cmd.Env = kr.dir, kr.runEnv
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("plan -json: %v\n%s", err, lastLines(string(out), 20))
	}
	ests, longest, err := benchdoc.PlanEstimates(out)
	if err != nil {
		b.Fatal(err)
	}
	var est *planner.Estimate
	for _, e := range ests {
		if e.Duration == longest {
			est = e
		}
	}
	if est == nil {
		b.Fatalf("the plan estimates no pool:\n%s", lastLines(string(out), 20))
	}
	return est, longest
}
