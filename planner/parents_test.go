package planner

import (
	"testing"

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
			{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d/e/f", DeclRange: line(7)}, Mode: 0o755}}}},
			7, []string{"Directory /etc/d/e/f is under /etc/d, which file /etc/d (main.hcl:2,3)"}},
		{"link under a hard link", []model.Config{{Files: []model.File{recFile("/etc/a", 2)},
			Links: []model.Link{{Entry: model.Entry{Path: "/etc/h", DeclRange: line(3)}, Target: "/etc/a", Hard: true}, recLink("/etc/h/x", "y", 4)}}},
			4, []string{"Link /etc/h/x is under /etc/h, which link /etc/h (main.hcl:3,3) makes a file"}},
		{"unit under a file", []model.Config{{Files: []model.File{recFile("/etc/systemd", 2)},
			Units: []model.Unit{{Name: "a.service", Contents: "[Service]\n", DeclRange: line(5)}}}},
			5, []string{"Unit /etc/systemd/system/a.service is under /etc/systemd, which file /etc/systemd (main.hcl:2,3)"}},
		{"under directories", []model.Config{{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", DeclRange: line(2)}, Mode: 0o755}},
			Files: []model.File{recFile("/etc/d/f", 3), recFile("/etc/df", 4)}}},
			0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRefusal(t, []string{"worker"}, tt.configs, tt.line, "Path under a file", tt.want)
		})
	}
}
