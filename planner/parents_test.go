package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// TestPathUnderAFileIsRefused: a pool whose configs, merged, put an item under a file —
// in one config or across two, a file, directory or link below a file or a hard link, a
// unit below a file at /etc/systemd — is refused at the item below, naming the file and
// its place: every node's write of it would fail ("not a directory"). An item under a
// directory passes.
func TestPathUnderAFileIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		configs []model.Config
		line    int      // where the refusal is; 0: none
		want    []string // in its detail
	}{
		{"file under a file", []model.Config{{Files: []model.File{recFile("/etc/d/f", 3), recFile("/etc/d", 4)}}},
			3, []string{"File /etc/d/f is under /etc/d, which file /etc/d (main.hcl:4,3) makes a file"}},
		{"across configs", []model.Config{{Files: []model.File{recFile("/etc/d", 2)}},
			{Directories: []model.Directory{{Path: "/etc/d/e/f", Mode: 0o755, DeclRange: line(7)}}}},
			7, []string{"Directory /etc/d/e/f is under /etc/d, which file /etc/d (main.hcl:2,3)"}},
		{"link under a hard link", []model.Config{{Files: []model.File{recFile("/etc/a", 2)},
			Links: []model.Link{{Path: "/etc/h", Target: "/etc/a", Hard: true, DeclRange: line(3)}, recLink("/etc/h/x", "y", 4)}}},
			4, []string{"Link /etc/h/x is under /etc/h, which link /etc/h (main.hcl:3,3) makes a file"}},
		{"unit under a file", []model.Config{{Files: []model.File{recFile("/etc/systemd", 2)},
			Units: []model.Unit{{Name: "a.service", Contents: "[Service]\n", DeclRange: line(5)}}}},
			5, []string{"Unit /etc/systemd/system/a.service is under /etc/systemd, which file /etc/systemd (main.hcl:2,3)"}},
		{"under directories", []model.Config{{Directories: []model.Directory{{Path: "/etc/d", Mode: 0o755, DeclRange: line(2)}},
			Files: []model.File{recFile("/etc/d/f", 3), recFile("/etc/df", 4)}}},
			0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &model.Desired{Pools: []model.Pool{{Name: "worker"}}}
			for i, c := range tt.configs {
				c.Name, c.Pools = fmt.Sprintf("%02d", i), []string{"worker"}
				d.Configs = append(d.Configs, c)
			}
			out, diags := Render(d, ignition.Renderer{})
			if tt.line == 0 {
				if diags.HasErrors() || len(out) != 1 {
					t.Fatalf("refused: %v", diags)
				}
				return
			}
			var found []*model.Diagnostic
			for _, dg := range diags {
				if dg.Subject != nil && dg.Subject.Start.Line == tt.line && dg.Summary == "Path under a file" {
					found = append(found, dg)
				}
			}
			if len(found) != 1 || len(out) != 0 {
				t.Fatalf("%d refusals at line %d (want 1), %d pools rendered: %v", len(found), tt.line, len(out), diags)
			}
			for _, w := range tt.want {
				if !strings.Contains(found[0].Detail, w) {
					t.Errorf("detail %q\nlacks %q", found[0].Detail, w)
				}
			}
		})
	}
}
