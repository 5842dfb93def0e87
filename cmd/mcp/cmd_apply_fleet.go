package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
)

// applyFleet is apply of a configuration of clusters without a saved plan: every cluster
// is planned and shown as mcp plan shows them, approval is asked once, and the plans are
// carried out stage by stage as a saved plan across clusters is (promote).
func (c *cli) applyFleet(ms []clusters.Member, lf *loadFlags, sf *scopeFlags, opts engine.ApplyOptions, auto, asJSON bool) int {
	if _, err := c.fleetStages(lf); err != nil { // a wrong -approve-stage, before planning
		return c.failErr(err)
	}
	c.intr.setNotice("stopping before any node starts; the state locks are released")
	ps, err := c.showFleet(ms, lf, sf, asJSON)
	if err != nil {
		return c.failErr(err)
	}
	fl := fleetFile(ps)
	for i := range fl.Clusters {
		fl.Clusters[i].Shown = true // approved as shown: a later stage takes the same steps
	}
	if !fleetChanges(fl) {
		return 0
	}
	if !auto {
		v := views.NewApply(false, c.stdout, c.color(lf))
		if code, ok := c.approve(v, lf.input); !ok {
			return code
		}
	}
	return c.promote(fl, lf, opts, asJSON)
}

// fleetChanges says whether applying fl would do anything: a cluster changes, or one is
// unknown (apply then stops at its stage, and says so).
func fleetChanges(fl *planfile.Fleet) bool {
	return slices.ContainsFunc(fl.Clusters, func(cl planfile.Cluster) bool {
		return cl.Plan == nil || cl.Plan.Rollout.HasChanges()
	})
}

// promote carries out a plan across clusters in its order — the stages' `after` order,
// each stage's clusters at most its `concurrency` at once (docs/fleets.md, "Apply across
// clusters"). Each cluster's plan is applied as a saved plan of that cluster alone:
// derived again under its state lock, and refused, by name, when its cluster moved on.
// Promotion stops before a stage with a cluster that was unknown when planned, before a
// stage with `approval` that this run was not told to go into (-approve-stage), once more
// of a stage's clusters failed than its `max_failed_clusters` (no cluster starts after
// that), and after a stage with a soak whose clusters changed: the soak is not waited for.
func (c *cli) promote(fl *planfile.Fleet, lf *loadFlags, opts engine.ApplyOptions, asJSON bool) int {
	if !lf.lock {
		fmt.Fprint(c.stderr, lockFalseWarning)
	}
	stages, err := c.fleetStages(lf)
	if err != nil {
		return c.failErr(err)
	}
	p := promotion{fl: fl, lf: lf, opts: opts, asJSON: asJSON, color: c.color(lf)}
	for from := 0; from < len(fl.Clusters); {
		to := from + 1
		for to < len(fl.Clusters) && fl.Clusters[to].Stage == fl.Clusters[from].Stage {
			to++
		}
		stage, ok := stages[fl.Clusters[from].Stage]
		if !ok { // a saved plan's stage the configuration no longer declares: its defaults
			stage = model.Stage{Name: fl.Clusters[from].Stage}
		}
		if code, stop := c.promoteStage(&p, stage, from, to); stop {
			return code
		}
		from = to
	}
	return p.end(c, 0)
}

// unknownIn is the first cluster of stage at the head of cls that has no plan, or nil.
func unknownIn(cls []planfile.Cluster, stage string) *planfile.Cluster {
	for i := 0; i < len(cls) && cls[i].Stage == stage; i++ {
		if cls[i].Plan == nil {
			return &cls[i]
		}
	}
	return nil
}

// applyCluster applies one cluster's part of a plan across clusters, loading the cluster
// with the variables its plan was made with; it gives apply's exit code, and the apply's
// error when it started no node.
func (c *cli) applyCluster(cl planfile.Cluster, lf *loadFlags, opts engine.ApplyOptions, asJSON, color bool) (int, error) {
	one := *lf
	one.clusters = multiFlag{cl.Name}
	var err error
	if one.values, err = cl.Plan.VariableValues(); err != nil {
		return c.failErr(fmt.Errorf("cluster %s: %w", cl.Name, err)), err
	}
	c.intr.setNotice("stopping before any node starts; the state lock is released")
	ws := c.load(&one)
	if ws == nil {
		return 1, nil
	}
	s, code := c.readStateLocked(ws, &one, "apply")
	if s == nil {
		return code, nil
	}
	defer s.unlock()
	out := &keepWriting{w: c.stdout, stderr: c.stderr, then: "the apply goes on without showing its progress there"}
	p := engine.Saved(cl.Plan)
	if cl.Shown {
		p = engine.Approved(cl.Plan)
	}
	return c.carryOut(ws, s, &one, p, opts, views.NewApply(asJSON, out, color), asJSON, color)
}

// soakStop ends a promotion after stage, whose clusters changed and which soaks, before
// fl's cluster next: the next stage may go once the soak has passed.
func (c *cli) soakStop(fl *planfile.Fleet, next int, stage model.Stage, asJSON bool) int {
	at := time.Now().Add(stage.Soak).UTC().Format("2006-01-02 15:04 MST")
	fmt.Fprintf(c.notes(asJSON), "\nStage %s changed and soaks for %s: the next stage (%s) may go from %s. mcp does not wait for a soak: plan and apply again then (docs/fleets.md).\nNot started: %s.\n",
		stage.Name, model.ShortDuration(stage.Soak), fl.Clusters[next].Stage, at, notStarted(fl.Clusters[next:]))
	return applyExitCode[engine.Incomplete]
}

// notes is where promotion's words between clusters go: stdout, or stderr when stdout is
// JSON lines.
func (c *cli) notes(asJSON bool) io.Writer {
	if asJSON {
		return c.stderr
	}
	return c.stdout
}

// notStarted lists clusters as "prod (stage prod), …".
func notStarted(cls []planfile.Cluster) string {
	if len(cls) == 0 {
		return "none"
	}
	names := make([]string, len(cls))
	for i, cl := range cls {
		names[i] = fmt.Sprintf("%s (stage %s)", cl.Name, cl.Stage)
	}
	return strings.Join(names, ", ")
}

// savedClusters narrows a plan across clusters to the clusters -cluster names (all of
// them without it); a name the plan does not hold is an error naming those it does.
func savedClusters(fl *planfile.Fleet, only []string) ([]planfile.Cluster, error) {
	if len(only) == 0 {
		return fl.Clusters, nil
	}
	var names []string
	var out []planfile.Cluster
	for _, cl := range fl.Clusters {
		names = append(names, cl.Name)
		if slices.Contains(only, cl.Name) {
			out = append(out, cl)
		}
	}
	for _, n := range only {
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("-cluster %s: the saved plan holds no such cluster; its clusters are %s", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// fleetFile is the saved plan across clusters of ps, in their (stage) order.
func fleetFile(ps []clusters.Planned) *planfile.Fleet {
	fl := &planfile.Fleet{MCPVersion: engine.Version, Created: time.Now().UTC()}
	if fl.Waves = fleetWaves(ps); fl.Waves != nil {
		fl.FailureDomains = ps[0].Budget
	}
	for _, p := range ps {
		cl := planfile.Cluster{Name: p.Cluster.Name, Stage: p.Cluster.Stage, Labels: p.Cluster.Labels}
		if part, ok := clusters.PartOf(p); ok {
			cl.Plan, cl.Overrides, cl.Reach = p.Plan.File, part.Overrides, part.Reach
			fl.ConfigDir = p.Plan.File.ConfigDir
		} else {
			cl.Unknown = p.Err.Error()
		}
		fl.Clusters = append(fl.Clusters, cl)
	}
	return fl
}

// fleetWaves are the waves of clusters of ps, stage by stage, when the fleet declares
// failure domains (nil when not: a stage's clusters then go in name order, at most its
// concurrency at once, as the rows already say).
func fleetWaves(ps []clusters.Planned) []model.StageWaves {
	if len(ps) == 0 || len(ps[0].Budget) == 0 {
		return nil
	}
	return ps[0].Budget.StageWaves(ps)
}

// savedFleet is a saved plan across clusters as a plan across clusters is shown: each
// cluster's plan, or why it was unknown, and the parts its changes are grouped from.
func savedFleet(fl *planfile.Fleet) ([]clusters.Planned, []clusters.Part) {
	ps := make([]clusters.Planned, len(fl.Clusters))
	var parts []clusters.Part
	for i, cl := range fl.Clusters {
		ps[i].Member = &clusters.Member{Cluster: model.Cluster{Name: cl.Name, Stage: cl.Stage, Labels: cl.Labels}, Budget: fl.FailureDomains}
		if cl.Plan == nil {
			ps[i].Err = errors.New(cl.Unknown)
			continue
		}
		ps[i].Plan = engine.Saved(cl.Plan)
		parts = append(parts, clusters.Part{Cluster: cl.Name, Rollout: cl.Plan.Rollout, Overrides: cl.Overrides, Reach: cl.Reach})
	}
	return ps, parts
}

// partsOf are the parts the changes of ps are grouped from.
func partsOf(ps []clusters.Planned) []clusters.Part {
	var parts []clusters.Part
	for _, p := range ps {
		if part, ok := clusters.PartOf(p); ok {
			parts = append(parts, part)
		}
	}
	return parts
}
