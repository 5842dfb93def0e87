package main

import (
	"errors"
	"fmt"
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
	c.intr.setNotice("stopping before any node starts; the state locks are released")
	ps, err := c.showFleet(ms, lf, sf, asJSON)
	if err != nil {
		return c.failErr(err)
	}
	fl := fleetFile(ps)
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
// the clusters of a stage one after another (docs/fleets.md, "Apply across clusters").
// Each cluster's plan is applied as a saved plan of that cluster alone: derived again
// under its state lock, and refused, by name, when its cluster moved on. Promotion stops
// at the first cluster that was unknown when planned, was refused, failed or did not
// finish — no cluster after it starts — and after a stage with a soak whose clusters
// changed: the soak is not waited for.
func (c *cli) promote(fl *planfile.Fleet, lf *loadFlags, opts engine.ApplyOptions, asJSON bool) int {
	if !lf.lock {
		fmt.Fprint(c.stderr, lockFalseWarning)
	}
	color := c.color(lf)
	changed := false
	for i, cl := range fl.Clusters {
		if c.ctx.Err() != nil {
			return c.stopAt(fl, i, 1, "an interrupt, after the clusters above")
		}
		if i == 0 || fl.Clusters[i-1].Stage != cl.Stage {
			if u := unknownIn(fl.Clusters[i:], cl.Stage); u != nil {
				return c.stopAt(fl, i, 1, fmt.Sprintf("stage %s: its cluster %s was unknown when the plan was made: %s", cl.Stage, u.Name, u.Unknown))
			}
		}
		if !asJSON {
			views.ClusterTitle(c.stdout, cl.Name, cl.Stage, color)
		}
		code, stage, err := c.applyCluster(cl, lf, opts, asJSON, color)
		if code != 0 {
			why := "its apply failed"
			switch {
			case errors.Is(err, planfile.ErrStale):
				why = "it moved on since the plan was made, and its part of the saved plan is refused (plan again)"
			case code == 2:
				why = "its apply did not finish every node"
			}
			return c.stopAt(fl, i+1, code, fmt.Sprintf("cluster %s (stage %s): %s; see above", cl.Name, cl.Stage, why))
		}
		changed = changed || cl.Plan.Rollout.HasChanges()
		if i+1 == len(fl.Clusters) || fl.Clusters[i+1].Stage == cl.Stage {
			continue
		}
		if changed && stage.Soak > 0 {
			return c.soakStop(fl, i, stage, asJSON)
		}
		changed = false
	}
	return 0
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
// with the variables its plan was made with; it gives apply's exit code and the cluster's
// stage as the configuration declares it now, and the apply's error when it started no node.
func (c *cli) applyCluster(cl planfile.Cluster, lf *loadFlags, opts engine.ApplyOptions, asJSON, color bool) (int, model.Stage, error) {
	one := *lf
	one.clusters = multiFlag{cl.Name}
	var err error
	if one.values, err = cl.Plan.VariableValues(); err != nil {
		return c.failErr(fmt.Errorf("cluster %s: %w", cl.Name, err)), model.Stage{}, err
	}
	c.intr.setNotice("stopping before any node starts; the state lock is released")
	ws := c.load(&one)
	if ws == nil {
		return 1, model.Stage{}, nil
	}
	var stage model.Stage
	for _, s := range ws.Config.Stages {
		if s.Name == cl.Stage {
			stage = s
		}
	}
	s, code := c.readStateLocked(ws, &one, "apply")
	if s == nil {
		return code, stage, nil
	}
	defer s.unlock()
	out := &keepWriting{w: c.stdout, stderr: c.stderr, then: "the apply goes on without showing its progress there"}
	code, err = c.carryOut(ws, s, &one, engine.Saved(cl.Plan), opts, views.NewApply(asJSON, out, color), asJSON, color)
	return code, stage, err
}

// stopAt ends a promotion, naming why and the clusters not started: fl's from on.
func (c *cli) stopAt(fl *planfile.Fleet, from, code int, why string) int {
	c.fail("Promotion stopped", fmt.Sprintf("Stopped at %s.\nNot started: %s.", why, notStarted(fl.Clusters[from:])))
	return code
}

// soakStop ends a promotion after the stage of fl's cluster i, whose clusters changed and
// which soaks: the next stage may go once the soak has passed.
func (c *cli) soakStop(fl *planfile.Fleet, i int, stage model.Stage, asJSON bool) int {
	next := time.Now().Add(stage.Soak).UTC().Format("2006-01-02 15:04 MST")
	w := c.stdout
	if asJSON {
		w = c.stderr // stdout is JSON lines
	}
	fmt.Fprintf(w, "\nStage %s changed and soaks for %s: the next stage (%s) may go from %s. mcp does not wait for a soak: plan and apply again then (docs/fleets.md).\nNot started: %s.\n",
		stage.Name, model.ShortDuration(stage.Soak), fl.Clusters[i+1].Stage, next, notStarted(fl.Clusters[i+1:]))
	return applyExitCode[engine.Incomplete]
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
	for _, p := range ps {
		cl := planfile.Cluster{Name: p.Cluster.Name, Stage: p.Cluster.Stage}
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

// savedFleet is a saved plan across clusters as a plan across clusters is shown: each
// cluster's plan, or why it was unknown, and the parts its changes are grouped from.
func savedFleet(fl *planfile.Fleet) ([]clusters.Planned, []clusters.Part) {
	ps := make([]clusters.Planned, len(fl.Clusters))
	var parts []clusters.Part
	for i, cl := range fl.Clusters {
		ps[i].Member = &clusters.Member{Cluster: model.Cluster{Name: cl.Name, Stage: cl.Stage}}
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
