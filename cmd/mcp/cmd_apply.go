package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/health"
	"github.com/mcpfleet/mcp/engine/planfile"
)

func (c *cli) apply(args []string) int {
	fs := c.newFlags("apply")
	auto := fs.Bool("auto-approve", false, "apply without asking for approval")
	asJSON := fs.Bool("json", false, "print progress as JSON lines")
	var opts engine.ApplyOptions
	registerApplyOptions(fs, &opts)
	var sf scopeFlags
	sf.register(fs)
	var lf loadFlags
	registerIgnoreSoak(fs, &lf)
	registerApproveStage(fs, &lf)
	lf.register(fs, true)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 1 {
		return c.tooMany("apply", pos[1:]) // one argument: a saved plan file
	}
	// As Terraform: JSON output is for machines, and a machine cannot answer the question.
	if *asJSON && !*auto && len(pos) == 0 {
		return c.errorf("-json needs -auto-approve or a saved plan: nobody can approve a plan in JSON output")
	}
	var p *engine.Plan
	if len(pos) == 1 {
		saved, fleet, err := c.readSavedPlan(pos[0], &lf, &sf)
		if err != nil {
			return c.failErr(err)
		}
		if fleet != nil {
			return c.promote(fleet, &lf, opts, *asJSON)
		}
		p = engine.Saved(saved)
	}
	ws, ms, ok := c.loadAny(&lf, p == nil)
	if !ok {
		return 1
	}
	if ms != nil {
		return c.applyFleet(ms, &lf, &sf, opts, *auto, *asJSON)
	}
	if len(lf.approveStages) > 0 {
		// An apply of one cluster is not a promotion: it has no stop to approve.
		return c.errorf("-approve-stage is for apply across clusters: an apply of one cluster (-cluster) does not stop before its stage (docs/fleets.md)")
	}
	if !lf.lock {
		fmt.Fprint(c.stderr, lockFalseWarning)
	}
	c.intr.setNotice("stopping before any node starts; the state lock is released")
	s, code := c.readStateLocked(ws, &lf, "apply")
	if s == nil {
		return code
	}
	defer s.unlock()
	ctx, st := s.ctx, s.st
	if p != nil && len(p.File.Rollback) > 0 {
		// A rollback's saved plan: derived again with its stored targets (mcp rollback -out).
		if ws, err = ws.RollingBack(st, p.File.Rollback); err != nil {
			return c.failErr(err)
		}
	}
	// A closed stdout (`| head`, a closed terminal) does not stop the apply: its output is
	// dropped from then on, and the exit code is still the apply's.
	color := c.color(&lf)
	out := &keepWriting{w: c.stdout, stderr: c.stderr, then: "the apply goes on without showing its progress there"}
	v := views.NewApply(*asJSON, out, color)
	if p == nil {
		if p, err = ws.Plan(ctx, st, engine.PlanOptions{Targets: sf.targets, Exclude: sf.exclude, Lock: s.lock}); err != nil {
			return c.failErr(err)
		}
		pf := p.File
		c.soakGates(ws.Config, &lf, lf.ignoreSoak, pf)
		if err := v.Plan(pf); err != nil {
			return c.failErr(err)
		}
		if !pf.Rollout.HasChanges() {
			// Nothing to change, but a pause seen (or lifted) for the first time is recorded.
			if err := ws.NotePauses(ctx, st, s.lock, time.Now()); err != nil {
				return c.failErr(err)
			}
			return 0
		}
		if code, refused := c.soakRefused(pf); refused {
			return code
		}
		if !*auto {
			if code, ok := c.approve(v, lf.input); !ok {
				return code
			}
		}
	}
	code, _ = c.carryOut(ws, s, &lf, p, opts, v, *asJSON, color)
	return code
}

// carryOut applies p to ws's cluster under the session s, showing its progress on v, and
// gives apply's exit code, and its error when it started no node (a refused plan).
func (c *cli) carryOut(ws *engine.Workspace, s *session, lf *loadFlags, p *engine.Plan, opts engine.ApplyOptions, v views.Apply, asJSON, color bool) (int, error) {
	ctx, st := s.ctx, s.st
	opts.Lock = s.lock
	pf := p.File
	if !p.Fresh() {
		// A saved plan: the gate is asked again, now; an override the plan said stands.
		c.soakGates(ws.Config, lf, lf.ignoreSoak || soakOverridden(pf.Soak), pf)
		if code, refused := c.soakRefused(pf); refused {
			return code, nil
		}
	}
	// On a terminal the progress is a few lines redrawn in place; elsewhere (a pipe, a
	// file, -json) it stays one line per event.
	var progress views.Progress = v
	var live *views.LiveProgress
	if !asJSON && isTerminal(c.stdout) {
		// The terminal itself, not the wrapper: the redrawing asks it for its size, and
		// a terminal that goes away is a SIGHUP (or a write error the view ignores), not
		// a closed pipe.
		live = views.NewLiveProgress(c.stdout, color, pf.Rollout)
		progress = live
	}
	c.intr.setNotice("finishing the nodes already started and starting no more; then the state is saved and the lock released")
	opts.Observer = progress.Event
	_, res, err := ws.Apply(ctx, st, p, opts)
	if live != nil {
		live.Stop() // before anything else is printed
	}
	if res == nil {
		return c.failErr(err), err
	}
	progress.Summary(views.SummaryOf(res, err))
	v.LeftOut(views.LeftOutOf(pf.Rollout))
	if len(pf.Targets) > 0 {
		v.Targeted()
	}
	return applyExitCode[engine.Outcome(res, err)], nil
}

// lockFalseWarning is printed by apply -lock=false (docs/decisions.md, "One apply per node").
const lockFalseWarning = `Warning: -lock=false: this apply does not take the state lock.
  Nodes stay safe: each is claimed on the node before its first step, so no two applies work
  on one node, and none starts while an apply that holds the lock runs. The state is not:
  another apply may write it meanwhile; this one writes its changes over what it finds, and
  a pool that two applies move to different configs keeps the last one written. Use it only
  when the lock cannot be taken.
`

// applyExitCode: 0 only when every node change the plan included is done and verified; 2
// when nothing failed but some were not done (not started, deferred, not confirmed): run
// apply again; 1 when a node or apply itself failed.
var applyExitCode = map[engine.OutcomeKind]int{engine.Complete: 0, engine.Incomplete: 2, engine.Failed: 1}

// registerApplyOptions makes apply's flags that tune the rollout set o.
func registerApplyOptions(fs *flag.FlagSet, o *engine.ApplyOptions) {
	o.Parallelism = 10
	fs.Var((*atLeastOne)(&o.Parallelism), "parallelism", "most nodes updating at once over all pools (1 or more)")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 10*time.Minute, "give up a node's drain after this long")
	fs.DurationVar(&o.DrainRetryDelay, "drain-retry-delay", 5*time.Second, "pause after an eviction a PodDisruptionBudget refused")
	fs.DurationVar(&o.BudgetWait, "budget-wait", 10*time.Minute, "give up starting a pool's next node after waiting this long for room in its max_unavailable, or for its maintenance window to open again after closing mid-rollout")
	fs.DurationVar(&o.HealthTimeout, "health-timeout", health.DefaultReadyTimeout, "fail a node that is not Ready with its DaemonSet pods Ready this long after its steps")
	fs.BoolVar(&o.NoWait, "no-wait", false, "do not wait for a closed maintenance window: leave such pools as they are and name their next opening (exit 2); a window closing mid-rollout ends the pool's rollout")
}

// atLeastOne is a count flag that refuses 0 and negatives: -parallelism=0 would otherwise
// reach the engine as "not set" and quietly become its default.
type atLeastOne int

func (n *atLeastOne) String() string { return strconv.Itoa(int(*n)) }

func (n *atLeastOne) Set(s string) error {
	v, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return fmt.Errorf("want a whole number, 1 or more")
	case v < 1:
		return fmt.Errorf("want 1 or more (nodes at once)")
	}
	*n = atLeastOne(v)
	return nil
}

// readSavedPlan reads the plan file apply was given — one cluster's plan, whose variables
// it takes into lf, or a plan across clusters (fleet), narrowed to lf's -cluster names.
func (c *cli) readSavedPlan(path string, lf *loadFlags, sf *scopeFlags) (*planfile.File, *planfile.Fleet, error) {
	saved, fleet, err := planfile.ReadAny(c.path(path))
	if err != nil {
		return nil, nil, err
	}
	// As Terraform: a saved plan is applied with the variables it was made with.
	if len(lf.vars) > 0 || len(lf.varFiles) > 0 {
		return nil, nil, errors.New("-var and -var-file cannot be given with a saved plan: it is applied with the values it was made with")
	}
	// As Terraform ("Can't change resource targeting when applying a saved plan"), but
	// refused rather than ignored: the scope reviewed is the one applied.
	if len(sf.targets) > 0 || len(sf.exclude) > 0 {
		return nil, nil, errors.New("-target and -exclude cannot be given with a saved plan: it is applied with the targets and exclusions it was made with; run mcp plan -target=… -out=FILE for another scope")
	}
	if fleet != nil {
		fleet.Clusters, err = savedClusters(fleet, lf.clusters)
		return nil, fleet, err
	}
	saved, err = takeSaved(saved, path, lf)
	return saved, nil, err
}

// takeSaved checks one cluster's saved plan against -cluster, and takes its cluster and
// variables into lf.
func takeSaved(saved *planfile.File, path string, lf *loadFlags) (*planfile.File, error) {
	var err error
	// As Terraform's saved plan and its workspace: the plan names its cluster, and is
	// applied to that one.
	switch {
	case saved.Cluster != "" && len(lf.clusters) == 0:
		lf.clusters = multiFlag{saved.Cluster}
	case saved.Cluster != "" && (len(lf.clusters) > 1 || lf.clusters[0] != saved.Cluster):
		return nil, fmt.Errorf("-cluster %s: the saved plan was made for cluster %s; apply it with -cluster %s, or plan %s again", strings.Join(lf.clusters, ","), saved.Cluster, saved.Cluster, strings.Join(lf.clusters, ","))
	case saved.Cluster == "" && len(lf.clusters) > 0:
		return nil, fmt.Errorf("-cluster %s: the saved plan was made for no cluster (a configuration without cluster blocks); run mcp plan -cluster %s -out=FILE", strings.Join(lf.clusters, ","), lf.clusters[0])
	}
	if lf.values, err = saved.VariableValues(); err != nil {
		return nil, fmt.Errorf("loading plan %q: %v", path, err)
	}
	return saved, nil
}

// approve asks for "yes" on a terminal; without one, or with -input=false (input false),
// it refuses, as Terraform does.
func (c *cli) approve(v views.Apply, input bool) (int, bool) {
	const how = "Review the plan and run mcp apply -auto-approve, or save it with mcp plan -out=FILE and run mcp apply FILE."
	if !input {
		return c.fail("Cannot ask for approval with -input=false", how), false
	}
	f, ok := c.stdin.(*os.File)
	if !ok || !isTerminal(f) {
		return c.fail("No terminal to ask for approval on", how), false
	}
	v.AskApproval()
	// An interrupt at the question cancels, as "no" does (the read itself cannot be).
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c.stdin).ReadString('\n')
		answer <- line
	}()
	var line string
	select {
	case line = <-answer:
	case <-c.ctx.Done():
	}
	if strings.TrimSpace(line) != "yes" {
		v.Cancelled()
		return 1, false
	}
	return 0, true
}
