package config

import (
	"testing"
)

// TestIgnitionVersion: the mcp block takes the specs render writes (the ignition room's table) and
// refuses others, naming those it takes.
func TestIgnitionVersion(t *testing.T) {
	for v, ok := range map[string]bool{"3.4.0": true, "3.5.0": true, "3.6.0": true, "3.3.0": false, "3.7.0": false, "3.4": false} {
		dir := t.TempDir()
		write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\nmcp { ignition_version = \""+v+"\" }\n")
		d, diags := Load(dir, Options{Schemas: testSchemas})
		if got := findDiag(diags, "Unsupported Ignition version"); (got == nil) != ok {
			t.Errorf("%s: %v", v, diags)
		} else if got != nil && got.Detail != `ignition_version "`+v+`": mcp renders 3.4.0, 3.5.0 or 3.6.0.` {
			t.Errorf("%s: %q", v, got.Detail)
		}
		if ok && (d == nil || d.Desired.IgnitionVersion != v) {
			t.Errorf("%s: loaded %+v", v, d)
		}
	}
}
