package acceptance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// kured's reboot lock, as kured writes it on its DaemonSet (its multi-owner form), holds
// worker-0 of a pool of max_unavailable 1 — with no TTL, held until kured releases it — and
// worker-1 with a TTL that ended an hour ago. Judged from the Node objects through a watch:
// while kured holds worker-0, mcp apply takes nothing out of service (the pool's one slot is
// kured's), its plan names kured's holder, in text and JSON, and mcp serve -fleetlock grants
// no FleetLock client a slot (with deploy/fleetlock's rights alone); once the lock is released
// apply updates every node (exit 0), never more than one at once — which it could not if
// the lapsed lock on worker-1 were counted (the budget would stay full until -budget-wait).
func TestKubeKuredLockSharesTheBudget(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, markerPools(1, "v1"), map[string]int{"worker": 3})
	ctx := context.Background()
	// The test's own kured DaemonSet, in its workload namespace: the package's control plane
	// is shared, and kube-system/kured would be every test's.
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.demo, Name: "kured"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "kured"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"name": "kured"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "kured"}},
					// No node of the fleet runs it: only its lock matters here.
					NodeSelector: map[string]string{"acceptance.mcpfleet.io/none": "none"}},
			},
		},
	}
	now := time.Now().UTC()
	lock := func(locks ...string) string {
		return fmt.Sprintf(`{"maxOwners":2,"locks":[%s]}`, strings.Join(locks, ","))
	}
	held := fmt.Sprintf(`{"nodeID":%q,"metadata":{"unschedulable":false},"created":%q,"TTL":0}`, c.name("worker-0"), now.Format(time.RFC3339))
	lapsed := fmt.Sprintf(`{"nodeID":%q,"metadata":{"unschedulable":false},"created":%q,"TTL":%d}`,
		c.name("worker-1"), now.Add(-time.Hour).Format(time.RFC3339), int64(time.Minute))
	ds.Annotations = map[string]string{"weave.works/kured-node-lock": lock(held, lapsed)}
	if _, err := c.env.Client.AppsV1().DaemonSets(c.demo).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.writeConfig(t, markerPools(1, "v1"), fmt.Sprintf("kured_daemonset = %q", c.demo+"/kured"))
	o := watchOutOfService(t, c)

	out, code := c.mcp(t, "mcp-apply", "plan", "-no-color")
	if code != 0 && code != 2 || !strings.Contains(out, "kured (lock on DaemonSet "+c.demo+"/kured") {
		t.Errorf("plan (exit %d) does not name kured's holder:\n%s", code, lastLines(out, 30))
	}
	js, code := c.mcp(t, "mcp-apply", "plan", "-json")
	if code != 0 && code != 2 || !strings.Contains(js, "kured (lock on DaemonSet "+c.demo+"/kured") {
		t.Errorf("plan -json (exit %d) does not name kured's holder:\n%s", code, lastLines(js, 30))
	}

	// mcp serve -fleetlock, as mcp-fleetlock with deploy/fleetlock's Role for kured's
	// DaemonSet moved to the test's namespace (as a cluster whose kured runs elsewhere
	// patches it): no slot over kured's, none on the node kured holds.
	if err := createObjects(c.env, fleetLockManifests(), func(u *unstructured.Unstructured) bool {
		if u.GetNamespace() != "kube-system" {
			return false
		}
		u.SetNamespace(c.demo)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	url := c.startServe(t, "mcp-fleetlock", "-fleetlock")
	for node, kind := range map[string]string{"worker-1": "failed_lock_semaphore_full", "worker-0": "failed_lock_node_claimed"} {
		code, got, err := fleetLockClient{url, c.name(node), "default"}.call("pre-reboot")
		if err != nil || code != 409 || got != kind {
			t.Errorf("FleetLock pre-reboot for %s while kured holds worker-0: %d %q %v; want 409 %s", node, code, got, err, kind)
		}
	}

	run := c.startApply(t, "-budget-wait=90s")
	time.Sleep(6 * time.Second) // apply plans, then waits: kured holds the pool's one slot
	o.mu.Lock()
	most, when := o.most, o.when
	o.mu.Unlock()
	if most > 0 {
		t.Errorf("while kured held %s, apply took nodes out of service too: %s (max_unavailable 1)", c.name("worker-0"), when)
	}
	// kured's Release: its entry leaves the list (the lapsed one stays, as kured leaves it).
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"weave.works/kured-node-lock":%q}}}`, lock(lapsed))
	if _, err := c.env.Client.AppsV1().DaemonSets(c.demo).Patch(ctx, "kured", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, code = run.wait(t, 3*time.Minute)
	if !strings.Contains(out, "kured") {
		t.Errorf("apply waited for kured's lock and did not say so:\n%s", lastLines(out, 30))
	}
	if code != 0 {
		t.Fatalf("apply after kured released its lock: exit %d\n%s", code, lastLines(out, 30))
	}
	o.mu.Lock()
	most, when = o.most, o.when
	o.mu.Unlock()
	t.Logf("most of the pool out of service at once: %d (%s)", most, when)
	if most > 1 {
		t.Errorf("%d of the pool's nodes were out of service at once (%s); max_unavailable is 1", most, when)
	}
	c.checkConverged(t, "v1\n", c.pointer(t, "worker"))
}
