package ignition

import (
	"fmt"

	"github.com/coreos/vcontext/report"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// Render checks the Ignition config of r, a merged config not yet named, with Ignition's
// own parser of its spec (r.IgnitionVersion, one render may write) and, when the parser
// takes it, names r by its content. The report's entries are at JSON paths of that config:
// storage.files.N and systemd.units.N are r.Files[N] and r.Units[N].
func Render(r *model.Rendered) (report.Report, error) {
	spec, ok := Lookup(r.IgnitionVersion)
	if !ok || !spec.Render {
		return report.Report{}, fmt.Errorf("ignition_version %q: mcp renders %s", r.IgnitionVersion, RenderList())
	}
	ign, name := content.IgnitionAndName(r)
	rpt, err := spec.Parse(ign)
	if err != nil {
		return rpt, err
	}
	r.Name = name
	return rpt, nil
}
