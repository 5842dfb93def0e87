// Package planner is mcp's pure core: it renders the desired configuration per pool,
// derives the steps each node needs, schedules them in waves under each pool's
// max_unavailable, and predicts what will block them. It does no I/O; the engine feeds it
// and acts on its result.
package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/steps"
)

// MakePlan computes the plan for in. It fails only on an ambiguous fleet (a node selected
// by two pools).
func MakePlan(in Input) (*Rollout, error) {
	members, unmanaged, err := assignPools(in.Desired.Pools, in.Fleet.Nodes)
	if err != nil {
		return nil, err
	}
	sc, err := newScope(in, members)
	if err != nil {
		return nil, err
	}
	p := &Rollout{Unmanaged: unmanaged, Rendered: map[string]*model.Rendered{},
		Nodes: make([]NodePlan, 0, len(in.Fleet.Nodes)-len(unmanaged))}
	in.indexVariants()
	for _, r := range in.Rendered {
		p.Rendered[r.Name] = r
		if r.Provenance != nil {
			if p.Provenance == nil {
				p.Provenance = map[string]*model.Provenance{}
			}
			p.Provenance[r.Name] = r.Provenance
		}
	}
	for _, r := range in.variants {
		p.Rendered[r.Name] = r
		if r.Provenance != nil {
			if p.Provenance == nil {
				p.Provenance = map[string]*model.Provenance{}
			}
			p.Provenance[r.Name] = r.Provenance
		}
	}
	// Nodes of a pool mostly share their current config: derive each (from, to) once.
	memo := map[deriveKey]derived{}
	in.memo, in.inFlight = memo, model.IndexInFlight(in.InFlight)
	in.interims = newInterims()
	var slots []poolSlots // per pool, for pdbWaves
	podsByNode := map[string][]*model.Pod{}
	for i := range in.Fleet.Pods {
		pod := &in.Fleet.Pods[i]
		podsByNode[pod.Node] = append(podsByNode[pod.Node], pod)
	}
	for pi := range in.Desired.Pools {
		pool := &in.Desired.Pools[pi]
		target := in.Rendered[pool.Name]
		if target == nil {
			return nil, fmt.Errorf("pool %s has no rendered config", pool.Name)
		}
		pp, nodes, sl := planPool(in, sc, pool, target, members[pool.Name])
		pp.Changes = poolChanges(in, &pp, nodes)
		slots = append(slots, sl)
		for i := range nodes {
			if nodes[i].Changed() && hasStep(nodes[i].Steps, model.StepDrain) {
				nodes[i].Blockers = append(nodes[i].Blockers, pdbBlockers(podsByNode[nodes[i].Name], in.Fleet.PDBs)...)
			}
		}
		p.Pools = append(p.Pools, pp)
		p.Nodes = append(p.Nodes, nodes...)
	}
	for i := range p.Nodes {
		if n := &p.Nodes[i]; n.Interim != nil {
			p.Rendered[n.To] = in.interims.named(n.To) // stored by apply, as the targets are
		}
	}
	if len(in.Fleet.PDBs) > 0 {
		ready := make(map[string]bool, len(in.Fleet.Nodes))
		for i := range in.Fleet.Nodes {
			ready[in.Fleet.Nodes[i].Name] = in.Fleet.Nodes[i].Ready
		}
		pdbWaves(p, slots, podsByNode, in.Fleet.PDBs, ready)
	}
	estimates(in, p)
	if p.BootImages, err = planBootImages(in, p.Pools, p.Nodes); err != nil {
		return nil, err
	}
	return p, nil
}

// assignPools maps each pool to its nodes; a node selected by two pools is an error.
func assignPools(pools []model.Pool, nodes []model.Node) (map[string][]*model.Node, []string, error) {
	members := map[string][]*model.Node{}
	var unmanaged []string
	for i := range nodes {
		n := &nodes[i]
		owner := ""
		for _, p := range pools {
			if !selects(p.NodeSelector, n.Labels) {
				continue
			}
			if owner != "" {
				return nil, nil, fmt.Errorf("node %s is selected by both pool %q and pool %q; make their node_selectors exclusive", n.Name, owner, p.Name)
			}
			owner = p.Name
			members[p.Name] = append(members[p.Name], n)
		}
		if owner == "" {
			unmanaged = append(unmanaged, n.Name)
		}
	}
	return members, unmanaged, nil
}

func selects(sel, labels map[string]string) bool {
	return len(sel) > 0 && model.SelectorMatches(sel, labels)
}

// planPool plans one pool's nodes and schedules the changing ones.
func planPool(in Input, sc scope, pool *model.Pool, target *model.Rendered, nodes []*model.Node) (PoolPlan, []NodePlan, poolSlots) {
	pp := PoolPlan{Name: pool.Name, Rendered: target.Name, Previous: in.Pointers[pool.Name],
		Size: len(nodes), Paused: pool.Paused == model.PauseAll, DrainTimeout: pool.DrainTimeout, PointerKept: !sc.poolTargeted(pool.Name),
		HealthChecks: pool.HealthChecks, AlertGate: pool.AlertGate, OnDrift: pool.OnDrift}
	if pool.OnFailure.Reverts() {
		pp.OnFailure = pool.OnFailure
	}
	pp.ReRendered = pp.Rendered != pp.Previous
	rollbackNotes(in, &pp)
	pp.MaxUnavailable = pool.MaxUnavailable.Resolve(len(nodes))
	pp.Canary, pp.CanarySoak = pool.Pacing.Canary, pool.Pacing.CanarySoak
	pp.MaxFailures, pp.Soak = max(pool.Pacing.MaxFailures, 1), pool.Pacing.Soak
	pp.MaxStaging = pp.MaxUnavailable
	if m := pool.Pacing.MaxStaging; m != nil {
		pp.MaxStaging = *m
	}
	pp.Window = windowStatus(pool.Windows, in.Now)
	plans := make([]NodePlan, len(nodes))
	var out []string // nodes out of service now, changing or not
	for i, n := range nodes {
		plans[i] = planNode(in, n, pool, in.targetOf(pool.Name, n.Name))
		// Held and untargeted nodes get no steps; out of service they still count below.
		held := HoldGate{}.Ask(&Facts{AtPlan: true, Node: n.Name, Pool: &pp, Excluded: sc.excluded[n.Name], Observed: []model.Node{*n}})
		if untargeted := !sc.nodeTargeted(pool.Name, n.Name); held.Kind == Skip || untargeted {
			keepOut(&plans[i], held.Reason, untargeted && held.Kind != Skip)
			if held.Kind == Skip {
				pp.Held++
			} else {
				pp.Untargeted++
			}
		}
		if plans[i].Changed() && pool.Paused == model.PauseDisruptive {
			plans[i] = passInterim(in, n, pool, in.targetOf(pool.Name, n.Name), plans[i])
		}
		if plans[i].Changed() {
			if v := (ClaimGate{}).Ask(&Facts{AtPlan: true, Node: n.Name, Pool: &pp, Claim: in.claimFacts(n.Name)}); !v.Passes() {
				plans[i].Blockers = append(plans[i].Blockers, Blocker{Kind: BlockClaim, Message: v.Reason})
			}
		}
		if plans[i].Condition != "" {
			out = append(out, n.Name+" ("+plans[i].Condition+")")
		}
	}
	pp.Unavailable = len(out)
	pp.Slots = pp.MaxUnavailable - pp.Unavailable
	order := rolloutOrder(&pp, pool.Order, plans, nodes)
	sorted := make([]NodePlan, 0, len(nodes))
	for _, i := range order {
		sorted = append(sorted, plans[i])
	}
	if pool.Paused.On() {
		pp.Pause = &PauseStatus{Mode: pool.Paused, Waiting: []string{}} // a list in JSON, empty when nothing waits
		if t, ok := in.PausedSince[pool.Name]; ok {
			pp.Pause.Since = &t
		}
	}
	sl := schedule(&pp, sorted, out, nodes)
	if w := firstBootWarning(in, pool.Name, nodes); w != "" {
		pp.Warnings = append(pp.Warnings, w)
	}
	var warn []string
	pp.Variants, warn = poolVariants(in, pool, nodes)
	pp.Warnings = append(pp.Warnings, warn...)
	pp.Machines = machineTargets(in, pool.Name, target)
	pp.MachinesMoved = machinesMoved(in, pool.Name, pp.Machines)
	return pp, sorted, sl
}

// nodeChanges is "1 node change", "3 node changes".
func nodeChanges(n int) string {
	if n == 1 {
		return "1 node change"
	}
	return fmt.Sprintf("%d node changes", n)
}

// poolSlots is what schedule gave a pool's nodes in service: how many start at once, from
// which wave.
type poolSlots struct{ slots, first int }

// schedule gives each changing node its wave, or defers it with the pool's blocker. Nodes
// out of service already start in the first wave, each in its own slot; the others share
// the slots the budget leaves, wave after wave.
func schedule(pp *PoolPlan, nodes []NodePlan, out []string, members []*model.Node) poolSlots {
	pp.Updates = 0
	for _, n := range nodes {
		if n.Changed() {
			pp.Updates++
		}
	}
	if pp.Updates == 0 {
		return poolSlots{}
	}
	holdPaused(pp, nodes)
	changing, inOwnSlot, resumed := 0, 0, 0
	for _, n := range nodes {
		if n.Changed() && !n.Deferred {
			changing++
			if n.Condition != "" {
				inOwnSlot++
				if n.Action == NodeResume {
					resumed++
				}
			}
		}
	}
	if changing == 0 {
		return poolSlots{}
	}
	if inOwnSlot > 0 {
		pp.Waves = 1
	}
	slots, first := pp.Slots, 1
	if !roomInService(pp, nodes, members, false) {
		slots = 0
		// A node an interrupted apply took out of service (resumed) is back in service
		// once this apply finishes it: the others wait for it, in later waves, instead of
		// being deferred to another apply.
		if resumed > 0 && roomInService(pp, nodes, members, true) {
			slots, first = min(pp.Slots+resumed, pp.MaxUnavailable), 2
		}
	}
	// With a canary, its nodes (the first changing ones in rollout order) form the first
	// phase; the others start in waves after the canary's last.
	canaryLeft := pp.Canary
	inCanary := canaryLeft > 0
	i, scheduled, last := 0, 0, 0
	for k := range nodes {
		n := &nodes[k]
		if !n.Changed() || n.Deferred {
			continue
		}
		if inCanary && canaryLeft == 0 {
			inCanary, first, i = false, last+1, 0
		}
		switch {
		case n.Condition != "":
			n.Wave = 1
			if !inCanary && pp.Canary > 0 {
				n.Wave = first
			}
		case slots <= 0:
			n.Deferred = true
			continue
		default:
			n.Wave = i/slots + first
			i++
			scheduled++
		}
		last = max(last, n.Wave)
		if inCanary {
			n.Canary = true
			canaryLeft--
		}
	}
	pp.Waves = max(pp.Waves, last)
	if left := changing - inOwnSlot - scheduled; left > 0 {
		pp.Blockers = append(pp.Blockers, Blocker{Kind: BlockBudget,
			Message: fmt.Sprintf("max_unavailable %d already used up: %d of %s out of service (%s); %s deferred",
				pp.MaxUnavailable, pp.Unavailable, nodesWord(pp.Size), strings.Join(out, ", "), nodeChanges(left))})
	}
	return poolSlots{slots, first}
}

// roomInService asks the budget gate, as apply will, whether the pool's first changing
// node in service may start — with the nodes it resumes back in service, when resumed:
// they are, once this apply finished them. True when no node in service changes.
func roomInService(pp *PoolPlan, nodes []NodePlan, members []*model.Node, resumed bool) bool {
	k := slices.IndexFunc(nodes, func(n NodePlan) bool { return n.Changed() && !n.Deferred && n.Condition == "" })
	if k < 0 {
		return true
	}
	back := map[string]bool{}
	if resumed {
		for _, n := range nodes {
			back[n.Name] = n.Action == NodeResume && n.Condition != ""
		}
	}
	observed := make([]model.Node, 0, len(members))
	for _, m := range members {
		if !back[m.Name] {
			observed = append(observed, *m)
		}
	}
	return (BudgetGate{}).Ask(&Facts{AtPlan: true, Node: nodes[k].Name, Pool: pp, Observed: observed}).Passes()
}

// underWay is the config an update under way moves drifted node n to ("" when n has no
// drift, or no such update): the update its agent works on, or an interrupted apply's (f).
func underWay(n *model.Node, f *model.InFlight) string {
	if len(n.Drift) == 0 && n.DriftUnlisted == 0 {
		return ""
	}
	if f != nil && f.Started() && f.Target != n.CurrentConfig {
		return f.Target
	}
	if n.Updating() && n.DesiredConfig != n.CurrentConfig {
		return n.DesiredConfig
	}
	return ""
}

// planNode derives one node's steps from what it reports — the config it runs, its drift,
// its kernel arguments and OS image, the reboot its agent recorded — to the pool's target;
// and, unless the pool's on_drift is "report", the steps that restore its drift. An update
// an interrupted apply recorded in flight (in.InFlight) only says the node is resumed, and
// uncordoned if that apply cordoned it; it never says a step may be skipped: a node rolled
// back after a failure, or whose files were lost since, gets its whole update.
func planNode(in Input, n *model.Node, pool *model.Pool, target *model.Rendered) NodePlan {
	np := NodePlan{Name: n.Name, Pool: pool.Name, Zone: n.Zone, From: n.CurrentConfig, FromSource: n.CurrentConfigFrom, To: target.Name, Action: NodeNoOp,
		Condition: Condition(n), NotReady: !n.Ready}
	if n.State == model.StateDegraded {
		np.Warnings = append(np.Warnings, fmt.Sprintf("node is Degraded: %s; apply will retry", n.Reason))
	}
	np.Warnings = append(np.Warnings, specialWarnings(n)...)
	f := in.inFlight[n.Name]
	if f != nil && n.Observed != nil && endedUntouched(n, f) {
		f = nil // observed as it is: the failed update left nothing to resume
	}
	resuming := f != nil && f.Started()
	np.Drift, np.DriftUnlisted = n.Drift, n.DriftUnlisted
	np.DriftUnderWay = underWay(n, f)
	drift := restorable(&np, n, pool.OnDrift, target)
	host := steps.HostOf(n)
	if n.CurrentConfig == target.Name {
		np.Steps = steps.Restore(nil, drift, target, host)
		if len(np.Steps) > 0 {
			np.Action, np.DriftOnly = NodeUpdate, true
		}
		if n.State == model.StateDegraded && !hasNodeStep(np.Steps) {
			// Degraded on the config it runs (a health gate it failed, a verify that found
			// the host not as its config asks): verified again and gated, not left there.
			np.Action, np.DriftOnly = NodeUpdate, false
			np.Steps = append([]model.Step{{Kind: model.StepVerify,
				Reason: "node is Degraded on " + target.Name + ": verify it and check its health gates again"}}, np.Steps...)
		}
		if resuming {
			// The node reported it runs target; the apply that moved it stopped before it
			// ended: uncordon it if that apply cordoned it, and check its health again.
			np.Action, np.DriftOnly = NodeResume, false
			np.Steps = owedUncordon(np.Steps, n, f)
		}
		np.Reboot = hasStep(np.Steps, model.StepReboot)
		return np
	}
	if pool.OnDrift.Reports() && slices.ContainsFunc(n.Drift, func(d model.Drift) bool { return !d.OnHost() }) {
		np.Warnings = append(np.Warnings, `on_drift = "report": the drift is not restored, and the node's agent `+
			"refuses to update over drift on a path its steps do not write")
	}
	before, now, rebooted := n.RebootedInto(target.Name)
	if rebooted {
		// What the host runs now came from that reboot: the update is planned as it was,
		// from the configs, and cut at the reboot below.
		host = steps.Host{}
	}
	// A settled node whose config is unknown is planned from what it carries. One with an
	// update in flight (an interrupted apply's, its agent Working, a reboot recorded) is
	// not: an item its update wrote would look carried, and its on_change (a restart, a
	// reboot) be skipped; it finishes that update, as its records say.
	settled := !resuming && (f == nil || !f.Started()) && n.State != model.StateWorking && n.PendingReboot == nil
	var todo []model.Step
	var warn string
	observed := false
	if settled {
		todo, warn, observed = fromObservation(in, n, target, host)
	}
	if warn != "" {
		np.Warnings = append(np.Warnings, warn)
	}
	np.Action = NodeUpdate
	if observed {
		np.Observation = n.Observed
		if len(todo) == 0 {
			np.Action, todo = NodeAdopt, []model.Step{adoptStep(target)}
		}
	} else {
		todo, warn = stepsFrom(in, n.CurrentConfig, target, host)
		if warn != "" {
			np.Warnings = append(np.Warnings, warn)
		}
		todo = steps.Restore(todo, drift, target, host)
	}
	if rebooted {
		// The node's own record says it rebooted into target since its steps up to the
		// reboot ran (they all ran before the record was made): those are not run again,
		// and the plan says what happened instead.
		if i := slices.IndexFunc(todo, func(s model.Step) bool { return s.Kind == model.StepReboot }); i >= 0 {
			np.Happened = fmt.Sprintf("rebooted into %s already (boot id %s → %s): %d steps up to the reboot are done",
				target.Name, before, now, i+1)
			todo = slices.Clone(todo[i+1:])
		}
	}
	if resuming {
		np.Action = NodeResume
		todo = owedUncordon(todo, n, f)
	}
	np.Steps = todo
	np.Reboot = hasStep(todo, model.StepReboot)
	return np
}

// owedUncordon ends a resumed node's steps with an uncordon when the interrupted apply
// recorded that it cordoned the node (f.Cordoned), it is still cordoned, and nothing else
// uncordons it.
func owedUncordon(todo []model.Step, n *model.Node, f *model.InFlight) []model.Step {
	if !n.Unschedulable || !f.Cordoned || hasStep(todo, model.StepUncordon) {
		return todo
	}
	return append(slices.Clone(todo), model.Step{Kind: model.StepUncordon,
		Reason: "the interrupted apply of " + f.Target + " cordoned the node"})
}

// restorable is the drift the node's steps restore: none when the pool only reports drift;
// every path the config manages when the node reported more drift than it listed.
func restorable(np *NodePlan, n *model.Node, onDrift model.OnDrift, target *model.Rendered) []model.Drift {
	if onDrift.Reports() {
		return nil
	}
	if n.DriftUnlisted == 0 {
		return n.Drift
	}
	// Which paths the unlisted ones are is unknown: restore every path the config manages,
	// and say so, since that may mean more disruption than the list shows.
	np.Warnings = append(np.Warnings, fmt.Sprintf("%d more drifted paths than the node listed: "+
		"every file and unit of %s is restored, with their on_change policies", n.DriftUnlisted, target.Name))
	drift := steps.EveryPath(target)
	for _, d := range n.Drift {
		if d.OnHost() {
			drift = append(drift, d)
		}
	}
	return drift
}

type derived struct {
	steps []model.Step
	warn  string
}

// deriveKey is what a derivation depends on: the configs, and what the host reports of its
// image and kernel arguments (nodes of a pool mostly report the same).
type deriveKey struct {
	from, to, image, kargs string
	kargsKnown             bool
}

// stepsFrom derives the steps from the config named from, once per deriveKey: the result is
// shared, so callers must not change it in place.
func stepsFrom(in Input, from string, target *model.Rendered, h steps.Host) ([]model.Step, string) {
	key := deriveKey{from, target.Name, h.OSImage, strings.Join(h.KernelArgs, "\x00"), h.KernelArgs != nil}
	if d, ok := in.memo[key]; ok {
		return d.steps, d.warn
	}
	steps, warn := deriveSteps(in, from, target, h)
	if in.memo != nil {
		in.memo[key] = derived{steps, warn}
	}
	return steps, warn
}

// deriveSteps derives the steps from the config named from. An unknown config forces a
// full rewrite and a reboot: mcp cannot know what differs.
func deriveSteps(in Input, from string, target *model.Rendered, h steps.Host) ([]model.Step, string) {
	if from == "" {
		return steps.DeriveOn(nil, target, h), ""
	}
	if old := known(in, from, target); old != nil {
		return steps.DeriveOn(old, target, h), ""
	}
	why := fmt.Sprintf("current config %s is unknown to the state; rewriting everything and rebooting", from)
	return steps.Rewrite(target, why), "current config " + from + " is unknown to the state; rewriting all and rebooting"
}

func hasNodeStep(steps []model.Step) bool {
	return slices.ContainsFunc(steps, func(s model.Step) bool { return s.Kind.OnNode() })
}

func hasStep(steps []model.Step, k model.StepKind) bool {
	return slices.ContainsFunc(steps, func(s model.Step) bool { return s.Kind == k })
}

// pdbBlockers predicts refused evictions: a non-DaemonSet pod on the node selected by a
// PodDisruptionBudget that allows no disruption.
func pdbBlockers(pods []*model.Pod, pdbs []model.PDB) []Blocker {
	var out []Blocker
	for _, pod := range pods {
		if pod.DaemonSet {
			continue
		}
		for i := range pdbs {
			b := &pdbs[i]
			if b.DisruptionsAllowed > 0 || !b.Matches(pod) {
				continue
			}
			out = append(out, Blocker{Kind: BlockPDB, PDB: b.Namespace + "/" + b.Name, Pod: pod.Namespace + "/" + pod.Name,
				Message: fmt.Sprintf("eviction of %s/%s would be refused by PodDisruptionBudget %s/%s (disruptions allowed 0: needs %d healthy, has %d)",
					pod.Namespace, pod.Name, b.Namespace, b.Name, b.DesiredHealthy, b.CurrentHealthy)})
		}
	}
	return out
}

// windowStatus is the pool's windows as they stand at now (nil: the pool has none).
func windowStatus(windows []model.Window, now time.Time) *WindowStatus {
	if len(windows) == 0 {
		return nil
	}
	ws := &WindowStatus{}
	for _, w := range windows {
		ws.Windows = append(ws.Windows, w.String())
	}
	open, closes, next := WindowState(windows, now)
	ws.Open = open
	if open {
		ws.Closes = &closes
	} else {
		ws.NextOpening = &next
	}
	return ws
}

// endedUntouched reports whether the update in flight on n ended with nothing of it left:
// its agent reported Degraded (it rolled back what it began) before any step of it on the
// node finished, and it left no cordon. The node carries what it carried before, and is
// planned from that as a settled node is.
func endedUntouched(n *model.Node, f *model.InFlight) bool {
	if n.State != model.StateDegraded || f.Cordoned {
		return false
	}
	for _, k := range f.Done {
		if s, err := model.ParseStepKey(k); err != nil || s.Kind.OnNode() {
			return false
		}
	}
	return true
}

// specialWarnings says, before apply, where it will refuse to write: a managed path that is
// a named pipe, socket or device on the node (model.Drift.Special), seen as drift or in
// what the node carries.
func specialWarnings(n *model.Node) []string {
	ds := n.Drift
	if n.Observed != nil {
		ds = append(slices.Clip(ds), n.Observed.Drift...)
	}
	var out []string
	for _, d := range ds {
		if d.Special() {
			out = append(out, fmt.Sprintf("apply will refuse to write %s: it is a %s on the node, which mcp never replaces (a failed update could not put it back); remove it on the node first", d.Path, d.Found))
		}
	}
	return out
}

// NodePools maps each node of nodes that a pool selects to that pool (the first, when two
// do: MakePlan refuses that).
func NodePools(pools []model.Pool, nodes []model.Node) map[string]string {
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		for _, p := range pools {
			if selects(p.NodeSelector, n.Labels) {
				out[n.Name] = p.Name
				break
			}
		}
	}
	return out
}
