package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// line is a place in main.hcl, line n.
func line(n int) model.Range {
	return model.Range{Filename: "main.hcl", Start: model.Pos{Line: n, Column: 3}}
}

func recFile(p string, n int) model.File {
	return model.File{Entry: model.Entry{Path: p, DeclRange: line(n)}, Mode: 0o644, Contents: []byte("rendered-infra-0")}
}

func recLink(p, target string, n int) model.Link {
	return model.Link{Entry: model.Entry{Path: p, DeclRange: line(n)}, Target: target}
}

// TestLinksToTheAgentsRecordsAreRefused: a pool whose configs, merged, reach the node
// agent's records (/var/lib/mcp) through their links — a link on the way to them (the
// records move where a config writes a forged "desired"), a file, directory or link whose
// path leads there through links (chains, relative targets, "..", CoreOS's own /opt, a
// link in one config and the file in another), a link pointing there — is refused at the
// item, the diagnostic naming the other item and its place. Links that lead elsewhere pass.
func TestLinksToTheAgentsRecordsAreRefused(t *testing.T) {
	tests := []struct {
		name    string
		configs []model.Config
		line    int      // where the refusal is
		want    []string // in its detail
	}{
		{"link on the way, forged desired", []model.Config{{Files: []model.File{recFile("/etc/fakelib/mcp/desired", 3)},
			Links: []model.Link{recLink("/var/lib", "../etc/fakelib", 2)}}},
			2, []string{"Link /var/lib → ../etc/fakelib is on the way to /var/lib/mcp", "/etc/fakelib/mcp instead",
				"file /etc/fakelib/mcp/desired (main.hcl:3,3) would be read as its record /var/lib/mcp/desired"}},
		{"a directory at /var/lib", []model.Config{{Links: []model.Link{recLink("/var/lib/x", "/tmp", 4)},
			Directories: []model.Directory{{Entry: model.Entry{Path: "/var/lib", DeclRange: line(6)}, Mode: 0o755}}}},
			0, nil},
		{"alias in one config, file in another", []model.Config{{Links: []model.Link{recLink("/etc/v", "../var", 2)}},
			{Files: []model.File{recFile("/etc/v/lib/mcp/pending.json", 9)}}},
			9, []string{"File /etc/v/lib/mcp/pending.json lands at /var/lib/mcp/pending.json through the link /etc/v → ../var (main.hcl:2,3)"}},
		{"chain with ..", []model.Config{{Links: []model.Link{recLink("/etc/a", "b/../c", 2), recLink("/etc/c", "../var/lib/x/..", 3)},
			Files: []model.File{recFile("/etc/a/mcp/current.json", 4)}}},
			4, []string{"lands at /var/lib/mcp/current.json", "the links /etc/a → b/../c (main.hcl:2,3), then /etc/c → ../var/lib/x/.. (main.hcl:3,3)"}},
		{"through CoreOS's /opt", []model.Config{{Links: []model.Link{recLink("/var/opt", "lib/mcp", 2)}, Files: []model.File{recFile("/opt/pending.json", 3)}}},
			2, []string{"Link /var/opt points to /var/lib/mcp"}},
		{"link made through another link", []model.Config{{Links: []model.Link{recLink("/etc/v", "../var", 2), recLink("/etc/v/lib", "../etc/fake", 3)}}},
			3, []string{"Link /etc/v/lib → ../etc/fake is on the way to /var/lib/mcp", "/etc/fake/mcp instead"}},
		{"directory through a link", []model.Config{{Links: []model.Link{recLink("/var/x", "./lib/", 2)},
			Directories: []model.Directory{{Entry: model.Entry{Path: "/var/x/mcp/d", DeclRange: line(3)}, Mode: 0o755}}}},
			3, []string{"Directory /var/x/mcp/d lands at /var/lib/mcp/d through the link /var/x → ./lib/ (main.hcl:2,3)"}},
		{"file in place of /var/lib", []model.Config{{Links: []model.Link{recLink("/etc/v", "../var", 2)}, Files: []model.File{recFile("/etc/v/lib", 3)}}},
			3, []string{"File /etc/v/lib lands at /var/lib through", "which holds /var/lib/mcp", "may not replace it"}},
		{"hard link to a record", []model.Config{{Links: []model.Link{recLink("/etc/v", "../var", 2),
			{Entry: model.Entry{Path: "/etc/pending", DeclRange: line(3)}, Target: "/etc/v/lib/mcp/pending.json", Hard: true}}}},
			3, []string{"Link /etc/pending points to /var/lib/mcp/pending.json through the link /etc/v → ../var"}},
		{"loop on the way", []model.Config{{Links: []model.Link{recLink("/var/lib", "lib", 2)}}},
			2, []string{"Link /var/lib → lib is on the way to /var/lib/mcp", "could not reach them (too many levels of symbolic links)"}},
		{"links elsewhere", []model.Config{{Links: []model.Link{recLink("/etc/v", "../var", 2), recLink("/var/lib/mcpx", "mcp-other", 3),
			recLink("/etc/to-lib", "/var/lib", 4), recLink("/var/opt/x", "../lib/mcpx", 5)},
			Files: []model.File{recFile("/var/lib/other/x", 6), recFile("/opt/mcp/z", 7)}}},
			0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRefusal(t, []string{"worker", "infra"}, tt.configs, tt.line, "mcp's own records", tt.want)
		})
	}
}

// checkRefusal renders configs (named 00, 01…) for pools and checks the refusal: none when
// line is 0 (every pool rendered); else exactly one diagnostic whose summary holds summary
// at that line, once for all the pools, its detail holding each of want, and no pool
// rendered.
func checkRefusal(t *testing.T, pools []string, configs []model.Config, line int, summary string, want []string) {
	t.Helper()
	d := &model.Desired{}
	for _, p := range pools {
		d.Pools = append(d.Pools, model.Pool{Name: p})
	}
	for i, c := range configs {
		c.Name, c.Pools = fmt.Sprintf("%02d", i), pools
		d.Configs = append(d.Configs, c)
	}
	out, diags := Render(d, ignition.Renderer{})
	if line == 0 {
		if diags.HasErrors() || len(out) != len(pools) {
			t.Fatalf("refused: %v", diags)
		}
		return
	}
	var found []*model.Diagnostic
	for _, dg := range diags {
		if dg.Subject != nil && dg.Subject.Start.Line == line && strings.Contains(dg.Summary, summary) {
			found = append(found, dg)
		}
	}
	if len(found) != 1 || len(out) != 0 {
		t.Fatalf("%d refusals at line %d (want 1, once for all pools), %d pools rendered: %v", len(found), line, len(out), diags)
	}
	for _, w := range want {
		if !strings.Contains(found[0].Detail, w) {
			t.Errorf("detail %q\nlacks %q", found[0].Detail, w)
		}
	}
}
