// Command benchplan measures `mcp plan` on a generated fleet (10,000 nodes, 20 pools, 200
// configs by default): wall time and peak RSS of the real binary, several runs, and writes
// the results into a section of docs/benchmarks.md with the machine described.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfleet/mcp/internal/benchdoc"
	"github.com/mcpfleet/mcp/internal/benchfleet"
)

func main() {
	nodes := flag.Int("nodes", 10000, "nodes in the fleet")
	pools := flag.Int("pools", 20, "pools")
	configs := flag.Int("configs", 200, "configs")
	runs := flag.Int("runs", 5, "plan runs to measure")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update")
	keep := flag.String("keep", "", "generate the fleet and configuration into this directory and keep it")
	flag.Parse()
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "mcp-benchplan-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}

	t0 := time.Now()
	if err := benchfleet.Generate(dir, benchfleet.Spec{Nodes: *nodes, Pools: *pools, Configs: *configs}); err != nil {
		log.Fatal(err)
	}
	gen := time.Since(t0)

	var walls []time.Duration
	var rss []int64
	for i := 0; i < *runs; i++ {
		cmd := exec.Command(mcp, "plan", "-no-color", "-lock=false")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			log.Fatalf("mcp plan: %v\n%s", err, stderr.String())
		}
		walls = append(walls, time.Since(start))
		rss = append(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) // KiB on Linux
	}
	slices.Sort(walls)
	slices.Sort(rss)
	med, worst := walls[len(walls)/2], walls[len(walls)-1]
	peak := rss[len(rss)-1]
	fmt.Printf("mcp plan: %d nodes, %d pools, %d configs: median %v, worst %v, peak RSS %.1f MB (fleet generated in %v)\n",
		*nodes, *pools, *configs, med.Round(time.Millisecond), worst.Round(time.Millisecond), float64(peak)/1024, gen.Round(time.Millisecond))

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## mcp plan on a generated fleet\n\n")
	fmt.Fprintf(&b, "Measured %s by `make bench` (scripts/benchplan): the real `mcp plan` binary, %d runs, on a\n", time.Now().UTC().Format("2006-01-02"), *runs)
	fmt.Fprintf(&b, "local fleet of %d nodes in %d pools with %d configs (each 3 files and a unit), every node\n", *nodes, *pools, *configs)
	fmt.Fprintf(&b, "needing an update. Wall time includes loading HCL, rendering and validating %d Ignition\n", *pools)
	fmt.Fprintf(&b, "configs, reading %d node directories, planning and printing the plan.\n\n", *nodes)
	fmt.Fprintf(&b, "| measure | result | target |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| wall time, median of %d | %v | ≤ 1 s (%s) |\n", *runs, med.Round(time.Millisecond), verdict(med <= time.Second))
	fmt.Fprintf(&b, "| wall time, worst | %v | |\n", worst.Round(time.Millisecond))
	fmt.Fprintf(&b, "| peak RSS, worst run | %.1f MB | ≤ 300 MB (%s) |\n\n", float64(peak)/1024, verdict(peak <= 300*1024))
	if err := benchdoc.WriteSection(*out, "plan", b.String()); err != nil {
		log.Fatal(err)
	}
}
