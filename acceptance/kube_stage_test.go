package acceptance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

const stagePools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  max_staging     = 1
  drain_timeout   = "3m"
  os_image        = "%s"
}
`

// TestKubeStagesAheadOutsideTheBudget: on a real API server with real agent processes, an
// OS image update of a pool of three, max_unavailable 1 and max_staging 1. The first node's
// drain is held by a PodDisruptionBudget: while it is cordoned, in its slot, the two others
// take their stage hand-overs and report them done, each still schedulable — staging runs
// outside the budget. Then the pod goes, and the rollout ends: judged from the nodes, each
// agent ran one stage, before its pivot, and booted the image once; never more than one
// node was unschedulable.
func TestKubeStagesAheadOutsideTheBudget(t *testing.T) {
	waiting(t)
	c, run, budget := startHeldStaging(t)
	c.releaseHeldDrain(t)
	out, code := run.wait(t, 4*time.Minute)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if got, when := budget(); got != 1 {
		t.Errorf("at most %d nodes unschedulable at once (%s), want max_unavailable's 1\n%s", got, when, out)
	}
	c.checkStagedOnce(t, 1)
}

// TestKubeStagesAheadThenApplyKilled: the same rollout, apply SIGKILLed once the two
// nodes after the first have staged ahead (the first cordoned, its drain held). status
// says they staged and are in service; the next plan counts only the first node out of
// service — the staged ones run what they ran — and stages them ahead again; re-runs converge, each node booting the image once, never
// two nodes unschedulable at once.
func TestKubeStagesAheadThenApplyKilled(t *testing.T) {
	waiting(t)
	c, run, budget := startHeldStaging(t)
	run.kill(t)
	// status, from the Nodes: the staged ones say so and are in service.
	out, code := c.mcp(t, "mcp-apply", "status", "-nodes", "-no-color")
	for _, w := range []string{"worker-1", "worker-2"} {
		if row := lineWith(out, c.name(w)); code != 0 || !strings.Contains(row, "staged ahead: ") || strings.Contains(row, "updating") {
			t.Errorf("status -nodes after the kill: exit %d; %s's row %q, want it staged ahead and in service\n%s", code, w, row, out)
		}
	}
	out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode", lockWait)
	if code != 2 || !strings.Contains(out, "[3 nodes, max_unavailable 1, 1 unavailable,") {
		t.Errorf("plan after the kill: exit %d; want 2, worker-0 alone out of service\n%s", code, out)
	}
	for _, w := range []string{"worker-1", "worker-2"} {
		if row := c.planRow(out, w); !strings.Contains(row, "stage ahead; in its slot: cordon") {
			t.Errorf("plan after the kill, %s: %q; want its stage ahead again, then its slot", w, row)
		}
	}
	c.releaseHeldDrain(t)
	c.converge(t)
	if got, when := budget(); got != 1 {
		t.Errorf("at most %d nodes unschedulable at once (%s), want max_unavailable's 1", got, when)
	}
	c.checkStagedOnce(t, 2)
}

// startHeldStaging sets up a pool of three booted from fcos41 and recorded on it, holds
// worker-0's drain with a PodDisruptionBudget, and starts an apply of fcos42Release with
// max_staging 1; it returns once worker-0 is cordoned and the two others have staged
// ahead, with a watch of how many nodes were unschedulable at once.
func startHeldStaging(t *testing.T) (*kubeCluster, *applyRun, func() (int, string)) {
	t.Helper()
	c := newKubeCluster(t, fmt.Sprintf(stagePools, fcos41), map[string]int{"worker": 3})
	c.bootedFrom(t, fcos41)
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply (the image the nodes boot): exit %d\n%s", code, out)
	}
	c.addPod(t, "pinned-0", "worker-0", map[string]string{"app": "pinned"}, false)
	c.addPDB(t, "pinned", map[string]string{"app": "pinned"}, 1)
	c.env.WaitPDB(t, c.demo, "pinned", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0
	})
	c.writeConfig(t, fmt.Sprintf(stagePools, fcos42Release))
	out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, "staging: 3 nodes stage the update ahead of their slots, outside max_unavailable, at most 1 at once") {
		t.Fatalf("plan: exit %d, want 2 and the staging phase\n%s", code, out)
	}
	for name := range c.agents {
		if row := c.planRow(out, name); !strings.Contains(row, "stage ahead; in its slot: cordon, drain, pivot, reboot") {
			t.Errorf("plan's steps for %s: %q, want the stage ahead of the slot", name, row)
		}
	}
	budget := c.watchUnschedulable(t)
	run := c.startApply(t, "-drain-retry-delay=500ms")
	first := c.waitNode(t, 2*time.Minute, "a node cordoned", func(n *corev1.Node) bool { return n.Spec.Unschedulable })
	if first.Name != c.name("worker-0") {
		t.Fatalf("%s cordoned first; the test holds worker-0's drain (the pool's order: oldest, then name)", first.Name)
	}
	for _, w := range []string{"worker-1", "worker-2"} {
		c.waitNode(t, 2*time.Minute, w+" staged ahead", func(n *corev1.Node) bool {
			return n.Name == c.name(w) && stagedDone(n)
		})
		if n := c.node(t, w); n.Spec.Unschedulable {
			t.Errorf("%s is cordoned with its stage done: staging took it out of service", w)
		}
		if n := c.node(t, "worker-0"); !n.Spec.Unschedulable {
			t.Fatalf("worker-0 uncordoned before %s staged: the test shows nothing (its drain was to be held)", w)
		}
	}
	return c, run, budget
}

// releaseHeldDrain deletes the pod whose budget holds worker-0's drain.
func (c *kubeCluster) releaseHeldDrain(t *testing.T) {
	t.Helper()
	if err := c.env.Client.CoreV1().Pods(c.demo).Delete(context.Background(), "pinned-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkStagedOnce judges each node from itself: it runs fcos42Release, Done after one
// reboot, its agent ran stages stages (one per apply that staged it), none after its
// pivot.
func (c *kubeCluster) checkStagedOnce(t *testing.T, stages int) {
	t.Helper()
	for name, a := range c.agents {
		n := c.waitAnnotations(t, name, fcos42Release, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8")
		if n.Annotations[protocol.State] != model.StateDone || a.boots.Load() != 2 || n.Spec.Unschedulable {
			t.Errorf("node %s: %s after %d boots, unschedulable %v; want Done after one reboot, in service", name,
				n.Annotations[protocol.State], a.boots.Load(), n.Spec.Unschedulable)
		}
		calls := hostCalls(t, a)
		pivot := slices.Index(calls, "pivot")
		k := 0
		for _, call := range calls {
			if call == "stage" {
				k++
			}
		}
		if pivot < 0 || slices.Index(calls[pivot:], "stage") >= 0 || k < 1 || k > stages {
			t.Errorf("node %s: host calls %v; want 1 to %d stages, all before the one pivot", name, calls, stages)
		}
	}
}

// stagedDone reports whether n's hand-over is a stage alone that its agent reports done.
func stagedDone(n *corev1.Node) bool {
	h, ok, err := protocol.ReadHandover(n.Annotations)
	if !ok || err != nil || len(h.Steps) != 1 || h.Steps[0].Kind != model.StepStage {
		return false
	}
	r := protocol.ReadReport(n.Annotations)
	return r.ObservedUpdateID == h.UpdateID && r.State == model.StateDone
}

// watchUnschedulable samples the test's nodes every 100 ms until the test ends; the
// function returned gives the most seen unschedulable at once, and which and when.
func (c *kubeCluster) watchUnschedulable(t *testing.T) func() (int, string) {
	t.Helper()
	var most atomic.Int32
	var mu sync.Mutex
	var when string
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			l, err := c.env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: c.fleet()})
			if err == nil {
				var names []string
				for _, n := range l.Items {
					if n.Spec.Unschedulable {
						names = append(names, n.Name)
					}
				}
				if k := int32(len(names)); k > most.Load() {
					most.Store(k)
					mu.Lock()
					when = time.Now().Format("15:04:05.000") + " " + strings.Join(names, ", ")
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return int(most.Load()), when
	}
}
