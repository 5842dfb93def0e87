package bootsrv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// BenchmarkBuildSnapshot prepares a snapshot of 20 pools, each with its rendered config
// of 10 files of 2 KiB and kernel arguments (so it is served in specs 3.3–3.6 and refused
// with reasons in 3.0–3.2).
func BenchmarkBuildSnapshot(b *testing.B) {
	ptr, byName := map[string]string{}, map[string]*model.Rendered{}
	for p := range 20 {
		pool := fmt.Sprintf("p%02d", p)
		d := &model.Desired{Pools: []model.Pool{{Name: pool, KernelArgs: []string{"nosmt"}}}}
		c := model.Config{Name: "10-bench", Pools: []string{pool}}
		for f := range 10 {
			c.Files = append(c.Files, model.File{
				Entry:    model.Entry{Path: fmt.Sprintf("/etc/bench/%d.conf", f)},
				Mode:     0o644,
				Contents: []byte(strings.Repeat(fmt.Sprintf("setting-%d-%d = value\n", p, f), 100)),
			})
		}
		d.Configs = []model.Config{c}
		out, diags := planner.Render(d, ignition.Renderer{})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		r := out[pool]
		ptr[pool], byName[r.Name] = r.Name, r
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(1, ptr, byName); err != nil {
			b.Fatal(err)
		}
	}
}
