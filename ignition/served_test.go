package ignition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// named is r named by Render, as render names a merged config.
func named(t *testing.T, r *model.Rendered) *model.Rendered {
	t.Helper()
	if r.IgnitionVersion == "" {
		r.IgnitionVersion = "3.4.0"
	}
	if _, err := Render(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// servedBefore is what the boot server served before it encoded once: for each spec, the
// config decoded, the first-boot record added, its version set, marshalled and parsed; the
// bodies by minor, the reasons by minor, and the error.
func servedBefore(r *model.Rendered) (map[int][]byte, map[int]string, error) {
	var doc map[string]any
	if err := json.Unmarshal(content.Ignition(r), &doc); err != nil {
		return nil, nil, fmt.Errorf("rendered config %s has no valid Ignition config: %w", r.Name, err)
	}
	ign, _ := doc["ignition"].(map[string]any)
	if ign == nil {
		return nil, nil, fmt.Errorf("rendered config %s: Ignition config without an ignition section", r.Name)
	}
	if err := addFirstBoot(doc, r, ServeOptions{}); err != nil {
		return nil, nil, err
	}
	bodies, why := map[int][]byte{}, map[int]string{}
	for _, sp := range specs {
		ign["version"] = sp.Version
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, nil, err
		}
		rpt, err := sp.Parse(b)
		if reason := inexpressible(rpt, err); reason != "" {
			why[sp.Minor] = reason
			continue
		}
		bodies[sp.Minor] = b
	}
	if len(bodies) == 0 {
		return nil, nil, fmt.Errorf("rendered config %s cannot be written in any Ignition spec 3.0–3.6: %s", r.Name, why[6])
	}
	return bodies, why, nil
}

// TestServedAsBefore: encoding a pool's config once and changing only its version gives
// each spec the bytes (and so the boot server's ETags), and each refused spec the reason,
// that encoding it per spec gave — for rendered configs, for hand-written ones whose keys
// are out of order and spaced, and for one with a second "version" key.
func TestServedAsBefore(t *testing.T) {
	yes := true
	motd := func(s string) []model.File {
		return []model.File{{Entry: model.Entry{Path: "/etc/motd"}, Mode: 0o644, Contents: []byte(s)}}
	}
	cases := map[string]*model.Rendered{
		"rendered":        named(t, &model.Rendered{Pool: "worker", Files: motd("hello\n")}),
		"rendered, kargs": named(t, &model.Rendered{Pool: "infra", Files: motd("hi \"version\":\"3.6.0\"\n"), KernelArgs: []string{"nosmt"}}),
		"rendered, units": named(t, &model.Rendered{Pool: "u", Units: []model.Unit{{Name: "a.service", Enabled: &yes,
			Contents: "[Service]\nExecStart=/bin/echo \"version\":\"3.6.0\" <&>\n"}}}),
	}
	for name, ign := range map[string]string{
		"spaced, out of order":  "{ \"storage\": {\"files\": [{\"path\": \"/etc/a\", \"contents\": {\"source\": \"data:,a\"}}]},\n  \"ignition\": {\"version\": \"3.1.0\"} }",
		"empty sections":        `{"ignition":{"version":"3.0.0","config":{}},"storage":{}}`,
		"version not a string":  `{"ignition":{"version":3}}`,
		"a second version key":  `{"ignition":{"version":"3.6.0"},"x":{"version":"3.6.0"}}`,
		"an escaped version":    `{"ignition":{"version":"3.6.0"},"systemd":{"units":[{"name":"a.service","contents":"\"version\":\"3.6.0\""}]}}`,
		"a key that ends so":    `{"\"version":"3.6.0","ignition":{"version":"3.4.0"}}`,
		"kernel arguments only": `{"kernelArguments":{"shouldExist":["a"]},"ignition":{"version":"3.3.0"}}`,
	} {
		cases[name] = &model.Rendered{Name: "rendered-x-0", LegacyIgnition: []byte(ign)}
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			bodies, why, err := servedBefore(r)
			sv, gotErr := Serve(r, ServeOptions{})
			if fmt.Sprint(gotErr) != fmt.Sprint(err) {
				t.Fatalf("error %v, before %v", gotErr, err)
			}
			if err != nil {
				return
			}
			if !maps.EqualFunc(sv.ByMinor, bodies, bytes.Equal) {
				for m := range 7 {
					if !bytes.Equal(sv.ByMinor[m], bodies[m]) {
						t.Errorf("spec 3.%d: %s\nbefore: %s", m, sv.ByMinor[m], bodies[m])
					}
				}
			}
			if !maps.Equal(sv.Why, why) {
				t.Errorf("reasons %v, before %v", sv.Why, why)
			}
		})
	}
}

// TestVersionedIsEncodingWithTheVersion: versioned's bytes for each version are those of
// encoding the document with that version, also when a key elsewhere looks like the
// version's.
func TestVersionedIsEncodingWithTheVersion(t *testing.T) {
	for _, ign := range []string{
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`,
		`{"ignition":{"version":"3.6.0"},"x":{"version":"3.6.0"}}`,
		`{"\"version":"3.6.0","ignition":{"version":"3.4.0"}}`,
		`{"a":{"\"version":"3.6.0"},"ignition":{"config":{"version":"3.6.0"},"version":"3.0.0"}}`,
		`{"ignition":{"version":"3.6.0"},"systemd":{"units":[{"name":"a.service","contents":"\"version\":\"3.6.0\""}]}}`,
	} {
		var doc map[string]any
		if err := json.Unmarshal([]byte(ign), &doc); err != nil {
			t.Fatal(err)
		}
		sec := doc["ignition"].(map[string]any)
		encode, err := versioned(doc, sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range specs {
			got, err := encode(sp.Version)
			if err != nil {
				t.Fatal(err)
			}
			sec["version"] = sp.Version
			if want, _ := json.Marshal(doc); !bytes.Equal(got, want) {
				t.Errorf("%s in %s: %s, want %s", sp.Version, ign, got, want)
			}
		}
	}
}

// TestFirstBootAgentRefusals: a unit of the rendered config's own with the first-boot
// unit's name (stored before render refused it: TestRenderRefusesWhatTheBootServerCannotServe),
// and agent paths an ExecStart could not hold as they are, are refused.
func TestFirstBootAgentRefusals(t *testing.T) {
	yes := true
	r := &model.Rendered{Name: "rendered-worker-0", Pool: "worker", IgnitionVersion: "3.4.0", Units: []model.Unit{{Name: FirstBootUnit, Enabled: &yes,
		Contents: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}}}
	if _, err := Serve(r, ServeOptions{FirstBootAgent: "/usr/local/bin/mcp-agent"}); err == nil || !strings.Contains(err.Error(), "which the boot server adds") {
		t.Errorf("a config with the unit's name: %v", err)
	}
	for _, bad := range []string{"mcp-agent", "/usr/bin/mcp agent", "/x;reboot", "/x\n[Service]", "/x%n", "/$HOME/a"} {
		if err := CheckFirstBootAgent(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestServeRefusesMalformedSections: a stored Ignition config whose storage or systemd
// section, or whose files or units, are not what Ignition's JSON has is refused, naming it.
func TestServeRefusesMalformedSections(t *testing.T) {
	agent := ServeOptions{FirstBootAgent: "/usr/local/bin/mcp-agent"}
	for ign, want := range map[string]string{
		`{"ignition":{"version":"3.4.0"},"storage":[]}`:           "its Ignition storage section is not an object",
		`{"ignition":{"version":"3.4.0"},"storage":{"files":{}}}`: "its Ignition storage.files is not a list",
		`{"ignition":{"version":"3.4.0"},"systemd":"x"}`:          "its Ignition systemd section is not an object",
		`{"ignition":{"version":"3.4.0"},"systemd":{"units":1}}`:  "its Ignition systemd.units is not a list",
	} {
		r := &model.Rendered{Name: "rendered-x-0", LegacyIgnition: []byte(ign)}
		if _, err := Serve(r, agent); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", ign, err, want)
		}
	}
}
