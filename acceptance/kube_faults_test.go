package acceptance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// The fault tests stop `mcp apply` the hard way in the middle of a rollout — SIGKILL during
// a drain, SIGKILL while an agent runs a hand-over with a reboot, the API server frozen —
// and then run apply again until the plan is empty. What must hold afterwards, read from
// the cluster and from the agents' own records: no node left cordoned, every node Done on
// the target config, and no node rebooted twice into one rendered config.

// markerPools is one pool updated maxUnavailable nodes at a time with a change that needs
// a reboot (/etc/mcp-marker holding the marker line, no on_change): each node is cordoned,
// drained, written, rebooted, verified and uncordoned.
func markerPools(maxUnavailable int, marker string) string {
	return fmt.Sprintf(`
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = %d
}

config "10-marker" {
  pools = ["worker"]
  file "/etc/mcp-marker" { content = "%s\n" }   # no on_change: a reboot
}
`, maxUnavailable, marker)
}

// faultPools rolls v2 out one node at a time.
var faultPools = markerPools(1, "v2")

// lockWait is how long a re-run waits for the state lock: the killed apply's Lease stays
// until it expires (15s after its last renewal).
const lockWait = "-lock-timeout=60s"

// TestKubeApplyKilledDuringDrain: apply is SIGKILLed as soon as it has cordoned a node (and
// journaled the cordon), while the node's drain waits on a PodDisruptionBudget. The node is
// left cordoned with its pod; once the budget allows it, re-runs (the first after the dead
// run's Lease expired) converge: nothing left cordoned, every node Done on the target, one
// reboot per node.
func TestKubeApplyKilledDuringDrain(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, faultPools, map[string]int{"worker": 3})
	web := map[string]string{"app": "web"}
	for i := range 3 {
		c.addPod(t, fmt.Sprintf("web-%d", i), fmt.Sprintf("worker-%d", i), web, false)
	}
	// No disruption allowed: a drain retries its eviction until the budget is relaxed.
	c.addPDB(t, "web-pdb", web, 3)
	c.env.WaitPDB(t, c.demo, "web-pdb", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 3 && p.Status.DisruptionsAllowed == 0
	})

	run := c.startApply(t, "-drain-retry-delay=500ms")
	cordoned := c.waitNode(t, 90*time.Second, "apply to cordon a node", func(n *corev1.Node) bool {
		return n.Spec.Unschedulable
	})
	// The cordon is journaled before the drain starts: once it is, apply is draining.
	var journal []string
	waitUntil(t, 30*time.Second, func() bool {
		journal = c.state(t).Journal[cordoned.Name].Done
		return slices.Contains(journal, "cordon")
	}, func() string {
		return fmt.Sprintf("apply cordoned %s but never journaled it (journal %v)", cordoned.Name, journal)
	})
	run.kill(t)
	t.Logf("killed apply (pid %d) when %s was cordoned (journal %v); its output:\n%s", run.pid(), cordoned.Name, journal, lastLines(run.output(), 10))

	// The kill came during the drain: the node is still cordoned, its pod still there, its
	// disk untouched, its journal holds the cordon only; no other node was started.
	if j := c.state(t).Journal[cordoned.Name].Done; !slices.Equal(j, []string{"cordon"}) {
		t.Errorf("after the kill: %s's journal is %v; want the cordon only (killed during the drain)", cordoned.Name, j)
	}
	target := c.pointer(t, "worker")
	for name := range c.agents {
		n := c.node(t, name)
		if n.Name == cordoned.Name != n.Spec.Unschedulable {
			t.Errorf("after the kill: %s unschedulable=%v; only %s should be cordoned", name, n.Spec.Unschedulable, cordoned.Name)
		}
		if cur := n.Annotations[protocol.CurrentConfig]; cur == target {
			t.Errorf("after the kill: %s already runs %s; the kill was meant to come during its drain", name, cur)
		}
	}
	pod := "web-" + strings.TrimPrefix(c.short(cordoned.Name), "worker-")
	if p, err := c.env.Client.CoreV1().Pods(c.demo).Get(context.Background(), pod, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("after the kill: pod %s/%s on %s is gone or going (%v); the drain was meant to be blocked", c.demo, pod, cordoned.Name, err)
	}

	// The budget now lets the drains through.
	if err := c.env.Client.PolicyV1().PodDisruptionBudgets(c.demo).Delete(context.Background(), "web-pdb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.converge(t, "-drain-retry-delay=500ms")
	c.checkConverged(t, "v2\n", target)
}

// TestKubeApplyKilledWhileAgentWorks: apply is SIGKILLed when a node's agent reports
// Working on a hand-over that includes a reboot; the machine stays down 20s, longer than the
// dead run's Lease, so the re-run finds the node still Working on that hand-over. It must
// wait for it rather than hand over again: one reboot per node.
func TestKubeApplyKilledWhileAgentWorks(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, faultPools, map[string]int{"worker": 2})
	c.nextRebootDelay.Store(int64(20 * time.Second))

	run := c.startApply(t)
	working := c.waitNode(t, 90*time.Second, "an agent Working on a hand-over with a reboot", func(n *corev1.Node) bool {
		h, ok, err := protocol.ReadHandover(n.Annotations)
		return ok && err == nil && n.Annotations[protocol.State] == model.StateWorking &&
			n.Annotations[protocol.ObservedUpdateID] == h.UpdateID &&
			slices.ContainsFunc(h.Steps, func(s model.Step) bool { return s.Kind == model.StepReboot })
	})
	run.kill(t)
	t.Logf("killed apply (pid %d) when %s was Working on update %s; its output:\n%s", run.pid(), working.Name,
		working.Annotations[protocol.UpdateID], lastLines(run.output(), 10))

	target := c.pointer(t, "worker")
	if d := working.Annotations[protocol.DesiredConfig]; d != target {
		t.Fatalf("%s was handed %s, the pool's pointer is %s", working.Name, d, target)
	}
	c.converge(t)
	c.checkConverged(t, "v2\n", target)
}

// TestKubeApplyAPIServerPaused freezes the API server (SIGSTOP) while apply waits on the
// first node's agent, twice.
//
// With the defaults, for 20s: the state Lease cannot be renewed, so apply loses the lock,
// says so, starts no other node, finishes the node under way once the server is back and
// exits non-zero; a re-run converges.
//
// With request_timeout = "3s" (and client-go's HTTP/2 health check at 2s+2s, so the frozen
// connection is given up quickly), until apply gives up on its own: the wait on the node's
// agent must end while the server is still frozen, naming why, and the node is left
// cordoned; a re-run converges, with one reboot per node into each config.
func TestKubeApplyAPIServerPaused(t *testing.T) {
	exclusive(t)
	// A control plane of its own: it freezes the API server.
	c := newPrivateKubeCluster(t, faultPools, map[string]int{"worker": 3})
	// The first node's reboot takes 5s, so that it is still under way when the server
	// freezes, however loaded the machine.
	c.nextRebootDelay.Store(int64(5 * time.Second))

	// Defaults, a 20s freeze.
	run := c.startApply(t)
	working := c.waitNode(t, 90*time.Second, "an agent Working", func(n *corev1.Node) bool {
		return n.Annotations[protocol.State] == model.StateWorking
	})
	const pause = 20 * time.Second
	resume := c.env.Pause(t, "kube-apiserver")
	paused := time.Now()
	t.Logf("kube-apiserver (pid %d) paused for %s while %s was Working", c.env.Pid("kube-apiserver"), pause, working.Name)
	select {
	case <-run.done:
		t.Logf("apply exited while the API server was paused, after %v", time.Since(paused).Round(time.Millisecond))
	case <-time.After(pause):
	}
	resume()
	// Bounded: the longest a request waits is the pause itself, then the node under way
	// finishes (its agent reboots and reports).
	out, code := run.wait(t, 120*time.Second)
	t.Logf("apply exited %d, %v after the pause began; its output:\n%s", code, time.Since(paused).Round(time.Millisecond), lastLines(out, 15))
	if code == 0 {
		t.Errorf("apply exited 0 although it lost the state lock; want non-zero")
	}
	for _, want := range []string{"lost the state lock", "not renewed", "nodes not started"} {
		if !strings.Contains(strings.ToLower(out), want) {
			t.Errorf("apply's output does not say %q", want)
		}
	}
	first := c.pointer(t, "worker")
	for name := range c.agents {
		n := c.node(t, name)
		if n.Spec.Unschedulable {
			t.Errorf("after the stopped apply: %s left cordoned", name)
		}
		if n.Name == working.Name {
			if n.Annotations[protocol.CurrentConfig] != first || n.Annotations[protocol.State] != model.StateDone {
				t.Errorf("after the stopped apply: %s, under way when the server froze, is %s on %q; want Done on %s",
					name, n.Annotations[protocol.State], n.Annotations[protocol.CurrentConfig], first)
			}
			// It finished every step (the Node says so): apply may not call it failed
			// because it stopped waiting for its gates, only unconfirmed.
			if strings.Contains(out, "node."+n.Name+": failed") {
				t.Errorf("apply reports %s failed, and the Node shows every step finished:\n%s", name, lastLines(out, 15))
			}
		} else if d := n.Annotations[protocol.DesiredConfig]; d != "" {
			t.Errorf("after the stopped apply: %s was handed %s after the lock was lost", name, d)
		}
	}
	c.converge(t)
	c.checkConverged(t, "v2\n", first)

	// A short request timeout, frozen until apply gives the node up.
	c.writeConfig(t, markerPools(1, "v3"), `request_timeout = "3s"`)
	c.nextRebootDelay.Store(int64(5 * time.Second))
	run = c.startApplyEnv(t, []string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS=2", "HTTP2_PING_TIMEOUT_SECONDS=2"})
	working = c.waitNode(t, 90*time.Second, "an agent Working on the second config", func(n *corev1.Node) bool {
		return n.Annotations[protocol.State] == model.StateWorking && n.Annotations[protocol.DesiredConfig] != first
	})
	second := working.Annotations[protocol.DesiredConfig]
	resume = c.env.Pause(t, "kube-apiserver")
	paused = time.Now()
	// The node's failure is reported after the engine's own reaction to it (an uncordon,
	// which must fail too): the server stays frozen until then.
	failed := "node." + working.Name + ": failed"
	waitUntil(t, 60*time.Second, func() bool { return strings.Contains(run.output(), failed) }, func() string {
		return fmt.Sprintf("apply did not give %s up within 60s of the API server freezing (request_timeout 3s); its output:\n%s",
			working.Name, run.output())
	})
	t.Logf("apply gave %s up %v after the API server froze, the server still frozen", working.Name, time.Since(paused).Round(time.Millisecond))
	resume()
	out, code = run.wait(t, 120*time.Second)
	t.Logf("apply exited %d; its output:\n%s", code, lastLines(out, 12))
	if code == 0 {
		t.Errorf("apply exited 0 although it gave a node up; want non-zero")
	}
	for _, want := range []string{"node " + working.Name + ": waiting for the agent", "to " + second,
		"the API server has failed every request for", "no answer from the API server within 3s", "the node is left as it is"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply's output does not say %q", want)
		}
	}
	if !c.node(t, c.short(working.Name)).Spec.Unschedulable {
		t.Errorf("%s was put back in service although apply lost track of its update", working.Name)
	}
	c.converge(t)
	c.checkConverged(t, "v3\n", first, second)
}

// applyRun is `mcp apply -auto-approve` running in the background as mcp-apply.
type applyRun struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{} // closed when it has exited
	err  error         // Wait's result, once done
}

func (r *applyRun) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *applyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func (r *applyRun) pid() int { return r.cmd.Process.Pid }

// startApply starts `mcp apply -auto-approve -no-color ARGS...`; it is killed on cleanup.
func (c *kubeCluster) startApply(t *testing.T, args ...string) *applyRun {
	t.Helper()
	return c.startApplyEnv(t, nil, args...)
}

// startApplyEnv is startApply with env added to apply's environment.
func (c *kubeCluster) startApplyEnv(t *testing.T, env []string, args ...string) *applyRun {
	t.Helper()
	r := &applyRun{done: make(chan struct{})}
	r.cmd = exec.Command(c.bin, append([]string{"apply", "-auto-approve", "-no-color"}, args...)...)
	r.cmd.Dir = c.dir
	r.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+c.kc["mcp-apply"]), env...)
	r.cmd.Stdout, r.cmd.Stderr = r, r
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// kill ends the run with SIGKILL (no cleanup, no unlock) and waits for it to be gone.
func (r *applyRun) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing apply: %v (it exited already:\n%s)", err, r.output())
	}
	<-r.done
}

// wait waits up to within for the run to exit and returns its output and exit code.
func (r *applyRun) wait(t *testing.T, within time.Duration) (string, int) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("apply still running after %v (hung?); its output so far:\n%s", within, r.output())
	}
	code := 0
	if r.err != nil {
		code = -1
		if ee, ok := r.err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return r.output(), code
}

// waitNode watches the test's nodes until one satisfies cond and returns it; it fails the
// test after within.
func (c *kubeCluster) waitNode(t *testing.T, within time.Duration, what string, cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	nodes := c.env.Client.CoreV1().Nodes()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = c.fleet()
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = c.fleet()
			return nodes.Watch(ctx, o)
		},
	}
	ev, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		n, ok := ev.Object.(*corev1.Node)
		return ok && ev.Type != watch.Deleted && cond(n), nil
	})
	if err != nil {
		t.Fatalf("waiting %v for %s: %v", within, what, err)
	}
	return ev.Object.(*corev1.Node)
}

// state reads the state as apply stored it, its journal replayed.
func (c *kubeCluster) state(t *testing.T) *state.State {
	t.Helper()
	st, err := kubestate.New(c.env.Client, c.stateNS, kubestate.Options{}).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// pointer is the rendered config the state points the pool at (apply stores it before it
// starts any node).
func (c *kubeCluster) pointer(t *testing.T, pool string) string {
	t.Helper()
	p := c.state(t).Pointers[pool]
	if p == "" {
		t.Fatalf("the state has no pointer for pool %s", pool)
	}
	return p
}

// converge runs apply again until the plan is empty, each run waiting for the state lock
// (a killed run's Lease stays until it expires), and returns the number of runs. Every run
// must succeed; more than three fail the test. A run may leave nodes for the next: with
// max_unavailable 1 a node left cordoned uses the plan's budget, so the plan defers the
// others until it is back in service.
func (c *kubeCluster) converge(t *testing.T, args ...string) int {
	t.Helper()
	for i := 1; i <= 3; i++ {
		start := time.Now()
		out, code := c.mcp(t, "mcp-apply", append([]string{"apply", "-auto-approve", "-no-color", lockWait}, args...)...)
		t.Logf("re-run %d: exit %d in %v:\n%s", i, code, time.Since(start).Round(time.Millisecond), lastLines(out, 12))
		// An agent still finishing what the stopped apply handed it may report between this
		// apply's plan and its first node: that apply starts nothing and says to run again
		// (exit 2), which the next re-run does.
		if code != 0 && !(code == 2 && strings.Contains(out, "changed between this apply's plan and its first node")) {
			t.Errorf("re-run %d of apply: exit %d, want 0", i, code)
		}
		out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode", lockWait)
		switch code {
		case 0:
			t.Logf("converged after %d re-runs", i)
			return i
		case 2:
			t.Logf("the plan after re-run %d still has changes:\n%s", i, lastLines(out, 12))
		default:
			t.Fatalf("plan after re-run %d: exit %d\n%s", i, code, out)
		}
	}
	t.Fatal("apply did not converge in 3 re-runs")
	return 0
}

// checkConverged asserts from the cluster and the agents' records that every node is
// schedulable, Done on the last of targets with marker in /etc/mcp-marker, and rebooted
// exactly once into each of targets (each change needs a reboot; a second one into the
// same config would be a step run twice). It logs each node's counts.
func (c *kubeCluster) checkConverged(t *testing.T, marker string, targets ...string) {
	t.Helper()
	target := targets[len(targets)-1]
	want := map[string]int{}
	for _, tg := range targets {
		want[tg] = 1
	}
	for _, name := range slices.Sorted(maps.Keys(c.agents)) {
		a := c.agents[name]
		n := c.node(t, name)
		ann := n.Annotations
		reboots := a.rebootsInto()
		t.Logf("%s: %d boots, reboots by target %v, state %s on %s, unschedulable %v",
			name, a.boots.Load(), reboots, ann[protocol.State], ann[protocol.CurrentConfig], n.Spec.Unschedulable)
		if n.Spec.Unschedulable {
			t.Errorf("%s left cordoned", name)
		}
		if ann[protocol.State] != model.StateDone || ann[protocol.CurrentConfig] != target || ann[protocol.DesiredConfig] != target {
			t.Errorf("%s: state %q, current %q, desired %q (reason %q); want Done on %s", name, ann[protocol.State],
				ann[protocol.CurrentConfig], ann[protocol.DesiredConfig], ann[protocol.Reason], target)
		}
		if !maps.Equal(reboots, want) || int(a.boots.Load()) != 1+len(targets) {
			t.Errorf("%s rebooted %d times (by target: %v); want once into each of %v", name, a.boots.Load()-1, reboots, targets)
		}
		if b, err := os.ReadFile(filepath.Join(a.root, "etc/mcp-marker")); string(b) != marker {
			t.Errorf("%s: /etc/mcp-marker = %q, %v; want %q", name, b, err, marker)
		}
	}
}
