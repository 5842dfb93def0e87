package model

import "testing"

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
	if prev != StepUncordon {
		t.Errorf("the last valid kind is %s, want uncordon", prev)
	}
	if k := StepUncordon + 1; k.Valid() || k.String() != "StepKind(12)" {
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
