package acceptance

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state/kubestate"
)

const quickstartPools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = "50%"
}

pool "infra" {
  node_selector   = { "node-role.kubernetes.io/infra" = "" }
  max_unavailable = 1
}
`

// TestKubeRolloutWithAgents: on a 6-node, 2-pool cluster the plan shows the right nodes and
// steps; apply rolls out through the agents (in place on the workers, drain and reboot on
// the infra nodes); every node ends Done on its pool's config, uncordoned, its root holding
// the files; a second plan has nothing to do.
func TestKubeRolloutWithAgents(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, quickstartPools, map[string]int{"worker": 4, "infra": 2})
	copyQuickstart(t, c.dir)
	for _, n := range []string{"infra-0", "infra-1"} {
		c.addPod(t, "app-"+n, n, map[string]string{"app": "app"}, false)
		c.addPod(t, "ds-"+n, n, map[string]string{"app": "ds"}, true)
	}

	out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 2 {
		t.Fatalf("plan -detailed-exitcode: exit %d, want 2\n%s", code, out)
	}
	// The refresh is a constant few paged LISTs: nodes, pods, PDBs.
	var nodes, pods, pdbs, reqs int
	var took string
	// The line is looked for, not taken as the first: what comes before it (a warning from
	// the client under load) is printed whole when it is missing.
	line := out
	if i := strings.Index(out, "Refreshed "); i >= 0 {
		line = out[i:]
	}
	if _, err := fmt.Sscanf(line, "Refreshed %d nodes, %d pods, %d PDBs in %s (%d API requests)", &nodes, &pods, &pdbs, &took, &reqs); err != nil || nodes != 6 || reqs > 6 {
		t.Errorf("refresh line: %v; want 6 nodes in at most 6 API requests:\n%s", err, out)
	}
	for _, want := range []string{"node." + c.name("worker-0"), "node." + c.name("worker-3"), "restart chronyd.service",
		"node." + c.name("infra-1"), "cordon, drain", "reboot", "Plan: 6 nodes to update (2 reboot, 4 in place)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not show %q:\n%s", want, out)
		}
	}

	out, code = c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	t.Logf("apply:\n%s", lastLines(out, 3))
	for name, a := range c.agents {
		n := c.node(t, name)
		ann := n.Annotations
		if ann[protocol.State] != "Done" || ann[protocol.CurrentConfig] == "" || ann[protocol.CurrentConfig] != ann[protocol.DesiredConfig] {
			t.Errorf("node %s: state %q current %q desired %q reason %q", name, ann[protocol.State],
				ann[protocol.CurrentConfig], ann[protocol.DesiredConfig], ann[protocol.Reason])
		}
		pool := strings.Split(name, "-")[0]
		if !strings.HasPrefix(ann[protocol.CurrentConfig], "rendered-"+pool+"-") {
			t.Errorf("node %s runs %q, not its pool's config", name, ann[protocol.CurrentConfig])
		}
		if n.Spec.Unschedulable {
			t.Errorf("node %s left cordoned", name)
		}
		b, err := os.ReadFile(filepath.Join(a.root, "etc/chrony.conf"))
		if err != nil || !strings.Contains(string(b), "server time.example.com") {
			t.Errorf("node %s: /etc/chrony.conf = %q, %v", name, b, err)
		}
		boots := a.boots.Load()
		if pool == "infra" && (boots < 2 || !strings.Contains(ann[protocol.KernelArgs], "nosmt")) {
			t.Errorf("node %s: %d boots, kernel args %s; want a reboot into nosmt", name, boots, ann[protocol.KernelArgs])
		}
		if pool == "worker" && boots != 1 {
			t.Errorf("node %s rebooted %d times for an in-place change", name, boots-1)
		}
	}
	// The evictable pods left the drained nodes; the DaemonSet pods stayed.
	demo, err := c.env.Client.CoreV1().Pods(c.demo).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range demo.Items {
		if p.DeletionTimestamp == nil {
			left = append(left, p.Name)
		}
	}
	if strings.Join(left, ",") != "ds-infra-0,ds-infra-1" {
		t.Errorf("pods left in demo: %v, want only the DaemonSet pods", left)
	}
	// The boot server serves each pool's new config to new nodes.
	for _, pool := range []string{"worker", "infra"} {
		resp, err := http.Get(c.server + "/config/" + pool)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET /config/%s: %v %v", pool, resp, err)
		} else {
			resp.Body.Close()
		}
	}

	// A rendered config nothing uses (an earlier rollout's) is pruned, as mcp-apply; the
	// pools' configs stay and the boot server goes on serving them.
	ctx := context.Background()
	b := kubestate.New(c.env.Client, c.stateNS, kubestate.Options{})
	st, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Named by its content: the state backend refuses a config whose name is not.
	earlier := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0", Sources: []string{"earlier"}}
	earlier.Name = content.Name(earlier)
	st.Rendered[earlier.Name] = earlier
	if err := b.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	if out, code := c.mcp(t, "mcp-apply", "prune", "-no-color"); code != 0 ||
		!strings.Contains(out, "- "+earlier.Name) || !strings.Contains(out, "Pruned 1 rendered config.") {
		t.Errorf("prune: exit %d\n%s", code, out)
	}
	after, err := kubestate.New(c.env.Client, c.stateNS, kubestate.Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Rendered[earlier.Name] != nil || len(after.Rendered) != 2 {
		t.Errorf("after prune the store holds %d rendered configs (want the 2 pools'), the unused one: %v",
			len(after.Rendered), after.Rendered[earlier.Name] != nil)
	}
	for _, pool := range []string{"worker", "infra"} {
		if resp, err := http.Get(c.server + "/config/" + pool); err != nil || resp.StatusCode != 200 {
			t.Errorf("GET /config/%s after prune: %v %v", pool, resp, err)
		} else {
			resp.Body.Close()
		}
	}

	out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 0 {
		t.Errorf("plan after apply: exit %d, want 0\n%s", code, out)
	}
}

const blockedPools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 2
}

pool "db" {
  node_selector = { "node-role.kubernetes.io/db" = "" }
  drain_timeout = "4s"
}

config "10-marker" {
  pools = ["worker", "db"]
  file "/etc/mcp-marker" { content = "v2\n" }   # no on_change: a reboot
}
`

// TestKubePDBBlocksDrain: a PDB that allows no disruption blocks the db node's drain. The
// plan predicts it, naming the PDB and pod; apply stops the db pool within its drain
// timeout, names them, and leaves the db node uncordoned on its old config, while the
// worker pool rolls out.
func TestKubePDBBlocksDrain(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, blockedPools, map[string]int{"worker": 2, "db": 1})
	c.addPod(t, "db-0", "db-0", map[string]string{"app": "db"}, false)
	c.addPDB(t, "db-pdb", map[string]string{"app": "db"}, 1)
	c.env.WaitPDB(t, c.demo, "db-pdb", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0
	})
	pdb, pod := c.demo+"/db-pdb", c.demo+"/db-0"

	out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, pdb) || !strings.Contains(out, pod) {
		t.Fatalf("plan: exit %d, want 2 and the blocker %s on %s\n%s", code, pdb, pod, out)
	}
	start := time.Now()
	out, code = c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms")
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("apply: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"db-0", "PodDisruptionBudget " + pdb, "needs 1 healthy, has 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output does not name %q:\n%s", want, out)
		}
	}
	if took > 90*time.Second {
		t.Errorf("apply took %v; the db pool's drain timeout is 4s", took)
	}
	db := c.node(t, "db-0")
	if db.Spec.Unschedulable {
		t.Error("db-0 left cordoned after its drain was refused")
	}
	if cur := db.Annotations[protocol.CurrentConfig]; cur != "" {
		t.Errorf("db-0 moved to %q although its drain was refused", cur)
	}
	if _, err := os.Stat(filepath.Join(c.agents["db-0"].root, "etc/mcp-marker")); err == nil {
		t.Error("db-0's disk was written although its drain was refused")
	}
	for _, w := range []string{"worker-0", "worker-1"} {
		n := c.node(t, w)
		if n.Annotations[protocol.State] != "Done" || n.Spec.Unschedulable {
			t.Errorf("worker %s: state %q unschedulable %v; the other pool must roll out", w, n.Annotations[protocol.State], n.Spec.Unschedulable)
		}
	}
	// The failure is on the node for status -nodes, as docs/status.md shows it, though this
	// apply held the state lock (its claim is not released otherwise).
	out, code = c.mcp(t, "mcp-apply", "status", "-nodes", "-no-color")
	if row := lineWith(out, "db-0"); code != 0 || !strings.Contains(row, "last apply failed: ") || !strings.Contains(row, pdb) {
		t.Errorf("status -nodes: exit %d; db-0's REASON does not say the last apply failed it on %s\n%s", code, pdb, out)
	}
	t.Logf("blocked apply took %v", took.Round(time.Millisecond))
}

// TestKubeAgentNeverTakesUpItsUpdate: a node whose agent does not run. Apply says, while
// it waits, that it waits for the agent to take up the update; at node_timeout the node is
// failed, left cordoned (its hand-over stands), and the message says nothing on it started
// — not that it was changed part-way.
func TestKubeAgentNeverTakesUpItsUpdate(t *testing.T) {
	waiting(t)
	const hcl = `
pool "worker" {
  node_selector = { "node-role.kubernetes.io/worker" = "" }
}

config "10-marker" {
  pools = ["worker"]
  file "/etc/mcp-marker" { content = "v2\n" }   # no on_change: cordon, drain, reboot
}
`
	c := newKubeCluster(t, hcl, map[string]int{"worker": 1}, "worker-0")
	c.writeConfig(t, hcl, `node_timeout = "25s"`)
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 1 {
		t.Fatalf("apply: exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(out, "node."+c.name("worker-0")+": waiting for its agent to take up update ") {
		t.Errorf("apply did not say, while it waited, what it waited for:\n%s", out)
	}
	if strings.Contains(out, "part-way") || !strings.Contains(out, "nothing on it started") {
		t.Errorf("apply's failure says the node changed part-way, or not that nothing started:\n%s", out)
	}
	if n := c.node(t, "worker-0"); !n.Spec.Unschedulable || n.Annotations[protocol.DesiredConfig] == "" {
		t.Errorf("worker-0: unschedulable %v, desired %q; want it cordoned with its hand-over standing", n.Spec.Unschedulable, n.Annotations[protocol.DesiredConfig])
	}
}

// lineWith is the first line of out that holds s ("" when none).
func lineWith(out, s string) string {
	for l := range strings.Lines(out) {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestKubeLockLease: while an apply holds the state Lease a second is refused, naming the
// holder; once the holder dies (SIGKILL: no unlock) the Lease is taken over after it expires.
func TestKubeLockLease(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, blockedPools, map[string]int{"db": 1})
	c.addPod(t, "db-0", "db-0", map[string]string{"app": "db"}, false)
	c.addPDB(t, "db-pdb", map[string]string{"app": "db"}, 1)
	// The first apply hangs in a drain the PDB refuses (a long drain timeout), holding the lock.
	first := exec.Command(c.bin, "apply", "-auto-approve", "-drain-timeout=10m")
	first.Dir = c.dir
	first.Env = append(os.Environ(), "KUBECONFIG="+c.kc["mcp-apply"])
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	leases := c.env.Client.CoordinationV1().Leases(c.stateNS)
	waitUntil(t, 60*time.Second, func() bool {
		_, err := leases.Get(context.Background(), protocol.LockLease, metav1.GetOptions{})
		return err == nil
	}, func() string { return "the first apply never took the Lease" })
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-lock-timeout=0s")
	if code == 0 || !strings.Contains(out, fmt.Sprintf("pid %d", first.Process.Pid)) || !strings.Contains(out, "force-unlock") {
		t.Fatalf("a second run while the lock is held: exit %d, want a refusal naming pid %d\n%s", code, first.Process.Pid, out)
	}
	t.Logf("refused: %s", lastLines(out, 2))
	first.Process.Kill()
	first.Wait()
	start := time.Now()
	out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-lock-timeout=60s")
	if code != 0 {
		t.Fatalf("after the holder died: exit %d\n%s", code, out)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("the dead holder's Lease was taken over after %v, before it expired", took)
	} else {
		t.Logf("dead holder's Lease taken over after %v", took.Round(time.Millisecond))
	}
}

// TestKubeDeployRBAC: each identity of deploy/ may do its job and nothing else. What they
// need is proven by the rollout tests, which run as them; here SelfSubjectAccessReviews
// check what they are refused.
func TestKubeDeployRBAC(t *testing.T) {
	waiting(t)
	env := sharedKube(t)
	env.EnsureNamespace(t, "openshift-machine-api")
	repo, _ := filepath.Abs("..")
	for _, d := range []string{"deploy/machine-api/openshift", "deploy/machine-api/cluster-api", "deploy/fleetlock"} {
		kubectl(t, env, repo, "apply", "--server-side", "-k", d)
	}
	type check struct {
		verb, group, resource, sub, ns string
		allowed                        bool
	}
	cases := map[string][]check{
		"mcp-agent": {
			{"get", "", "nodes", "", "", true}, {"watch", "", "nodes", "", "", true}, {"patch", "", "nodes", "", "", true},
			{"delete", "", "nodes", "", "", false}, {"update", "", "nodes", "status", "", false},
			{"list", "", "pods", "", "", false}, {"get", "", "secrets", "", "mcp-system", false},
			{"get", "", "secrets", "", "mcp-state", false}, {"list", "", "secrets", "", "mcp-state", false},
			{"create", "", "pods", "eviction", "demo", false},
		},
		// The state's readers read the Secrets of mcp-state, and none of mcp-system (below).
		"mcp-server": {
			{"list", "", "secrets", "", "mcp-state", true}, {"watch", "", "secrets", "", "mcp-state", true},
			{"get", "", "secrets", "", "mcp-state", false}, // an informer: nothing by name
			{"list", "", "secrets", "", "mcp-system", false}, {"watch", "", "secrets", "", "mcp-system", false},
			{"get", "", "secrets", "", "kube-system", false}, {"create", "", "secrets", "", "mcp-state", false},
			{"patch", "", "nodes", "", "", false}, {"list", "", "pods", "", "", false},
		},
		// mcp serve -fleetlock (deploy/fleetlock): patches Nodes (a slot's claim), reads the
		// state and its lock, writes neither; TestKubeFleetLockSharesTheBudget runs it so.
		"mcp-fleetlock": {
			{"list", "", "nodes", "", "", true}, {"patch", "", "nodes", "", "", true}, {"get", "", "secrets", "", "mcp-state", true},
			{"watch", "", "nodes", "", "", false}, {"update", "", "nodes", "", "", false}, {"update", "", "nodes", "status", "", false},
			{"delete", "", "nodes", "", "", false}, {"list", "", "pods", "", "", false}, {"create", "", "pods", "eviction", "demo", false},
			{"create", "", "secrets", "", "mcp-state", false}, {"update", "", "secrets", "", "mcp-state", false},
			{"list", "", "secrets", "", "mcp-system", false}, {"get", "", "secrets", "", "kube-system", false},
			{"update", "coordination.k8s.io", "leases", "", "mcp-state", false}, {"create", "coordination.k8s.io", "leases", "", "mcp-state", false},
			{"list", "coordination.k8s.io", "leases", "", "mcp-state", false},
		},
		"mcp-apply": {
			{"patch", "", "nodes", "", "", true}, {"list", "", "pods", "", "", true},
			{"create", "", "pods", "eviction", "demo", true}, {"list", "policy", "poddisruptionbudgets", "", "", true},
			{"update", "coordination.k8s.io", "leases", "", "mcp-state", true}, {"create", "", "secrets", "", "mcp-state", true},
			{"list", "", "secrets", "", "mcp-state", true}, {"delete", "", "secrets", "", "mcp-state", true},
			// In mcp-system the command checks alone (below): no list, no lock there.
			{"list", "", "secrets", "", "mcp-system", false}, {"update", "coordination.k8s.io", "leases", "", "mcp-system", false},
			{"get", "", "secrets", "", "kube-system", false}, {"delete", "", "pods", "", "demo", false},
			{"delete", "", "nodes", "", "", false}, {"create", "coordination.k8s.io", "leases", "", "kube-system", false},
			{"update", "", "nodes", "", "", false}, // every write to a Node is a patch
			// Machine templates: read everywhere, patched only where deploy/machine-api grants it.
			{"list", "machine.openshift.io", "machinesets", "", "", true},
			{"patch", "machine.openshift.io", "machinesets", "", "openshift-machine-api", true},
			{"patch", "machine.openshift.io", "machinesets", "", "default", false},
			{"patch", "machine.openshift.io", "machinesets", "", "", false},
			{"get", "infrastructure.cluster.x-k8s.io", "awsmachinetemplates", "", "", true},
			{"patch", "infrastructure.cluster.x-k8s.io", "awsmachinetemplates", "", "default", true},
			{"patch", "infrastructure.cluster.x-k8s.io", "awsmachinetemplates", "", "kube-system", false},
			{"update", "machine.openshift.io", "machinesets", "", "openshift-machine-api", false},
		},
		// The drift runner reads what drift needs (Nodes, the state's Secrets) and writes
		// nothing (TestKubeDriftRunner runs it with these rights).
		"mcp-drift": {
			{"list", "", "nodes", "", "", true}, {"watch", "", "nodes", "", "", false}, {"get", "", "secrets", "", "mcp-state", true},
			{"list", "", "secrets", "", "mcp-state", true}, {"watch", "", "secrets", "", "mcp-state", false},
			{"get", "", "secrets", "", "mcp-system", false}, {"list", "", "secrets", "", "mcp-system", false},
			{"patch", "", "nodes", "", "", false}, {"update", "", "nodes", "", "", false}, {"create", "", "secrets", "", "mcp-state", false},
			{"update", "", "secrets", "", "mcp-state", false}, {"get", "", "secrets", "", "kube-system", false},
			{"create", "coordination.k8s.io", "leases", "", "mcp-state", false}, {"list", "", "pods", "", "", false},
		},
	}
	for sa, checks := range cases {
		user := "system:serviceaccount:mcp-system:" + sa
		cs := env.ClientAs(t, user, "system:serviceaccounts", "system:serviceaccounts:mcp-system")
		for _, ch := range checks {
			if got := selfCan(t, cs, ch.verb, ch.group, ch.resource, ch.sub, ch.ns); got != ch.allowed {
				t.Errorf("%s: %s %s/%s %s in %q: allowed=%v, want %v", sa, ch.verb, ch.group, ch.resource, ch.sub, ch.ns, got, ch.allowed)
			}
		}
	}
	// mcp-apply's user-data Secrets in openshift-machine-api (deploy/machine-api/openshift):
	// get and update by name, nothing else.
	apply := env.ClientAs(t, "system:serviceaccount:mcp-system:mcp-apply", "system:serviceaccounts", "system:serviceaccounts:mcp-system")
	for _, ch := range []struct {
		verb, name string
		allowed    bool
	}{
		{"get", "worker-user-data", true}, {"update", "worker-user-data", true}, {"update", "master-user-data", true},
		{"patch", "worker-user-data", false}, {"delete", "worker-user-data", false}, {"get", "other", false},
		{"update", "other", false}, {"create", "", false}, {"list", "", false},
	} {
		if got := selfCanNamed(t, apply, ch.verb, "", "secrets", ch.name, "openshift-machine-api"); got != ch.allowed {
			t.Errorf("mcp-apply: %s secret %q in openshift-machine-api: allowed=%v, want %v", ch.verb, ch.name, got, ch.allowed)
		}
	}
	// The Secrets of mcp-system by name: the boot server's TLS key and token are mounted
	// into its pods, never read through the API, and only the agents read the command
	// checks, which only apply writes; the state's readers read none of them.
	for _, ch := range []struct {
		sa, verb, name string
		allowed        bool
	}{
		{"mcp-server", "get", "mcp-server-tls", false}, {"mcp-server", "get", "mcp-server-token", false},
		{"mcp-server", "get", protocol.HealthSecret, false},
		{"mcp-drift", "get", "mcp-server-tls", false}, {"mcp-drift", "get", "mcp-server-token", false},
		{"mcp-drift", "get", protocol.HealthSecret, false},
		{"mcp-apply", "get", "mcp-server-tls", false}, {"mcp-apply", "get", "mcp-server-token", false},
		{"mcp-apply", "update", "mcp-server-tls", false}, {"mcp-apply", "delete", protocol.HealthSecret, false},
		{"mcp-apply", "get", protocol.HealthSecret, true}, {"mcp-apply", "update", protocol.HealthSecret, true},
	} {
		cs := env.ClientAs(t, "system:serviceaccount:mcp-system:"+ch.sa, "system:serviceaccounts", "system:serviceaccounts:mcp-system")
		if got := selfCanNamed(t, cs, ch.verb, "", "secrets", ch.name, "mcp-system"); got != ch.allowed {
			t.Errorf("%s: %s secret %s in mcp-system: allowed=%v, want %v", ch.sa, ch.verb, ch.name, got, ch.allowed)
		}
	}
	// mcp-fleetlock reads the state lock's Lease by name, and no other Lease.
	fl := env.ClientAs(t, "system:serviceaccount:mcp-system:mcp-fleetlock", "system:serviceaccounts", "system:serviceaccounts:mcp-system")
	for name, allowed := range map[string]bool{protocol.LockLease: true, "other": false} {
		if got := selfCanNamed(t, fl, "get", "coordination.k8s.io", "leases", name, "mcp-state"); got != allowed {
			t.Errorf("mcp-fleetlock: get lease %s in mcp-state: allowed=%v, want %v", name, got, allowed)
		}
	}
	// Of the Secrets, the agent may get the pools' command checks, by name, and no other:
	// not the state, not a rendered config.
	agent := env.ClientAs(t, "system:serviceaccount:mcp-system:mcp-agent", "system:serviceaccounts", "system:serviceaccounts:mcp-system")
	for _, ch := range []struct {
		verb, name string
		allowed    bool
	}{
		{"get", protocol.HealthSecret, true}, {"update", protocol.HealthSecret, false}, {"patch", protocol.HealthSecret, false},
		{"delete", protocol.HealthSecret, false}, {"get", protocol.StateSecret, false}, {"get", protocol.RenderedSecretName("rendered-worker-0123"), false},
	} {
		if got := selfCanNamed(t, agent, ch.verb, "", "secrets", ch.name, "mcp-system"); got != ch.allowed {
			t.Errorf("mcp-agent: %s secret %s in mcp-system: allowed=%v, want %v", ch.verb, ch.name, got, ch.allowed)
		}
	}
}

// selfCan asks the apiserver whether the client's identity may do verb on the resource.
func selfCan(t *testing.T, cs kubernetes.Interface, verb, group, resource, sub, ns string) bool {
	t.Helper()
	return selfCanNamed(t, cs, verb, group, resource+"/"+sub, "", ns)
}

// selfCanNamed is selfCan for the object name of resource (resource or resource/sub).
func selfCanNamed(t *testing.T, cs kubernetes.Interface, verb, group, resource, name, ns string) bool {
	t.Helper()
	resource, sub, _ := strings.Cut(resource, "/")
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// TestKubeDriftPastTheAnnotationLimit: a node whose disk drifted in more paths than the
// drift annotation lists (25 against 20) is planned for a restore of every path its config
// manages, with a warning; apply restores them all (the agent's own drift check does not
// stop it on the unlisted ones) and the next plan has nothing to do.
func TestKubeDriftPastTheAnnotationLimit(t *testing.T) {
	waiting(t)
	var hcl strings.Builder
	hcl.WriteString("pool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker\" = \"\" }\n}\n\nconfig \"10-many\" {\n  pools = [\"worker\"]\n")
	for i := range 25 {
		fmt.Fprintf(&hcl, "  file \"/etc/many/f%02d\" {\n    content   = \"f%02d\\n\"\n    on_change = [\"restart:many.service\"]\n  }\n", i, i)
	}
	hcl.WriteString("}\n")
	c := newKubeCluster(t, hcl.String(), map[string]int{"worker": 1})
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	root := c.agents["worker-0"].root
	for i := range 25 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("etc/many/f%02d", i)), []byte("changed by hand\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	driftCount := func() string { return c.node(t, "worker-0").Annotations[protocol.DriftCount] }
	waitDrift := func(want string) {
		t.Helper()
		waitUntil(t, 30*time.Second, func() bool { return driftCount() == want }, func() string {
			return fmt.Sprintf("the agent never reported a drift count of %s (has %q)", want, driftCount())
		})
	}
	waitDrift("25")
	// A drift run on the cluster sees it from the agent's report; plan restores it:
	// -detailed-exitcode says apply would change the node (2), -detailed-exitcode=config
	// that the configuration asks for nothing (0).
	out, code := c.mcp(t, "mcp-apply", "drift", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, "node."+c.name("worker-0")+" (pool worker") || !strings.Contains(out, "and 5 more paths, not listed") {
		t.Fatalf("drift with 25 drifted paths: exit %d, want 2\n%s", code, out)
	}
	if out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode=config"); code != 0 {
		t.Errorf("plan -detailed-exitcode=config restoring drift: exit %d, want 0\n%s", code, out)
	}
	out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, "and 5 more paths, not listed") || !strings.Contains(out, "5 more drifted paths than the node listed") ||
		!strings.Contains(out, "restart many.service") || !strings.Contains(out, "restored by this plan") {
		t.Fatalf("plan with 25 drifted paths: exit %d\n%s", code, out)
	}
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply restoring 25 paths: exit %d\n%s", code, out)
	}
	for i := range 25 {
		if b, _ := os.ReadFile(filepath.Join(root, fmt.Sprintf("etc/many/f%02d", i))); string(b) != fmt.Sprintf("f%02d\n", i) {
			t.Errorf("f%02d not restored: %q", i, b)
		}
	}
	waitDrift("0")
	if out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode"); code != 0 || strings.Contains(out, "drift") {
		t.Errorf("plan after restoring: exit %d, want 0 and no drift\n%s", code, out)
	}
	if out, code := c.mcp(t, "mcp-apply", "drift", "-detailed-exitcode"); code != 0 {
		t.Errorf("drift after restoring: exit %d, want 0\n%s", code, out)
	}
}
