package acceptance

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// kubeRollout is a measured rollout on a kwok fleet of a real apiserver: the fleet onto
// its first config (agents instant, not measured), then runs changes of chrony's server,
// each agent taking step, then doubled more with 2·step.
type kubeRollout struct {
	fleet   kubeFleet
	k       int // every pool's max_unavailable
	step    time.Duration
	runs    int
	doubled int
	// profiles: a directory for mcp's CPU and heap profiles of each measured run ("": none).
	profiles string

	mcp, dir string
	env      *k8senv.Env
	client   kubernetes.Interface
	runEnv   []string
	agents   *benchAgents
	version  string
	serial   int // the changes made so far
	reboots  int // of which changes that reboot (drainRun)
	// replacer puts evicted pods back (drainRun); nil until the first draining rollout.
	replacer *podReplacer
	// agentReqs counts the simulated agents' requests.
	agentReqs requestCounter
}

// kubeRolloutRun is one measured apply.
type kubeRolloutRun struct {
	step             time.Duration
	load1, loadEnd   string // 1-minute load average when apply started, and when it ended
	updated          int
	requests         int64 // mcp's own, from its summary
	makespan, wall   time.Duration
	cpu              time.Duration // mcp apply's user + system
	rss              int64         // KiB
	waves            []benchdoc.Wave
	server           map[string]float64 // apiserver requests during the apply, by "VERB resource"
	watches          map[string]float64 // most open watches seen during the apply, by resource
	plane            map[string]time.Duration
	cpuProf, memProf string
	// chain: each node's way through its slot, by part (chainParts), one entry per node.
	chain map[string][]time.Duration

	// Of a rollout that reboots (drainRun): drain is the median node's drain step, as apply
	// times it; steps each node's engine-side steps by kind; evictions the API server's
	// answers to POST pods/eviction by code; replaced the pods put back by how many times
	// their line was evicted in the run; agentReqs and replacerReqs those clients' reads
	// and writes.
	drain                   time.Duration
	steps                   map[string][]time.Duration
	evictions               map[string]float64
	replaced                map[int]int
	agentReqs, replacerReqs [2]int64
}

// The parts of a node's way through its pool's slot, which add up to its share of the
// makespan: the slot freed by an earlier node's end to mcp's start of this one (its budget
// look, claim, the start event), mcp's start to the agent seeing the hand-over (the patch
// and the agent's watch), the agent's work less T (its Working and progress patches, its
// Done), and the agent's Done written to mcp's node-done (mcp's shared watch, the waiter,
// the Ready gate and its pod list).
var chainParts = []string{"slot freed → mcp starts the node", "mcp's start → the agent sees the hand-over",
	"the agent: hand-over seen → Done written, less T", "Done written → mcp's node-done (watch, Ready gate)"}

// nodeChain splits each node's time into chainParts, from apply's events and the agents'.
func nodeChain(spans []benchdoc.NodeSpan, agents map[string]agentSpan, k int, step time.Duration) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	byPool := map[string][]benchdoc.NodeSpan{}
	for _, s := range spans {
		byPool[s.Pool] = append(byPool[s.Pool], s)
	}
	for _, ps := range byPool {
		// The i-th start beyond the first k took the slot the (i−k)-th end freed.
		dones := make([]time.Time, 0, len(ps))
		for _, s := range ps {
			dones = append(dones, s.Done)
		}
		slices.SortFunc(dones, func(a, b time.Time) int { return a.Compare(b) })
		for i := k; i < len(ps); i++ {
			out[chainParts[0]] = append(out[chainParts[0]], ps[i].Start.Sub(dones[i-k]))
		}
	}
	for _, s := range spans {
		a, ok := agents[s.Node]
		if !ok || a.done.IsZero() {
			continue
		}
		out[chainParts[1]] = append(out[chainParts[1]], a.seen.Sub(s.Start))
		out[chainParts[2]] = append(out[chainParts[2]], a.done.Sub(a.seen)-step)
		out[chainParts[3]] = append(out[chainParts[3]], s.Done.Sub(a.done))
	}
	return out
}

// limit is ceil(N/k)·(T + drain): every slot of a pool busy from start to end, each node
// taking its agent's T and the median node's drain (none in place).
func (r kubeRolloutRun) limit(perPool, k int) time.Duration {
	return time.Duration(math.Ceil(float64(perPool)/float64(k))) * (r.step + r.drain)
}

// start brings up the control plane, the fleet and its agents, with the first config
// applied.
func (kr *kubeRollout) start(b *testing.B) {
	kr.mcp = kubeBenchMCP(b)
	kr.env = k8senv.Start(b, k8senv.Options{})
	sv, err := kr.env.Client.Discovery().ServerVersion()
	if err != nil {
		b.Fatal(err)
	}
	kr.version = sv.GitVersion
	// A client of our own without client-side rate limits: the apiserver is ours alone.
	rc := rest.CopyConfig(kr.env.RESTConfig)
	rc.QPS, rc.Burst = 5000, 10000
	kr.client, err = kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	kr.fleet.create(b, kr.env, kr.client)
	b.Logf("%d kwok nodes, %d pods, %d PDBs Ready in %v", kr.fleet.nodes, kr.fleet.nodes*kr.fleet.podsPerNode, kr.fleet.pdbs,
		time.Since(t0).Round(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	agentClient, err := countedClient(rc, &kr.agentReqs)
	if err != nil {
		b.Fatal(err)
	}
	kr.agents = &benchAgents{client: agentClient}
	t0 = time.Now()
	var names []string
	for i := range kr.fleet.nodes {
		name, _, _ := kr.fleet.node(i)
		names = append(names, name)
	}
	kr.agents.run(ctx, b, names)
	b.Logf("%d agents watching their own nodes in %v", len(names), time.Since(t0).Round(time.Millisecond))
	kr.dir = b.TempDir()
	kr.runEnv = append(os.Environ(), "KUBECONFIG="+kr.env.Kubeconfig, "HOME="+b.TempDir())
	kr.write(b)
}

// write writes the configuration with the current change.
func (kr *kubeRollout) write(b *testing.B) {
	server := "time.example.com"
	if kr.serial > 0 {
		server = fmt.Sprintf("time%d.example.com", kr.serial+1)
	}
	tuning := ""
	if kr.reboots > 0 {
		tuning = fmt.Sprintf("vm.swappiness = %d", kr.reboots)
	}
	if err := os.WriteFile(filepath.Join(kr.dir, "main.hcl"), []byte(kr.fleet.hcl(kr.k, server, tuning)), 0o644); err != nil {
		b.Fatal(err)
	}
}

func (kr *kubeRollout) parallelism() string { return fmt.Sprint(kr.k * len(kr.fleet.pools)) }

// first rolls the fleet onto its first config, agents answering at once: not measured.
func (kr *kubeRollout) first(b *testing.B) {
	t0 := time.Now()
	r := kubeApplyRun(b, kr.mcp, kr.dir, kr.runEnv, kr.parallelism())
	if r.updated != kr.fleet.nodes {
		b.Fatalf("first rollout updated %d nodes, want %d", r.updated, kr.fleet.nodes)
	}
	b.Logf("first rollout (agents instant): %d nodes in %v, %d API requests", r.updated, time.Since(t0).Round(time.Millisecond), r.requests)
}

// measure makes the next change — one that reboots when reboot is set — and applies it
// with step per update.
func (kr *kubeRollout) measure(b *testing.B, step time.Duration, reboot bool) kubeRolloutRun {
	kr.serial++
	if reboot {
		kr.reboots++
		kr.startReplacer(b)
	}
	kr.write(b)
	kr.agents.step.Store(int64(step))
	run := kubeRolloutRun{step: step}
	reboots0 := kr.agents.reboots.Load()
	agent0 := [2]int64{kr.agentReqs.reads.Load(), kr.agentReqs.writes.Load()}
	var replacer0 [2]int64
	if kr.replacer != nil {
		kr.replacer.takeStats()
		replacer0 = [2]int64{kr.replacer.reqs.reads.Load(), kr.replacer.reqs.writes.Load()}
	}
	env := kr.runEnv
	if kr.profiles != "" {
		run.cpuProf = filepath.Join(kr.profiles, fmt.Sprintf("apply-%d-cpu.pprof", kr.serial))
		run.memProf = filepath.Join(kr.profiles, fmt.Sprintf("apply-%d-heap.pprof", kr.serial))
		env = append(slicesClone(env), "MCP_CPUPROFILE="+run.cpuProf, "MCP_MEMPROFILE="+run.memProf)
	}
	ctx := context.Background()
	before, err := scrapeAPIServer(ctx, kr.env.Client)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := planeCPU(kr.env)
	handovers := kr.agents.handovers.Load()
	kr.agents.takeSpans()
	sampler := sampleWatches(kr.env.Client, 5*time.Second)
	run.load1 = benchdoc.LoadAverage()
	r := kubeApplyRun(b, kr.mcp, kr.dir, env, kr.parallelism())
	run.loadEnd = benchdoc.LoadAverage()
	run.watches = sampler.result()
	run.plane = cpuSince(planeCPU(kr.env), cpu0)
	after, err := scrapeAPIServer(ctx, kr.env.Client)
	if err != nil {
		b.Fatal(err)
	}
	run.server = after.requestsSince(before)
	run.evictions = after.evictionsSince(before)
	run.agentReqs = [2]int64{kr.agentReqs.reads.Load() - agent0[0], kr.agentReqs.writes.Load() - agent0[1]}
	if kr.replacer != nil {
		run.replacerReqs = [2]int64{kr.replacer.reqs.reads.Load() - replacer0[0], kr.replacer.reqs.writes.Load() - replacer0[1]}
	}
	if r.updated != kr.fleet.nodes || kr.agents.handovers.Load()-handovers != int64(kr.fleet.nodes) {
		b.Fatalf("updated %d nodes through %d hand-overs, want %d", r.updated, kr.agents.handovers.Load()-handovers, kr.fleet.nodes)
	}
	if reboot {
		if n := kr.agents.reboots.Load() - reboots0; n != int64(kr.fleet.nodes) {
			b.Fatalf("%d nodes rebooted, want %d", n, kr.fleet.nodes)
		}
		kr.drainCheck(b, &run, r.trace.Nodes)
	}
	kubeApplyCheck(b, kr.client, kr.dir, kr.mcp, kr.runEnv)
	run.updated, run.requests, run.makespan, run.wall, run.cpu, run.rss = r.updated, r.requests, r.makespan, r.wall, r.cpu, r.rss
	run.waves = benchdoc.Waves(r.trace.Nodes, kr.k)
	run.chain = nodeChain(r.trace.Nodes, kr.agents.takeSpans(), kr.k, step)
	b.Logf("run %d (T=%v, drain %v, load %s): makespan %v (%.3f× of %v), %d requests (%.2f per node), CPU %v, RSS %.1f MB, %d waves",
		kr.serial, step, run.drain, run.load1, run.makespan.Round(time.Millisecond), kr.ratio(run), run.limit(kr.perPool(), kr.k),
		run.requests, float64(run.requests)/float64(run.updated), run.cpu.Round(time.Millisecond), float64(run.rss)/1024, len(run.waves))
	return run
}

func (kr *kubeRollout) perPool() int { return kr.fleet.nodes / len(kr.fleet.pools) }

func (kr *kubeRollout) ratio(r kubeRolloutRun) float64 {
	return float64(r.makespan) / float64(r.limit(kr.perPool(), kr.k))
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// kubeApplyResult is what one `mcp apply -json` reported, and what it cost.
type kubeApplyResult struct {
	updated  int
	requests int64
	makespan time.Duration // first step start to last node-done
	wall     time.Duration
	cpu      time.Duration
	rss      int64 // KiB
	trace    benchdoc.ApplyTrace
}

func kubeApplyRun(b *testing.B, mcp, dir string, env []string, parallelism string) kubeApplyResult {
	b.Helper()
	cmd := exec.Command(mcp, "apply", "-auto-approve", "-json", "-parallelism", parallelism, "-budget-wait", "30m")
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rss := peakRSS(cmd.Process.Pid)
	err := cmd.Wait()
	r := kubeApplyResult{wall: time.Since(start), rss: rss()}
	if err != nil {
		b.Fatalf("mcp apply: %v\n%s\n%s", err, lastLines(stdout.String(), 20), stderr.String())
	}
	r.cpu, _ = benchdoc.Usage(cmd.ProcessState)
	t, err := benchdoc.ReadApplyTrace(&stdout)
	if err != nil || t.Updated == 0 || t.APIRequests <= 0 {
		b.Fatalf("%v; %d updated, %d requests:\n%s", err, t.Updated, t.APIRequests, lastLines(stdout.String(), 20))
	}
	r.updated, r.requests, r.makespan, r.trace = t.Updated, t.APIRequests, t.Makespan, t
	return r
}

// kubeApplyCheck: every node runs its pool's config, Done, and a new plan has nothing to do.
func kubeApplyCheck(b *testing.B, c kubernetes.Interface, dir, mcp string, env []string) {
	b.Helper()
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range list.Items {
		r := protocol.ReadReport(n.Annotations)
		if r.State != model.StateDone || r.Current == "" || r.Current != n.Annotations[protocol.DesiredConfig] {
			b.Fatalf("node %s: state %q current %q desired %q", n.Name, r.State, r.Current, n.Annotations[protocol.DesiredConfig])
		}
	}
	cmd := exec.Command(mcp, "plan", "-detailed-exitcode", "-no-color", "-lock=false")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("plan after the rollout: %v\n%s", err, lastLines(string(out), 20))
	}
}

// pprofTop is the top entries of a profile as `go tool pprof -top` prints them (without
// its header's file and build lines), or why not.
func pprofTop(mcp, prof string, n int, extra ...string) string {
	args := append([]string{"tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n)}, extra...)
	out, err := exec.Command("go", append(args, mcp, prof)...).Output()
	if err != nil {
		return fmt.Sprintf("(go tool pprof %s: %v)", prof, err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// median and spread of xs: "m (lo–hi)" through f.
func medianSpread[T int64 | float64 | time.Duration](xs []T, f func(T) string) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s) == 1 {
		return f(m)
	}
	return fmt.Sprintf("%s (%s–%s)", f(m), f(s[0]), f(s[len(s)-1]))
}

func medianOf[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
