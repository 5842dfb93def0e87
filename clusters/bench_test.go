package clusters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// benchParts are the parts the benchmark's configuration names: local fleets, local state.
var benchParts = engine.Parts{Providers: []providers.Spec{local.Spec}, Backends: []state.BackendSpec{localstate.Spec}}

// benchFleet writes a configuration of n clusters of nodes local nodes each, in three
// stages, with 10 configs of 3 files; one cluster in 10 sets its own NTP server, so that
// its rendered config differs from the others', which are all alike.
// MCP_BENCH_FLEET names a directory to keep it in and take it from again (creating
// 10,000 local nodes takes minutes on a shared machine).
func benchFleet(b *testing.B, n, nodes int) string {
	dir := b.TempDir()
	if keep := os.Getenv("MCP_BENCH_FLEET"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("%dx%d", n, nodes))
		if _, err := os.Stat(filepath.Join(dir, "clusters.hcl")); err == nil {
			return dir
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	var main strings.Builder
	main.WriteString("variable \"ntp_server\" { default = \"time.example.com\" }\n" +
		"pool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker\" = \"\" }\n  max_unavailable = \"10%\"\n}\n")
	for i := range 10 {
		fmt.Fprintf(&main, "config \"%02d-c\" {\n  pools = [\"worker\"]\n", i)
		for j := range 3 {
			fmt.Fprintf(&main, "  file \"/etc/c%d/f%d.conf\" {\n    content = \"server ${var.ntp_server} %d %d\\n\"\n    on_change = [\"none\"]\n  }\n", i, j, i, j)
		}
		main.WriteString("}\n")
	}
	var cl strings.Builder
	cl.WriteString("stage \"canary\" {}\nstage \"staging\" { after = [\"canary\"] }\nstage \"prod\" { after = [\"staging\"] }\n")
	for i := range n {
		stage := []string{"canary", "staging", "prod", "prod", "prod"}[i%5]
		vars := ""
		if i%10 == 0 {
			vars = fmt.Sprintf("  variables = { ntp_server = \"ntp%d.example.com\" }\n", i)
		}
		fmt.Fprintf(&cl, "cluster \"c%02d\" {\n  stage = %q\n%s  provider \"local\" { fleet = \"./c%02d/fleet\" }\n  state { path = \"./c%02d/mcp.state\" }\n}\n",
			i, stage, vars, i, i)
		if err := local.Init(filepath.Join(dir, fmt.Sprintf("c%02d", i), "fleet"), local.InitSpec{Pools: []local.PoolSize{{Name: "worker", Count: nodes}}}); err != nil {
			b.Fatal(err)
		}
	}
	for name, text := range map[string]string{"main.hcl": main.String(), "clusters.hcl": cl.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkPlanFleet is mcp plan's work across 50 clusters of 200 local nodes each:
// loading and rendering the configuration per cluster, then refreshing and planning every
// cluster under its state lock, four at a time (docs/benchmarks.md, "Plan across
// clusters"). Its peak RSS is the process's high-water mark.
func BenchmarkPlanFleet(b *testing.B) {
	dir := benchFleet(b, 50, 200)
	opts := config.Options{Schemas: benchParts.Schemas()}
	b.ResetTimer()
	for range b.N {
		res, diags := config.Load(dir, opts)
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		ms := LoadAll(dir, res, res.Clusters, opts, benchParts)
		for _, p := range PlanAll(context.Background(), ms, PlanOptions{Limit: 4, Lock: true}) {
			if p.Err != nil || len(p.Plan.File.Rollout.Nodes) != 200 {
				b.Fatalf("cluster %s: %v", p.Cluster.Name, p.Err)
			}
		}
	}
	b.StopTimer()
	if hwm := peakRSS(); hwm > 0 {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
}

// peakRSS is this process's high-water resident set (VmHWM), in bytes; 0 when unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb)
			return kb << 10
		}
	}
	return 0
}

// Clusters whose values render alike share their rendered configs (rendered once); a
// cluster with its own value reaching a file has its own.
func TestLoadAllRendersAlikeOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.hcl", "variable \"ntp\" { default = \"a\" }\npool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker\" = \"\" }\n}\n"+
		"config \"c\" {\n  pools = [\"worker\"]\n  file \"/etc/chrony.conf\" { content = \"server ${var.ntp}\\n\" }\n}\n")
	var cl strings.Builder
	cl.WriteString("stage \"s\" {}\n")
	for i, vars := range []string{"", "", "variables = { ntp = \"b\" }"} {
		fmt.Fprintf(&cl, "cluster \"c%d\" {\n  stage = \"s\"\n  %s\n  provider \"local\" { fleet = \"./c%d\" }\n  state { path = \"./c%d.state\" }\n}\n", i, vars, i, i)
		if err := local.Init(filepath.Join(dir, fmt.Sprintf("c%d", i)), local.InitSpec{Pools: []local.PoolSize{{Name: "worker", Count: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	write("clusters.hcl", cl.String())
	opts := config.Options{Schemas: benchParts.Schemas()}
	res, diags := config.Load(dir, opts)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ms := LoadAll(dir, res, res.Clusters, opts, benchParts)
	w := func(i int) any { return ms[i].Workspace.Rendered["worker"] }
	if w(0) != w(1) || w(0) == w(2) || ms[0].Workspace.Rendered["worker"].Name == ms[2].Workspace.Rendered["worker"].Name {
		t.Errorf("c0 and c1 should share one rendered config, c2 have its own: %v %v %v", w(0), w(1), w(2))
	}
}
