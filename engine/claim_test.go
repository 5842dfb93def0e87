package engine

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/testkit/chaos"
	"github.com/mcpfleet/mcp/testkit/quickstarttest"
)

// lockView is a backend that only tells who holds the state lock.
type lockView struct {
	state.Backend
	st *state.LockStatus
}

func (v lockView) LockStatus(context.Context) (*state.LockStatus, error) { return v.st, nil }

// sleeper starts a process that runs until the test ends, and returns it as a claim would
// record it.
func sleeper(t *testing.T) (*exec.Cmd, model.Process) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p, err := liveproc.Of(cmd.Process.Pid)
	if err != nil || p.BootID == "" || p.PIDNamespace == "" {
		t.Skipf("no /proc to record a process by (%v)", err)
	}
	return cmd, p
}

// The rules by which a claim's apply is judged alive: its process on this machine (not a
// zombie, not a reused PID); this process's applies by their being under way; elsewhere,
// by the state lock it was taken under, or by its expiry.
func TestClaimJudge(t *testing.T) {
	self := liveproc.Self()
	if self.BootID == "" || self.PIDNamespace == "" {
		t.Skip("no /proc to tell machines apart")
	}
	w := &Workspace{Backend: lockView{}}
	here := func(apply string, p model.Process) model.Claim {
		return model.Claim{Apply: apply, Host: "me@here", Process: p, Since: time.Now()}
	}
	cmd, child := sleeper(t)
	elsewhere := model.Claim{Host: "you@there", Process: model.Process{MachineID: child.MachineID, BootID: child.BootID, PIDNamespace: "pid:[1]",
		PID: child.PID, Start: child.Start}, Since: time.Now()}
	otherMachine := elsewhere
	otherMachine.Process = child
	otherMachine.MachineID, otherMachine.Apply, otherMachine.Lock = "0123456789abcdef0123456789abcdef", "m1", "L"
	for _, tc := range []struct {
		name   string
		claim  model.Claim
		noLock bool
		lock   *state.LockStatus
		want   bool
	}{
		{"released", func() model.Claim { c := here("r", child); c.Released = time.Now(); return c }(), false, nil, false},
		{"another process, running", here("p1", child), false, nil, true},
		{"another process's PID, reused", here("p2", func() model.Process { p := child; p.Start++; return p }()), false, nil, false},
		// An apply of this process is judged as one elsewhere: by its lease (it renews it
		// while it works), or the lock it was taken under.
		{"this process, its apply under way", func() model.Claim { c := here("running", self); c.Expires = time.Now().Add(time.Minute); return c }(), false, nil, true},
		{"this process, its apply ended", func() model.Claim { c := here("ended", self); c.Expires = time.Now().Add(-time.Second); return c }(), false, nil, false},
		{"this process, under a lock this apply holds now", func() model.Claim {
			c := here("locked", self)
			c.Lock, c.Expires = "L", time.Now().Add(time.Minute)
			return c
		}(), false, nil, false},
		{"elsewhere, under a lock this apply holds now", func() model.Claim { c := elsewhere; c.Apply, c.Lock = "l1", "L"; return c }(), false, nil, false},
		{"elsewhere, under the lock a live apply holds", func() model.Claim { c := elsewhere; c.Apply, c.Lock = "l2", "L"; return c }(), true,
			&state.LockStatus{Holder: state.LockInfo{ID: "L", Operation: "apply"}, Alive: true}, true},
		{"elsewhere, under a lock held by another now", func() model.Claim { c := elsewhere; c.Apply, c.Lock = "l3", "L"; return c }(), true,
			&state.LockStatus{Holder: state.LockInfo{ID: "M", Operation: "apply"}, Alive: true}, false},
		{"elsewhere, under a lock whose holder is gone", func() model.Claim { c := elsewhere; c.Apply, c.Lock = "l4", "L"; return c }(), true,
			&state.LockStatus{Holder: state.LockInfo{ID: "L", Operation: "apply"}, Alive: false}, false},
		{"elsewhere, without the lock, not expired", func() model.Claim { c := elsewhere; c.Apply, c.Expires = "e1", time.Now().Add(time.Minute); return c }(), false, nil, true},
		// A live apply in another PID namespace (a container sharing the state) or on
		// another machine with the same PID numbers: its PID says nothing here.
		{"another PID namespace, its PID dead here, under the lock a live apply holds", func() model.Claim {
			c := elsewhere
			c.Apply, c.Lock, c.PID = "n1", "L", 999999
			return c
		}(), true, &state.LockStatus{Holder: state.LockInfo{ID: "L", Operation: "apply"}, Alive: true}, true},
		{"another machine, without the lock, not expired, its PID dead here", func() model.Claim {
			c := otherMachine
			c.Apply, c.Lock, c.PID, c.Expires = "m2", "", 999999, time.Now().Add(time.Minute)
			return c
		}(), true, nil, true},
		{"another machine, under the lock a live apply holds", otherMachine, true,
			&state.LockStatus{Holder: state.LockInfo{ID: "L", Operation: "apply"}, Alive: true}, true},
		{"elsewhere, without the lock, expired", func() model.Claim { c := elsewhere; c.Apply, c.Expires = "e2", time.Now().Add(-time.Second); return c }(), false, nil, false},
		// Issue 41: an apply of another state (its own configuration directory) holds a
		// lock this apply cannot look at; holding a lock of its own says nothing of it.
		{"elsewhere, under another state's lock, not expired, this apply holding its own", func() model.Claim {
			c := elsewhere
			c.Apply, c.Lock, c.State, c.Expires = "s1", "L", "theirs", time.Now().Add(time.Minute)
			return c
		}(), false, nil, true},
		{"elsewhere, under another state's lock, not expired, without the lock", func() model.Claim {
			c := elsewhere
			c.Apply, c.Lock, c.State, c.Expires = "s2", "L", "theirs", time.Now().Add(time.Minute)
			return c
		}(), true, &state.LockStatus{Holder: state.LockInfo{ID: "M", Operation: "apply"}, Alive: true}, true},
		{"elsewhere, under another state's lock, expired", func() model.Claim {
			c := elsewhere
			c.Apply, c.Lock, c.State, c.Expires = "s3", "L", "theirs", time.Now().Add(-time.Second)
			return c
		}(), false, nil, false},
		{"elsewhere, under a lock of this state named by its lineage, this apply holding the lock", func() model.Claim {
			c := elsewhere
			c.Apply, c.Lock, c.State, c.Expires = "s4", "L", "mine", time.Now().Add(time.Minute)
			return c
		}(), false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.Backend = lockView{st: tc.lock}
			// A judge per case: it trusts a look at the lock for a second.
			if got, why := newClaimJudge(w.Backend, "mine", Locking{NoLock: tc.noLock}).live(tc.claim); got != tc.want || why == "" {
				t.Errorf("live = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
	// Killed and not yet reaped: a zombie is dead; and dead it stays.
	cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for liveproc.Runs(child.PID, child.Start) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if live, why := newClaimJudge(w.Backend, "", Locking{}).live(here("z", child)); live {
		t.Errorf("a killed, unreaped holder: live (%s)", why)
	}
}

// quickstart is a copy of the quickstart with short drains and reboots.
func quickstart(t *testing.T) string {
	return quickstarttest.Copy(t, "../examples/quickstart", "1ms", "100ms")
}

func load(t *testing.T, dir string) *Workspace {
	t.Helper()
	w, _, diags := Load(dir, config.Options{}, localParts)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return w
}

// planned reads the state and plans in w, within opts.
func planned(t *testing.T, w *Workspace, opts PlanOptions) (*state.State, *Plan) {
	t.Helper()
	st, err := w.ReadState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pf, err := w.Plan(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st, pf
}

// apply plans (within po) and applies in w as mcp apply -auto-approve does, and returns
// the result, the error and the events.
func apply(t *testing.T, w *Workspace, po PlanOptions, opts ApplyOptions) (*ApplyResult, error, []Event) {
	t.Helper()
	st, pf := planned(t, w, po)
	var mu sync.Mutex
	var evs []Event
	opts.Observer = func(e Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }
	_, res, err := w.Apply(context.Background(), st, pf, opts)
	return res, err, evs
}

// A node a live apply holds is not started, and says who holds it; the apply goes on with
// the pool's other nodes, counting the held node out of service, and ends incomplete, not
// failed. A node whose holder is gone (killed) is taken over and updated.
func TestClaimedNodeIsNotStarted(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	lp := w.Provider.(*local.Provider)
	gone := func(model.Claim) (bool, string) { return false, "" }
	_, live := sleeper(t)
	dead, killed := sleeper(t)
	dead.Process.Kill()
	dead.Wait()
	for node, p := range map[string]model.Process{"worker-0": live, "worker-1": killed} {
		c := model.Claim{Apply: "other-" + node, Host: "me@here", Process: p, Since: time.Now().UTC()}
		if _, err := lp.Claim(context.Background(), node, c, gone); err != nil {
			t.Fatal(err)
		}
	}
	res, err, evs := apply(t, w, PlanOptions{}, ApplyOptions{BudgetPoll: 20 * time.Millisecond})
	if Outcome(res, err) != Incomplete || !errors.Is(err, ErrNotStarted) {
		t.Fatalf("outcome %v, err %v; want incomplete", Outcome(res, err), err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0] != "worker-0" || len(res.Updated) != 5 {
		t.Errorf("skipped %v, updated %v; want worker-0 skipped, the other 5 updated", res.Skipped, res.Updated)
	}
	if !strings.Contains(err.Error(), "other-worker-0") || !strings.Contains(err.Error(), "runs on this machine") {
		t.Errorf("the error does not name the holder and why it is alive: %v", err)
	}
	var claimed int
	for _, e := range evs {
		if e.Kind == EventClaimed && e.Node == "worker-0" {
			claimed++
		}
	}
	if claimed != 1 {
		t.Errorf("%d claimed events for worker-0, want 1", claimed)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	took := false
	for _, e := range logs["worker-1"] {
		took = took || e.Kind == local.EventClaim && e.TookOver == "other-worker-1"
	}
	if !took {
		t.Errorf("worker-1's claim by a killed apply was not taken over: %v", logs["worker-1"])
	}
	for _, e := range logs["worker-0"] {
		if e.Kind == local.EventCordon || e.Kind == local.EventWorking {
			t.Errorf("worker-0, held by a live apply, was worked on: %+v", e)
		}
	}
}

// An apply on another machine, without the lock, claimed infra-1 (its pool has room for
// one), cordoned it, journaled the cordon and stopped: its claim is live until it expires,
// and the node out of service holds the pool's room. The plan, made while the claim is
// live, resumes infra-1 first and has infra-0 wait for it. When the claim lapses,
// unchanged, infra-1 is this apply's: it is finished and the room frees then — both nodes
// are updated — instead of infra-0 waiting out -budget-wait for room only the lapsed claim
// held.
func TestLapsedClaimFreesItsRoom(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	lp := w.Provider.(*local.Provider)
	ctx := context.Background()
	unlocked := Locking{NoLock: true}
	_, pf := planned(t, w, PlanOptions{Lock: unlocked})
	for _, n := range pf.File.Rollout.Nodes {
		if n.Name == "infra-1" {
			r := state.JournalRecord{Node: n.Name, From: n.From, Target: n.To, Step: model.Step{Kind: model.StepCordon}.Key()}
			if err := w.Backend.AppendJournal(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	elsewhere := model.Process{MachineID: "0123456789abcdef0123456789abcdef", BootID: "b", PIDNamespace: "pid:[1]", PID: 1}
	expires := time.Now().Add(1500 * time.Millisecond).UTC()
	c := model.Claim{Apply: "stopped", Host: "you@there", Process: elsewhere, Since: time.Now().UTC(), Expires: expires}
	if _, err := lp.Claim(ctx, "infra-1", c, func(model.Claim) (bool, string) { return false, "" }); err != nil {
		t.Fatal(err)
	}
	if err := lp.Cordon(ctx, "infra-1"); err != nil {
		t.Fatal(err)
	}
	res, err, evs := apply(t, w, PlanOptions{Lock: unlocked}, ApplyOptions{BudgetPoll: 20 * time.Millisecond, BudgetWait: 20 * time.Second, Lock: unlocked})
	if Outcome(res, err) != Complete || len(res.Updated) != 6 {
		t.Fatalf("outcome %v, updated %v, skipped %v, deferred %v, err %v; want all 6 updated once the claim lapsed",
			Outcome(res, err), res.Updated, res.Skipped, res.Deferred, err)
	}
	waited := false
	for _, e := range evs {
		waited = waited || e.Kind == EventWaiting && e.Node == "infra-1" && strings.Contains(e.Reason, "apply stopped")
	}
	if !waited {
		t.Error("infra-1 did not say it waited for the claim to lapse")
	}
	if time.Now().Before(expires) {
		t.Error("apply finished before the claim lapsed")
	}
}

// Without the lock, apply carries out the plan it showed; a node another apply worked on
// since (its claim changed) is not started: its planned steps may be stale.
func TestNodeWorkedOnSinceThePlanIsNotStarted(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	ctx := context.Background()
	unlocked := Locking{NoLock: true}
	st, pf := planned(t, w, PlanOptions{Lock: unlocked})
	other := model.Claim{Apply: "other", Host: "you@there", Process: model.Process{BootID: "elsewhere", PID: 1}, Since: time.Now().UTC()}
	other.Released = other.Since.Add(time.Second)
	if _, err := w.Provider.(*local.Provider).Claim(ctx, "infra-1", other, func(model.Claim) (bool, string) { return false, "" }); err != nil {
		t.Fatal(err)
	}
	_, res, err := w.Apply(ctx, st, pf, ApplyOptions{BudgetPoll: 20 * time.Millisecond, Lock: unlocked})
	if Outcome(res, err) != Incomplete || len(res.Skipped) != 1 || res.Skipped[0] != "infra-1" ||
		!strings.Contains(err.Error(), "since this apply's plan was made") {
		t.Fatalf("skipped %v, err %v; want infra-1 not started, its claim changed since the plan", res.Skipped, err)
	}
}

// rendezvous makes the first Claim of each of two applies wait until both are about to
// claim: both looked at the pool, found room, and claim at the same moment.
type rendezvous struct {
	*local.Provider
	wg   *sync.WaitGroup
	once sync.Once
}

func (r *rendezvous) Claim(ctx context.Context, node string, c model.Claim, live providers.ClaimLive) (*model.Claim, error) {
	r.once.Do(func() { r.wg.Done(); r.wg.Wait() })
	return r.Provider.Claim(ctx, node, c, live)
}

// Two applies without the lock claim one node each of a pool whose budget is one, at the
// same moment, each having found room. Each looks at the pool again once its claim is on
// the node: at least one sees the other's, and backs off; never are both nodes out of service at once, and both
// end updated, one after the other (judged from the nodes' event logs).
func TestUnlockedAppliesBackOffWithinTheBudget(t *testing.T) {
	dir := quickstart(t)
	var wg sync.WaitGroup
	wg.Add(2)
	var res [2]*ApplyResult
	var errs [2]error
	var run sync.WaitGroup
	for i, node := range []string{"infra-0", "infra-1"} {
		w := load(t, dir)
		w.Provider = &rendezvous{Provider: w.Provider.(*local.Provider), wg: &wg}
		unlocked := Locking{NoLock: true}
		scope := PlanOptions{Targets: []string{"node." + node}, Lock: unlocked}
		run.Go(func() {
			res[i], errs[i], _ = apply(t, w, scope, ApplyOptions{BudgetPoll: 20 * time.Millisecond, Lock: unlocked})
		})
	}
	run.Wait()
	for i := range res {
		if Outcome(res[i], errs[i]) != Complete {
			t.Errorf("apply %d: %+v, %v; want complete", i, res[i], errs[i])
		}
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	if r := chaos.Judge(logs, map[string]int{"infra": 1, "worker": 2}); !r.OK() || r.Reboots != 2 {
		t.Errorf("from the event logs (want each infra node rebooted once, one at a time):\n%s", r)
	}
}

// Issue 41: a claim from another machine expiring in 2099 stalled its pool for good. No
// apply asks for more than claimTTL at a time, so a farther expiry is believed only that
// far from when the judge first saw it; a renewal (a new expiry) is seen anew, and an
// expiry within the cap lapses when it says.
func TestClaimExpiryIsCapped(t *testing.T) {
	w := &Workspace{Backend: lockView{}}
	far := model.Claim{Apply: "far", Host: "eve@elsewhere", Since: time.Now().UTC(),
		Process: model.Process{MachineID: "0123456789abcdef0123456789abcdef", BootID: "b", PIDNamespace: "pid:[1]", PID: 42},
		Expires: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
	j := newClaimJudge(w.Backend, "mine", Locking{})
	if live, why := j.live(far); !live || !strings.Contains(why, "2099-01-01") || !strings.Contains(why, "further ahead") {
		t.Errorf("a far expiry, just seen: live %v (%s); want live, saying its expiry is not believed", live, why)
	}
	for k := range j.seen { // as if first seen a lease ago
		j.seen[k] = time.Now().Add(-claimTTL - time.Second)
	}
	if live, why := j.live(far); live {
		t.Errorf("a far expiry, seen a lease ago and not renewed: live (%s)", why)
	}
	renewed := far
	renewed.Expires = time.Now().Add(time.Minute).UTC()
	if live, why := j.live(renewed); !live {
		t.Errorf("the same apply's renewal: not live (%s)", why)
	}
	soon := far
	soon.Apply, soon.Expires = "soon", time.Now().Add(-time.Millisecond)
	if live, why := j.live(soon); live {
		t.Errorf("an expiry within the cap, past: live (%s)", why)
	}
}

// A claim from elsewhere expiring in 2099: the plan names the node blocked, with its
// holder and until when; apply waits for the claim, and once it has lapsed (claimTTL after
// the plan saw it) takes the node over and updates it — judged from the node's event log.
func TestFarExpiryBlocksThePlanAndLapses(t *testing.T) {
	defer func(ttl time.Duration) { claimTTL = ttl }(claimTTL)
	claimTTL = 1500 * time.Millisecond
	dir := quickstart(t)
	w := load(t, dir)
	lp := w.Provider.(*local.Provider)
	far := model.Claim{Apply: "FAR", Host: "eve@elsewhere", Since: time.Now().UTC(), Expires: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC),
		Process: model.Process{MachineID: "0123456789abcdef0123456789abcdef", BootID: "b", PIDNamespace: "pid:[1]", PID: 42}}
	if _, err := lp.Claim(context.Background(), "infra-1", far, func(model.Claim) (bool, string) { return false, "" }); err != nil {
		t.Fatal(err)
	}
	seenBy := time.Now() // the plan's refresh sees the claim after this
	st, pf := planned(t, w, PlanOptions{})
	blocked := 0
	for _, n := range pf.File.Rollout.Nodes {
		for _, b := range n.Blockers {
			if b.Kind != planner.BlockClaim {
				continue
			}
			blocked++
			if n.Name != "infra-1" || !strings.Contains(b.Message, "apply FAR") || !strings.Contains(b.Message, "eve@elsewhere") ||
				!strings.Contains(b.Message, "live until") {
				t.Errorf("node %s blocked: %s; want infra-1 held by apply FAR on eve@elsewhere, until when", n.Name, b.Message)
			}
		}
	}
	if blocked != 1 {
		t.Errorf("%d claim blockers, want 1 (infra-1)", blocked)
	}
	_, res, err := w.Apply(context.Background(), st, pf, ApplyOptions{BudgetPoll: 20 * time.Millisecond, BudgetWait: 20 * time.Second})
	if Outcome(res, err) != Complete || len(res.Updated) != 6 {
		t.Fatalf("outcome %v, updated %v, skipped %v, err %v; want all 6 updated once the claim lapsed", Outcome(res, err), res.Updated, res.Skipped, err)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	var took *local.Event
	for _, e := range logs["infra-1"] {
		if e.Kind == local.EventClaim && e.TookOver == "FAR" {
			took = &e
		}
	}
	if took == nil || took.Time.Before(seenBy.Add(claimTTL)) {
		t.Errorf("infra-1's far claim: taken over at %v (seen after %v); want once it lapsed, %s later: %v", took, seenBy, claimTTL, logs["infra-1"])
	}
}

// A FleetLock client's reboot slot (mcp serve -fleetlock) is live until its lease ends,
// past the cap of an apply's claim, and whoever judges it — with the state lock or
// without; lapsed, it is not; its expiry is believed no further than MaxFleetLockLease.
func TestFleetLockClaimLivesItsLease(t *testing.T) {
	w := &Workspace{Backend: lockView{}}
	slot := model.Claim{Apply: model.FleetLockPrefix + "c988d2509fdf", Since: time.Now().UTC(), Expires: time.Now().Add(time.Hour).UTC()}
	for _, lock := range []Locking{{}, {NoLock: true}} {
		j := newClaimJudge(w.Backend, "mine", lock)
		if live, why := j.live(slot); !live || !strings.Contains(why, "FleetLock") {
			t.Errorf("lock %+v: a slot leased for an hour: live %v (%s); want live", lock, live, why)
		}
		for k := range j.seen { // as if first seen longer ago than an apply's claim lives
			j.seen[k] = time.Now().Add(-claimTTL - time.Second)
		}
		if live, why := j.live(slot); !live {
			t.Errorf("lock %+v: the slot seen %s ago: not live (%s); its lease runs an hour", lock, claimTTL, why)
		}
	}
	lapsed := slot
	lapsed.Expires = time.Now().Add(-time.Second)
	if live, why := newClaimJudge(w.Backend, "mine", Locking{}).live(lapsed); live {
		t.Errorf("a lapsed slot: live (%s)", why)
	}
	far := slot
	far.Expires = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	j := newClaimJudge(w.Backend, "mine", Locking{})
	j.live(far)
	for k := range j.seen {
		j.seen[k] = time.Now().Add(-model.MaxFleetLockLease - time.Second)
	}
	if live, why := j.live(far); live {
		t.Errorf("a slot expiring in 2099, seen %s ago: live (%s)", model.MaxFleetLockLease, why)
	}
}

// A FleetLock slot taken or given back between a plan and its apply leaves the fleet's
// fingerprint as it was (apply waits for the slot live); another apply's claim does not.
func TestFingerprintLeavesFleetLockOut(t *testing.T) {
	fleet := func(c *model.Claim) *model.Fleet {
		return &model.Fleet{Nodes: []model.Node{{Name: "w-0", Ready: true}, {Name: "w-1", Ready: true, Claim: c}}}
	}
	none := Fingerprint(fleet(nil))
	slot := &model.Claim{Apply: model.FleetLockPrefix + "c988", Since: time.Now().UTC(), Expires: time.Now().Add(time.Hour).UTC()}
	if got := Fingerprint(fleet(slot)); got != none {
		t.Error("a FleetLock slot changed the fleet's fingerprint")
	}
	f := fleet(slot)
	Fingerprint(f)
	if f.Nodes[1].Claim != slot {
		t.Error("Fingerprint changed the fleet it digested")
	}
	if got := Fingerprint(fleet(&model.Claim{Apply: "A1", Since: time.Now().UTC()})); got == none {
		t.Error("another apply's claim left the fleet's fingerprint as it was")
	}
}

// kured's lock, laid over a node's own claim, leaves the fleet's fingerprint as that claim
// alone gives it: taken or released between a plan and its apply, it stales no plan.
func TestFingerprintLeavesKuredOut(t *testing.T) {
	record := &model.Claim{Apply: "A1", Since: time.Now().UTC(), Released: time.Now().UTC()}
	fleet := func(c, own *model.Claim) *model.Fleet {
		return &model.Fleet{Nodes: []model.Node{{Name: "w-0", Ready: true}, {Name: "w-1", Ready: true, Claim: c, OwnClaim: own}}}
	}
	lock := &model.Claim{Apply: model.KuredPrefix + "w-1", Host: "DaemonSet kube-system/kured", Since: time.Now().UTC()}
	if Fingerprint(fleet(lock, record)) != Fingerprint(fleet(record, nil)) {
		t.Error("kured's lock over a node's record changed the fleet's fingerprint")
	}
	if Fingerprint(fleet(lock, nil)) != Fingerprint(fleet(nil, nil)) {
		t.Error("kured's lock on a node without a claim changed the fleet's fingerprint")
	}
	j := newClaimJudge(nil, "", Locking{NoLock: true})
	if live, why := j.live(*lock); !live || !strings.Contains(why, "kured") {
		t.Errorf("kured's lock without a TTL: live %v (%s)", live, why)
	}
	lapsed := *lock
	lapsed.Expires = time.Now().Add(-time.Second).UTC()
	if live, why := j.live(lapsed); live || !strings.Contains(why, "lapsed") {
		t.Errorf("kured's lock past its TTL: live %v (%s)", live, why)
	}
}
