package views

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/testkit/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the views print")

// Each command's view, in each form, goes through all its methods and prints exactly
// testdata/<command>.<form>.golden. The goldens were written by the commands' own
// formatting code before it moved into the views, so that mcp's output did not change.
func TestCommandViews(t *testing.T) {
	forms := []struct {
		name          string
		asJSON, color bool
	}{{"human", false, false}, {"color", false, true}, {"json", true, false}}
	commands := []struct {
		name string
		run  func(w io.Writer, asJSON, color bool) error
	}{
		{"plan", func(w io.Writer, asJSON, color bool) error {
			v := NewPlan(asJSON, w, color)
			if err := v.Plan(samplePlanFile()); err != nil {
				return err
			}
			v.Saved("my plan")
			return nil
		}},
		{"plan-nochange", func(w io.Writer, asJSON, color bool) error {
			pf := samplePlanFile()
			pf.Rollout = &planner.Rollout{Pools: []planner.PoolPlan{{Name: "w", Rendered: "r", Previous: "r"}},
				Nodes: []planner.NodePlan{{Name: "n", Pool: "w", Action: planner.NodeNoOp}}}
			v := NewPlan(asJSON, w, color)
			if err := v.Plan(pf); err != nil {
				return err
			}
			v.Saved("my plan")
			return nil
		}},
		{"apply", func(w io.Writer, asJSON, color bool) error {
			v := NewApply(asJSON, w, color)
			if err := v.Plan(samplePlanFile()); err != nil {
				return err
			}
			v.AskApproval()
			v.Cancelled()
			for _, e := range sampleEvents() {
				v.Event(e)
			}
			v.Summary(SummaryOf(sampleResult()))
			return nil
		}},
		{"show", func(w io.Writer, asJSON, color bool) error {
			v := NewShow(asJSON, w, color)
			if err := v.Plan(samplePlanFile()); err != nil {
				return err
			}
			return v.Rendered(sampleRendered())
		}},
	}
	// The apply summary's JSON carries the time it was printed.
	now := regexp.MustCompile(`"@timestamp":"[^"]*"(,"type":"apply_summary")`)
	for _, c := range commands {
		for _, f := range forms {
			name := c.name + "." + f.name
			t.Run(name, func(t *testing.T) {
				var b bytes.Buffer
				if err := c.run(&b, f.asJSON, f.color); err != nil {
					t.Fatal(err)
				}
				got := now.ReplaceAllString(b.String(), `"@timestamp":"NOW"$1`)
				golden.Check(t, filepath.Join("testdata", name+".golden"), got, *update)
			})
		}
	}
}

func samplePlanFile() *planfile.File {
	return &planfile.File{MCPVersion: "test", ConfigDir: "/cfg", Lineage: "l", Serial: 3, FleetFingerprint: "f",
		Rollout: samplePlan(), Refresh: &model.RefreshStats{Nodes: 5, Pods: 3, PDBs: 1, APIRequests: 4, Duration: 42 * time.Millisecond}}
}

func sampleRendered() *model.Rendered {
	return &model.Rendered{Name: "rendered-worker-2", Pool: "worker", IgnitionVersion: "3.4.0", KernelArgs: []string{"nosmt"},
		Files:   []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a\n")}},
		Sources: []string{"50-a", "60-b"},
		// Stored with an Ignition config of its own (as an older mcp stored configs): shown
		// as stored, which keeps the golden files short.
		LegacyIgnition: []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a%0A"}}]}}`),
		Provenance: &model.Provenance{
			Files: map[string]model.Written{"/etc/a": {By: model.Origin{Block: "config.60-b", File: "b.hcl", Line: 3, Column: 8},
				Overrode: []model.Origin{{Block: "config.50-a", File: "a.hcl", Line: 2, Column: 8}}}},
			KernelArgs: map[string]model.Written{"nosmt": {By: model.Origin{Block: "pool.worker", File: "main.hcl", Line: 4, Column: 17}}}}}
}

// sampleEvents is one event of each kind.
func sampleEvents() []engine.Event {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drain := model.Step{Kind: model.StepDrain, Reason: "reboot"}
	return []engine.Event{
		{Time: at, Kind: engine.EventWaiting, Node: "w-1", Pool: "worker", Reason: "max_unavailable 1: 1 of the pool's nodes is out of service"},
		{Time: at, Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: drain},
		{Time: at, Kind: engine.EventStepDone, Node: "w-0", Pool: "worker", Step: drain, Elapsed: 1500 * time.Millisecond},
		{Time: at, Kind: engine.EventStepDone, Node: "w-0", Pool: "worker", Elapsed: 40 * time.Second,
			Step: model.Step{Kind: model.StepReboot, Reason: "kernel arguments +nosmt", Evidence: "boot id 9d72a2317ce95604ab300b8a80bbd582 → c4d0ada85fad9326215d92619da43e79"}},
		{Time: at, Kind: engine.EventNodeDone, Node: "w-0", Pool: "worker"},
		{Time: at, Kind: engine.EventStepFailed, Node: "w-1", Pool: "worker", Step: drain, Err: errors.New("refused")},
		{Time: at, Kind: engine.EventNodeFailed, Node: "w-1", Pool: "worker", Err: errors.New("node w-1: drain: refused")},
		{Time: at, Kind: engine.EventPoolStopped, Pool: "worker"},
	}
}

// sampleResult is an apply with a failed node, a skipped and a deferred one, and two errors.
func sampleResult() (*engine.ApplyResult, error) {
	return &engine.ApplyResult{Updated: []string{"w-0"}, Failed: []string{"w-1"}, Skipped: []string{"w-2"},
			Deferred: []string{"infra-0"}, Elapsed: 3 * time.Second, NotStarted: map[string]engine.NotStarted{
				"w-2":     {Why: "pool worker stopped after its failed nodes"},
				"infra-0": {Why: "deferred by the plan: pool infra is paused", Held: true}}},
		errors.Join(fmt.Errorf("node w-1: drain: refused"), fmt.Errorf("pool worker stopped"))
}
