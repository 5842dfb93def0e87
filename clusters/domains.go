package clusters

import (
	"slices"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Budget is the failure domains of a fleet (failure_domain blocks): of the clusters with
// one value of a domain's label, at most its max_disrupting whose plan disrupts nodes
// apply at once, across the concurrency of their stage (docs/fleets.md, "A budget across
// clusters"). A cluster without the label is in no domain of it.
type Budget []model.FailureDomain

// Busy counts the clusters applying now that disrupt nodes, by domain ("region=eu").
type Busy map[string]int

// domains are the domains a cluster with labels is in ("region=eu"), those of the
// budget alone.
func (b Budget) domains(labels map[string]string) []string {
	var out []string
	for _, fd := range b {
		if v, ok := labels[fd.Label]; ok {
			out = append(out, fd.Label+"="+v)
		}
	}
	return out
}

// Full names the first domain of labels that busy has filled ("region=eu"), "" when
// the cluster may start.
func (b Budget) Full(busy Busy, labels map[string]string) string {
	for _, fd := range b {
		if v, ok := labels[fd.Label]; ok && busy[fd.Label+"="+v] >= fd.MaxDisrupting {
			return fd.Label + "=" + v
		}
	}
	return ""
}

// Take counts a cluster with labels as started (n = 1) or ended (n = -1) in busy.
func (b Budget) Take(busy Busy, labels map[string]string, n int) {
	for _, d := range b.domains(labels) {
		busy[d] += n
	}
}

// Disrupts says whether a plan drains or reboots a node: only such a cluster counts in
// its failure domains (one whose nodes change in place alone is never held).
func Disrupts(r *planner.Rollout) bool {
	for i := range r.Nodes {
		nd := &r.Nodes[i]
		if nd.Changed() && (nd.Reboot || slices.ContainsFunc(nd.Steps, func(s model.Step) bool { return s.Kind == model.StepDrain })) {
			return true
		}
	}
	return false
}

// WaveMember is a cluster of a stage as Waves orders it.
type WaveMember struct {
	Name     string
	Labels   map[string]string
	Disrupts bool
}

// Waves are the waves a stage's clusters run in, in their order: each wave takes up to
// concurrency clusters, holding back to a later wave a cluster that disrupts nodes while
// its domain is full, and names the domain. Apply starts a held cluster as soon as its
// domain has room: waves are the order's shape, as if a wave's clusters ended together.
func (b Budget) Waves(concurrency int, ms []WaveMember) []model.Wave {
	var out []model.Wave
	for len(ms) > 0 {
		w, busy := model.Wave{}, Busy{}
		var left []WaveMember
		for _, m := range ms {
			full := ""
			if m.Disrupts {
				full = b.Full(busy, m.Labels)
			}
			switch {
			case len(w.Clusters) >= max(concurrency, 1):
				left = append(left, m)
			case full != "":
				if w.Held == nil {
					w.Held = map[string]string{}
				}
				w.Held[m.Name] = full
				left = append(left, m)
			default:
				w.Clusters = append(w.Clusters, m.Name)
				if m.Disrupts {
					b.Take(busy, m.Labels, 1)
				}
			}
		}
		out, ms = append(out, w), left
	}
	return out
}

// StageWaves are the waves of the planned clusters ps, stage by stage (those whose plan
// is known), under the budget.
func (b Budget) StageWaves(ps []Planned) []model.StageWaves {
	var out []model.StageWaves
	for i := 0; i < len(ps); {
		j := i
		var ms []WaveMember
		for ; j < len(ps) && ps[j].Cluster.Stage == ps[i].Cluster.Stage; j++ {
			if p := ps[j]; p.Plan != nil {
				ms = append(ms, WaveMember{Name: p.Cluster.Name, Labels: p.Cluster.Labels, Disrupts: Disrupts(p.Plan.File.Rollout)})
			}
		}
		out = append(out, model.StageWaves{Stage: ps[i].Cluster.Stage, Waves: b.Waves(ps[i].Stage.Concurrency, ms)})
		i = j
	}
	return out
}
