// Command benchapply measures `mcp apply -auto-approve` on generated fleets (1,000, 2,000,
// 4,000 and 10,000 nodes in 20 pools by default, every node changing, steps instant: the
// local provider's drain and reboot durations are 0), at apply's default -parallelism (10)
// and at 40: wall time, CPU time (user + system of the child) and CPU per node of the real
// binary, and writes the results into a section of docs/benchmarks.md with the machine
// described. Each run gets a fresh fleet; after each apply, mcp plan must find nothing
// left to do.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
	"github.com/mcpfleet/mcp/testkit/benchfleet"
)

type result struct {
	nodes       int
	parallelism int
	gen, wall   time.Duration
	cpu         time.Duration // user + system of the apply process
	rss         int64         // KiB
	load        string        // /proc/loadavg's 1-minute load when the apply started
}

func (r result) perNode() time.Duration { return r.cpu / time.Duration(r.nodes) }

// settle is the pause before each measured apply, after a sync. The first waits longer:
// on ext4 without a journal (this machine's), allocating an inode skips every inode freed
// in the last 60 s, so files deleted just before (an earlier benchmark's fleet) would make
// each file the apply creates cost more. For the same reason each run's fleet is kept until
// the last run is done.
const (
	settle      = 5 * time.Second
	firstSettle = 65 * time.Second
)

func main() {
	sizes := flag.String("nodes", "1000,2000,4000,10000", "fleet sizes, comma-separated")
	pools := flag.Int("pools", 20, "pools")
	configs := flag.Int("configs", 20, "configs, spread over the pools (each 3 files and a unit)")
	pars := flag.String("parallelism", "10,40", "mcp apply -parallelism values, comma-separated")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update (empty: none)")
	flag.Parse()
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	var results []result
	var dirs []string
	defer func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}()
	for _, par := range benchdoc.Counts(*pars, "-parallelism") {
		for _, n := range benchdoc.Counts(*sizes, "-nodes") {
			dir, err := os.MkdirTemp("", "mcp-benchapply-")
			if err != nil {
				log.Fatal(err)
			}
			dirs = append(dirs, dir)
			pause := settle
			if len(dirs) == 1 {
				pause = firstSettle
			}
			r, err := run(mcp, dir, benchfleet.Spec{Nodes: n, Pools: *pools, Configs: *configs}, par, pause)
			if err != nil {
				for _, d := range dirs {
					os.RemoveAll(d)
				}
				log.Fatal(err)
			}
			fmt.Printf("mcp apply -parallelism %d: %d nodes: wall %v, CPU %v (%v per node), peak RSS %.1f MB, load %s (fleet generated in %v)\n",
				par, r.nodes, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), r.perNode().Round(time.Microsecond),
				float64(r.rss)/1024, r.load, r.gen.Round(time.Millisecond))
			results = append(results, r)
		}
	}
	if *out == "" {
		return
	}
	if err := benchdoc.WriteSection(*out, "apply", section(results, *pools, *configs)); err != nil {
		log.Fatal(err)
	}
}

// run generates a fleet in dir, applies it and checks that nothing is left to do.
func run(mcp, dir string, spec benchfleet.Spec, parallelism int, pause time.Duration) (result, error) {
	r := result{nodes: spec.Nodes, parallelism: parallelism}
	t0 := time.Now()
	if err := benchfleet.Generate(dir, spec); err != nil {
		return r, err
	}
	r.gen = time.Since(t0)
	// The generated fleet, and the last run's writes and removed fleet, written back before
	// the measured run rather than during it.
	syscall.Sync()
	time.Sleep(pause)
	logPath := filepath.Join(dir, "apply.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return r, err
	}
	defer logFile.Close()
	cmd := exec.Command(mcp, "apply", "-auto-approve", "-no-color", "-parallelism", strconv.Itoa(parallelism))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logFile, logFile
	r.load = benchdoc.LoadAverage()
	start := time.Now()
	err = cmd.Run()
	r.wall = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("mcp apply, %d nodes: %v\n%s", spec.Nodes, err, tail(logPath))
	}
	r.cpu, r.rss = benchdoc.Usage(cmd.ProcessState)
	plan := exec.Command(mcp, "plan", "-detailed-exitcode", "-no-color", "-lock=false")
	plan.Dir = dir
	var b bytes.Buffer
	plan.Stdout, plan.Stderr = &b, &b
	if err := plan.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 2 {
			return r, fmt.Errorf("after mcp apply of %d nodes, mcp plan finds changes left:\n%s", spec.Nodes, lastLines(b.String(), 20))
		}
		return r, fmt.Errorf("mcp plan after apply: %v\n%s", err, lastLines(b.String(), 20))
	}
	return r, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	return lastLines(string(b), 20)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func section(rs []result, pools, configs int) string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## mcp apply on a generated fleet\n\n")
	fmt.Fprintf(&b, "Measured %s by `make bench-apply` (scripts/benchapply): the real `mcp apply -auto-approve`\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "binary, once per size and parallelism (10 is apply's default), on a fresh local fleet in %d\n", pools)
	fmt.Fprintf(&b, "pools (max_unavailable 10%%) with %d configs (each 3 files and a unit; %d per pool), every node\n", configs, max(1, configs/pools))
	fmt.Fprintf(&b, "updating from no config: cordon, drain (no pods), write the files and units, reboot, verify,\n")
	fmt.Fprintf(&b, "uncordon. Steps are instant (the local provider's drain_duration and reboot_duration are 0),\n")
	fmt.Fprintf(&b, "so the times are mcp's own: the engine, the local provider's bookkeeping (node.json, event\n")
	fmt.Fprintf(&b, "logs) and the node executor's file writes. A node costs about 500 system calls: eight\n")
	fmt.Fprintf(&b, "changes of its node.json (its claim and release among them; swapped in, no inode allocated:\n")
	fmt.Fprintf(&b, "docs/fleet-format.md), its events, the executor's files (four written, the pending record\n")
	fmt.Fprintf(&b, "written and removed) and\n")
	fmt.Fprintf(&b, "the state journal (fsync'd, group-committed); the simulated nodes' own files are not\n")
	fmt.Fprintf(&b, "fsync'd (they must survive a killed process, not a crashed machine). Most of the CPU time\n")
	fmt.Fprintf(&b, "is the kernel's, on this virtual machine. Each apply starts after a sync and a %v pause\n", settle)
	fmt.Fprintf(&b, "(%v before the first: this disk is ext4 without a journal, where each new inode skips\n", firstSettle)
	fmt.Fprintf(&b, "those freed in the last 60 s, so the fleets are deleted only after the last run). Wall time includes the plan\n")
	fmt.Fprintf(&b, "before the apply; CPU time is the apply process's user + system time (its rusage). After\n")
	fmt.Fprintf(&b, "each apply, `mcp plan` found nothing left to do. Load: the 1-minute load average when the\n")
	fmt.Fprintf(&b, "apply started — other work on the shared 2 cores, and what this benchmark's previous run\n")
	fmt.Fprintf(&b, "(waiting on fsyncs counts) left in the average.\n\n")
	fmt.Fprintf(&b, "| nodes | parallelism | wall | CPU (user + sys) | CPU per node | peak RSS | load |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %d | %d | %v | %v | %v | %.1f MB | %s |\n", r.nodes, r.parallelism, r.wall.Round(100*time.Millisecond),
			r.cpu.Round(100*time.Millisecond), r.perNode().Round(10*time.Microsecond), float64(r.rss)/1024, r.load)
	}
	b.WriteString("\n| target | parallelism | result |\n|---|---|---|\n")
	var pars []int
	for _, r := range rs {
		if !slices.Contains(pars, r.parallelism) {
			pars = append(pars, r.parallelism)
		}
	}
	for _, par := range pars {
		var runs []result
		for _, r := range rs {
			if r.parallelism == par {
				runs = append(runs, r)
			}
		}
		for _, r := range runs {
			if r.nodes == 10000 {
				fmt.Fprintf(&b, "| apply of 10,000 nodes ≤ 60 s wall | %d | %v (%s) |\n", par, r.wall.Round(100*time.Millisecond), verdict(r.wall <= time.Minute))
			}
		}
		if len(runs) > 1 {
			base := runs[0].perNode()
			lo, hi := base, base
			for _, r := range runs {
				lo, hi = min(lo, r.perNode()), max(hi, r.perNode())
			}
			dev := max(float64(hi-base), float64(base-lo)) / float64(base)
			fmt.Fprintf(&b, "| CPU per node flat within ±20%% from %d to %d nodes | %d | %v to %v, at most %.0f%% from the %d-node figure (%s) |\n",
				runs[0].nodes, runs[len(runs)-1].nodes, par, lo.Round(10*time.Microsecond), hi.Round(10*time.Microsecond), 100*dev, runs[0].nodes, verdict(dev <= 0.2))
		}
	}
	b.WriteString("\n")
	return b.String()
}
