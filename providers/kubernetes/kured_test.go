package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// TestParseKuredLock: both of kured's forms, and values kured itself could not read or
// that name no node: an error or an entry left out, never a crash, never a node held by
// something that does not say so.
func TestParseKuredLock(t *testing.T) {
	at := "2026-12-07T10:00:00Z"
	tests := []struct {
		name, raw string
		nodes     []string
		ttls      []time.Duration
		skipped   int
		err       string
	}{
		{"single", `{"nodeID":"w-1","metadata":{"unschedulable":false},"created":"` + at + `","TTL":300000000000}`, []string{"w-1"}, []time.Duration{5 * time.Minute}, 0, ""},
		{"single without TTL", `{"nodeID":"w-1","metadata":{"unschedulable":true},"created":"` + at + `","TTL":0}`, []string{"w-1"}, []time.Duration{0}, 0, ""},
		{"multi", `{"maxOwners":2,"locks":[{"nodeID":"w-1","created":"` + at + `","TTL":60000000000},{"nodeID":"w-2","created":"` + at + `","TTL":0}]}`,
			[]string{"w-1", "w-2"}, []time.Duration{time.Minute, 0}, 0, ""},
		{"multi, nobody holds it", `{"maxOwners":2,"locks":[]}`, nil, nil, 0, ""},
		{"multi, no locks key", `{"maxOwners":2}`, nil, nil, 0, ""},
		{"multi, null locks", `{"maxOwners":2,"locks":null}`, nil, nil, 0, ""},
		{"null", `null`, nil, nil, 0, ""},
		{"missing nodeID", `{"created":"` + at + `","TTL":1}`, nil, nil, 1, ""},
		{"empty object", `{}`, nil, nil, 1, ""},
		{"multi, one without a node", `{"maxOwners":3,"locks":[{"nodeID":"w-3","created":"` + at + `"},{"created":"` + at + `"}]}`, []string{"w-3"}, []time.Duration{0}, 1, ""},
		{"missing created", `{"nodeID":"w-1","TTL":1000}`, []string{"w-1"}, []time.Duration{1000}, 0, ""},
		{"garbage", `weave`, nil, nil, 0, "not a JSON object"},
		{"empty", ``, nil, nil, 0, "not a JSON object"},
		{"array", `[{"nodeID":"w-1"}]`, nil, nil, 0, "not a JSON object"},
		{"two objects", `{"nodeID":"w-1"} {"nodeID":"w-2"}`, nil, nil, 0, "more follows"},
		{"TTL not a number", `{"nodeID":"w-1","created":"` + at + `","TTL":"5m"}`, nil, nil, 0, "TTL"},
		{"TTL past int64", `{"nodeID":"w-1","created":"` + at + `","TTL":1e30}`, nil, nil, 0, "TTL"},
		{"created not a time", `{"nodeID":"w-1","created":"yesterday","TTL":1}`, nil, nil, 0, "yesterday"},
		{"locks not a list", `{"maxOwners":1,"locks":{"nodeID":"w-1"}}`, nil, nil, 0, "locks"},
		{"huge", `{"nodeID":"` + strings.Repeat("w", maxKuredLock) + `"}`, nil, nil, 0, "more than a lock can be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			locks, skipped, err := parseKuredLock(tc.raw)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(skipped) != tc.skipped {
				t.Errorf("skipped %q, want %d", skipped, tc.skipped)
			}
			if len(locks) != len(tc.nodes) {
				t.Fatalf("locks %+v, want nodes %v", locks, tc.nodes)
			}
			for i, l := range locks {
				if l.NodeID != tc.nodes[i] || time.Duration(l.TTL) != tc.ttls[i] {
					t.Errorf("lock %d: %+v, want node %s TTL %s", i, l, tc.nodes[i], tc.ttls[i])
				}
			}
		})
	}
}

// TestKuredLockClaim: a lock as a claim, judged as kured judges it: live until its TTL ends,
// forever without one; an updater's, not an apply's.
func TestKuredLockClaim(t *testing.T) {
	created := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	c := kuredLock{NodeID: "w-1", Created: created, TTL: int64(5 * time.Minute)}.claim("kube-system/kured")
	if u, id := c.Updater(); u != model.UpdaterKured || id != "w-1" || !c.Held() || !c.ByUpdater() {
		t.Errorf("claim %+v: updater %q %q, held %v", c, u, id, c.Held())
	}
	if !c.Expires.Equal(created.Add(5 * time.Minute)) {
		t.Errorf("expires %s", c.Expires)
	}
	if live, why := c.KuredLive(created.Add(4 * time.Minute)); !live {
		t.Errorf("within its TTL: lapsed (%s)", why)
	}
	if live, why := c.KuredLive(created.Add(5 * time.Minute)); live || !strings.Contains(why, "lapsed") {
		t.Errorf("at its TTL's end: live %v (%s)", live, why)
	}
	forever := kuredLock{NodeID: "w-1", Created: created}.claim("kube-system/kured")
	if live, _ := forever.KuredLive(created.Add(1000 * time.Hour)); !live || !forever.Expires.IsZero() {
		t.Errorf("a lock without a TTL lapsed (expires %s)", forever.Expires)
	}
	if !strings.Contains(c.String(), "kured (lock on DaemonSet kube-system/kured") {
		t.Errorf("String %q", c.String())
	}
}

// TestRefreshReadsKuredLock: refresh and ObserveNodes lay kured's lock over the node it
// names, keeping the node's own claim beneath; a node whose own claim is held keeps it; an
// absent DaemonSet or annotation holds none, an unreadable annotation none either; a
// DaemonSet that cannot be read fails the refresh, naming it and the setting.
func TestRefreshReadsKuredLock(t *testing.T) {
	ctx := context.Background()
	since := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	own := model.Claim{Apply: "A1", Since: since, Released: since.Add(time.Second)}
	held := model.Claim{Apply: "A2", Since: since, Expires: since.Add(time.Hour)}
	lock := `{"maxOwners":3,"locks":[{"nodeID":"w-0","created":"` + since.Format(time.RFC3339) + `","TTL":0},` +
		`{"nodeID":"w-1","created":"` + since.Format(time.RFC3339) + `","TTL":0},{"nodeID":"elsewhere","created":"` + since.Format(time.RFC3339) + `"}]}`
	ds := kDaemonSet("kube-system", "kured")
	ds.Annotations = map[string]string{DefaultKuredAnnotation: lock}
	c := fake.NewClientset(ds,
		kNode("w-0", "a", true, map[string]string{protocol.Claim: protocol.EncodeClaim(own)}),
		kNode("w-1", "a", true, map[string]string{protocol.Claim: protocol.EncodeClaim(held)}),
		kNode("w-2", "a", true, nil))
	p := NewForClient(c, Options{KuredDaemonSet: DefaultKuredDaemonSet})
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check := func(from string, nodes []model.Node) {
		t.Helper()
		by := map[string]model.Node{}
		for _, n := range nodes {
			by[n.Name] = n
		}
		if n := by["w-0"]; n.Claim == nil || n.Claim.Apply != "kured:w-0" || n.OwnClaim == nil || n.OwnClaim.Apply != "A1" {
			t.Errorf("%s: w-0 claim %+v, own %+v; want kured's over A1's record", from, n.Claim, n.OwnClaim)
		}
		if n := by["w-1"]; n.Claim == nil || n.Claim.Apply != "A2" || n.OwnClaim != nil {
			t.Errorf("%s: w-1 claim %+v; want apply A2's, which holds it", from, n.Claim)
		}
		if n := by["w-2"]; n.Claim != nil {
			t.Errorf("%s: w-2 claim %+v; kured holds it not", from, n.Claim)
		}
	}
	check("Refresh", f.Nodes)
	obs, err := p.ObserveNodes(ctx, []string{"w-0", "w-1", "w-2"})
	if err != nil {
		t.Fatal(err)
	}
	check("ObserveNodes", obs)

	for name, ann := range map[string]map[string]string{"no annotation": nil, "garbage": {DefaultKuredAnnotation: "{"}} {
		ds := kDaemonSet("kube-system", "kured")
		ds.Annotations = ann
		p := NewForClient(fake.NewClientset(ds, kNode("w-0", "a", true, nil)), Options{KuredDaemonSet: DefaultKuredDaemonSet})
		f, err := p.Refresh(ctx)
		if err != nil || f.Nodes[0].Claim != nil {
			t.Errorf("%s: %v, claim %+v; want no claim", name, err, f.Nodes[0].Claim)
		}
	}
	p = NewForClient(fake.NewClientset(kNode("w-0", "a", true, nil)), Options{KuredDaemonSet: DefaultKuredDaemonSet})
	if f, err := p.Refresh(ctx); err != nil || f.Nodes[0].Claim != nil {
		t.Errorf("no DaemonSet: %v, claim %+v; want no claim", err, f.Nodes[0].Claim)
	}

	c = fake.NewClientset(kNode("w-0", "a", true, nil))
	c.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "kured", nil)
	})
	p = NewForClient(c, Options{KuredDaemonSet: DefaultKuredDaemonSet})
	if _, err := p.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "DaemonSet kube-system/kured") || !strings.Contains(err.Error(), "kured_daemonset") {
		t.Errorf("forbidden: %v; want an error naming the DaemonSet and the setting", err)
	}
	if _, _, err := p.FleetLockNodes(ctx); err == nil {
		t.Error("FleetLockNodes read no lock it could not read, and said nothing")
	}
	// Off: nothing read.
	p = NewForClient(c, Options{})
	if _, err := p.Refresh(ctx); err != nil {
		t.Errorf("kured_daemonset off: %v", err)
	}
}

// TestKuredSettings: the provider block's kured settings are checked where written.
func TestKuredSettings(t *testing.T) {
	for _, s := range []string{"", "kube-system/kured", "ops/kured-2"} {
		if _, _, err := splitKuredDaemonSet(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"kured", "Kube/kured", "a/b/c", "/kured", "ns/"} {
		if _, _, err := splitKuredDaemonSet(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if err := checkKuredAnnotation(model.SettingValue{String: "bad key!"}); err == nil {
		t.Error("an annotation key with a space accepted")
	}
}
