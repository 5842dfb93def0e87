package bootsrv

import (
	"bytes"
	"strings"
	"testing"
)

// TestPoolConfigIsWhatIsServed: Snapshot.PoolConfig gives the bytes /config/<pool> answers
// for the same Accept header, and says why when there are none.
func TestPoolConfigIsWhatIsServed(t *testing.T) {
	r := rendered(t, "infra", "x\n", "nosmt")
	s := serverWith(t, r)
	snap := s.Current()
	for _, accept := range []string{IgnitionAccept, "application/vnd.coreos.ignition+json;version=3.4.0", ""} {
		got, err := snap.PoolConfig("infra", accept)
		rec := get(t, s, "GET", "/config/infra", "Accept", accept)
		if err != nil || !bytes.Equal(got, rec.Body.Bytes()) {
			t.Errorf("Accept %q: %v\n%s\nserved\n%s", accept, err, got, rec.Body)
		}
	}
	if _, err := snap.PoolConfig("infra", "application/vnd.coreos.ignition+json;version=3.2.0"); err == nil ||
		!strings.Contains(err.Error(), "needs spec 3.3.0") {
		t.Errorf("a spec that cannot express it: %v", err)
	}
	if _, err := snap.PoolConfig("worker", IgnitionAccept); err == nil || !strings.Contains(err.Error(), "no pointer") {
		t.Errorf("an unknown pool: %v", err)
	}
	if IgnitionAccept != ign36 {
		t.Errorf("IgnitionAccept = %q, want what Ignition v2.27.0 sends, %q", IgnitionAccept, ign36)
	}
}
