// Command benchestimate compares the plan's estimate of a rollout with what `mcp apply`
// then takes, on a local fleet whose drains and reboots take time: N nodes in P pools
// (max_unavailable 10%), each node drained and rebooted (a file without on_change). The
// first rollout is estimated from the stated defaults (no times recorded yet); the later
// ones from the step times apply recorded. Writes the "estimate" section of
// docs/benchmarks.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

func main() {
	nodes := flag.Int("nodes", 300, "nodes")
	pools := flag.Int("pools", 3, "pools (max_unavailable 10% each)")
	drain := flag.Duration("drain", time.Second, "the local provider's drain_duration")
	reboot := flag.Duration("reboot", 3*time.Second, "the local provider's reboot_duration")
	runs := flag.Int("runs", 3, "rollouts (the first from defaults)")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update (empty: none)")
	flag.Parse()
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	dir, err := os.MkdirTemp("", "mcp-benchestimate-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var sizes []local.PoolSize
	for p := range *pools {
		sizes = append(sizes, local.PoolSize{Name: fmt.Sprintf("p%02d", p), Count: *nodes / *pools})
	}
	if err := local.Init(filepath.Join(dir, "fleet"), local.InitSpec{Pools: sizes, Zones: []string{"a", "b", "c"}}); err != nil {
		log.Fatal(err)
	}
	var rows []row
	for i := range *runs {
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(config(*pools, *drain, *reboot, i)), 0o644); err != nil {
			log.Fatal(err)
		}
		r := rollout(mcp, dir, *pools)
		log.Printf("rollout %d: estimated %v (%s), took %v (load %s)", i+1, r.est, r.from, r.took, r.load)
		rows = append(rows, r)
	}
	if *out == "" {
		return
	}
	var s strings.Builder
	fmt.Fprintf(&s, "## Estimate against actual on the local fleet\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-estimate` (scripts/benchestimate): `mcp plan -json`'s\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "estimate (the longest pool's `estimate.duration`: pools roll out side by side) against the\n")
	fmt.Fprintf(&s, "makespan of the `mcp apply -auto-approve -json` that follows (first node's first step to\n")
	fmt.Fprintf(&s, "the last node's end), on a local fleet of %d nodes in %d pools (max_unavailable 10%%:\n", *nodes, *pools)
	fmt.Fprintf(&s, "%d at once per pool), every node cordoned, drained (`drain_duration = \"%s\"`), written,\n", max(1, *nodes / *pools / 10), *drain)
	fmt.Fprintf(&s, "rebooted (`reboot_duration = \"%s\"`), verified and uncordoned. The first rollout is\n", *reboot)
	fmt.Fprintf(&s, "estimated from the defaults (docs/configuration.md, \"Estimates\"), the others from the\n")
	fmt.Fprintf(&s, "times apply recorded. Load: the 1-minute load average when the apply started.\n\n")
	fmt.Fprintf(&s, "| rollout | estimated from | estimate | took | estimate / took | load |\n|---|---|--:|--:|--:|--:|\n")
	for i, r := range rows {
		fmt.Fprintf(&s, "| %d | %s | %s | %s | %.2f× | %s |\n", i+1, r.from, r.est.Round(10*time.Millisecond),
			r.took.Round(10*time.Millisecond), float64(r.est)/float64(r.took), r.load)
	}
	fmt.Fprintf(&s, "\n%s", defaultsNote)
	if err := benchdoc.WriteSection(*out, "estimate", s.String()); err != nil {
		log.Fatal(err)
	}
}

const defaultsNote = `The defaults are sized for real machines (minutes per drain and reboot), so the first
estimate of this simulated fleet, whose reboots take seconds, is far too long, and says it
is made from defaults; from the second rollout on the estimate comes from the recorded
times.
`

// config is the configuration of rollout i: every pool's one file changes (a reboot).
func config(pools int, drain, reboot time.Duration, i int) string {
	var h strings.Builder
	fmt.Fprintf(&h, "provider \"local\" {\n  fleet = \"./fleet\"\n  drain_duration = %q\n  reboot_duration = %q\n}\n\n", drain, reboot)
	for p := range pools {
		fmt.Fprintf(&h, "pool \"p%02d\" {\n  max_unavailable = \"10%%\"\n}\n\n", p)
	}
	fmt.Fprintf(&h, "config \"50-bench\" {\n  pools = [")
	for p := range pools {
		fmt.Fprintf(&h, "%q,", fmt.Sprintf("p%02d", p))
	}
	fmt.Fprintf(&h, "]\n  file \"/etc/bench.conf\" { content = \"rollout %d\\n\" }\n}\n", i)
	return h.String()
}

type row struct {
	from      string
	est, took time.Duration
	load      string
}

// rollout plans (reading the pools' estimates) and applies.
func rollout(mcp, dir string, pools int) row {
	plan := exec.Command(mcp, "plan", "-json")
	plan.Dir = dir
	b, err := plan.Output()
	if err != nil {
		log.Fatalf("mcp plan -json: %v", err)
	}
	ests, longest, err := benchdoc.PlanEstimates(b)
	if err != nil || len(ests) != pools {
		log.Fatalf("%v: %d pools estimated, want %d", err, len(ests), pools)
	}
	r := row{est: longest, from: "defaults"}
	for _, e := range ests {
		if e.ObservedNodes > 0 {
			r.from = fmt.Sprintf("%d observed nodes per pool", e.ObservedNodes)
		}
	}
	cmd := exec.Command(mcp, "apply", "-auto-approve", "-json", "-parallelism", "1000")
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	r.load = benchdoc.LoadAverage()
	if err := cmd.Run(); err != nil {
		log.Fatalf("mcp apply: %v\n%s", err, stderr.String())
	}
	t, err := benchdoc.ReadApplyTrace(&stdout)
	if err != nil {
		log.Fatal(err)
	}
	r.took = t.Makespan
	return r
}
