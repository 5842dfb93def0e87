package state

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/planner/model"
)

// renderedFixture renders real configs, with bytes the JSON encoder escapes or that are
// not text, so that the stored form differs from the rendered one where it can.
func renderedFixture(t testing.TB) map[string]*model.Rendered {
	t.Helper()
	yes := true
	out, diags := planner.Render(&model.Desired{
		Pools: []model.Pool{{Name: "worker", KernelArgs: []string{"a=<b>&c"}, OSImage: "img:pool"}},
		Configs: []model.Config{{Name: "10-a", Pools: []string{"worker"},
			Files: []model.File{
				{Path: "/etc/x", Mode: 0o644, Contents: []byte("<html> & \u2028 ünïcode\n")},
				{Path: "/etc/bin", Mode: 0o600, Contents: []byte{0xff, 0, 1, '<'}},
			},
			Units: []model.Unit{{Name: "u.service", Contents: "[Service]\nExecStart=/bin/true <&>\n", Enabled: &yes}}}},
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	byName := map[string]*model.Rendered{}
	for _, r := range out {
		byName[r.Name] = r
	}
	return byName
}

// TestLocalRenderedRoundTripKeepsName: a rendered config stored and read back still hashes
// to its name (the Ignition RawMessage survives the indenting encoder and the decoder).
func TestLocalRenderedRoundTripKeepsName(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	s := New()
	s.Rendered = renderedFixture(t)
	for n, r := range s.Rendered {
		if err := r.CheckName(); err != nil {
			t.Fatalf("freshly rendered %s: %v", n, err)
		}
	}
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rendered) != len(s.Rendered) {
		t.Fatalf("read %d rendered configs, stored %d", len(got.Rendered), len(s.Rendered))
	}
	for n, r := range got.Rendered {
		if err := r.CheckName(); err != nil {
			t.Errorf("stored and read back %s: %v", n, err)
		}
	}
}
