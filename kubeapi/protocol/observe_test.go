package protocol

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// TestObserveRunRoundTrip: a request reads back as written; one the engine would not write
// (a name that is no rendered config's, a bad id) is refused, its id kept when sound.
func TestObserveRunRoundTrip(t *testing.T) {
	r := ObserveRun{Target: "rendered-worker-abc", RequestID: "ID1"}
	ann, err := r.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadObserveRun(ann)
	if !ok || err != nil || got != r {
		t.Errorf("ReadObserveRun = %+v, %v, %v", got, ok, err)
	}
	for _, bad := range []string{`{"target":"../etc/passwd","request_id":"ID2"}`, `{"target":"worker","request_id":"ID2"}`} {
		got, ok, err := ReadObserveRun(map[string]string{ObserveRequest: bad})
		if !ok || err == nil || got.RequestID != "ID2" {
			t.Errorf("%s: %+v, %v, %v; want refused with its id kept", bad, got, ok, err)
		}
	}
	if got, _, err := ReadObserveRun(map[string]string{ObserveRequest: `{"target":"rendered-x","request_id":"a b"}`}); err == nil || got.RequestID != "" {
		t.Errorf("a bad id: %+v, %v", got, err)
	}
	if _, err := (ObserveRun{Target: "x", RequestID: "ID"}).Annotations(); err == nil {
		t.Error("the engine wrote a request naming no rendered config")
	}
}

// TestObserveReportBounded: an answer lists at most MaxObservedDrift entries and fits its
// byte bound, the rest counted as unlisted; what the agent listed reads back.
func TestObserveReportBounded(t *testing.T) {
	var d []model.Drift
	for i := range 150 {
		d = append(d, model.Drift{Path: fmt.Sprintf("/etc/f%03d", i), Kind: model.DriftContent, Diff: "not carried"})
	}
	ann, err := ObserveReport{RequestID: "ID", Target: "rendered-x", Drift: d, Unlisted: 7}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	r, ok := ReadObserveReport(ann)
	if !ok || len(r.Drift) != MaxObservedDrift || r.Unlisted != 150-MaxObservedDrift+7 || r.Drift[0].Diff != "" {
		t.Fatalf("read back %v: %d listed, %d unlisted, diff %q", ok, len(r.Drift), r.Unlisted, r.Drift[0].Diff)
	}
	long := strings.Repeat("x", 4000)
	d = d[:0]
	for i := range 60 {
		d = append(d, model.Drift{Path: fmt.Sprintf("/etc/%s%03d", long, i), Kind: model.DriftMissing})
	}
	ann, _ = ObserveReport{RequestID: "ID", Target: "rendered-x", Drift: d}.Annotations()
	r, ok = ReadObserveReport(ann)
	if !ok || len(ann[Observed]) > maxObservedBytes || len(r.Drift)+r.Unlisted != 60 || len(r.Drift) == 0 {
		t.Errorf("long paths: %d bytes, %d listed, %d unlisted", len(ann[Observed]), len(r.Drift), r.Unlisted)
	}
}
