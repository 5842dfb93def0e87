package acceptance

import "testing"

// TestBenchReplacerPlacesLeastAllocated: the pod replacer binds to the schedulable node with
// the fewest live pods, taking equal nodes in turn, and never to a cordoned one.
func TestBenchReplacerPlacesLeastAllocated(t *testing.T) {
	rp := &podReplacer{nodes: []string{"a", "b", "c", "d"}, perNode: map[string]int{"a": 3, "b": 1, "c": 0, "d": 1},
		cordoned: map[string]bool{"c": true}}
	var got []string
	for range 3 {
		got = append(got, rp.placeLocked())
	}
	if got[0] != "b" || got[1] != "d" || got[2] != "b" {
		t.Errorf("placed on %v, want b, d, b (c is cordoned, a the fullest)", got)
	}
	rp.cordoned = map[string]bool{"a": true, "b": true, "c": true, "d": true}
	if n := rp.placeLocked(); n == "" {
		t.Error("no node when every node is cordoned")
	}
}
