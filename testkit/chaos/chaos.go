// Package chaos is mcp's crash harness: on a local fleet it runs the real `mcp apply`
// binary, SIGKILLs it at seeded random moments, re-runs it until the plan is empty, and
// judges the run from the fleet's own records (each node's event log) — never from what
// mcp says of itself: reboots per node and rendered config, nodes left cordoned, and the
// most nodes of each pool out of service at one instant against the pool's budget. `make
// chaos` runs it long; a short run is an acceptance test.
package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// Options describe a run.
type Options struct {
	MCP  string // the mcp binary
	Dir  string // an empty directory to work in
	Seed uint64
	// Kills is how many applies are disrupted, each by a fault drawn from Faults (all of
	// AllFaults when empty); MaxDelay bounds the (random) time from an apply's start to
	// its signal.
	Kills    int
	Faults   []Fault
	MaxDelay time.Duration
	// Pools are the pools and their sizes and budgets; zero: worker 50 (10%), infra 30 (3),
	// storage 20 (1).
	Pools []Pool
	// DrainDuration and RebootDuration are the local provider's simulated durations.
	DrainDuration, RebootDuration time.Duration
	// Log, when set, sees a line per action.
	Log func(format string, a ...any)
}

// Pool is one pool of the fleet.
type Pool struct {
	Name           string
	Size           int
	MaxUnavailable string // as in HCL: "10%" or "3"
}

// Budget resolves MaxUnavailable against Size as mcp does (percent rounds down, at least 1).
func (p Pool) Budget() int {
	if v, ok := strings.CutSuffix(p.MaxUnavailable, "%"); ok {
		n, _ := strconv.Atoi(v)
		return max(1, p.Size*n/100)
	}
	n, _ := strconv.Atoi(p.MaxUnavailable)
	return max(1, n)
}

// hcl is MaxUnavailable as HCL: a percentage is a string, a count a number.
func (p Pool) hcl() string {
	if strings.HasSuffix(p.MaxUnavailable, "%") {
		return strconv.Quote(p.MaxUnavailable)
	}
	return p.MaxUnavailable
}

// DefaultPools is the fleet: 100 nodes in 3 pools.
var DefaultPools = []Pool{{"worker", 50, "10%"}, {"infra", 30, "3"}, {"storage", 20, "1"}}

// Report is what a run saw.
type Report struct {
	// Disruptions counts the applies disrupted, Faults them by fault; Kills the SIGKILLs.
	Disruptions int
	Faults      map[Fault]int
	Kills       int
	Runs        int // applies started, killed ones included
	ReRuns      int // applies after the last kill until the plan was empty
	Generations int // configuration changes rolled out (each a new rendered config per pool)
	// DoubleReboots counts reboots beyond the first of one node into one rendered config;
	// RolledBack the reboots the OS rolled back (FaultRollback), which end their attempt and
	// are not counted there.
	DoubleReboots int
	Reboots       int
	RolledBack    int
	LeftCordoned  []string
	// MaxOut is, per pool, the most nodes out of service (NotReady, cordoned, updating or
	// Degraded) at an instant mcp took one out of service (a cordon, or an update in
	// place starting); Budget the pool's max_unavailable.
	MaxOut, Budget map[string]int
	// StateChecks counts the reads of the state after a kill, all of which succeeded.
	StateChecks int
	// RootsChecked counts the nodes whose root and node.json were read at the end.
	RootsChecked int
	Elapsed      time.Duration
	Problems     []string
}

// OK reports whether the run kept every promise.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "disrupted applies %d (%s), applies %d (re-runs after the last %d), rollouts %d, reboots %d, in %s\n",
		r.Disruptions, r.faultCounts(), r.Runs, r.ReRuns, r.Generations, r.Reboots, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "double reboots for one rendered config: %d (reboots the OS rolled back, not counted: %d)\n", r.DoubleReboots, r.RolledBack)
	fmt.Fprintf(&b, "nodes left cordoned: %d\n", len(r.LeftCordoned))
	fmt.Fprintf(&b, "state read after every kill: %d of %d ok\n", r.StateChecks, r.Kills)
	fmt.Fprintf(&b, "nodes read at the end (root file, node.json): %d\n", r.RootsChecked)
	for _, p := range sortedKeys(r.Budget) {
		verdict := "ok"
		if r.MaxOut[p] > r.Budget[p] {
			verdict = "EXCEEDED"
		}
		fmt.Fprintf(&b, "pool %-8s most out of service at once %d, max_unavailable %d: %s\n", p, r.MaxOut[p], r.Budget[p], verdict)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "PROBLEM: %s\n", p)
	}
	return b.String()
}

func (r *Report) faultCounts() string {
	var parts []string
	for _, f := range AllFaults {
		if n := r.Faults[f]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f, n))
		}
	}
	return strings.Join(parts, ", ")
}

// Run does the whole run: fleet, disrupted applies, convergence, judgement.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Pools == nil {
		o.Pools = DefaultPools
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if len(o.Faults) == 0 {
		o.Faults = AllFaults
	}
	h := &harness{o: o, run: Runner{MCP: o.MCP, Dir: o.Dir}, rng: rand.New(rand.NewPCG(o.Seed, 0x6d6370)),
		rep: &Report{Budget: map[string]int{}, Faults: map[Fault]int{}}}
	start := time.Now()
	if err := h.setUp(); err != nil {
		return nil, err
	}
	for h.rep.Disruptions < o.Kills {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := h.disruptOne(ctx); err != nil {
			return h.rep, err
		}
	}
	if err := h.putAllBack(); err != nil {
		return h.rep, err
	}
	if err := h.converge(ctx); err != nil {
		return h.rep, err
	}
	h.rep.Elapsed = time.Since(start)
	return h.rep, h.judge()
}

type harness struct {
	o     Options
	rng   *rand.Rand
	rep   *Report
	run   Runner
	gen   int         // the configuration's generation
	kills []time.Time // when each killed apply was gone
	// changed are the outside changes in force: node, the change, the change that undoes it.
	changed [][3]string
	round   []Fault // the faults left in this round
}

func (h *harness) fleet() string { return filepath.Join(h.o.Dir, "fleet") }

// setUp creates the fleet and the configuration (generation 1).
func (h *harness) setUp() error {
	var sizes []string
	for _, p := range h.o.Pools {
		sizes = append(sizes, fmt.Sprintf("%s=%d", p.Name, p.Size))
		h.rep.Budget[p.Name] = p.Budget()
	}
	if _, err := h.run.Run("fleet", "init", h.fleet(), "-nodes", strings.Join(sizes, ","), "-zones", "a,b,c", "-workloads"); err != nil {
		return err
	}
	return h.nextGeneration()
}

// nextGeneration writes the configuration anew with the next generation: odd ones change a
// file that needs a reboot and a kernel argument, even ones a file that needs a restart —
// every node changes.
func (h *harness) nextGeneration() error {
	h.gen++
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"local\" {\n  fleet = \"./fleet\"\n  drain_duration = %q\n  reboot_duration = %q\n  node_timeout = \"1m\"\n}\n\n",
		h.o.DrainDuration.String(), h.o.RebootDuration.String())
	fmt.Fprintf(&b, "state {\n  backend = \"local\"\n}\n\n")
	var names []string
	for _, p := range h.o.Pools {
		names = append(names, strconv.Quote(p.Name))
		fmt.Fprintf(&b, "pool %q {\n  node_selector = { \"node-role.kubernetes.io/%s\" = \"\" }\n  max_unavailable = %s\n}\n\n",
			p.Name, p.Name, p.hcl())
	}
	policy := "reboot"
	if h.gen%2 == 0 {
		policy = "restart:chronyd.service"
	}
	// A kernel argument the reboot generations change: staged until the reboot, so that an
	// OS rolling back at the reboot (FaultRollback) leaves the node without it.
	kargs := h.gen - (1 - h.gen%2)
	fmt.Fprintf(&b, "config \"50-chaos\" {\n  pools = [%s]\n  kernel_args = [\"mcp.chaos=%d\"]\n  file \"/etc/chaos.conf\" {\n    content = \"generation %d\\n\"\n    on_change = [%q]\n  }\n}\n",
		strings.Join(names, ", "), kargs, h.gen, policy)
	h.rep.Generations = h.gen
	h.o.Log("configuration generation %d (%s)", h.gen, policy)
	return os.WriteFile(filepath.Join(h.o.Dir, "main.hcl"), []byte(b.String()), 0o644)
}

// disruptOne starts a new rollout when the last is done, then disrupts one apply with a
// fault drawn from Options.Faults.
func (h *harness) disruptOne(ctx context.Context) error {
	if changes, err := h.run.PlanChanges(); err != nil {
		return err
	} else if !changes {
		if err := h.nextGeneration(); err != nil {
			return err
		}
	}
	// Each fault once per round, in a seeded order: a short run still meets every fault.
	if len(h.round) == 0 {
		h.round = slices.Clone(h.o.Faults)
		h.rng.Shuffle(len(h.round), func(i, j int) { h.round[i], h.round[j] = h.round[j], h.round[i] })
	}
	f := h.round[0]
	h.round = h.round[1:]
	h.rep.Disruptions++
	return h.disrupt(ctx, f)
}

// checkState reads the state as mcp does: a kill must never leave it unreadable.
func (h *harness) checkState(ctx context.Context) error {
	b := &localstate.Local{Path: filepath.Join(h.o.Dir, "mcp.state")}
	if _, err := b.Read(ctx); err != nil {
		return fmt.Errorf("the state does not read: %w", err)
	}
	h.rep.StateChecks++
	return nil
}

// converge re-runs apply until the plan is empty; a failed re-run is a broken promise.
func (h *harness) converge(ctx context.Context) error {
	runs, failed, err := h.run.Converge(20, h.o.Log)
	h.rep.Runs += runs
	h.rep.ReRuns += runs
	for _, f := range failed {
		h.rep.Problems = append(h.rep.Problems, f.Error())
	}
	return err
}

// Runner runs the mcp binary MCP on the configuration in Dir, as a person would.
type Runner struct{ MCP, Dir string }

// Run runs mcp with args; a failure carries the last lines of its output.
func (r Runner) Run(args ...string) (string, error) {
	cmd := exec.Command(r.MCP, append([]string{"-chdir=" + r.Dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("mcp %s: %w\n%s", strings.Join(args, " "), err, lastLines(string(out), 12))
	}
	return string(out), nil
}

// PlanChanges runs mcp plan -detailed-exitcode, then mcp drift -detailed-exitcode: true when
// there are changes or drift (plan's exit code counts what apply would do, drift restores
// included; drift adds what no plan acts on, and a killed apply must leave none behind).
func (r Runner) PlanChanges() (bool, error) {
	for _, args := range [][]string{{"plan", "-detailed-exitcode", "-no-color", "-lock=false"},
		{"drift", "-detailed-exitcode", "-no-color"}} {
		_, err := r.Run(args...)
		var ee *exec.ExitError
		switch {
		case err == nil:
			continue
		case errors.As(err, &ee) && ee.ExitCode() == 2:
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// UnlockDead removes the lock a killed apply left (its holder is dead: force-unlock asks
// nothing); no lock is no error.
func (r Runner) UnlockDead() error {
	b, err := os.ReadFile(filepath.Join(r.Dir, "mcp.state.lock"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var info state.LockInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return fmt.Errorf("the lock a killed apply left does not read: %w", err)
	}
	_, err = r.Run("force-unlock", info.ID)
	return err
}

// UnlockKilled removes the lock of an apply the harness SIGKILLed itself, with -force: one
// killed in a PID namespace of its own cannot be proved dead from here (force-unlock
// refuses it without -force), and the harness, which killed it, knows it is. No lock is no
// error.
func (r Runner) UnlockKilled() error {
	b, err := os.ReadFile(filepath.Join(r.Dir, "mcp.state.lock"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var info state.LockInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return fmt.Errorf("the lock a killed apply left does not read: %w", err)
	}
	_, err = r.Run("force-unlock", "-force", info.ID)
	return err
}

// Converge runs apply until the plan is empty, at most max times. It returns the applies
// run and those that failed (each with its output's end), and among them the claims an
// apply made that the fleet's records do not back (AuditReboots); err when the plan does
// not read or is still not empty. An apply that exits 0 must leave the plan empty.
func (r Runner) Converge(max int, log func(string, ...any)) (runs int, failed []error, err error) {
	for {
		changes, err := r.PlanChanges()
		if err != nil || !changes {
			return runs, failed, err
		}
		if runs == max {
			return runs, failed, fmt.Errorf("the plan is not empty after %d re-runs", runs)
		}
		runs++
		var problems []string
		_, err = r.auditRun(&problems, "apply", "-auto-approve", "-no-color", "-budget-wait=2m")
		log("re-run %d: %v", runs, err)
		if err != nil {
			failed = append(failed, fmt.Errorf("re-run %d failed: %w", runs, err))
		}
		for _, p := range problems {
			failed = append(failed, fmt.Errorf("re-run %d: %s", runs, p))
		}
		if err == nil {
			if changes, perr := r.PlanChanges(); perr == nil && changes {
				failed = append(failed, fmt.Errorf("re-run %d exited 0, and the plan or drift still shows changes", runs))
			}
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
