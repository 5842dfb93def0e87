package localstate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/state"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
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
				{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: []byte("<html> & \u2028 ünïcode\n")},
				{Entry: model.Entry{Path: "/etc/bin"}, Mode: 0o600, Contents: []byte{0xff, 0, 1, '<'}},
			},
			Units: []model.Unit{{Name: "u.service", Contents: "[Service]\nExecStart=/bin/true <&>\n", Enabled: &yes}}}},
	}, ignition.Renderer{})
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
	s := state.New()
	s.Rendered = renderedFixture(t)
	for n, r := range s.Rendered {
		if err := content.Check(r); err != nil {
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
		if err := content.Check(r); err != nil {
			t.Errorf("stored and read back %s: %v", n, err)
		}
	}
}

// TestLocalReadsConfigsStoredWithIgnition: rendered configs an older mcp stored with their
// Ignition config beside their content read, under their names, in the content-once form.
func TestLocalReadsConfigsStoredWithIgnition(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	s := state.New()
	s.Rendered = renderedFixture(t)
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	for n, r := range s.Rendered {
		old, err := json.MarshalIndent(content.FullOf(r), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b.RenderedPath(n), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range got.Rendered {
		want, _ := json.Marshal(s.Rendered[n])
		if b, _ := json.Marshal(r); string(b) != string(want) {
			t.Errorf("%s read as %s, stored %s", n, b, want)
		}
	}
}

// TestLocalRefusesChangedRenderedConfig: a stored rendered config whose bytes no longer give
// its name, or whose file name is another config's, is refused, naming the file.
func TestLocalRefusesChangedRenderedConfig(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		change func(t *testing.T, b *Local, name string)
		want   string
	}{
		{"content edited", func(t *testing.T, b *Local, name string) {
			p := b.RenderedPath(name)
			raw, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(raw, []byte(`"img:pool"`), []byte(`"img:evil"`), 1), 0o644)
		}, "does not match its content"},
		{"file renamed", func(t *testing.T, b *Local, name string) {
			os.Rename(b.RenderedPath(name), b.RenderedPath("rendered-worker-0123"))
		}, "rendered-worker-0123"},
		{"emptied", func(t *testing.T, b *Local, name string) {
			os.WriteFile(b.RenderedPath(name), nil, 0o644)
		}, "rendered-worker-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
			s := state.New()
			s.Rendered = renderedFixture(t)
			if err := b.Write(ctx, s); err != nil {
				t.Fatal(err)
			}
			var name string
			for name = range s.Rendered {
			}
			c.change(t, b, name)
			_, err := b.Read(ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), b.renderedDir()) {
				t.Fatalf("read: %v, want an error naming the file and %q", err, c.want)
			}
		})
	}
}
