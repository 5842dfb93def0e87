package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// FuzzLoad loads any text as a configuration file next to a template and a plain file it
// may name. Load must not panic, and every problem must come as an error diagnostic with a
// summary. The seeds (testdata/fuzz/FuzzLoad) are the quickstart, the shapes of this
// package's tests and the crashers found so far.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	for name, body := range map[string]string{
		"chrony.conf.tpl":       "server ${server} iburst\n",
		"node-exporter.service": "[Service]\nExecStart=/usr/bin/node_exporter\n",
		"t.tpl":                 "%{ for x in a }${x}%{ endfor }",
		"attr.tpl":              "${a.b}",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	main := filepath.Join(dir, "main.hcl")
	f.Fuzz(func(t *testing.T, src string) {
		if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		res, diags := Load(dir, Options{Schemas: testSchemas})
		if res == nil {
			t.Fatal("Load returned no result")
		}
		for _, d := range diags {
			if d.Summary == "" || (d.Severity != model.DiagError && d.Severity != model.DiagWarning) {
				t.Errorf("diagnostic without a summary or severity: %#v", d)
			}
			if s := d.Subject; s != nil && (s.Filename == "" || s.Start.Line < 1 || s.Start.Column < 1) {
				t.Errorf("diagnostic %q without a place: %#v", d.Summary, s)
			}
		}
		if !diags.HasErrors() && res.Desired == nil {
			t.Error("no errors and no configuration")
		}
	})
}
