package config

import (
	"strings"
	"testing"
)

// TestAgentsOwnPathsAreRefused: a file in the agent's own directory (/var/lib/mcp: its
// pending update, the config it runs, the first-boot record) would be overwritten by the
// agent's records — every apply "updated", the file never there. Refused at validate, at
// the path, with the reason, whether declared by a file block or by Butane.
func TestAgentsOwnPathsAreRefused(t *testing.T) {
	base := "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\n"
	for _, p := range []string{"/var/lib/mcp/pending.json", "/var/lib/mcp/current.json", "/var/lib/mcp/firstboot.json", "/var/lib/mcp", "/var/lib/mcp/x/y"} {
		t.Run(p, func(t *testing.T) {
			d := diagAt(t, base, "config \"x\" {\n  pools = [\"worker\"]\n  file \""+p+"\" { content = \"x\" }\n}\n", "Path of mcp's own records", 3, 8)
			if !strings.Contains(d.Detail, p) || !strings.Contains(d.Detail, "agent") {
				t.Errorf("the reason does not name the path and the agent: %s", d.Detail)
			}
		})
	}
	t.Run("butane", func(t *testing.T) {
		src := "config \"x\" {\n  pools = [\"worker\"]\n  butane = <<EOT\nvariant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /var/lib/mcp/pending.json\n      contents:\n        inline: x\nEOT\n}\n"
		d := diagAt(t, base, src, "Path of mcp's own records", 3, 3)
		if !strings.Contains(d.Detail, "/var/lib/mcp/pending.json") {
			t.Errorf("the reason does not name the path: %s", d.Detail)
		}
	})
	t.Run("neighbours", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "main.hcl", base+"config \"x\" {\n  pools = [\"worker\"]\n  file \"/var/lib/mcpx/a\" { content = \"x\" }\n  file \"/var/lib/other\" { content = \"x\" }\n}\n")
		if _, diags := Load(dir, Options{Schemas: testSchemas}); diags.HasErrors() {
			t.Errorf("paths beside the agent's refused: %v", diags)
		}
	})
}
