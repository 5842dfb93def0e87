package model

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Every named kind is valid, parses back from its name and orders as steps run; kinds
// past the enum are not valid and print as numbers.
func TestStepKindsRoundTrip(t *testing.T) {
	prev := StepKind(0)
	for k := StepCordon; k.Valid(); k++ {
		back, err := ParseStepKind(k.String())
		if err != nil || back != k || k <= prev {
			t.Errorf("%d: %q parses to %d (%v)", k, k, back, err)
		}
		prev = k
	}
	if prev != StepAdopt {
		t.Errorf("the last valid kind is %s, want adopt", prev)
	}
	if k := StepAdopt + 1; k.Valid() || k.String() != "StepKind(14)" {
		t.Errorf("past the enum: valid %v, %q", k.Valid(), k)
	}
	if StepKind(0).Valid() {
		t.Error("the zero kind is valid")
	}
}

// RebootedInto reads the node's own record: only a record for that config whose boot id
// is no longer the running one says the reboot happened.
func TestRebootedInto(t *testing.T) {
	n := &Node{BootID: "b2", PendingReboot: &PendingReboot{Config: "r-1", BootID: "b1"}}
	if before, now, ok := n.RebootedInto("r-1"); !ok || before != "b1" || now != "b2" {
		t.Errorf("rebooted: %q %q %v", before, now, ok)
	}
	for name, m := range map[string]*Node{
		"another config":  {BootID: "b2", PendingReboot: &PendingReboot{Config: "r-0", BootID: "b1"}},
		"same boot":       {BootID: "b1", PendingReboot: &PendingReboot{Config: "r-1", BootID: "b1"}},
		"no record":       {BootID: "b2"},
		"boot id unknown": {PendingReboot: &PendingReboot{Config: "r-1", BootID: "b1"}},
	} {
		if _, _, ok := m.RebootedInto("r-1"); ok {
			t.Errorf("%s: taken as rebooted", name)
		}
	}
}

// Each kind's name, where it runs and whether it takes the node's workloads away: the
// engine runs cordon, drain and uncordon, the node's executor the rest; a drain and a
// reboot disrupt.
func TestStepKinds(t *testing.T) {
	for _, c := range []struct {
		kind               StepKind
		name               string
		onNode, disruptive bool
	}{
		{StepCordon, "cordon", false, false},
		{StepDrain, "drain", false, true},
		{StepWrite, "write", true, false},
		{StepDaemonReload, "daemon-reload", true, false},
		{StepKargs, "kargs", true, false},
		{StepPivot, "pivot", true, false},
		{StepReload, "reload", true, false},
		{StepRestart, "restart", true, false},
		{StepReboot, "reboot", true, true},
		{StepVerify, "verify", true, false},
		{StepUncordon, "uncordon", false, false},
	} {
		if c.kind.String() != c.name || c.kind.OnNode() != c.onNode || c.kind.Disruptive() != c.disruptive || !c.kind.Valid() {
			t.Errorf("%d: %q on node %v disruptive %v valid %v; want %q %v %v", c.kind, c.kind, c.kind.OnNode(),
				c.kind.Disruptive(), c.kind.Valid(), c.name, c.onNode, c.disruptive)
		}
	}
	for _, s := range []string{"", "Cordon", "reboot ", "StepKind(3)", "explode"} {
		if k, err := ParseStepKind(s); err == nil {
			t.Errorf("ParseStepKind(%q) = %s", s, k)
		}
	}
}

// A step is JSON with its kind by name, and reads back the same; a kind without a name
// is refused where it is read.
func TestStepJSONRoundTrip(t *testing.T) {
	steps := []Step{{Kind: StepCordon, Reason: "node.w-0 changes"}, {Kind: StepWrite, Target: "/etc/a b", Reason: "file changed"},
		{Kind: StepReboot, Reason: "kargs", Evidence: "boot id A → B"}}
	b, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"cordon","reason":"node.w-0 changes"},{"kind":"write","target":"/etc/a b","reason":"file changed"},` +
		`{"kind":"reboot","reason":"kargs","evidence":"boot id A → B"}]`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
	var back []Step
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, steps) {
		t.Errorf("read back %v, %v", back, err)
	}
	for _, bad := range []string{`{"kind":"explode"}`, `{"kind":3}`, `{"kind":""}`} {
		var s Step
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s read as %v", bad, s)
		}
	}
	// A kind past the enum has no name to write.
	if b, err := json.Marshal(Step{Kind: StepAdopt + 1}); err != nil || !strings.Contains(string(b), `"StepKind(14)"`) {
		t.Errorf("an unknown kind marshals as %s, %v", b, err)
	}
}

func TestStepKeys(t *testing.T) {
	for _, c := range []struct {
		step Step
		key  string
	}{
		{Step{Kind: StepDrain, Reason: "not in the key"}, "drain"},
		{Step{Kind: StepRestart, Target: "chronyd.service"}, "restart chronyd.service"},
		{Step{Kind: StepWrite, Target: "/etc/with space"}, "write /etc/with space"},
	} {
		if got := c.step.Key(); got != c.key || c.step.String() != c.key {
			t.Errorf("%+v: key %q, want %q", c.step, got, c.key)
		}
		back, err := ParseStepKey(c.key)
		if err != nil || back.Kind != c.step.Kind || back.Target != c.step.Target {
			t.Errorf("ParseStepKey(%q) = %+v, %v", c.key, back, err)
		}
	}
}
