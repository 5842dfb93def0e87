package acceptance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// rebootAll makes every node of the quickstart reboot: a file with no on_change in both pools.
const rebootAll = `config "90-reboot-all" {
  pools = ["worker", "infra"]
  file "/etc/mcp-one-apply" { content = "one apply per node\n" }
}
`

// lockFreeTally sums up, over runs of two applies at once, what the fleet's records showed.
type lockFreeTally struct {
	runs, reboots, doubles, overBudget, tookOver int
	exits                                        map[int]int
}

func (s lockFreeTally) String() string {
	return fmt.Sprintf("%d runs of two applies, at least one with -lock=false: reboots %d (one per node: %d), double reboots %d, pools over budget %d, claims taken from a live apply %d; exit codes %v",
		s.runs, s.reboots, s.runs*6, s.doubles, s.overBudget, s.tookOver, s.exits)
}

// Two `mcp apply -lock=false` at once (every other run, one of them holding the lock) on a
// fleet whose every node needs a reboot: each node is worked on by one of them. Judged from the fleet's own records once both have
// exited and a locked apply finished what they left: every node rebooted once into the
// config (no double reboot), no pool ever had more nodes out of service than its
// max_unavailable, nothing left cordoned, every node Done; neither apply failed (a node
// the other held is not started: exit 2, not 1); and no claim was taken from a live apply.
func TestUnlockedAppliesClaimNodes(t *testing.T) {
	exclusive(t)
	n := runsFrom(t, "MCP_LOCKFREE_RUNS") // how many times two applies are raced
	tally := lockFreeTally{exits: map[int]int{}}
	for i := range n {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			dir := localQuickstart(t, "50ms", "300ms")
			if err := os.WriteFile(filepath.Join(dir, "reboot-all.hcl"), []byte(rebootAll), 0o644); err != nil {
				t.Fatal(err)
			}
			tally.runs++
			var wg sync.WaitGroup
			codes, outs := make([]int, 2), make([]string, 2)
			for j := range 2 {
				// Every other run the first holds the lock: a node is claimed by one apply
				// at a time, with the lock or without it.
				args := []string{"-lock=false"}
				if j == 0 && i%2 == 1 {
					args = nil
				}
				cmd, out := startApply(t, dir, args...)
				wg.Go(func() {
					codes[j] = exitCode(cmd.Wait())
					outs[j] = out.String()
				})
			}
			wg.Wait()
			for j, code := range codes {
				tally.exits[code]++
				if code != 0 && code != 2 {
					t.Errorf("apply %d exited %d; want 0, or 2 for nodes the other one held:\n%s", j+1, code, lastLines(outs[j], 20))
				}
			}
			if _, failed, err := (chaos.Runner{MCP: mcpBinary(t), Dir: dir}).Converge(3, t.Logf); err != nil || len(failed) > 0 {
				t.Fatalf("a locked apply after the two: %v %v", failed, err)
			}
			logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
			if err != nil {
				t.Fatal(err)
			}
			r := chaos.Judge(logs, map[string]int{"worker": 2, "infra": 1})
			tally.reboots += r.Reboots
			tally.doubles += r.DoubleReboots
			for pool, most := range r.MaxOut {
				if most > r.Budget[pool] {
					tally.overBudget++
				}
			}
			for _, evs := range logs {
				for _, e := range evs {
					if e.TookOver != "" {
						tally.tookOver++
						t.Errorf("%s: apply %s took the claim of apply %s, which was alive", e.Node, e.Apply, e.TookOver)
					}
				}
			}
			if !r.OK() || r.Reboots != 6 {
				t.Errorf("from the event logs (want each of the 6 nodes rebooted once):\n%s\napply 1:\n%s\napply 2:\n%s",
					r, lastLines(outs[0], 20), lastLines(outs[1], 20))
			}
		})
	}
	t.Log(tally)
}

// exitCode is the exit code of a process Wait returned err for.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// outOfService follows, from a watch of the Nodes, how many of them are out of service at
// once as the planner counts it (planner.Condition): NotReady, cordoned, Degraded, or
// updating (the agent Working, or told to move to a config it does not run yet); and held
// by a FleetLock client's live reboot slot (mcp serve -fleetlock), as apply counts it. The
// watch delivers each Node's versions in the API server's order.
type outOfService struct {
	mu   sync.Mutex
	out  map[string]string // node → why, for those out now
	most int
	when string
}

func watchOutOfService(t *testing.T, c *kubeCluster) *outOfService {
	o := &outOfService{out: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	note := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		ann := n.Annotations
		why := ""
		switch {
		case n.Spec.Unschedulable:
			why = "cordoned"
		case ann[protocol.State] == model.StateWorking || ann[protocol.State] == model.StateDegraded:
			why = ann[protocol.State]
		case ann[protocol.DesiredConfig] != ann[protocol.CurrentConfig]:
			why = "told to move to " + ann[protocol.DesiredConfig]
		case !k8senv.NodeReady(n):
			why = "NotReady"
		}
		if cl, _, _ := protocol.ReadClaim(ann); why == "" && cl.Held() && time.Now().Before(cl.Expires) {
			if id, ok := cl.FleetLockID(); ok {
				why = "FleetLock slot of " + id
			}
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if why == "" {
			delete(o.out, n.Name)
			return
		}
		o.out[n.Name] = why
		if len(o.out) > o.most {
			o.most, o.when = len(o.out), fmt.Sprint(o.out)
		}
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.NewFilteredListWatchFromClient(c.env.Client.CoreV1().RESTClient(), "nodes", "",
			func(o *metav1.ListOptions) { o.LabelSelector = c.fleet() }),
		ObjectType: &corev1.Node{},
		Handler:    cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }},
	})
	go ctrl.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		t.Fatal("the watch of the nodes did not sync")
	}
	return o
}

// Two `mcp apply -lock=false` at once on a real API server, with a real agent process per
// node, three times (three configs): judged from the Nodes as a watch saw them and from
// the agents' own records — every node rebooted exactly once into each config, never more
// than max_unavailable nodes out of service at once, neither apply failed (exit 0 or 2).
func TestKubeUnlockedAppliesClaimNodes(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, markerPools(2, "v1"), map[string]int{"worker": 4})
	o := watchOutOfService(t, c)
	var targets []string
	exits := map[int]int{}
	for run := 1; run <= 3; run++ {
		marker := fmt.Sprintf("v%d", run)
		c.writeConfig(t, markerPools(2, marker))
		a, b := c.startApply(t, "-lock=false"), c.startApply(t, "-lock=false")
		for i, r := range []*applyRun{a, b} {
			out, code := r.wait(t, 5*time.Minute)
			exits[code]++
			t.Logf("run %d, apply %d: exit %d:\n%s", run, i+1, code, lastLines(out, 8))
			if code != 0 && code != 2 {
				t.Errorf("run %d: apply %d exited %d; want 0, or 2 for nodes the other one held:\n%s", run, i+1, code, lastLines(out, 30))
			}
		}
		c.converge(t)
		targets = append(targets, c.pointer(t, "worker"))
		c.checkConverged(t, marker+"\n", targets...)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Logf("3 runs of two applies with -lock=false: exit codes %v; most nodes out of service at once %d (%s)", exits, o.most, o.when)
	if o.most > 2 {
		t.Errorf("%d nodes were out of service at once (%s); max_unavailable is 2", o.most, o.when)
	}
}
