package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/internal/suggest"
	"github.com/mcpfleet/mcp/model"
)

// A promotion is apply across clusters, stage by stage (docs/fleets.md, "Apply across
// clusters"): promote walks the stages, promoteStage gates and runs one.
type promotion struct {
	fl            *planfile.Fleet
	lf            *loadFlags
	opts          engine.ApplyOptions
	asJSON, color bool
	// failed are the clusters that failed in stages that went on, within their stage's
	// max_failed_clusters: every summary names them, and the apply exits 1.
	failed []string
}

// outcome is one cluster's apply in a stage.
type outcome struct {
	ran  bool
	code int
	why  string // why it counts as failed ("" when it finished)
}

// registerApproveStage is apply's -approve-stage: the stages with `approval` this run
// may go into.
func registerApproveStage(fs *flag.FlagSet, lf *loadFlags) {
	fs.Var(&lf.approveStages, "approve-stage", "in a configuration of clusters, go into stage NAME, which has approval = true, in this run's promotion (repeatable; docs/fleets.md)")
}

// fleetStages are the stages the configuration declares now, by name; every name of
// lf's -approve-stage must be one with approval = true.
func (c *cli) fleetStages(lf *loadFlags) (map[string]model.Stage, error) {
	opts := c.configOptions(lf)
	opts.Values, opts.Cluster = nil, "" // the stage blocks alone: no cluster is loaded
	res, diags := config.Load(c.dir, opts)
	if diags.HasErrors() {
		c.diagnostics(res, diags, lf)
		return nil, fmt.Errorf("the configuration's stage blocks could not be read")
	}
	out := map[string]model.Stage{}
	var names []string
	for _, s := range res.Stages {
		out[s.Name] = s
		names = append(names, s.Name)
	}
	for _, n := range lf.approveStages {
		s, ok := out[n]
		switch {
		case !ok:
			return nil, fmt.Errorf("-approve-stage %s: the configuration declares no such stage; its stages are %s.%s", n, strings.Join(names, ", "), suggest.DidYouMean(n, names))
		case !s.Approval:
			return nil, fmt.Errorf("-approve-stage %s: stage %s has no approval = true, so there is nothing to approve", n, n)
		}
	}
	return out, nil
}

// promoteStage gates and runs the stage of fl's clusters [from, to); stop says promotion
// ends here, with code.
func (c *cli) promoteStage(p *promotion, stage model.Stage, from, to int) (code int, stop bool) {
	fl := p.fl
	cls := fl.Clusters[from:to]
	switch u := unknownIn(cls, stage.Name); {
	case c.ctx.Err() != nil:
		return p.stop(c, fl.Clusters[from:], 1, "an interrupt, after the clusters above"), true
	case u != nil:
		return p.stop(c, fl.Clusters[from:], 1, fmt.Sprintf("stage %s: its cluster %s was unknown when the plan was made: %s", stage.Name, u.Name, u.Unknown)), true
	case stage.Approval && fleetChanges(&planfile.Fleet{Clusters: cls}) && !slices.Contains(p.lf.approveStages, stage.Name):
		return c.approvalStop(p, stage, from), true
	}
	outs := c.runStage(p, stage, cls)
	var failed, left []planfile.Cluster
	var whys []string
	code, changed := 0, false
	for i, o := range outs {
		switch {
		case !o.ran:
			left = append(left, cls[i])
		case o.code != 0:
			failed, whys = append(failed, cls[i]), append(whys, fmt.Sprintf("cluster %s (stage %s): %s", cls[i].Name, stage.Name, o.why))
			code = cmp.Or(code, o.code)
		}
		changed = changed || o.ran && cls[i].Plan.Rollout.HasChanges()
	}
	if len(failed) > stage.MaxFailedClusters || (len(failed) > 0 && c.ctx.Err() != nil) {
		why := whys[0] + "; see above"
		if len(failed) > 1 || stage.MaxFailedClusters > 0 {
			why = fmt.Sprintf("stage %s: %d of its clusters failed, more than its max_failed_clusters (%d): %s; see above",
				stage.Name, len(failed), stage.MaxFailedClusters, strings.Join(whys, "; "))
		}
		return p.stop(c, append(left, fl.Clusters[to:]...), code, why), true
	}
	if len(failed) > 0 {
		p.failed = append(p.failed, whys...)
		fmt.Fprintf(c.notes(p.asJSON), "\nStage %s: %d of its clusters failed, within its max_failed_clusters (%d): promotion goes on.\n", stage.Name, len(failed), stage.MaxFailedClusters)
	}
	if changed && stage.Soak > 0 && to < len(fl.Clusters) {
		code := c.soakStop(fl, to, stage, p.asJSON)
		return p.end(c, code), true
	}
	return 0, false
}

// runStage applies the clusters of a stage, at most its concurrency at once, in their
// order; a cluster whose plan drains or reboots nodes waits while one of its failure
// domains has max_disrupting such clusters applying (the plan's Waves), and the next that
// fits starts. Once more of them failed than its max_failed_clusters, or on an interrupt,
// no more start.
func (c *cli) runStage(p *promotion, stage model.Stage, cls []planfile.Cluster) []outcome {
	outs := make([]outcome, len(cls))
	limit := max(stage.Concurrency, 1)
	s := stageRun{budget: p.fl.FailureDomains, busy: clusters.Busy{}, started: make([]bool, len(cls)), said: map[int]bool{}}
	var mu sync.Mutex // guards s, outs and failures, and the terminal's lines
	cond := sync.NewCond(&mu)
	var wg sync.WaitGroup
	failures, running := 0, 0
	mu.Lock()
	for pending := len(cls); pending > 0 && failures <= stage.MaxFailedClusters && c.ctx.Err() == nil; {
		i := -1
		if running < limit {
			i = s.next(c.notes(p.asJSON), cls)
		}
		if i < 0 {
			cond.Wait() // a running cluster ends: there is room again
			continue
		}
		pending, running = pending-1, running+1
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := c.stageCluster(p, cls[i], limit > 1, &mu)
			mu.Lock()
			defer mu.Unlock()
			outs[i], running = o, running-1
			if o.code != 0 {
				failures++
			}
			s.end(cls[i])
			cond.Broadcast()
		}()
	}
	mu.Unlock()
	wg.Wait()
	return outs
}

// stageRun is which of a stage's clusters started, and the failure domains they fill.
type stageRun struct {
	budget  clusters.Budget
	busy    clusters.Busy
	started []bool
	said    map[int]bool // clusters whose wait for a domain was said
}

// next starts the first cluster of cls not started whose failure domains have room, and
// gives its index (-1: none may start now). A cluster held back is said once.
func (s *stageRun) next(notes io.Writer, cls []planfile.Cluster) int {
	for i, cl := range cls {
		if s.started[i] {
			continue
		}
		if full := s.full(cl); full != "" {
			if !s.said[i] {
				s.said[i] = true
				fmt.Fprintf(notes, "%s waits: its failure domain %s has as many clusters draining or rebooting nodes as its max_disrupting.\n", cl.Name, full)
			}
			continue
		}
		s.started[i] = true
		if disrupts(cl) {
			s.budget.Take(s.busy, cl.Labels, 1)
		}
		return i
	}
	return -1
}

func (s *stageRun) full(cl planfile.Cluster) string {
	if !disrupts(cl) {
		return ""
	}
	return s.budget.Full(s.busy, cl.Labels)
}

func (s *stageRun) end(cl planfile.Cluster) {
	if disrupts(cl) {
		s.budget.Take(s.busy, cl.Labels, -1)
	}
}

// disrupts says whether cl's plan drains or reboots a node: only such a cluster counts in
// its failure domains.
func disrupts(cl planfile.Cluster) bool {
	return cl.Plan != nil && clusters.Disrupts(cl.Plan.Rollout)
}

// stageCluster applies one cluster of a stage. When the stage's clusters run at once
// (shared), each writes through its own cli: its lines prefixed with its name, whole
// (-json: its lines kept together, printed when it ends), so they stay readable.
func (c *cli) stageCluster(p *promotion, cl planfile.Cluster, shared bool, mu *sync.Mutex) outcome {
	one := c
	if shared {
		cc := *c
		out, errOut := newClusterLines(cl.Name, c.stdout, mu, p.asJSON), newClusterLines(cl.Name, c.stderr, mu, false)
		defer out.flush()
		defer errOut.flush()
		cc.stdout, cc.stderr = out, errOut
		one = &cc
		if !p.asJSON {
			fmt.Fprintf(out, "applying (stage %s)\n", cl.Stage)
		}
	} else if !p.asJSON {
		views.ClusterTitle(c.stdout, cl.Name, cl.Stage, p.color)
	}
	code, err := one.applyCluster(cl, p.lf, p.opts, p.asJSON, p.color)
	o := outcome{ran: true, code: code}
	switch {
	case code == 0:
	case errors.Is(err, planfile.ErrStale):
		o.why = "it moved on since the plan was made, and its part of the saved plan is refused (plan again)"
	case code == 2:
		o.why = "its apply did not finish every node"
	default:
		o.why = "its apply failed"
	}
	return o
}

// clusterLines is a cluster's share of a terminal that clusters applying at once write to:
// each whole line prefixed with the cluster's name (or, whole, its lines kept until flush).
type clusterLines struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	whole  bool
	buf    bytes.Buffer
}

func newClusterLines(name string, w io.Writer, mu *sync.Mutex, whole bool) *clusterLines {
	return &clusterLines{mu: mu, w: w, prefix: name + ": ", whole: whole}
}

func (l *clusterLines) Write(b []byte) (int, error) {
	l.buf.Write(b)
	if l.whole {
		return len(b), nil
	}
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			return len(b), nil
		}
		line := l.buf.Next(i + 1)
		prefix := l.prefix
		if len(line) == 1 {
			prefix = strings.TrimSuffix(prefix, " ") // an empty line gets no trailing space
		}
		l.mu.Lock()
		_, err := fmt.Fprintf(l.w, "%s%s", prefix, line)
		l.mu.Unlock()
		if err != nil {
			return len(b), err
		}
	}
}

// flush writes what is left: a last line without its newline, or the whole of -json's.
func (l *clusterLines) flush() {
	if l.buf.Len() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.whole {
		l.w.Write(l.buf.Bytes())
	} else {
		fmt.Fprintf(l.w, "%s%s\n", l.prefix, l.buf.Bytes())
	}
	l.buf.Reset()
}

// approvalStop ends a promotion before stage, which has approval = true and changes, and
// which this run was not told to go into: it says what waits and the command that goes on.
func (c *cli) approvalStop(p *promotion, stage model.Stage, from int) int {
	var waiting []string
	for _, cl := range p.fl.Clusters[from:] {
		if cl.Stage == stage.Name && cl.Plan.Rollout.HasChanges() {
			waiting = append(waiting, cl.Name)
		}
	}
	fmt.Fprintf(c.notes(p.asJSON), "\nStage %s waits for approval (approval = true): its clusters %s have changes planned, and this run was not told to go into it.\nTo go on, with this run's other options (a fresh plan: a saved one is refused for the clusters done here): mcp apply -approve-stage %s\nNot started: %s.\n",
		stage.Name, strings.Join(waiting, ", "), stage.Name, notStarted(p.fl.Clusters[from:]))
	return p.end(c, applyExitCode[engine.Incomplete])
}

// stop ends a promotion, naming why, the clusters not started and those that failed
// before within their stage's budget.
func (p *promotion) stop(c *cli, left []planfile.Cluster, code int, why string) int {
	detail := fmt.Sprintf("Stopped at %s.\nNot started: %s.", why, notStarted(left))
	if len(p.failed) > 0 {
		detail += "\nFailed before, within their stage's max_failed_clusters: " + strings.Join(p.failed, "; ") + "."
	}
	c.fail("Promotion stopped", detail)
	return code
}

// end is a promotion's exit code once it went as far as it goes (code: 0, or 2 for a
// stop before a soak or an approval): 1 when clusters failed within their stage's
// budget, which are named.
func (p *promotion) end(c *cli, code int) int {
	if len(p.failed) == 0 {
		return code
	}
	return c.fail("Clusters failed", fmt.Sprintf("Promotion went on past them, within their stage's max_failed_clusters: %s. See above; recover each as docs/fleets.md says.", strings.Join(p.failed, "; ")))
}
