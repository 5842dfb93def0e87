package planner

import (
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Input is everything a plan is computed from. The planner reads it and nothing else.
type Input struct {
	Desired *model.Desired
	// Rendered is the new rendered config of each pool (from Render), by pool name.
	Rendered map[string]*model.Rendered
	// Machines are the state's machine pointers (what the boot server gives each machine
	// block now), by machine: a plan that moves one changes something.
	Machines map[string]model.MachinePointer
	// NodeRendered is the variant of its pool's config each node that targeted configs
	// apply to gets (Variants.ForNodes), by node; absent: the pool's. MachineRendered is
	// each machine block's (Variants.ForMachines), for the boot server.
	NodeRendered, MachineRendered map[string]*model.Rendered
	// Known holds the rendered configs the state remembers, by name; a node's current config
	// is looked up here to know what changes.
	Known map[string]*model.Rendered
	// Pointers is the state's boot-server pointer per pool (the last rendered config applied).
	Pointers map[string]string
	// BootImages is the state's boot image per pool (what apply last made new nodes boot).
	BootImages map[string]model.BootImageDef
	// UserData is the digest of the pointer config each pool's user_data Secret must hold,
	// its token left out (the engine builds it; Fleet.UserData has what the Secrets hold,
	// and whether their token is the pool's).
	UserData map[string]string
	Fleet    *model.Fleet
	// InFlight are the updates interrupted applies left unfinished, as they recorded them
	// (the engine builds them from the state's journal and the nodes' claims): such a node
	// is resumed. Nothing else says an update is in flight; how a node looks never does.
	InFlight []model.InFlight
	// Targets limits the rollout to these pools and nodes ("pool.NAME", "node.NAME"; none:
	// everything), as Terraform's -target; Exclude keeps these nodes ("node.NAME") out, as
	// a hold does. Unknown ones are errors.
	Targets, Exclude []string
	// Now is the time the plan is made for: maintenance windows are shown open or closed
	// at it. The planner reads no clock.
	Now time.Time
	// Claims are the nodes' claims as the refresh saw them, each judged then (the engine
	// judges: the planner reads no process and no lock), by node: a changing node another
	// live apply holds is blocked (BlockClaim, asked of the claim gate as apply asks it).
	Claims map[string]JudgedClaim
	// PausedSince is, per paused pool, when the first apply that saw it paused started
	// (the state's record): plans show it.
	PausedSince map[string]time.Time
	// StepTimes are the state's records of how long each pool's steps took, by pool: what
	// each pool's Estimate is made from (none: defaults).
	StepTimes map[string]*model.StepTimes
	// Rollback names the pools whose target in Rendered is a stored rendered config that
	// mcp rollback goes back to, not what the configuration renders (PoolPlan.Rollback).
	Rollback map[string]bool
	// RolledBack are the state's rollback marks, by pool: a pool whose target is not the
	// config it was rolled back to is warned about (PoolPlan.RolledBack).
	RolledBack map[string]model.RolledBack

	memo     map[deriveKey]derived      // set by MakePlan
	variants map[string]*model.Rendered // NodeRendered and MachineRendered by name, set by MakePlan
	inFlight map[string]*model.InFlight // InFlight by node, set by MakePlan
	interims *interims                  // the interim configs this plan makes, set by MakePlan
}

// Rollout is what the planner decides: per pool and per node what will happen, in which
// wave, and what blocks it. It is the part of a plan that is shown and reviewed; the engine's
// Plan wraps it with what it was made from (engine.Plan, planfile.File).
type Rollout struct {
	Pools []PoolPlan `json:"pools"`
	// Nodes lists every node of every pool, pool by pool in rollout order (zone, then
	// oldest); unchanged nodes have no steps.
	Nodes []NodePlan `json:"nodes"`
	// Unmanaged names nodes that no pool selects.
	Unmanaged []string `json:"unmanaged,omitempty"`
	// BootImages are the boot images of the pools that manage one, in pool order.
	BootImages []BootImagePlan `json:"boot_images,omitempty"`
	// Rendered holds each pool's new rendered config, by name, so that a saved plan carries
	// exactly what apply will write.
	Rendered map[string]*model.Rendered `json:"rendered"`
	// Provenance says, per rendered config of Rendered (by name), which config block wrote
	// each file, unit and kernel argument. Display only: apply does not compare it with
	// the plan it derives again, so a block moved to another line does not make a saved
	// plan stale.
	Provenance map[string]*model.Provenance `json:"provenance,omitempty"`
}

// PoolPlan is one pool's part of the plan.
type PoolPlan struct {
	Name     string `json:"name"`
	Rendered string `json:"rendered"`           // the pool's new rendered config
	Previous string `json:"previous,omitempty"` // the pointer before (from the state)
	// ReRendered is true when Rendered differs from Previous.
	ReRendered bool `json:"re_rendered"`
	// Rollback: Rendered is a stored rendered config mcp rollback goes back to, not what the
	// configuration renders; the configuration is not changed, and apply marks the pool
	// rolled back (the state's RolledBack).
	Rollback bool `json:"rollback,omitempty"`
	// RolledBack: an earlier rollback moved the pool to RolledBack.To, and the configuration
	// renders another config (Rendered): this plan goes forward again to it.
	RolledBack *model.RolledBack `json:"rolled_back,omitempty"`
	// Warnings are about the pool as a whole: a change to the first-boot part of its
	// config, which running nodes never get.
	Warnings []string `json:"warnings,omitempty"`
	Size     int      `json:"size"`
	// MaxUnavailable is max_unavailable resolved against Size.
	MaxUnavailable int `json:"max_unavailable"`
	// Unavailable counts the pool's nodes out of service now (Condition not ""), whether
	// this rollout changes them or not.
	Unavailable int `json:"unavailable"`
	// Paused is true when the pool's pause holds changes: always with paused = true; with
	// paused = "disruptive" when a changing node's steps drain or reboot it, or the rest of
	// a node's move waits (NodePlan.Interim). The pool's boot pointer and boot image then
	// stay as they are.
	Paused bool `json:"paused,omitempty"`
	// Pause is the pool's pause when it is paused (nil: it is not): since when, and what it
	// holds. For people: apply asks the paused gate again of each node.
	Pause *PauseStatus `json:"pause,omitempty"`
	// Order is the order the pool's changing nodes roll out in, canaries first:
	// "oldest" (zone, then oldest, then name), "newest" (zone, then newest, then name), or
	// "list" (OrderNodes first, in that order; the others after them as "oldest"). Nodes
	// out of service already go before all of them (they take no more of the budget).
	Order      model.OrderBy `json:"order,omitempty"`
	OrderNodes []string      `json:"order_nodes,omitempty"`
	// DrainTimeout is the pool's drain_timeout (zero: apply's -drain-timeout).
	DrainTimeout time.Duration `json:"drain_timeout,omitempty"`
	// HealthChecks are the pool's health_check blocks, run on each node after its steps.
	HealthChecks []model.HealthCheck `json:"health_checks,omitempty"`
	// AlertGate is the pool's alert_gate: apply asks Prometheus before each node starts and
	// after each finishes (engine, "alert gate").
	AlertGate *model.AlertGate `json:"alert_gate,omitempty"`
	// Slots is how many of the pool's nodes in service may update at once
	// (MaxUnavailable - Unavailable); nodes out of service already update in their own slot.
	// It is the plan's prediction: apply re-counts from a fresh observation before each node.
	Slots    int       `json:"slots"`
	Updates  int       `json:"updates"` // nodes with steps
	Waves    int       `json:"waves"`
	Blockers []Blocker `json:"blockers,omitempty"`
	// Held counts the pool's nodes kept out of the rollout (NodePlan.Held); Untargeted
	// those -target leaves out.
	Held       int `json:"held,omitempty"`
	Untargeted int `json:"untargeted,omitempty"`
	// PointerKept is true when -target is given and does not name the pool: its boot
	// pointer stays at Previous (new nodes keep booting it), whatever Rendered is.
	PointerKept bool `json:"pointer_kept,omitempty"`
	// OnDrift is the pool's on_drift ("" is restore): "report" plans nothing for drift.
	OnDrift model.OnDrift `json:"on_drift,omitempty"`
	// OnFailure is the pool's on_failure ("" is stop): with "revert", a failure that stops
	// the rollout puts the nodes it changed back on Previous (engine, revert.go).
	OnFailure model.OnFailure `json:"on_failure,omitempty"`
	// Pacing: Canary nodes (marked on their NodePlan) update alone, then apply waits
	// CanarySoak before the others start; MaxFailures failed nodes stop new starts; Soak
	// keeps each finished node's slot taken that long. Durations in nanoseconds.
	Canary      int           `json:"canary,omitempty"`
	CanarySoak  time.Duration `json:"canary_soak,omitempty"`
	MaxFailures int           `json:"max_failures,omitempty"`
	Soak        time.Duration `json:"soak,omitempty"`
	// MaxStaging is how many of the pool's nodes stage their update ahead of their slots
	// at once, outside MaxUnavailable (the pool's max_staging; by default MaxUnavailable).
	// 0: each node stages in its own slot.
	MaxStaging int `json:"max_staging,omitempty"`
	// Window is the pool's maintenance windows as they stand at the plan's time; nil: the
	// pool has none (always open).
	Window *WindowStatus `json:"window,omitempty"`
	// Estimate is how long the rollout of the pool's nodes this plan starts is expected to
	// take, and whether it fits the pool's windows (nil: no node starts). For people only.
	Estimate *Estimate `json:"estimate,omitempty"`
	// Variants are the pool's configs for chosen nodes (configs with nodes or
	// node_selector): each with the nodes whose target it is, and the machine blocks that
	// boot it. The other nodes' target is Rendered.
	Variants []VariantPlan `json:"variants,omitempty"`
	// Machines is the config each machine block of the pool boots, by machine (its
	// variant or Rendered): what apply points the boot server at for it.
	Machines map[string]string `json:"machines,omitempty"`
	// MachinesMoved names the machine blocks of the pool whose boot pointer (config or
	// selectors) this plan moves, or removes, sorted: a change even when no node changes.
	MachinesMoved []string `json:"machines_moved,omitempty"`
	// Changes are what the pool's changing nodes' moves change, item by item, one per
	// config they move from (and the boot pointer's move when no node makes it). For
	// people: apply decides nothing on them.
	Changes []Change `json:"changes,omitempty"`
}

// PauseStatus is a paused pool's pause: its mode, since when, and what it holds.
type PauseStatus struct {
	// Mode is "all" (paused = true) or "disruptive" (paused = "disruptive").
	Mode model.Pause `json:"mode"`
	// Since is when the first apply that saw the pool paused started (the state records
	// it; the first apply that sees the pool unpaused forgets it). nil: no apply has seen
	// the pause yet: it takes effect at the next one.
	Since *time.Time `json:"since,omitempty"`
	// Waiting are the changing nodes the pause holds, whole or (Interim) in part, in
	// rollout order; Steps what their held steps do, each kind and target once ("write
	// /etc/chrony.conf", "reboot"), in order of first appearance; Disruptive is true when
	// one of them drains or reboots its node.
	Waiting    []string `json:"waiting"`
	Steps      []string `json:"steps,omitempty"`
	Disruptive bool     `json:"disruptive"`
	// Passing (mode "disruptive"): the changing nodes whose steps neither drain nor
	// reboot them: they update now.
	Passing []string `json:"passing,omitempty"`
	// Interim (mode "disruptive"): the nodes of Passing that move to an interim config
	// (NodePlan.Interim): what of their move disrupts nothing now, the rest (in Waiting)
	// when the pause ends.
	Interim []string `json:"interim,omitempty"`
}

// WindowStatus is a pool's maintenance windows at the time the plan was made. Apply looks
// again at the clock before each node starts: this is the plan's view, for people.
type WindowStatus struct {
	Windows []string `json:"windows"` // each as "sat,sun 02:00 for 4h (Europe/Berlin)"
	Open    bool     `json:"open"`
	// Closes is when the open window ends; NextOpening when a closed one next opens.
	Closes      *time.Time `json:"closes,omitempty"`
	NextOpening *time.Time `json:"next_opening,omitempty"`
}

// NodeAction is what happens to a node as a whole.
type NodeAction string

const (
	NodeNoOp   NodeAction = "no-op"
	NodeUpdate NodeAction = "update"
	// NodeResume finishes an update an interrupted apply started: its steps are derived
	// from what the node reports, as any update's, and its health gates run again.
	NodeResume NodeAction = "resume"
	// NodeAdopt records a node whose current config is absent or unknown to the state on
	// its target, the node carrying it whole (Observation): its one step is an adopt, which
	// the node runs by checking so itself; nothing on it changes.
	NodeAdopt NodeAction = "adopt"
)

// NodePlan is one node's part of the plan.
type NodePlan struct {
	Name   string     `json:"name"`
	Pool   string     `json:"pool"`
	Zone   string     `json:"zone,omitempty"`
	Action NodeAction `json:"action"`
	From   string     `json:"from,omitempty"` // current rendered config
	// FromSource says where From was read when not from mcp's own record (model.Node
	// CurrentConfigFrom). For people reading the plan only.
	FromSource string       `json:"from_source,omitempty"`
	To         string       `json:"to"` // target rendered config
	Steps      []model.Step `json:"steps,omitempty"`
	// Reboot is true when Steps contain a reboot.
	Reboot bool `json:"reboot,omitempty"`
	// Wave is the 1-based wave the node is predicted to start in (0: no steps or deferred).
	// Apply schedules continuously; waves are the prediction for equal step durations.
	Wave int `json:"wave,omitempty"`
	// Deferred is true when the node's steps will not run in this apply (paused pool,
	// no budget left).
	Deferred bool `json:"deferred,omitempty"`
	// Condition says how the node was out of service when the plan was made ("" when
	// Ready, schedulable and settled): see Condition.
	Condition string `json:"condition,omitempty"`
	// NotReady is true when the node was NotReady when the plan was made: apply holds it
	// to no more than it had (its built-in health gates are skipped).
	NotReady bool      `json:"not_ready,omitempty"`
	Blockers []Blocker `json:"blockers,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
	// Drift is how the node differs from its current config (disk, kernel arguments, OS
	// image); the steps restore it unless the pool's on_drift is "report".
	Drift []model.Drift `json:"drift,omitempty"`
	// DriftOnly is true when the node's steps only restore drift: its config does not
	// change. Such a node is not a config change (HasConfigChanges).
	DriftOnly bool `json:"drift_only,omitempty"`
	// DriftUnderWay names the config an update under way on the node moves it to (its
	// agent Working or its desired config another, an interrupted apply's journal), when it
	// has drift: that drift may be the update's own writes, not a change outside of mcp.
	DriftUnderWay string `json:"drift_under_way,omitempty"`
	// DriftUnlisted counts drifted paths the node reported without listing them; the
	// steps then restore every path the config manages.
	DriftUnlisted int `json:"drift_unlisted,omitempty"`
	// Held says why the node is kept out of the rollout (its mcpfleet.io/hold label or
	// annotation, or -exclude): it has no steps, whatever it needs.
	Held string `json:"held,omitempty"`
	// Untargeted is true when -target names neither the node nor its pool: no steps.
	Untargeted bool `json:"untargeted,omitempty"`
	// Canary is true for the pool's canary nodes: apply updates them alone, first.
	Canary bool `json:"canary,omitempty"`
	// Observation is what the node carries against To, for a node whose From is absent or
	// unknown to the state: its steps are those of the items that differ (none: adopt).
	Observation *model.Observation `json:"observation,omitempty"`
	// Happened says what the node shows of its update already done (it rebooted into the
	// target under an interrupted apply): those steps are not in Steps. For people only.
	Happened string `json:"happened,omitempty"`
	// Interim: the pool is paused for disruptive changes and the node's move mixed changes
	// that disrupt nothing with changes that drain or reboot: To is an interim config (its
	// current one with the changes that disrupt nothing), Steps the move to it, and the
	// rest of the move to Interim.Target waits.
	Interim *Interim `json:"interim,omitempty"`
}

// Disruptive reports whether the node's steps take its workloads away: a drain or a
// reboot (model.StepKind.Disruptive).
func (n *NodePlan) Disruptive() bool {
	return slices.ContainsFunc(n.Steps, func(s model.Step) bool { return s.Kind.Disruptive() })
}

// Changed reports whether the node has anything to do: steps, or (when only on_change
// policies differ) recording its new config.
func (n *NodePlan) Changed() bool { return n.Action != NodeNoOp && n.Action != "" }

// HasChanges reports whether applying the plan would do anything: a node to change, or a
// pool whose rendered config (and so its boot-server pointer) moves.
func (p *Rollout) HasChanges() bool {
	return p.changes(func(*NodePlan) bool { return true })
}

// HasConfigChanges reports whether the plan changes anything for a change of the
// configuration, not counting nodes whose steps only restore drift: what plan's
// -detailed-exitcode=config exits 2 for (plain -detailed-exitcode exits 2 for HasChanges).
func (p *Rollout) HasConfigChanges() bool {
	return p.changes(func(n *NodePlan) bool { return !n.DriftOnly })
}

// changes reports whether the plan changes a node that counts (a changed node counts
// when counts says so), a pool's pointer or a boot image.
func (p *Rollout) changes(counts func(*NodePlan) bool) bool {
	for i := range p.Nodes {
		if p.Nodes[i].Changed() && counts(&p.Nodes[i]) {
			return true
		}
	}
	for _, pp := range p.Pools {
		if (pp.ReRendered || len(pp.MachinesMoved) > 0) && !pp.PointerKept {
			return true
		}
	}
	for i := range p.BootImages {
		if p.BootImages[i].Changes() {
			return true
		}
	}
	return false
}

// Drifted is the plan's nodes that differ from the config they run, in plan order.
func (p *Rollout) Drifted() []*NodePlan {
	var out []*NodePlan
	for i := range p.Nodes {
		if len(p.Nodes[i].Drift) > 0 || p.Nodes[i].DriftUnlisted > 0 {
			out = append(out, &p.Nodes[i])
		}
	}
	return out
}

// BlockerKind says what blocks.
type BlockerKind string

const (
	BlockPDB    BlockerKind = "pdb"    // a PodDisruptionBudget allows no disruption of a pod to evict
	BlockPaused BlockerKind = "paused" // the pool is paused
	BlockBudget BlockerKind = "budget" // max_unavailable is already used up
	// BlockPDBWait: the node's drain waits for earlier nodes of the rollout (After) to
	// bring back their pods, which a PDB allows too few disruptions to evict beside them.
	BlockPDBWait BlockerKind = "pdb-wait"
	// BlockClaim: another apply that still runs, as far as the refresh could judge, holds
	// the node (model.Claim): apply waits for its claim to lapse, within -budget-wait, or
	// leaves the node. A judgement of the moment, added by the engine (the planner reads
	// no clock and no process): a saved plan's are not compared with apply's own.
	BlockClaim BlockerKind = "claim"
)

// Blocker is something that stops (or is predicted to stop) a node or pool from updating.
type Blocker struct {
	Kind    BlockerKind `json:"kind"`
	Message string      `json:"message"`
	PDB     string      `json:"pdb,omitempty"` // namespace/name
	Pod     string      `json:"pod,omitempty"` // namespace/name
	// After names the earlier nodes a pdb-wait waits for.
	After []string `json:"after,omitempty"`
}

// targetOf is node's target in pool: its variant, or the pool's config.
func (in *Input) targetOf(pool, node string) *model.Rendered {
	if r := in.NodeRendered[node]; r != nil {
		return r
	}
	return in.Rendered[pool]
}

// indexVariants names the variants of in by rendered name (in.variants).
func (in *Input) indexVariants() {
	in.variants = map[string]*model.Rendered{}
	for _, m := range []map[string]*model.Rendered{in.NodeRendered, in.MachineRendered} {
		for _, r := range m {
			in.variants[r.Name] = r
		}
	}
}
