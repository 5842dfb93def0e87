package config

import (
	"strings"
	"testing"
)

// TestPoolNamesAreLabels: a pool's name becomes part of file names in the state
// (mcp.state.d/rendered/rendered-<pool>-<hash>.json) and of its default node-role label, so
// it is a DNS-1123 label; a name that would leave the state's directory, or is no label, is
// an error at the block's label.
func TestPoolNamesAreLabels(t *testing.T) {
	for _, name := range []string{"x/../../../../evil", "..", "UPPER", "a_b", "-a", strings.Repeat("a", 64)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\n\npool \""+name+"\" {}\n")
			d := findDiag(loadWithin(t, dir, Options{Schemas: testSchemas}), "Invalid pool name")
			if d == nil || d.Subject == nil || d.Subject.Start.Line != 3 || d.Subject.Start.Column != 6 {
				t.Fatalf("pool %q: %v, want an error at main.hcl:3,6", name, d)
			}
		})
	}
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\npool \"worker-2\" {}\npool \"a\" {}\npool \""+strings.Repeat("a", 63)+"\" {}\n")
	if d := findDiag(loadWithin(t, dir, Options{Schemas: testSchemas}), "Invalid pool name"); d != nil {
		t.Errorf("valid names refused: %v", d)
	}
}
