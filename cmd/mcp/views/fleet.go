package views

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// FleetPlan writes the head of a plan across clusters: a summary line, then one row per
// cluster — its stage, its nodes changing, waves, blocked and drifted nodes, its changing
// pools' maintenance window, its estimate (its longest pool's), who holds its state lock when another run does — and why each unknown cluster is unknown. Each
// cluster's own plan follows it (ClusterHeader, then the plan view as for one cluster).
func FleetPlan(out io.Writer, ps []clusters.Planned, color bool) error {
	w := bufio.NewWriter(out)
	c := painter(color)
	fmt.Fprintf(w, "%s\n\n", c.bold(FleetSummary(ps)))
	var t columns
	t.add("CLUSTER", "STAGE", "CHANGING", "WAVES", "BLOCKED", "DRIFTED", "WINDOW", "ESTIMATE", "LOCK HELD BY", "PLAN")
	soaks := false
	for _, p := range ps {
		stage := p.Cluster.Stage
		if p.Stage.Soak > 0 {
			stage, soaks = fmt.Sprintf("%s (soak %s*)", stage, model.ShortDuration(p.Stage.Soak)), true
		}
		holder := "-"
		if p.LockHolder != "" {
			holder = p.LockHolder
		}
		if p.Plan == nil {
			t.add(p.Cluster.Name, stage, "?", "?", "?", "?", "?", "?", holder, c.red("unknown"))
			continue
		}
		r := p.Plan.File.Rollout
		n := countRollout(r)
		verdict := "no changes"
		switch {
		case soakRefused(p.Plan.File.Soak):
			verdict = c.red("waits for soak")
		case r.HasChanges():
			verdict = c.yellow("changes")
		}
		t.add(p.Cluster.Name, stage, fmt.Sprintf("%d (%d reboot)", n.nodes, n.reboot), fmt.Sprint(n.waves),
			fmt.Sprint(n.blocked), fmt.Sprint(len(r.Drifted())), windowCell(r), estimateCell(r), holder, verdict)
	}
	if err := t.write(w); err != nil {
		return err
	}
	for _, p := range ps {
		if p.Plan == nil {
			fmt.Fprintf(w, "\n%s cluster %s is unknown: %s\n", c.red("Error:"), p.Cluster.Name, Capitalize(p.Err.Error()))
		}
	}
	if soaks {
		fmt.Fprintln(w, "\n* A stage's soak: a later stage's plan and apply refuse a config that has not run this long on its clusters; apply across clusters stops after a stage with a soak whose clusters changed (docs/fleets.md).")
	}
	return w.Flush()
}

// windowCell is a cluster's maintenance windows in its row, for its pools that change:
// "-" when none has a window; else closed (with the soonest next opening) when any is,
// or open until the soonest closing.
func windowCell(r *planner.Rollout) string {
	changing := map[string]bool{}
	for i := range r.Nodes {
		changing[r.Nodes[i].Pool] = changing[r.Nodes[i].Pool] || r.Nodes[i].Changed()
	}
	var closed, open *time.Time
	any := false
	for _, pp := range r.Pools {
		ws := pp.Window
		if ws == nil || !changing[pp.Name] {
			continue
		}
		any = true
		switch {
		case !ws.Open && ws.NextOpening != nil && (closed == nil || ws.NextOpening.Before(*closed)):
			closed = ws.NextOpening
		case !ws.Open && closed == nil:
			closed = &time.Time{}
		case ws.Open && ws.Closes != nil && (open == nil || ws.Closes.Before(*open)):
			open = ws.Closes
		}
	}
	switch {
	case !any:
		return "-"
	case closed != nil && closed.IsZero():
		return "closed"
	case closed != nil:
		return "closed, opens " + closed.Format(windowTime)
	case open != nil:
		return "open until " + open.Format(windowTime)
	}
	return "open"
}

// ClusterHeader opens one cluster's part of a plan across clusters.
func ClusterHeader(w io.Writer, p clusters.Planned, color bool) {
	ClusterTitle(w, p.Cluster.Name, p.Cluster.Stage, color)
}

// ClusterTitle opens one cluster's part of a plan or an apply across clusters.
func ClusterTitle(w io.Writer, name, stage string, color bool) {
	title := fmt.Sprintf("Cluster %s (stage %s)", name, stage)
	fmt.Fprintf(w, "\n%s\n%s\n\n", painter(color).bold(title), strings.Repeat("─", len(title)))
}

// rolloutCounts are a cluster's plan in numbers, for its row and the fleet's summary.
type rolloutCounts struct {
	nodes, reboot, adopt, blocked, waves, poolsBlocked int
}

func countRollout(r *planner.Rollout) rolloutCounts {
	n := rolloutCounts{adopt: adopts(r)}
	for i := range r.Nodes {
		nd := &r.Nodes[i]
		if !nd.Changed() || nd.Action == planner.NodeAdopt {
			continue
		}
		n.nodes++
		if nd.Reboot {
			n.reboot++
		}
		if hasBlock(nd.Blockers) {
			n.blocked++
		}
	}
	for _, pp := range r.Pools {
		n.waves = max(n.waves, pp.Waves)
		if hasBlock(pp.Blockers) {
			n.poolsBlocked++
		}
	}
	return n
}

// FleetSummary is the plan across clusters in one line: "Fleet: 3 clusters, 1 changing,
// 1 unchanged, 1 unknown; 4 nodes to update (2 reboot, 2 in place), 0 to adopt; 0 pools
// blocked."
func FleetSummary(ps []clusters.Planned) string {
	var changing, unchanged, unknown int
	var sum rolloutCounts
	for _, p := range ps {
		switch {
		case p.Plan == nil:
			unknown++
			continue
		case p.Plan.File.Rollout.HasChanges():
			changing++
		default:
			unchanged++
		}
		n := countRollout(p.Plan.File.Rollout)
		sum.nodes, sum.reboot, sum.adopt = sum.nodes+n.nodes, sum.reboot+n.reboot, sum.adopt+n.adopt
		sum.poolsBlocked += n.poolsBlocked
	}
	return fmt.Sprintf("Fleet: %s, %d changing, %d unchanged, %d unknown; %s (%d reboot, %d in place), %d to adopt; %s blocked.",
		plural(len(ps), "%d cluster", "%d clusters"), changing, unchanged, unknown,
		plural(sum.nodes, "%d node to update", "%d nodes to update"), sum.reboot, sum.nodes-sum.reboot, sum.adopt,
		plural(sum.poolsBlocked, "%d pool", "%d pools"))
}

// FleetWaves writes the waves of clusters each stage's concurrency and the failure
// domains make (none without failure_domain blocks), and which domain held a cluster back:
//
//	stage prod: wave 1 prod-eu-a, prod-us-a; wave 2 prod-eu-b, prod-us-b
//	  held from wave 1 by a full failure domain: prod-eu-b (region=eu), prod-us-b (region=us)
func FleetWaves(out io.Writer, waves []model.StageWaves) error {
	if len(waves) == 0 {
		return nil
	}
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, "\nWaves of clusters (each stage's concurrency; at most max_disrupting clusters of a failure domain draining or rebooting nodes at once):")
	for _, sw := range waves {
		var ws []string
		for i, wv := range sw.Waves {
			ws = append(ws, fmt.Sprintf("wave %d %s", i+1, strings.Join(wv.Clusters, ", ")))
		}
		if len(ws) == 0 {
			ws = []string{"no cluster planned"}
		}
		fmt.Fprintf(w, "  stage %s: %s\n", sw.Stage, strings.Join(ws, "; "))
		for i, wv := range sw.Waves {
			if len(wv.Held) == 0 {
				continue
			}
			var held []string
			for _, n := range slices.Sorted(maps.Keys(wv.Held)) {
				held = append(held, fmt.Sprintf("%s (%s)", n, wv.Held[n]))
			}
			fmt.Fprintf(w, "    held from wave %d by a full failure domain: %s\n", i+1, strings.Join(held, ", "))
		}
	}
	return w.Flush()
}
