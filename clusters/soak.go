package clusters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// The soak gate (docs/fleets.md, "Only what soaked is promoted"): a cluster of a stage
// with `after` takes a pool's new rendered config only when, in every cluster of each
// stage it comes after, that pool's rendered config for the same configuration — the
// configuration rendered with that cluster's values, so that the clusters' declared
// overrides do not count as a difference — ran on at least one node for the earlier
// stage's soak, and no node that ran it failed on it (went Degraded, failed its health
// gates). Plan and apply ask this one gate; -ignore-soak overrides it, said in the plan.

// Earlier are the clusters of res in the stages stage comes right after (its `after`):
// those stages were gated on theirs in turn.
func Earlier(res *config.Result, stage string) []model.Cluster {
	var after []string
	for _, s := range res.Stages {
		if s.Name == stage {
			after = s.After
		}
	}
	var out []model.Cluster
	for _, c := range res.Clusters {
		if slices.Contains(after, c.Stage) {
			out = append(out, c)
		}
	}
	return out
}

// Runs is an earlier cluster's record of where its rendered configs ran, with its nodes
// as seen now folded in (engine.Workspace.Ran), or why it could not be read.
type Runs struct {
	*Member
	Ran map[string]*state.Ran
	Err error
}

// ReadRuns reads the records of each of ms, at most limit at once.
func ReadRuns(ctx context.Context, ms []Member, now time.Time, limit int) []Runs {
	out := make([]Runs, len(ms))
	var g errgroup.Group
	g.SetLimit(max(limit, 1))
	for i := range ms {
		out[i].Member = &ms[i]
		if out[i].Err = notLoaded(&ms[i]); out[i].Err != nil {
			continue
		}
		g.Go(func() error {
			out[i].Ran, out[i].Err = ms[i].Workspace.Ran(ctx, now)
			return nil
		})
	}
	g.Wait()
	return out
}

// RunsOf are the records of each planned cluster of ps, from the refresh its plan made
// (ReadRuns for a cluster not planned in this run); a cluster that could not be planned
// keeps its error.
func RunsOf(ps []Planned, now time.Time) []Runs {
	out := make([]Runs, len(ps))
	for i, p := range ps {
		out[i] = Runs{Member: p.Member, Err: p.Err}
		if p.Err == nil && p.Plan != nil && p.Plan.Observed != nil && p.State != nil {
			out[i].Ran = p.Workspace.RanSeen(p.State, p.Plan.Observed.Nodes, now)
		} else if p.Err == nil {
			out[i].Err = errors.New("the cluster was not refreshed in this plan")
		}
	}
	return out
}

// Gate judges each pool plan p of cluster changes against what soaked in earlier (Runs of
// Earlier) at now. ignore (-ignore-soak) lets a refused pool through, saying so.
func Gate(cluster string, p *planner.Rollout, earlier []Runs, now time.Time, ignore bool) []planfile.SoakNote {
	if len(earlier) == 0 {
		return nil
	}
	var notes []planfile.SoakNote
	for _, pp := range p.Pools {
		if !changes(p, pp) {
			continue
		}
		n := planfile.SoakNote{Pool: pp.Name, Rendered: pp.Rendered}
		n.Refused, n.Reason = judgePool(cluster, pp, earlier, now)
		n.Overridden = n.Refused && ignore
		notes = append(notes, n)
	}
	return notes
}

// Refusals are the reasons the gate refuses a plan ("" overridden ones left out).
func Refusals(notes []planfile.SoakNote) []string {
	var out []string
	for _, n := range notes {
		if n.Refused && !n.Overridden {
			out = append(out, "pool "+n.Pool+": "+n.Reason)
		}
	}
	return out
}

// changes says whether the plan moves pp to a config its nodes do not run: a new pointer,
// or a node changing config (restoring drift alone is not promotion).
func changes(p *planner.Rollout, pp planner.PoolPlan) bool {
	if pp.ReRendered {
		return true
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Pool == pp.Name && n.Changed() && !n.DriftOnly && n.From != n.To {
			return true
		}
	}
	return false
}

// judgePool judges pp against each earlier stage, in turn: refused with the first reason.
// Up to a stage's max_failed_clusters of its clusters may have failed it (not run it,
// not stayed healthy, not been readable) — promotion went on past them — when the others
// soaked it; a cluster still soaking always refuses.
func judgePool(cluster string, pp planner.PoolPlan, earlier []Runs, now time.Time) (bool, string) {
	var said []string
	for _, stage := range stagesOf(earlier) {
		var ran, waits bool
		var why string
		var failed []string
		for _, r := range earlier {
			if r.Stage.Name != stage.Name {
				continue
			}
			v := judge(cluster, pp, r, stage.Soak, now)
			ran = ran || v.ran
			if !v.ok && why == "" {
				why = v.words
			}
			switch {
			case v.ok:
				said = append(said, v.words)
			case v.waits:
				waits = true
			default:
				failed = append(failed, v.words)
			}
		}
		switch {
		case !ran:
			return true, fmt.Sprintf("%s has not run on any cluster of stage %s; %s waits for it to soak %s there",
				pp.Rendered, stage.Name, cluster, model.ShortDuration(stage.Soak))
		case waits || len(failed) > stage.MaxFailedClusters:
			return true, why
		case len(failed) > 0:
			said = append(said, fmt.Sprintf("within stage %s's max_failed_clusters (%d): %s", stage.Name, stage.MaxFailedClusters, strings.Join(failed, "; ")))
		}
	}
	return false, strings.Join(said, "; ")
}

// stagesOf are the stages of earlier, each once, in order.
func stagesOf(earlier []Runs) []model.Stage {
	var out []model.Stage
	for _, r := range earlier {
		if !slices.ContainsFunc(out, func(s model.Stage) bool { return s.Name == r.Stage.Name }) {
			out = append(out, r.Stage)
		}
	}
	return out
}

type verdict struct {
	ok, ran bool
	waits   bool // ran, healthy, not yet for the soak
	words   string
}

// judge says whether pp's config, as earlier cluster r renders it, soaked there.
func judge(cluster string, pp planner.PoolPlan, r Runs, soak time.Duration, now time.Time) verdict {
	name := r.Cluster.Name
	if r.Err != nil {
		return verdict{words: fmt.Sprintf("cannot tell whether %s soaked on %s: %v", pp.Rendered, name, r.Err)}
	}
	there := r.Workspace.Rendered[pp.Name]
	if there == nil {
		return verdict{words: fmt.Sprintf("cluster %s renders no pool %s", name, pp.Name)}
	}
	what := there.Name
	if what != pp.Rendered {
		what = fmt.Sprintf("%s (%s as %s renders it, with its values)", there.Name, pp.Rendered, name)
	}
	rec := r.Ran[there.Name]
	if rec == nil || len(rec.Nodes) == 0 {
		return verdict{words: fmt.Sprintf("%s has not run on %s", what, name)}
	}
	var longest time.Duration
	for _, node := range slices.Sorted(maps.Keys(rec.Nodes)) {
		run := rec.Nodes[node]
		if run.Unhealthy != "" {
			return verdict{ran: true, words: fmt.Sprintf("%s did not stay healthy on %s: node %s %s; %s does not take it",
				what, name, node, run.Unhealthy, cluster)}
		}
		longest = max(longest, run.Soaked())
	}
	shown := fmt.Sprintf("%s has soaked %s of %s on %s (%s, healthy)", what, rough(longest), model.ShortDuration(soak),
		name, planner.NodeCount(len(rec.Nodes)))
	if longest < soak {
		until := now.Add(soak - longest)
		return verdict{ran: true, waits: true, words: fmt.Sprintf("%s; %s waits until %s", shown, cluster, until.UTC().Format("15:04 MST"))}
	}
	return verdict{ok: true, ran: true, words: shown}
}

// rough is d to the minute (to the second under one).
func rough(d time.Duration) string {
	if d >= time.Minute {
		return model.ShortDuration(d.Truncate(time.Minute))
	}
	return model.ShortDuration(d.Truncate(time.Second))
}
