package bootsrv

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func renderedFor(t *testing.T, units ...model.Unit) *model.Rendered {
	t.Helper()
	d := &model.Desired{Pools: []model.Pool{{Name: "worker", OSImage: "quay.io/os:2"}}, Configs: []model.Config{{Name: "10", Pools: []string{"worker"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/motd"}, Contents: []byte("hi\n"), Mode: 0o644}}, Units: units}}}
	out, diags := planner.Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return out["worker"]
}

// With -first-boot-agent every spec's served config has the unit that runs the agent's
// first boot before kubelet, and the record embeds the rendered config, verified by name.
func TestFirstBootUnitServed(t *testing.T) {
	r := renderedFor(t)
	snap, err := BuildWith(1, map[string]string{"worker": r.Name}, map[string]*model.Rendered{r.Name: r},
		ignition.ServeOptions{FirstBootAgent: "/usr/local/bin/mcp-agent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range ignition.All() {
		b, err := snap.PoolConfig("worker", ignitionType+";version="+sp.Version)
		if err != nil {
			t.Fatalf("spec %s: %v", sp.Version, err)
		}
		var doc struct {
			Storage struct {
				Files []struct {
					Path     string
					Contents struct{ Source string }
				}
			}
			Systemd struct {
				Units []struct {
					Name     string
					Enabled  *bool
					Contents string
				}
			}
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var unit string
		for _, u := range doc.Systemd.Units {
			if u.Name == ignition.FirstBootUnit && u.Enabled != nil && *u.Enabled {
				unit = u.Contents
			}
		}
		for _, want := range []string{"ExecStart=/usr/local/bin/mcp-agent -root / -once\n", "Before=kubelet.service\n",
			"RequiredBy=kubelet.service\n", "ConditionPathExists=" + content.FirstBootPath + "\n"} {
			if !strings.Contains(unit, want) {
				t.Errorf("spec %s: the first-boot unit lacks %q:\n%s", sp.Version, want, unit)
			}
		}
		var rec content.FirstBoot
		for _, f := range doc.Storage.Files {
			if f.Path == content.FirstBootPath {
				raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(f.Contents.Source, "data:;base64,"))
				if rec, err = content.ParseFirstBoot(raw); err != nil {
					t.Fatal(err)
				}
			}
		}
		if rec.Config == nil || rec.Config.Name != r.Name || rec.Config.OSImage != "quay.io/os:2" {
			t.Errorf("spec %s: the record does not embed %s: %+v", sp.Version, r.Name, rec)
		}
	}
	// Without the option the record names the config and embeds nothing, and no unit.
	plain, _ := Build(1, map[string]string{"worker": r.Name}, map[string]*model.Rendered{r.Name: r})
	b, _ := plain.PoolConfig("worker", IgnitionAccept)
	if strings.Contains(string(b), ignition.FirstBootUnit) {
		t.Errorf("a unit without -first-boot-agent:\n%s", b)
	}
}

func TestParseFirstBootRefusesAnEmbeddedConfigNotItsName(t *testing.T) {
	r := renderedFor(t)
	rec := content.FirstBootOf(r)
	rec.Config = r
	if _, err := content.ParseFirstBoot(rec.Encode()); err != nil {
		t.Fatal(err)
	}
	changed := *r
	changed.Files = append([]model.File(nil), r.Files...)
	changed.Files[0].Contents = []byte("not what it was named for\n")
	rec.Config = &changed
	if _, err := content.ParseFirstBoot(rec.Encode()); err == nil || !strings.Contains(err.Error(), "does not match its content") {
		t.Errorf("a changed embedded config: %v", err)
	}
	other := renderedFor(t, model.Unit{Name: "x.service", Contents: "[Service]\n"})
	rec.Config = other
	if _, err := content.ParseFirstBoot(rec.Encode()); err == nil {
		t.Error("a record naming one config and holding another was accepted")
	}
}
