package bootsrv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// preparedBefore is what preparePool served before it encoded once: for each spec, the
// config decoded, the first-boot record added, its version set, marshalled and parsed; the
// bodies by minor, the reasons by minor, and the error.
func preparedBefore(r *model.Rendered) (map[int][]byte, map[int]string, error) {
	var doc map[string]any
	if err := json.Unmarshal(content.Ignition(r), &doc); err != nil {
		return nil, nil, fmt.Errorf("rendered config %s has no valid Ignition config: %w", r.Name, err)
	}
	ign, _ := doc["ignition"].(map[string]any)
	if ign == nil {
		return nil, nil, fmt.Errorf("rendered config %s: Ignition config without an ignition section", r.Name)
	}
	if err := addFirstBoot(doc, r, BuildOptions{}); err != nil {
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

// TestPreparedAsBefore: encoding a pool's config once and changing only its version gives
// each spec the bytes (and so the ETags), and each refused spec the reason, that encoding
// it per spec gave — for rendered configs, for hand-written ones whose keys are out of
// order and spaced, and for one with a second "version" key.
func TestPreparedAsBefore(t *testing.T) {
	yes := true
	units := &model.Desired{Pools: []model.Pool{{Name: "u"}}, Configs: []model.Config{{Name: "10-u", Pools: []string{"u"},
		Units: []model.Unit{{Name: "a.service", Enabled: &yes, Contents: "[Service]\nExecStart=/bin/echo \"version\":\"3.6.0\" <&>\n"}}}}}
	out, diags := planner.Render(units)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cases := map[string]*model.Rendered{
		"rendered":        rendered(t, "worker", "hello\n"),
		"rendered, kargs": rendered(t, "infra", "hi \"version\":\"3.6.0\"\n", "nosmt"),
		"rendered, units": out["u"],
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
			bodies, why, err := preparedBefore(r)
			pc, gotErr := preparePool("p", r, BuildOptions{})
			if fmt.Sprint(gotErr) != fmt.Sprint(err) {
				t.Fatalf("error %v, before %v", gotErr, err)
			}
			if err != nil {
				return
			}
			got := map[int][]byte{}
			for m, b := range pc.byMinor {
				got[m] = b.data
			}
			if !maps.EqualFunc(got, bodies, bytes.Equal) {
				for m := range 7 {
					if !bytes.Equal(got[m], bodies[m]) {
						t.Errorf("spec 3.%d: %s\nbefore: %s", m, got[m], bodies[m])
					}
				}
			}
			if !maps.Equal(pc.why, why) {
				t.Errorf("reasons %v, before %v", pc.why, why)
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

// TestPoolConfigIsWhatIsServed: Snapshot.PoolConfig gives the bytes /config/<pool> answers
// for the same Accept header, and says why when there are none.
func TestPoolConfigIsWhatIsServed(t *testing.T) {
	r := rendered(t, "infra", "x\n", "nosmt")
	s := serverWith(t, r)
	snap := s.Current()
	for _, accept := range []string{IgnitionAccept, "application/vnd.coreos.ignition+json;version=3.4.0", ""} {
		got, err := snap.PoolConfig("infra", accept)
		rec := get(t, s, "GET", "/config/infra", "Accept", accept)
		if err != nil || !bytes.Equal(got, rec.Body.Bytes()) {
			t.Errorf("Accept %q: %v\n%s\nserved\n%s", accept, err, got, rec.Body)
		}
	}
	if _, err := snap.PoolConfig("infra", "application/vnd.coreos.ignition+json;version=3.2.0"); err == nil ||
		!strings.Contains(err.Error(), "needs spec 3.3.0") {
		t.Errorf("a spec that cannot express it: %v", err)
	}
	if _, err := snap.PoolConfig("worker", IgnitionAccept); err == nil || !strings.Contains(err.Error(), "no pointer") {
		t.Errorf("an unknown pool: %v", err)
	}
	if IgnitionAccept != ign36 {
		t.Errorf("IgnitionAccept = %q, want what Ignition v2.27.0 sends, %q", IgnitionAccept, ign36)
	}
}
