package ignition

import (
	"fmt"

	"github.com/coreos/vcontext/report"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// Render checks the Ignition config of r, a merged config not yet named, with Ignition's
// own parser of its spec (r.IgnitionVersion, one render may write) and, when the parser
// takes it, names r by its content. The report's errors and warnings (its notes are
// dropped) are at JSON paths of that config: storage.files.N and systemd.units.N are
// r.Files[N] and r.Units[N].
func Render(r *model.Rendered) ([]model.ReportEntry, error) {
	if err := RenderVersion(r.IgnitionVersion); err != nil {
		return nil, err
	}
	spec, _ := Lookup(r.IgnitionVersion)
	ign, name := content.IgnitionAndName(r)
	rpt, err := spec.Parse(ign)
	if err != nil {
		return entries(rpt), err
	}
	r.Name = name
	if err := CheckServable(r); err != nil {
		r.Name = ""
		return entries(rpt), err
	}
	return entries(rpt), nil
}

// RenderVersion refuses a version render may not write configs in, naming those it may.
func RenderVersion(version string) error {
	if spec, ok := Lookup(version); !ok || !spec.Render {
		return fmt.Errorf("ignition_version %q: mcp renders %s", version, RenderList())
	}
	return nil
}

// entries gives rpt's errors and warnings in the model's neutral form.
func entries(rpt report.Report) []model.ReportEntry {
	var out []model.ReportEntry
	for _, e := range rpt.Entries {
		sev := model.DiagWarning
		switch e.Kind {
		case report.Error:
			sev = model.DiagError
		case report.Warn:
		default:
			continue
		}
		out = append(out, model.ReportEntry{Severity: sev, Path: e.Context.String(), Message: e.Message})
	}
	return out
}

// Renderer is the room's part in render as the planner asks for it (planner.Ignition):
// handed to it, so that the planner links no Ignition parser.
type Renderer struct{}

// RenderVersion is the package's RenderVersion.
func (Renderer) RenderVersion(version string) error { return RenderVersion(version) }

// Render is the package's Render.
func (Renderer) Render(r *model.Rendered) ([]model.ReportEntry, error) { return Render(r) }

// MergeFirstBoot is the package's MergeFirstBoot.
func (Renderer) MergeFirstBoot(parts [][]byte) ([]byte, error) { return MergeFirstBoot(parts) }
