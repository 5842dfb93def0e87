package ignition

import (
	"encoding/json"
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
	out := newerSpecs(ign, spec, entries(rpt))
	if err != nil {
		return out, err
	}
	r.Name = name
	if err := CheckServable(r); err != nil {
		r.Name = ""
		return out, err
	}
	return out, nil
}

// newerSpecs adds to each entry of out (ign checked in spec) that a newer spec render may
// write does not report — an "unused key" (LUKS cex came in 3.5.0), setuid bits "not
// supported or functional" before 3.6.0 — the oldest such spec: the ignition_version
// that takes it.
func newerSpecs(ign []byte, spec Spec, out []model.ReportEntry) []model.ReportEntry {
	var doc map[string]any
	if len(out) == 0 || json.Unmarshal(ign, &doc) != nil {
		return out
	}
	head, _ := doc["ignition"].(map[string]any)
	if head == nil {
		return out
	}
	encode, err := versioned(doc, head)
	if err != nil {
		return out
	}
	named := map[int]bool{}
	for i := len(specs) - 1; i >= 0; i-- {
		sp := specs[i]
		if sp.Minor <= spec.Minor || !sp.Render {
			continue
		}
		b, err := encode(sp.Version)
		if err != nil {
			return out
		}
		rpt, _ := sp.Parse(b)
		still := map[model.ReportEntry]bool{}
		for _, e := range entries(rpt) {
			still[e] = true
		}
		for j, e := range out {
			if !named[j] && !still[e] {
				out[j].Message += fmt.Sprintf(" (Ignition spec %s takes it: set ignition_version = %q in the mcp block)", sp.Version, sp.Version)
				named[j] = true
			}
		}
	}
	return out
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
func (Renderer) MergeFirstBoot(parts [][]byte, kernelArgs []string) ([]byte, error) {
	return MergeFirstBoot(parts, kernelArgs)
}
