// Command benchplan measures `mcp plan` on generated fleets (10,000 and 100,000 nodes, 20
// pools, 200 configs by default): wall time, CPU time and peak RSS of the real binary,
// several runs per size, and writes the results into a section of docs/benchmarks.md with
// the machine described.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
	"github.com/mcpfleet/mcp/testkit/benchfleet"
)

// target is a size's goal: wall time (median) and peak RSS.
type target struct {
	wall time.Duration
	rss  int64 // KiB; 0: none
}

var targets = map[int]target{10000: {time.Second, 300 * 1024}, 100000: {3 * time.Second, 300 * 1024}}

type result struct {
	nodes       int
	gen         time.Duration
	walls, cpus []time.Duration // sorted
	rss         int64           // KiB, worst run
	loads       []string        // 1-minute load average before each run
}

func main() {
	sizes := flag.String("nodes", "10000,100000", "fleet sizes, comma-separated")
	pools := flag.Int("pools", 20, "pools")
	configs := flag.Int("configs", 200, "configs")
	runs := flag.Int("runs", 5, "plan runs to measure per size")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update (empty: none)")
	keep := flag.String("keep", "", "generate the fleets and configurations into DIR/<nodes> and keep them")
	flag.Parse()
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	var results []result
	for _, n := range benchdoc.Counts(*sizes, "-nodes") {
		r, err := measure(mcp, benchfleet.Spec{Nodes: n, Pools: *pools, Configs: *configs}, *runs, *keep)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("mcp plan: %d nodes, %d pools, %d configs: median %v (CPU %v), worst %v, peak RSS %.1f MB, loads %s (fleet generated in %v)\n",
			n, *pools, *configs, median(r.walls).Round(time.Millisecond), median(r.cpus).Round(time.Millisecond),
			r.walls[len(r.walls)-1].Round(time.Millisecond), float64(r.rss)/1024, strings.Join(r.loads, " "), r.gen.Round(time.Millisecond))
		results = append(results, r)
	}
	if *out == "" {
		return
	}
	if err := benchdoc.WriteSection(*out, "plan", section(results, *pools, *configs, *runs)); err != nil {
		log.Fatal(err)
	}
}

// measure generates a fleet and runs mcp plan on it runs times.
func measure(mcp string, spec benchfleet.Spec, runs int, keep string) (result, error) {
	r := result{nodes: spec.Nodes}
	dir := filepath.Join(keep, strconv.Itoa(spec.Nodes))
	if keep == "" {
		d, err := os.MkdirTemp("", "mcp-benchplan-")
		if err != nil {
			return r, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := benchfleet.Generate(dir, spec); err != nil {
		return r, err
	}
	r.gen = time.Since(t0)
	for i := 0; i < runs; i++ {
		cmd := exec.Command(mcp, "plan", "-no-color", "-lock=false")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		r.loads = append(r.loads, benchdoc.LoadAverage())
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return r, fmt.Errorf("mcp plan, %d nodes: %v\n%s", spec.Nodes, err, stderr.String())
		}
		r.walls = append(r.walls, time.Since(start))
		cpu, rss := benchdoc.Usage(cmd.ProcessState)
		r.cpus = append(r.cpus, cpu)
		r.rss = max(r.rss, rss)
	}
	slices.Sort(r.walls)
	slices.Sort(r.cpus)
	return r, nil
}

func median(ds []time.Duration) time.Duration { return ds[len(ds)/2] }

func section(rs []result, pools, configs, runs int) string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## mcp plan on a generated fleet\n\n")
	fmt.Fprintf(&b, "Measured %s by `make bench` (scripts/benchplan): the real `mcp plan` binary, %d runs per size, on\n", time.Now().UTC().Format("2006-01-02"), runs)
	fmt.Fprintf(&b, "local fleets in %d pools with %d configs (each 3 files and a unit), every node needing an\n", pools, configs)
	fmt.Fprintf(&b, "update. Wall time includes loading HCL, rendering and validating %d Ignition configs, reading\n", pools)
	fmt.Fprintf(&b, "every node directory, planning and printing the plan (to /dev/null). CPU is the process's\n")
	fmt.Fprintf(&b, "user + system time; peak RSS its rusage's. Load: the 1-minute load average before each run\n")
	fmt.Fprintf(&b, "(the machine's 2 cores are shared).\n\n")
	fmt.Fprintf(&b, "| nodes | wall, median | wall, worst | CPU, median | peak RSS, worst | load | target | |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		med := median(r.walls)
		goal, ok := "", ""
		if t, has := targets[r.nodes]; has {
			goal = fmt.Sprintf("≤ %v", t.wall)
			met := med <= t.wall
			if t.rss > 0 {
				goal += fmt.Sprintf(", ≤ %d MB", t.rss/1024)
				met = met && r.rss <= t.rss
			}
			ok = verdict(met)
		}
		fmt.Fprintf(&b, "| %d | %v | %v | %v | %.1f MB | %s | %s | %s |\n", r.nodes, med.Round(time.Millisecond),
			r.walls[len(r.walls)-1].Round(time.Millisecond), median(r.cpus).Round(time.Millisecond), float64(r.rss)/1024,
			strings.Join(r.loads, " "), goal, ok)
	}
	b.WriteString("\n")
	return b.String()
}
