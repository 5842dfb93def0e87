package engine

import (
	"context"
	"strings"

	"github.com/mcpfleet/mcp/internal/textdiff"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
)

// unitDir is where the node executor writes units (nodeexec.UnitDir): a drifted unit's
// path is there.
const unitDir = "/etc/systemd/system/"

// explainDrift says, for people, how each node's drifted files differ: a sensitive file's
// drift hides its digests; the content of another drifted file is read from the node when
// the provider can (providers.FileReader) and shown as a diff from its config's content
// (model.Drift.Diff). What providers reported of either is not trusted: both are set here.
func (w *Workspace) explainDrift(ctx context.Context, st *state.State, fleet *model.Fleet) {
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		w.explain(ctx, n.Name, w.knownConfig(st, n.CurrentConfig), n.Drift)
	}
}

// explain sets each drift entry's Diff and Sensitive against cfg, the config the node was
// compared with (nil: not known, nothing is explained).
func (w *Workspace) explain(ctx context.Context, node string, cfg *model.Rendered, drift []model.Drift) {
	fr := w.provider()
	for k := range drift {
		d := &drift[k]
		d.Diff, d.Sensitive = "", false
		if cfg == nil || d.OnHost() {
			continue
		}
		want, sensitive, ok := expectedContent(cfg, d.Path)
		switch {
		case !ok:
		case sensitive:
			d.Sensitive, d.Expected, d.Found = true, "", ""
		case d.Kind == model.DriftContent && fr.Has(providers.CapFileReader):
			got, err := fr.ReadNodeFile(ctx, node, d.Path, textdiff.MaxText+1)
			if err == nil {
				d.Diff = textdiff.Diff(want, got, d.Path+" ("+cfg.Name+")", d.Path+" (on node "+node+")")
			}
		}
	}
}

// expectedContent is what the config r has at path: a file's content (and whether it is
// sensitive), a unit's or a drop-in's; ok false when r manages nothing there.
func expectedContent(r *model.Rendered, path string) (content []byte, sensitive, ok bool) {
	if f := r.File(path); f != nil {
		return f.Contents, f.Sensitive, true
	}
	name, ok := strings.CutPrefix(path, unitDir)
	if !ok {
		return nil, false, false
	}
	unit, dropin, isDropin := strings.Cut(name, ".d/")
	u := r.Unit(unit)
	switch {
	case u == nil:
		return nil, false, false
	case !isDropin:
		return []byte(u.Contents), false, true
	}
	for _, d := range u.Dropins {
		if d.Name == dropin {
			return []byte(d.Contents), false, true
		}
	}
	return nil, false, false
}
