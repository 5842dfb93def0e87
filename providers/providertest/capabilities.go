package providertest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// The promises of the optional capabilities (providers' interfaces the engine finds by a
// type assertion), each skipped when the provider does not implement its capability.

// observeNodes: ObserveNodes gives the named nodes, in any order, as Refresh would now —
// a cordon since included, which apply's live count of a pool's budget rests on.
func observeNodes(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	o := capability[providers.NodeObserver](t, p, "NodeObserver", "observes no node without a whole refresh")
	if err := p.Cordon(ctx, "w-2"); err != nil {
		t.Fatal(err)
	}
	nodes, err := o.ObserveNodes(ctx, []string{"w-2", "w-0"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range f.Nodes {
		if n.Name == "w-0" || n.Name == "w-2" {
			want[n.Name] = observed(n)
		}
	}
	got := map[string]string{}
	for _, n := range nodes {
		got[n.Name] = observed(n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ObserveNodes(w-2, w-0):\n got %v\nwant %v (as Refresh sees them)", got, want)
	}
	if !strings.Contains(got["w-2"], "unschedulable=true") {
		t.Errorf("ObserveNodes did not see w-2's cordon: %s", got["w-2"])
	}
}

// observed is what apply's budget reads of a node.
func observed(n model.Node) string {
	return fmt.Sprintf("zone=%s ready=%v unschedulable=%v state=%q config=%q labels=%v",
		n.Zone, n.Ready, n.Unschedulable, n.State, n.CurrentConfig, n.Labels)
}

// observeUnknown: a name the fleet lacks is an error naming it.
func observeUnknown(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	o := capability[providers.NodeObserver](t, p, "NodeObserver", "observes no node without a whole refresh")
	if _, err := o.ObserveNodes(ctx, []string{"w-0", "w-9"}); err == nil || !strings.Contains(err.Error(), "w-9") {
		t.Errorf("ObserveNodes(w-0, w-9): %v, want an error naming w-9", err)
	}
}

// driftReported: a node that ran a config's steps has no drift from it; a node that did
// not is told what it lacks.
func driftReported(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	d := capability[providers.DriftReporter](t, p, "DriftReporter", "reports drift in Refresh only")
	target := update(t, p, "w-0")
	if drift, err := d.Drift(ctx, "w-0", target); err != nil || len(drift) != 0 {
		t.Errorf("drift of w-0 from the config it just got: %v, %v; want none", drift, err)
	}
	drift, err := d.Drift(ctx, "w-1", target)
	if err != nil || len(drift) == 0 || drift[0].Path != "/etc/mcp-conformance" || drift[0].Kind != model.DriftMissing {
		t.Errorf("drift of w-1, which never got %s: %v, %v; want /etc/mcp-conformance missing", target.Name, drift, err)
	}
}

// healthyPasses: a Ready node whose DaemonSet pods are Ready passes the gates at once.
func healthyPasses(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	g := capability[providers.HealthGater](t, p, "HealthGater", "has no health gates")
	if err := g.WaitHealthy(ctx, "w-0", 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// notReadyFails: a NotReady node fails the node-ready gate once the timeout is over, with a
// *GateError naming the gate and the node.
func notReadyFails(t *testing.T, newProvider New) {
	role := map[string]string{"node-role.kubernetes.io/worker": ""}
	p := newProvider(t, Fixture{Nodes: []FixtureNode{{Name: "w-0", Zone: "a", Ready: true, Labels: role},
		{Name: "w-1", Zone: "b", Ready: false, Labels: role}}})
	g := capability[providers.HealthGater](t, p, "HealthGater", "has no health gates")
	start := time.Now()
	err := g.WaitHealthy(ctx, "w-1", 2*time.Second)
	var ge *providers.GateError
	if !errors.As(err, &ge) || ge.Gate != providers.GateReady || !strings.Contains(err.Error(), "w-1") {
		t.Errorf("WaitHealthy of NotReady w-1: %v; want a GateError of %s naming w-1", err, providers.GateReady)
	}
	if took := time.Since(start); took < 2*time.Second || took > time.Minute {
		t.Errorf("WaitHealthy of NotReady w-1 gave up after %v, its timeout was 2s", took)
	}
}

// nodeAddress: every node has an address or an error naming it; a node the fleet lacks
// is an error naming it.
func nodeAddress(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	g := capability[providers.HealthGater](t, p, "HealthGater", "has no health gates")
	for _, n := range []string{"w-0", "w-1", "w-2"} {
		a, err := g.NodeAddress(ctx, n)
		if (err == nil) == (a == "") || err != nil && !strings.Contains(err.Error(), n) {
			t.Errorf("NodeAddress(%s) = %q, %v; want an address or an error naming the node", n, a, err)
		}
	}
	if _, err := g.NodeAddress(ctx, "w-9"); err == nil || !strings.Contains(err.Error(), "w-9") {
		t.Errorf("NodeAddress of a node the fleet lacks: %v, want an error naming w-9", err)
	}
}

// degradedMarked: a node marked Degraded reports it, with the reason, to Refresh (and to
// ObserveNodes) until its next update; the other nodes are not touched.
func degradedMarked(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	m := capability[providers.DegradedMarker](t, p, "DegradedMarker", "cannot mark a node Degraded")
	const reason = `health gate "probe" did not pass: exit 3`
	if err := m.MarkDegraded(ctx, "w-1", reason); err != nil {
		t.Fatal(err)
	}
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Nodes {
		if degraded := n.State == model.StateDegraded; degraded != (n.Name == "w-1") || degraded && n.Reason != reason {
			t.Errorf("node %s after w-1 was marked: state %q, reason %q", n.Name, n.State, n.Reason)
		}
	}
	if o, ok := p.(providers.NodeObserver); ok {
		if nodes, err := o.ObserveNodes(ctx, []string{"w-1"}); err != nil || len(nodes) != 1 || nodes[0].State != model.StateDegraded {
			t.Errorf("ObserveNodes(w-1) after it was marked: %v, %v", nodes, err)
		}
	}
	update(t, p, "w-1")
	if n := node(t, p, "w-1"); n.State == model.StateDegraded {
		t.Errorf("w-1 still Degraded (%q) after its next update", n.Reason)
	}
}

// commandChecks: a command check runs what was published for the pool under the name
// asked for, whatever command the caller holds, and nothing once the pool's checks are
// withdrawn.
func commandChecks(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	cc := capability[providers.CommandChecker](t, p, "CommandChecker", "runs no command checks")
	marker := filepath.Join(t.TempDir(), "ran")
	probe := model.HealthCheck{Name: "probe", Timeout: 30 * time.Second,
		Command: []string{"/bin/sh", "-c", `echo "probe on $MCP_NODE"; exit 3`}}
	if err := cc.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {probe}}); err != nil {
		t.Fatal(err)
	}
	res, err := cc.RunCheck(ctx, "w-0", "worker", probe)
	if err != nil || res.ExitCode != 3 || res.Output != "probe on w-0\n" || res.Error != "" {
		t.Errorf("probe on w-0: %+v, %v; want exit 3 and its output", res, err)
	}
	// A name the pool was not given runs nothing, whatever command the caller holds:
	// what runs is what was published.
	forged := model.HealthCheck{Name: "forged", Timeout: 30 * time.Second, Command: []string{"/usr/bin/touch", marker}}
	res, err = cc.RunCheck(ctx, "w-0", "worker", forged)
	if err != nil || res.ExitCode != -1 || !strings.Contains(res.Error, "forged") {
		t.Errorf("an unpublished check: %+v, %v; want not run, naming it", res, err)
	}
	swapped := model.HealthCheck{Name: "probe", Timeout: 30 * time.Second, Command: []string{"/usr/bin/touch", marker}}
	if res, err := cc.RunCheck(ctx, "w-1", "worker", swapped); err != nil || res.ExitCode != 3 || res.Output != "probe on w-1\n" {
		t.Errorf("probe named with another command: %+v, %v; want the published command's exit 3", res, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a command that was never published ran (%s: %v)", marker, err)
	}
	// Published again with none for the pool: the pool keeps none.
	if err := cc.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": nil}); err != nil {
		t.Fatal(err)
	}
	if res, err := cc.RunCheck(ctx, "w-2", "worker", probe); err != nil || res.ExitCode != -1 || res.Error == "" {
		t.Errorf("probe after the pool's checks were withdrawn: %+v, %v; want not run", res, err)
	}
}

// sharedWatches: while watches are shared, what happens to a node is still seen (by
// ObserveNodes where the provider has it, else Refresh) and the health gates still pass;
// stop returns, and what is seen after it is current too.
func sharedWatches(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	ws := capability[providers.WatchSharer](t, p, "WatchSharer", "shares no watches")
	stop := ws.ShareWatches(ctx)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	if err := p.Cordon(ctx, "w-1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "w-1 seen cordoned under shared watches", func() bool { return look(t, p, "w-1").Unschedulable })
	if g, ok := p.(providers.HealthGater); ok {
		if err := g.WaitHealthy(ctx, "w-0", 30*time.Second); err != nil {
			t.Errorf("a health gate under shared watches: %v", err)
		}
	}
	stop()
	stopped = true
	if err := p.Uncordon(ctx, "w-1"); err != nil {
		t.Fatal(err)
	}
	if look(t, p, "w-1").Unschedulable {
		t.Error("after stop, w-1 is still seen cordoned: the observation is not current")
	}
}

// look is the node as apply sees it before a start: ObserveNodes, else Refresh.
func look(t *testing.T, p providers.Provider, name string) model.Node {
	t.Helper()
	if o, ok := p.(providers.NodeObserver); ok {
		nodes, err := o.ObserveNodes(ctx, []string{name})
		if err != nil || len(nodes) != 1 {
			t.Fatalf("ObserveNodes(%s): %v, %v", name, nodes, err)
		}
		return nodes[0]
	}
	return node(t, p, name)
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not after 10s: %s", what)
		}
	}
}

// requestsCounted: the count never goes back (apply shows the difference of two
// readings), and a provider that counts at all counts a refresh.
func requestsCounted(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	rc := capability[providers.RequestCounter](t, p, "RequestCounter", "counts no API requests")
	before := rc.APIRequests()
	if _, err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	refreshed := rc.APIRequests()
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	after := rc.APIRequests()
	if before < 0 || refreshed < before || after < refreshed {
		t.Errorf("requests %d, after a refresh %d, after a cordon %d: the count went back", before, refreshed, after)
	}
	if after > 0 && refreshed == before {
		t.Errorf("a refresh counted no request (%d before and after), yet the provider counts them", before)
	}
}

// templatePatched: a template Refresh observed gets the image asked for, set only while
// it still holds the image it was observed with; a stale set changes nothing and says
// what the template holds now.
func templatePatched(t *testing.T, newProvider New) {
	f := Standard()
	f.Templates = []FixtureTemplate{{Name: "worker-a", Image: "ami-0"}}
	p := newProvider(t, f)
	tp := capability[providers.TemplatePatcher](t, p, "TemplatePatcher", "has no machine templates")
	tm := template(t, p, "worker-a")
	if tm.Kind != "MachineSet" || tm.Namespace != TemplateNamespace || tm.Image != "ami-0" || tm.Unsupported != "" {
		t.Fatalf("template observed as %+v, want MachineSet %s/worker-a with image ami-0", tm, TemplateNamespace)
	}
	if err := tp.SetTemplateImage(ctx, tm, "ami-0", "ami-1"); err != nil {
		t.Fatal(err)
	}
	if got := template(t, p, "worker-a").Image; got != "ami-1" {
		t.Errorf("image after the set: %q, want ami-1", got)
	}
	err := tp.SetTemplateImage(ctx, tm, "ami-0", "ami-2")
	if err == nil || !strings.Contains(err.Error(), "worker-a") || !strings.Contains(err.Error(), "ami-1") {
		t.Errorf("a set from a stale image: %v; want an error naming worker-a and what it holds now (ami-1)", err)
	}
	if got := template(t, p, "worker-a").Image; got != "ami-1" {
		t.Errorf("image after the stale set: %q, want ami-1 kept", got)
	}
}

func template(t *testing.T, p providers.Provider, name string) model.MachineTemplate {
	t.Helper()
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(f.Templates, func(m model.MachineTemplate) bool { return m.Name == name })
	if i < 0 {
		t.Fatalf("template %s not observed (%v)", name, f.Templates)
	}
	return f.Templates[i]
}

// userDataStored: a key is absent until set; a set is made only over the value it was
// judged against (its digest, "" for absent), and keeps the Secret's other keys.
func userDataStored(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	u := capability[providers.UserDataStore](t, p, "UserDataStore", "holds no user-data Secrets")
	const name, key = "worker-user-data", "userData"
	read := func(key string) string {
		t.Helper()
		v, ok, err := u.UserData(ctx, Namespace, name, key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "<absent>"
		}
		return string(v)
	}
	if got := read(key); got != "<absent>" {
		t.Fatalf("user data before any set: %q", got)
	}
	if err := u.SetUserData(ctx, Namespace, name, key, []byte("one"), ""); err != nil {
		t.Fatal(err)
	}
	if err := u.SetUserData(ctx, Namespace, name, "disableTemplating", []byte("true"), ""); err != nil {
		t.Fatal(err)
	}
	if err := u.SetUserData(ctx, Namespace, name, key, []byte("two"), ""); err == nil {
		t.Error("a set judged against an absent key went over a value")
	}
	if got := read(key); got != "one" {
		t.Errorf("after a stale set: %q, want one kept", got)
	}
	if err := u.SetUserData(ctx, Namespace, name, key, []byte("two"), providers.Digest([]byte("one"))); err != nil {
		t.Fatal(err)
	}
	if got, other := read(key), read("disableTemplating"); got != "two" || other != "true" {
		t.Errorf("after a set: %s=%q disableTemplating=%q, want two and the other key kept", key, got, other)
	}
}

// configObserved: a node that carries a config under another name is observed as carrying
// it whole, and adopting it records the config with no step run; a node that lacks an item
// is observed lacking exactly it, and its adoption is refused with nothing recorded.
func configObserved(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	o := capability[providers.ConfigObserver](t, p, "ConfigObserver", "cannot observe what its nodes carry")
	first := update(t, p, "w-0")
	target := *first
	target.Name = "rendered-worker-same-content"
	obs, err := o.ObserveConfig(ctx, "w-0", &target)
	if err != nil || !obs.Carries(target.Name) {
		t.Errorf("ObserveConfig(w-0, %s): %+v, %v; want it carries the config whole", target.Name, obs, err)
	}
	adopt := []model.Step{{Kind: model.StepAdopt}}
	var done []model.Step
	if err := p.RunNodeSteps(ctx, "w-0", nil, &target, adopt, func(s model.Step) { done = append(done, s) }); err != nil {
		t.Fatalf("adopting w-0: %v", err)
	}
	if n := node(t, p, "w-0"); n.CurrentConfig != target.Name || len(done) != 1 || done[0].Kind != model.StepAdopt {
		t.Errorf("adopted w-0: current config %q, done %v; want %s, the adopt step", n.CurrentConfig, done, target.Name)
	}
	obs, err = o.ObserveConfig(ctx, "w-1", &target)
	if err != nil || obs.Target != target.Name || len(obs.Drift) != 1 || obs.Drift[0].Path != "/etc/mcp-conformance" ||
		obs.Drift[0].Kind != model.DriftMissing {
		t.Errorf("ObserveConfig(w-1, %s): %+v, %v; want /etc/mcp-conformance missing, alone", target.Name, obs, err)
	}
	before := node(t, p, "w-1")
	if err := p.RunNodeSteps(ctx, "w-1", nil, &target, adopt, func(model.Step) {}); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("adopting w-1, which lacks a file: %v; want it refused as a stale plan", err)
	}
	if n := node(t, p, "w-1"); n.CurrentConfig != before.CurrentConfig || n.State == model.StateDegraded {
		t.Errorf("a refused adoption changed w-1: current config %q, state %q", n.CurrentConfig, n.State)
	}
}
