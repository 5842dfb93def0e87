package clusters

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// Four clusters in two regions, concurrency 4, one disrupting cluster per region: two
// waves, each with one cluster of each region, the others held by their region; a
// cluster changing nodes in place only is never held, and one without the label is in
// no domain.
func TestWaves(t *testing.T) {
	b := Budget{{Label: "region", MaxDisrupting: 1}}
	eu, us := map[string]string{"region": "eu"}, map[string]string{"region": "us"}
	got := b.Waves(4, []WaveMember{
		{"eu-a", eu, true}, {"eu-b", eu, true}, {"eu-c", eu, false}, {"us-a", us, true}, {"us-b", us, true}, {"x", nil, true},
	})
	want := []model.Wave{
		{Clusters: []string{"eu-a", "eu-c", "us-a", "x"}, Held: map[string]string{"eu-b": "region=eu", "us-b": "region=us"}},
		{Clusters: []string{"eu-b", "us-b"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("waves (-want +got):\n%s", d)
	}
	if got := b.Waves(1, []WaveMember{{"a", eu, true}, {"b", us, true}}); len(got) != 2 || got[0].Held != nil {
		t.Errorf("concurrency 1: %+v", got)
	}
}
