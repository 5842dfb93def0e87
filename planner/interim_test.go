package planner

import (
	"slices"
	"testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// interimFleet: m-0's move to the target mixes a certificate (on_change none) with a
// file to drain for and a kernel argument; m-1's is the kernel argument alone.
func interimFleet(pause model.Pause) (Input, *model.Rendered) {
	old := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0",
		Files: []model.File{file("/etc/b", "old", "drain"), file("/etc/pki/cert.pem", "old", "none")}}
	old.Name = content.Name(old)
	to := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0", KernelArgs: []string{"nosmt"},
		Files: []model.File{file("/etc/b", "new", "drain"), file("/etc/pki/cert.pem", "new", "none")}}
	to.Name = content.Name(to)
	noArgs := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0",
		Files: []model.File{file("/etc/b", "new", "drain"), file("/etc/pki/cert.pem", "new", "none")}}
	noArgs.Name = content.Name(noArgs)
	nodes := []model.Node{node("m-0", "worker", "a", 0), node("m-1", "worker", "a", 1)}
	nodes[0].CurrentConfig, nodes[1].CurrentConfig = old.Name, noArgs.Name
	return Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 2}, Paused: pause}),
		Rendered: map[string]*model.Rendered{"worker": to},
		Known:    map[string]*model.Rendered{old.Name: old, noArgs.Name: noArgs, to.Name: to},
		Pointers: map[string]string{"worker": old.Name},
		Fleet:    &model.Fleet{Nodes: nodes}}, to
}

// A node of a pool paused for disruptive changes whose move mixes both kinds moves to an
// interim config — its own with the certificate — by steps that neither drain nor
// reboot; the file to drain for and the kernel argument wait. Unpaused, it moves from the
// interim to the target by those alone.
func TestPausedDisruptiveInterim(t *testing.T) {
	in, to := interimFleet(model.PauseDisruptive)
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	n, pp := nodesByName(p), p.Pools[0]
	m0 := n["m-0"]
	if m0.Deferred || m0.Disruptive() || m0.To == to.Name || m0.Interim == nil || m0.Interim.Target != to.Name {
		t.Fatalf("m-0: deferred %v, to %s, steps %v, interim %+v: want an interim move that disrupts nothing", m0.Deferred, m0.To, keys(m0.Steps), m0.Interim)
	}
	if got := keys(m0.Steps); !slices.Equal(got, []string{"write /etc/pki/cert.pem"}) {
		t.Errorf("m-0's steps %v: want the certificate's write alone", got)
	}
	if got := keys(m0.Interim.Waiting); !slices.Contains(got, "kargs") || !slices.Contains(got, "write /etc/b") || !slices.Contains(got, "reboot") {
		t.Errorf("m-0's waiting steps %v", got)
	}
	im := p.Rendered[m0.To]
	if im == nil || content.Check(im) != nil || len(im.KernelArgs) != 0 || string(im.File("/etc/b").Contents) != "old" ||
		string(im.File("/etc/pki/cert.pem").Contents) != "new" {
		t.Fatalf("interim config in the plan: %+v", im)
	}
	if m1 := n["m-1"]; m1.Interim != nil || !m1.Deferred || m1.To != to.Name {
		t.Errorf("m-1 (its kernel argument alone) deferred %v, to %s, interim %+v", m1.Deferred, m1.To, m1.Interim)
	}
	if !pp.Paused || !slices.Equal(pp.Pause.Interim, []string{"m-0"}) || !slices.Equal(pp.Pause.Passing, []string{"m-0"}) ||
		!slices.Equal(pp.Pause.Waiting, []string{"m-0", "m-1"}) || !pp.Pause.Disruptive || !slices.Contains(pp.Pause.Steps, "kargs") {
		t.Errorf("pool paused %v, pause %+v", pp.Paused, pp.Pause)
	}
	v := Admit(Gates, &Facts{Node: "m-0", Pool: &pp, Disruptive: m0.Disruptive(), Observed: in.Fleet.Nodes})
	if v.Kind == Defer {
		t.Errorf("apply's gates hold m-0: %+v", v)
	}

	// m-0 on the interim: still paused, the rest waits whole; unpaused, it is the rest.
	in, _ = interimFleet(model.PauseDisruptive)
	in.Fleet.Nodes[0].CurrentConfig, in.Known[im.Name] = im.Name, im
	if p, err = MakePlan(in); err != nil {
		t.Fatal(err)
	}
	if m0 := nodesByName(p)["m-0"]; !m0.Deferred || m0.Interim != nil || m0.To != to.Name {
		t.Errorf("on the interim, still paused: m-0 deferred %v, to %s, interim %+v", m0.Deferred, m0.To, m0.Interim)
	}
	in.Desired.Pools[0].Paused = model.PauseOff
	if p, err = MakePlan(in); err != nil {
		t.Fatal(err)
	}
	m0 = nodesByName(p)["m-0"]
	if got := keys(m0.Steps); m0.Deferred || m0.To != to.Name || slices.Contains(got, "write /etc/pki/cert.pem") ||
		!slices.Contains(got, "kargs") || !slices.Contains(got, "reboot") {
		t.Errorf("unpaused: m-0 deferred %v, to %s, steps %v", m0.Deferred, m0.To, got)
	}
}

// A node whose interim move would still drain (drift of the file to drain for, restored
// on the way), or whose update is under way, waits whole: no interim.
func TestPausedDisruptiveInterimWaitsWhole(t *testing.T) {
	for name, set := range map[string]func(n *model.Node){
		"drift":   func(n *model.Node) { n.Drift = []model.Drift{{Path: "/etc/b", Kind: model.DriftContent}} },
		"working": func(n *model.Node) { n.State = model.StateWorking },
	} {
		in, to := interimFleet(model.PauseDisruptive)
		set(&in.Fleet.Nodes[0])
		p, err := MakePlan(in)
		if err != nil {
			t.Fatal(err)
		}
		if m0 := nodesByName(p)["m-0"]; m0.Interim != nil || !m0.Deferred || m0.To != to.Name || len(p.Rendered) != 1 {
			t.Errorf("%s: m-0 deferred %v, to %s, interim %+v, rendered %d: want it waiting whole", name, m0.Deferred, m0.To, m0.Interim, len(p.Rendered))
		}
	}
}
