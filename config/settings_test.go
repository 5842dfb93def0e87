package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// probe is a part of every setting kind, as a provider or backend of another build could
// declare it: the language reads its block knowing nothing of it but its spec.
var probe = model.BlockSpec{Name: "probe", Example: `root = "./r"`, Settings: []model.SettingSpec{
	{Name: "root", Kind: model.SettingPath, Required: true},
	{Name: "label", Kind: model.SettingString, Default: "none"},
	{Name: "dry", Kind: model.SettingBool},
	{Name: "nodes", Kind: model.SettingNumber, Default: 3, Check: func(v model.SettingValue) error {
		if v.Number != float64(int(v.Number)) || v.Number < 1 {
			return errors.New("want a whole number of nodes, at least 1")
		}
		return nil
	}},
	{Name: "pause", Kind: model.SettingDuration, Default: 2 * time.Second},
	{Name: "zones", Kind: model.SettingList},
	{Name: "cache", Kind: model.SettingPath, Default: "cache"},
}}

var probeSchemas = Schemas{Providers: []model.BlockSpec{probe}, Backends: []model.BlockSpec{
	{Name: "disk", Settings: []model.SettingSpec{{Name: "path", Kind: model.SettingPath, Default: "st"}}},
	{Name: "vault", Example: `addr = "…"`, Settings: []model.SettingSpec{{Name: "addr", Kind: model.SettingString, Required: true}}},
}}

// Every kind is read into its field at its place, paths resolved, the others defaulted.
func TestSettingsOfEveryKind(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "probe" {
  root  = "./r"
  dry   = true
  nodes = 2 + 3
  pause = "90s"
  zones = ["a", "b"]
}
`)
	res, diags := Load(dir, Options{Schemas: probeSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := res.Desired.Provider
	got := map[string]string{}
	for name, v := range p.Settings {
		got[name] = fmt.Sprintf("%s %#v %s", v.Kind, v, v.Range)
	}
	at := func(line, col int) string { return fmt.Sprintf("%s:%d,%d", filepath.Join(dir, "main.hcl"), line, col) }
	want := map[string]string{
		"root":  fmt.Sprintf("path %q %s", filepath.Join(dir, "r"), at(2, 11)),
		"dry":   "bool true " + at(3, 11),
		"nodes": "number 5 " + at(4, 11),
		"pause": `duration "1m30s" ` + at(5, 11),
		"zones": `list of strings ["a", "b"] ` + at(6, 11),
		"label": `string "none" `,
		"cache": fmt.Sprintf("path %q ", filepath.Join(dir, "cache")),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if p.Type != "probe" || p.DeclRange.Start.Line != 1 {
		t.Errorf("provider %s at %v", p.Type, p.DeclRange)
	}
	// No state block: the first backend, with its defaults.
	if st := res.Desired.State; st.Backend != "disk" || st.Settings.Str("path") != filepath.Join(dir, "st") || st.DeclRange.Filename != "" {
		t.Errorf("default state %+v", st)
	}
}

// A bad value is refused at its own place, whatever its kind, with the part's own reason for
// a value its Check refuses; the names in messages come from the specs.
func TestSettingsRefusedAtTheirPlace(t *testing.T) {
	for _, c := range []struct {
		name, src, summary, detail string
		line, col                  int
	}{
		{"bool", `provider "probe" {
  root = "r"
  dry  = "maybe"
}`, "Invalid dry", "dry must be true or false", 3, 10},
		{"number", `provider "probe" {
  root  = "r"
  nodes = "many"
}`, "Invalid nodes", "nodes must be a number", 3, 11},
		{"check", `provider "probe" {
  root  = "r"
  nodes = 2.5
}`, "Invalid nodes", "nodes = 2.5: want a whole number of nodes, at least 1.", 3, 11},
		{"duration", `provider "probe" {
  root  = "r"
  pause = "-1s"
}`, "Invalid duration", `pause = "-1s": want a Go duration such as "30s" or "10m".`, 3, 11},
		{"list", `provider "probe" {
  root  = "r"
  zones = "a"
}`, "Invalid zones", "zones must be a list of strings", 3, 11},
		{"element", `provider "probe" {
  root  = "r"
  zones = ["a", null]
}`, "Missing value", "zones[1] is null", 3, 17},
		{"unknown setting", `provider "probe" {
  root = "r"
  fleet = "x"
}`, "Unsupported argument", `An argument named "fleet" is not expected here.`, 3, 3},
		{"required", `provider "probe" {}`, "Missing required argument", `The argument "root" is required`, 1, 18},
		{"unknown provider", `provider "local" {}`, "Unknown provider", `Provider "local" is not one mcp knows: use "probe".`, 1, 10},
		{"unknown backend", `provider "probe" { root = "r" }
state { backend = "local" }`, "Unknown state backend", `backend "local": use "disk" or "vault".`, 2, 19},
		{"another backend's setting", `provider "probe" { root = "r" }
state {
  backend = "vault"
  path    = "x"
}`, "Unsupported argument", `An argument named "path" is not expected here.`, 4, 3},
		{"backend's required setting", `provider "probe" { root = "r" }
state { backend = "vault" }`, "Missing required argument", `The argument "addr" is required`, 2, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "main.hcl", c.src+"\n")
			_, diags := Load(dir, Options{Schemas: probeSchemas})
			d := findDiag(diags, c.summary)
			if d == nil {
				t.Fatalf("no %q diagnostic: %v", c.summary, diags)
			}
			if !strings.Contains(d.Detail, c.detail) {
				t.Errorf("detail %q, want %q", d.Detail, c.detail)
			}
			if s := d.Subject; s == nil || filepath.Base(s.Filename) != "main.hcl" || s.Start.Line != c.line || s.Start.Column != c.col {
				t.Errorf("%q at %v, want main.hcl:%d,%d", c.summary, s, c.line, c.col)
			}
		})
	}
}

// Without a provider block the message's example is the first provider's.
func TestNoProviderShowsTheFirstSpec(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", "pool \"p\" {}\n")
	_, diags := Load(dir, Options{Schemas: probeSchemas})
	d := findDiag(diags, "No provider")
	if d == nil || !strings.Contains(d.Detail, `provider "probe" { root = "./r" }`) {
		t.Errorf("no provider: %v", diags)
	}
}
