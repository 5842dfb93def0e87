package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// statusDoc is `mcp status -json` (docs/status.md), as a tool reads it.
type statusDoc struct {
	FormatVersion string       `json:"format_version"`
	Pools         []poolCounts `json:"pools"`
	Nodes         []struct {
		Name          string `json:"name"`
		Pool          string `json:"pool"`
		CurrentConfig string `json:"current_config"`
		DesiredConfig string `json:"desired_config"`
		State         string `json:"state"`
		Held          bool   `json:"held"`
	} `json:"nodes"`
}

type poolCounts struct {
	Name     string `json:"name"`
	Config   string `json:"config"`
	Machines int    `json:"machines"`
	Updated  int    `json:"updated"`
	Updating int    `json:"updating"`
	Degraded int    `json:"degraded"`
	Held     int    `json:"held"`
	Ready    int    `json:"ready"`
	Paused   bool   `json:"paused"`
}

func runStatus(t *testing.T, args ...string) statusDoc {
	t.Helper()
	out, err := exec.Command(mcpBinary(t), append(args, "status", "-json")...).Output()
	if err != nil {
		t.Fatalf("mcp status -json: %v", err)
	}
	var s statusDoc
	if err := json.Unmarshal(out, &s); err != nil || s.FormatVersion == "" {
		t.Fatalf("mcp status -json: %v\n%s", err, out)
	}
	return s
}

// countNode counts one node into its pool as docs/status.md defines the columns.
func countNode(c *poolCounts, n model.Node, held bool) {
	c.Machines++
	switch {
	case n.State == model.StateDegraded:
		c.Degraded++
	case n.State == model.StateWorking || n.DesiredConfig != "" && n.DesiredConfig != n.CurrentConfig:
		c.Updating++
	case c.Config != "" && n.CurrentConfig == c.Config:
		c.Updated++
		if n.Ready && !n.Unschedulable {
			c.Ready++
		}
	}
	if held {
		c.Held++
	}
}

// fleetFiles reads the local fleet's node.json files and the state's pool pointers as
// they are on disk, raw (to tell whether they changed) and counted per pool (pools by the
// quickstart's node-role labels).
func fleetFiles(t *testing.T, dir string) (raw []byte, counts []poolCounts, rebootEnds []time.Time) {
	t.Helper()
	var st struct {
		Pointers map[string]string `json:"pointers"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "mcp.state"))
	if err == nil {
		raw = append(raw, b...)
		json.Unmarshal(b, &st)
	}
	byPool := map[string]*poolCounts{}
	for _, p := range []string{"infra", "worker"} {
		byPool[p] = &poolCounts{Name: p, Config: st.Pointers[p]}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "fleet/nodes/*/node.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
		var n struct {
			model.Node
			RebootingUntil time.Time `json:"rebooting_until"`
		}
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !n.RebootingUntil.IsZero() {
			rebootEnds = append(rebootEnds, n.RebootingUntil)
		}
		_, held := n.Labels["mcpfleet.io/hold"]
		for p, c := range byPool {
			if _, ok := n.Labels["node-role.kubernetes.io/"+p]; ok {
				countNode(c, n.Node, held)
			}
		}
	}
	return raw, []poolCounts{*byPool["infra"], *byPool["worker"]}, rebootEnds
}

// mcp status counts what the fleet's own files say, while an apply (holding the lock) rolls
// the quickstart out and after it: each status taken while the files stayed the same is
// compared with the counts made from them. A node whose simulated reboot ended meanwhile
// is back for mcp before its file says so, so such moments are not compared.
func TestStatusCountsFollowALocalRollout(t *testing.T) {
	exclusive(t)
	// Drains and reboots long enough that the files stay still through a status taken on
	// a loaded machine (the real machines' tests run beside this one): with 200 ms and 1 s,
	// only 2 moments of a rollout stayed still enough to compare under a load of 8.
	dir := localQuickstart(t, "1s", "3s")
	bin := mcpBinary(t)
	if out, err := exec.Command(bin, "-chdir="+dir, "fleet", "set", "worker-1", "label.mcpfleet.io/hold=db migration").CombinedOutput(); err != nil {
		t.Fatalf("fleet set: %v\n%s", err, out)
	}
	before := runStatus(t, "-chdir="+dir)
	if before.Pools[1].Updated != 0 || before.Pools[1].Held != 1 || before.Pools[1].Config != "" {
		t.Errorf("before the first apply: %+v", before.Pools)
	}
	cmd, out := startApply(t, dir)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	compared, sawUpdating, sawPartial := 0, false, false
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("apply: %v\n%s", err, out)
			}
			running = false
			continue
		default:
		}
		raw, want, ends := fleetFiles(t, dir)
		got := runStatus(t, "-chdir="+dir)
		raw2, _, _ := fleetFiles(t, dir)
		now := time.Now()
		if !bytes.Equal(raw, raw2) || slices.ContainsFunc(ends, func(e time.Time) bool { return !e.After(now) }) {
			continue
		}
		compared++
		if diff := cmp.Diff(want, got.Pools); diff != "" {
			t.Errorf("status during the rollout differs from the fleet's files (-files +status):\n%s", diff)
		}
		for _, p := range got.Pools {
			sawUpdating = sawUpdating || p.Updating > 0
			sawPartial = sawPartial || p.Config != "" && p.Updated > 0 && p.Updated < p.Machines-p.Held
		}
	}
	t.Logf("compared status with the fleet's files at %d moments of the rollout", compared)
	if compared < 3 || !sawUpdating || !sawPartial {
		t.Errorf("compared %d moments of the rollout (updating seen: %v, part-updated seen: %v); want at least 3 and both",
			compared, sawUpdating, sawPartial)
	}
	_, want, _ := fleetFiles(t, dir)
	after := runStatus(t, "-chdir="+dir)
	if diff := cmp.Diff(want, after.Pools); diff != "" {
		t.Errorf("status after the rollout (-files +status):\n%s", diff)
	}
	for _, p := range after.Pools {
		if p.Updating != 0 || p.Degraded != 0 || p.Updated+p.Held < p.Machines || p.Ready != p.Updated {
			t.Errorf("after the rollout, pool %s: %+v", p.Name, p)
		}
	}
	held := map[string]bool{}
	for _, n := range after.Nodes {
		held[n.Name] = n.Held
	}
	if !maps.Equal(held, map[string]bool{"worker-0": false, "worker-1": true, "worker-2": false, "worker-3": false,
		"infra-0": false, "infra-1": false}) {
		t.Errorf("held nodes: %v", held)
	}
	// The human table, as oc get mcp prints it.
	tbl, err := exec.Command(bin, "-chdir="+dir, "status").Output()
	if err != nil || !strings.Contains(string(tbl), "MACHINECOUNT") || !strings.Contains(string(tbl), after.Pools[1].Config) {
		t.Errorf("mcp status: %v\n%s", err, tbl)
	}
}

// kubeCounts reads the Nodes from the apiserver (raw: their resource versions) and the
// state's pointers, and counts them as docs/status.md defines.
func kubeCounts(t *testing.T, c *kubeCluster) (raw string, counts []poolCounts) {
	t.Helper()
	ctx := context.Background()
	st, err := kubestate.New(c.env.Client, c.stateNS, kubestate.Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: c.fleet()})
	if err != nil {
		t.Fatal(err)
	}
	byPool := map[string]*poolCounts{}
	for _, p := range []string{"infra", "worker"} {
		byPool[p] = &poolCounts{Name: p, Config: st.Pointers[p]}
		raw += p + "=" + st.Pointers[p] + " "
	}
	for _, n := range nodes.Items {
		a := n.Annotations
		m := model.Node{Unschedulable: n.Spec.Unschedulable, CurrentConfig: a[protocol.CurrentConfig],
			DesiredConfig: a[protocol.DesiredConfig], State: a[protocol.State]}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				m.Ready = cond.Status == corev1.ConditionTrue
			}
		}
		_, held := n.Labels["mcpfleet.io/hold"]
		// What status reads of the node (resource versions also move with kwok's heartbeats).
		raw += fmt.Sprintf("%s:%+v:%v ", n.Name, m, held)
		for p, pc := range byPool {
			if _, ok := n.Labels["node-role.kubernetes.io/"+p]; ok {
				countNode(pc, m, held)
			}
		}
	}
	return raw, []poolCounts{*byPool["infra"], *byPool["worker"]}
}

// The same on a real apiserver with real agents: mcp status (as the mcp-apply identity,
// while apply holds the Lease) counts what the Nodes' annotations, conditions and the
// state's Secrets say, during the quickstart's rollout and after it.
func TestKubeStatusCountsFollowARollout(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, quickstartPools, map[string]int{"worker": 4, "infra": 2})
	copyQuickstart(t, c.dir)
	ctx := context.Background()
	hold := []byte(`{"metadata":{"labels":{"mcpfleet.io/hold":"kernel-bug"}}}`)
	if _, err := c.env.Client.CoreV1().Nodes().Patch(ctx, c.name("worker-2"), types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.nextRebootDelay.Store(int64(2 * time.Second)) // the first infra node stays down a while
	status := func() statusDoc {
		t.Helper()
		out, code := c.mcp(t, "mcp-apply", "status", "-json")
		var s statusDoc
		if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
			t.Fatalf("mcp status -json: exit %d %v\n%s", code, err, out)
		}
		return s
	}
	apply := exec.Command(c.bin, "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms")
	apply.Dir, apply.Env = c.dir, append(os.Environ(), "KUBECONFIG="+c.kc["mcp-apply"])
	var out bytes.Buffer
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- apply.Wait() }()
	compared, sawUpdating := 0, false
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("apply: %v\n%s", err, out.String())
			}
			running = false
			continue
		default:
		}
		raw, want := kubeCounts(t, c)
		got := status()
		if raw2, _ := kubeCounts(t, c); raw2 != raw {
			continue
		}
		compared++
		if diff := cmp.Diff(want, got.Pools); diff != "" {
			t.Errorf("status during the rollout differs from the apiserver (-apiserver +status):\n%s", diff)
		}
		for _, p := range got.Pools {
			sawUpdating = sawUpdating || p.Updating > 0
		}
	}
	t.Logf("compared status with the apiserver at %d moments of the rollout", compared)
	if compared < 2 || !sawUpdating {
		t.Errorf("compared %d moments of the rollout (updating seen: %v); want at least 2, updating seen", compared, sawUpdating)
	}
	_, want := kubeCounts(t, c)
	after := status()
	if diff := cmp.Diff(want, after.Pools); diff != "" {
		t.Errorf("status after the rollout (-apiserver +status):\n%s", diff)
	}
	for _, p := range after.Pools {
		if p.Machines == 0 || p.Updating != 0 || p.Degraded != 0 || p.Updated+p.Held < p.Machines || p.Ready != p.Updated {
			t.Errorf("after the rollout, pool %s: %+v", p.Name, p)
		}
	}
	if after.Pools[1].Held != 1 {
		t.Errorf("worker pool: %d held, want worker-2", after.Pools[1].Held)
	}
}
