package views

import (
	"fmt"
	"io"

	"github.com/mcpfleet/mcp/engine/planfile"
)

// Plan is what mcp plan shows.
type Plan interface {
	// Plan shows the plan made (for people, after what the refresh before it observed).
	Plan(pf *planfile.File) error
	// Saved says where the plan was saved (-out) and how to carry it out.
	Saved(path string)
}

// NewPlan returns mcp plan's view: JSON (-json), or text coloured when color.
func NewPlan(asJSON bool, w io.Writer, color bool) Plan {
	if asJSON {
		return planJSON{w}
	}
	return planHuman{text{w, color}}
}

type planHuman struct{ text }

func (v planHuman) Plan(pf *planfile.File) error { return v.plan(pf) }

func (v planHuman) Saved(path string) {
	fmt.Fprintf(v.w, "\nSaved the plan to: %s\nTo carry out exactly these actions, run:\n  mcp apply %q\n", path, path)
}

// planJSON writes the plan alone, so that the output stays one JSON document.
type planJSON struct{ w io.Writer }

func (v planJSON) Plan(pf *planfile.File) error { return writeJSONPlan(v.w, pf) }
func (planJSON) Saved(string)                   {}
