package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// benchDesired is the fleet configuration of `make bench-plan` (scripts/benchplan): pools
// pools and configs configs, each of three text files and an enabled unit, spread
// round-robin over the pools.
func benchDesired(pools, configs int) *model.Desired {
	d := &model.Desired{}
	for p := range pools {
		d.Pools = append(d.Pools, model.Pool{Name: fmt.Sprintf("p%02d", p), KernelArgs: []string{"nosmt"}})
	}
	yes := true
	for c := range configs {
		cfg := model.Config{Name: fmt.Sprintf("%03d-bench", c), Pools: []string{fmt.Sprintf("p%02d", c%pools)}}
		for f := range 3 {
			cfg.Files = append(cfg.Files, model.File{
				Entry:    model.Entry{Path: fmt.Sprintf("/etc/bench/%03d/%d.conf", c, f)},
				Mode:     0o644,
				Contents: []byte(strings.Repeat(fmt.Sprintf("setting-%d-%d = value\n", c, f), 20)),
			})
		}
		cfg.Units = []model.Unit{{Name: fmt.Sprintf("bench-%03d.service", c), Enabled: &yes,
			Contents: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}}
		d.Configs = append(d.Configs, cfg)
	}
	return d
}

// BenchmarkRender renders the 20 pools of `make bench-plan`'s fleet configuration.
func BenchmarkRender(b *testing.B) {
	d := benchDesired(20, 200)
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Render(d, ignition.Renderer{}); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}
