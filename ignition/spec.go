package ignition

// The one table of the Ignition config specs mcp knows: each version with Ignition's own
// parser for it, and whether render may write configs in it. Render validates what it
// writes with it; the boot server serves every spec of it that can express a config.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	v36 "github.com/coreos/ignition/v2/config/v3_6"
	v36types "github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/report"
)

// Spec is Ignition config spec 3.<Minor>.0.
type Spec struct {
	Version string // "3.<Minor>.0", as a config's ignition.version names it
	Minor   int
	// Parse is Ignition's own parser of the spec. It takes only a config of exactly this
	// version, and reports a key the spec lacks as an "unused key" warning.
	Parse func([]byte) (report.Report, error)
	// Render is whether render may write configs in this spec: render builds one shape of
	// config, valid from 3.4 on with only the version changed.
	Render bool
}

// specs is the table, newest first.
var specs = []Spec{
	{"3.6.0", 6, func(b []byte) (report.Report, error) { _, r, err := v36.Parse(b); return r, err }, true},
	{"3.5.0", 5, func(b []byte) (report.Report, error) { _, r, err := v35.Parse(b); return r, err }, true},
	{"3.4.0", 4, func(b []byte) (report.Report, error) { _, r, err := v34.Parse(b); return r, err }, true},
	{"3.3.0", 3, func(b []byte) (report.Report, error) { _, r, err := v33.Parse(b); return r, err }, false},
	{"3.2.0", 2, func(b []byte) (report.Report, error) { _, r, err := v32.Parse(b); return r, err }, false},
	{"3.1.0", 1, func(b []byte) (report.Report, error) { _, r, err := v31.Parse(b); return r, err }, false},
	{"3.0.0", 0, func(b []byte) (report.Report, error) { _, r, err := v30.Parse(b); return r, err }, false},
}

// All returns the specs mcp knows, newest first.
func All() []Spec { return slices.Clone(specs) }

// Newest is the newest spec mcp knows.
func Newest() Spec { return specs[0] }

// Lookup finds the spec of a version such as "3.4.0".
func Lookup(version string) (Spec, bool) {
	i := slices.IndexFunc(specs, func(s Spec) bool { return s.Version == version })
	if i < 0 {
		return Spec{}, false
	}
	return specs[i], true
}

// RenderList names the specs render may write, oldest first, for messages: "3.4.0, 3.5.0
// or 3.6.0".
func RenderList() string {
	var vs []string
	for i := len(specs) - 1; i >= 0; i-- {
		if specs[i].Render {
			vs = append(vs, specs[i].Version)
		}
	}
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// ParseAny parses a config of any spec in the table into the newest spec's types, with
// Ignition's own parser (which upgrades older specs as Ignition does at boot). A config
// whose version the table lacks — a newer or experimental spec — is refused, naming it.
func ParseAny(raw []byte) (v36types.Config, report.Report, error) {
	var head struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return v36types.Config{}, report.Report{}, fmt.Errorf("not an Ignition config: %w", err)
	}
	if _, ok := Lookup(head.Ignition.Version); !ok {
		return v36types.Config{}, report.Report{}, fmt.Errorf("Ignition spec %q is not one mcp knows (%s to %s)",
			head.Ignition.Version, specs[len(specs)-1].Version, specs[0].Version)
	}
	return v36.ParseCompatibleVersion(raw)
}
