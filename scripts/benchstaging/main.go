// Command benchstaging measures what staging ahead of the slots takes off a rollout: the
// real `mcp apply` on a local fleet of one pool (max_unavailable 10%: k nodes at once),
// every node updating its OS image — a stage (the local provider's stage_duration S), then
// in its slot a pivot and a reboot (reboot_duration T). Twice: with max_staging 0 (each
// node stages in its slot: ceil(N/k)·(S+T)) and with max_staging k (the next nodes stage
// while earlier ones are in their slots: S + ceil(N/k)·T when S ≤ T). Writes the "staging"
// section of docs/benchmarks.md.
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
	nodes := flag.Int("nodes", 20, "nodes of the pool")
	stage := flag.Duration("stage", 2*time.Second, "the local provider's stage_duration, S")
	reboot := flag.Duration("reboot", 4*time.Second, "the local provider's reboot_duration, T")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update (empty: none)")
	flag.Parse()
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	dir, err := os.MkdirTemp("", "mcp-benchstaging-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := benchfleet.Generate(dir, benchfleet.Spec{Nodes: *nodes, Pools: 1, Configs: 1}); err != nil {
		log.Fatal(err)
	}
	hcl := filepath.Join(dir, "main.hcl")
	base, err := os.ReadFile(hcl)
	if err != nil {
		log.Fatal(err)
	}
	const provider, budget = `provider "local" { fleet = "./fleet" }`, `max_unavailable = "10%"`
	if !bytes.Contains(base, []byte(provider)) || !bytes.Contains(base, []byte(budget)) {
		log.Fatalf("%s has no line %s or %s", hcl, provider, budget)
	}
	// write sets the configuration: the durations, and the pool's OS image and max_staging
	// (image "": none).
	write := func(image string, maxStaging int) {
		b := bytes.Replace(base, []byte(provider), []byte(fmt.Sprintf(`provider "local" {
  fleet           = "./fleet"
  stage_duration  = "%s"
  reboot_duration = "%s"
}`, *stage, *reboot)), 1)
		if image != "" {
			b = bytes.Replace(b, []byte(budget), []byte(fmt.Sprintf("%s\n  os_image = %q\n  max_staging = %d", budget, image, maxStaging)), 1)
		}
		if err := os.WriteFile(hcl, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	apply := func() benchdoc.ApplyTrace {
		cmd := exec.Command(mcp, "apply", "-auto-approve", "-json", "-parallelism", fmt.Sprint(*nodes))
		var stdout, stderr bytes.Buffer
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("mcp apply: %v\n%s", err, stderr.String())
		}
		t, err := benchdoc.ReadApplyTrace(&stdout)
		if err != nil {
			log.Fatal(err)
		}
		if t.Updated != *nodes {
			log.Fatalf("mcp apply updated %d nodes, want %d", t.Updated, *nodes)
		}
		return t
	}
	write("", 0)
	apply() // the nodes on a config mcp knows: only they stage ahead

	k := max(1, *nodes/10)
	waves := time.Duration(math.Ceil(float64(*nodes) / float64(k)))
	load := benchdoc.LoadAverage()
	write("quay.io/example/os@sha256:"+strings.Repeat("2", 64), 0)
	inSlot := apply().Makespan
	write("quay.io/example/os@sha256:"+strings.Repeat("3", 64), k)
	ahead := apply().Makespan
	inSlotFloor, aheadFloor := waves*(*stage+*reboot), *stage+waves*max(*reboot, *stage)
	fmt.Printf("%d nodes, k=%d, S=%v, T=%v: max_staging 0 %v (floor %v), max_staging %d %v (floor %v); %.2f× faster (load %s)\n",
		*nodes, k, *stage, *reboot, inSlot.Round(time.Millisecond), inSlotFloor, k, ahead.Round(time.Millisecond), aheadFloor,
		float64(inSlot)/float64(ahead), load)
	if *out == "" {
		return
	}
	var s strings.Builder
	fmt.Fprintf(&s, "## Staging ahead of the slots on the local fleet\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-staging` (scripts/benchstaging): the real `mcp apply\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "-auto-approve -json` on a local fleet of %d nodes in one pool (max_unavailable 10%%: k = %d\n", *nodes, k)
	fmt.Fprintf(&s, "at once), every node updating its OS image: a stage (the local provider's `stage_duration\n")
	fmt.Fprintf(&s, "= \"%s\"`, S), then in its slot a pivot and a reboot (`reboot_duration = \"%s\"`, T; the\n", *stage, *reboot)
	fmt.Fprintf(&s, "other steps instant). With `max_staging = 0` each node stages in its slot: no faster than\n")
	fmt.Fprintf(&s, "ceil(N/k)·(S+T). With `max_staging = %d` the next nodes stage while earlier ones are in\n", k)
	fmt.Fprintf(&s, "their slots: S + ceil(N/k)·max(T, S). Makespan: the first node's first step to the last\n")
	fmt.Fprintf(&s, "node's end, read from apply's JSON events. Load: the 1-minute load average at the start.\n\n")
	fmt.Fprintf(&s, "| max_staging | makespan | floor |\n|---|---|---|\n")
	fmt.Fprintf(&s, "| 0 (in the slot) | %s | %s |\n", inSlot.Round(time.Millisecond), inSlotFloor)
	fmt.Fprintf(&s, "| %d (ahead) | %s | %s |\n\n", k, ahead.Round(time.Millisecond), aheadFloor)
	fmt.Fprintf(&s, "Staging ahead: %.2f× faster; load at start %s.\n\n", float64(inSlot)/float64(ahead), load)
	if err := benchdoc.WriteSection(*out, "staging", s.String()); err != nil {
		log.Fatal(err)
	}
}
