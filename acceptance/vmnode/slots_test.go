package vmnode

import (
	"testing"
	"time"
)

// TestSlotsAreMachineWide: the slots are flocks on files, which bind every open of them —
// another process's as much as this one's —, so a VM past MaxVMs waits until one is
// released, whichever test process holds them.
func TestSlotsAreMachineWide(t *testing.T) {
	slotDir = t.TempDir()
	var held []func()
	for range MaxVMs {
		release, err := acquireSlot(t.Logf, "held")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	got := make(chan func())
	go func() {
		release, err := acquireSlot(t.Logf, "next")
		if err != nil {
			t.Error(err)
		}
		got <- release
	}()
	select {
	case <-got:
		t.Fatalf("a VM got a slot while all %d were held", MaxVMs)
	case <-time.After(2 * time.Second):
	}
	held[0]()
	select {
	case release := <-got:
		release()
	case <-time.After(5 * time.Second):
		t.Fatal("a released slot was not taken")
	}
	for _, release := range held[1:] {
		release()
	}
}
