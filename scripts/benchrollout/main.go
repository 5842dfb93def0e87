// Command benchrollout measures the makespan of `mcp apply` on a local fleet whose nodes
// take time to reboot: 1,000 nodes in 4 pools (max_unavailable 10%: k = 25 nodes at once
// per pool), every node rebooting into its first config with the local provider's
// reboot_duration T, at a -parallelism that does not limit them. The budgets set the
// floor, ceil(N/k)·T per pool (pools roll out side by side); the makespan, from the first
// node's first step to the last node's end, should be close to it: what mcp adds per wave
// is its own overhead. Writes the "rollout" section of docs/benchmarks.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
	"github.com/mcpfleet/mcp/testkit/benchfleet"
)

func main() {
	nodes := flag.Int("nodes", 1000, "nodes")
	pools := flag.Int("pools", 4, "pools (max_unavailable 10% each)")
	reboot := flag.Duration("reboot", 10*time.Second, "the local provider's reboot_duration, T")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update (empty: none)")
	flag.Parse()
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	dir, err := os.MkdirTemp("", "mcp-benchrollout-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := benchfleet.Generate(dir, benchfleet.Spec{Nodes: *nodes, Pools: *pools, Configs: *pools}); err != nil {
		log.Fatal(err)
	}
	hcl := filepath.Join(dir, "main.hcl")
	b, err := os.ReadFile(hcl)
	if err != nil {
		log.Fatal(err)
	}
	const provider = `provider "local" { fleet = "./fleet" }`
	if !bytes.Contains(b, []byte(provider)) {
		log.Fatalf("%s has no line %s", hcl, provider)
	}
	b = bytes.Replace(b, []byte(provider), []byte(fmt.Sprintf(`provider "local" {
  fleet           = "./fleet"
  reboot_duration = "%s"
}`, *reboot)), 1)
	if err := os.WriteFile(hcl, b, 0o644); err != nil {
		log.Fatal(err)
	}

	perPool := int(math.Ceil(float64(*nodes) / float64(*pools)))
	k := max(1, perPool/10) // max_unavailable 10%, rounded down as the planner does
	parallelism := k * *pools
	cmd := exec.Command(mcp, "apply", "-auto-approve", "-json", "-parallelism", fmt.Sprint(parallelism))
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	load := benchdoc.LoadAverage()
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("mcp apply: %v\n%s", err, stderr.String())
	}
	wall := time.Since(start)
	t, err := benchdoc.ReadApplyTrace(&stdout)
	if err != nil {
		log.Fatal(err)
	}
	if t.Updated != *nodes {
		log.Fatalf("mcp apply updated %d nodes, want %d", t.Updated, *nodes)
	}
	limit := time.Duration(math.Ceil(float64(perPool)/float64(k))) * *reboot
	ratio := float64(t.Makespan) / float64(limit)
	fmt.Printf("rollout of %d nodes, k=%d per pool, T=%v: makespan %v, limit %v, ratio %.3f (wall %v, load %s)\n",
		*nodes, k, *reboot, t.Makespan.Round(time.Millisecond), limit, ratio, wall.Round(time.Millisecond), load)
	if *out == "" {
		return
	}
	verdict := "met"
	if ratio > 1.05 {
		verdict = "NOT met"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "## Rollout makespan on the local fleet\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-rollout` (scripts/benchrollout): the real `mcp apply\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "-auto-approve -json -parallelism %d` on a fresh local fleet of %d nodes in %d pools\n", parallelism, *nodes, *pools)
	fmt.Fprintf(&s, "(max_unavailable 10%%: k = %d per pool), every node rebooting into its first config with\n", k)
	fmt.Fprintf(&s, "the local provider's `reboot_duration = \"%s\"` (T; the other steps are instant). The\n", *reboot)
	fmt.Fprintf(&s, "budgets allow no faster rollout than ceil(N/k)·T per pool, the pools side by side; the\n")
	fmt.Fprintf(&s, "makespan is from the first node's first step to the last node's end (after its health\n")
	fmt.Fprintf(&s, "gates), read from apply's JSON events. Load: the 1-minute load average at the start.\n\n")
	fmt.Fprintf(&s, "| measure | result | target |\n|---|---|---|\n")
	fmt.Fprintf(&s, "| makespan | %s | |\n", t.Makespan.Round(time.Millisecond))
	fmt.Fprintf(&s, "| limit ceil(%d/%d)·%s | %s | |\n", perPool, k, *reboot, limit)
	fmt.Fprintf(&s, "| makespan / limit | %.3f× | ≤ 1.05× (%s) |\n", ratio, verdict)
	fmt.Fprintf(&s, "| apply wall (with refresh and plan) | %s | |\n", wall.Round(time.Millisecond))
	fmt.Fprintf(&s, "| load at start | %s | |\n\n", load)
	if err := benchdoc.WriteSection(*out, "rollout", s.String()); err != nil {
		log.Fatal(err)
	}
}
