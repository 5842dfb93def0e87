package ignition

import (
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// TestRenderRefusesWhatTheBootServerCannotServe: a rendered config Ignition takes alone,
// but not with the first-boot record the boot server adds (a link the record's path goes
// through: "file path includes link in config"), or with a unit of the name the boot
// server adds, does not render: validate and plan refuse what mcp serve could not serve.
func TestRenderRefusesWhatTheBootServerCannotServe(t *testing.T) {
	for name, r := range map[string]*model.Rendered{
		"link on the record's path": {Links: []model.Link{{Entry: model.Entry{Path: "/var/lib"}, Target: "../etc/fakelib"}}},
		"the boot server's unit":    {Units: []model.Unit{{Name: FirstBootUnit, Contents: "[Service]\n"}}},
	} {
		r.IgnitionVersion = "3.4.0"
		_, err := Render(r)
		if err == nil || r.Name != "" {
			t.Errorf("%s: rendered as %q (%v)", name, r.Name, err)
			continue
		}
		if !strings.Contains(err.Error(), "boot server") {
			t.Errorf("%s: %v, want the boot server named", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}
