// Package benchfleet generates the benchmarks' fleets: a local fleet of nodes in pools and a
// configuration whose configs change every node, for scripts/benchplan and
// scripts/benchapply.
package benchfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpfleet/mcp/providers/local"
)

// Spec sizes a generated fleet.
type Spec struct {
	Nodes, Pools, Configs int
}

// Generate writes into dir the configuration (main.hcl) and the fleet (dir/fleet): pools
// p00…, each selecting its nodes by the role label, max_unavailable 10%, zones a, b and c;
// configs spread round-robin over the pools, each 3 files of 20 lines restarting a unit,
// and the unit.
func Generate(dir string, s Spec) error {
	var sizes []local.PoolSize
	for p := 0; p < s.Pools; p++ {
		n := s.Nodes / s.Pools
		if p < s.Nodes%s.Pools {
			n++
		}
		sizes = append(sizes, local.PoolSize{Name: fmt.Sprintf("p%02d", p), Count: n})
	}
	if err := local.Init(filepath.Join(dir, "fleet"), local.InitSpec{Pools: sizes, Zones: []string{"a", "b", "c"}}); err != nil {
		return err
	}
	var h strings.Builder
	h.WriteString("provider \"local\" { fleet = \"./fleet\" }\n\n")
	for p := 0; p < s.Pools; p++ {
		fmt.Fprintf(&h, "pool \"p%02d\" {\n  max_unavailable = \"10%%\"\n}\n\n", p)
	}
	for c := 0; c < s.Configs; c++ {
		fmt.Fprintf(&h, "config \"%03d-bench\" {\n  pools = [\"p%02d\"]\n", c, c%s.Pools)
		for f := 0; f < 3; f++ {
			fmt.Fprintf(&h, "  file \"/etc/bench/%03d/%d.conf\" {\n    content   = \"%s\"\n    on_change = [\"restart:bench-%03d.service\"]\n  }\n",
				c, f, strings.Repeat(fmt.Sprintf("setting-%d-%d = value\\n", c, f), 20), c)
		}
		fmt.Fprintf(&h, "  unit \"bench-%03d.service\" {\n    enabled  = true\n    contents = \"[Service]\\nExecStart=/bin/true\\n[Install]\\nWantedBy=multi-user.target\\n\"\n  }\n}\n\n", c)
	}
	return os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(h.String()), 0o644)
}
