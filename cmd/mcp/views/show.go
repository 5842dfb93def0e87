package views

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// Show is what mcp show shows: a saved plan, or a pool's rendered config.
type Show interface {
	// Plan shows a saved plan: for people, as mcp plan showed it when it was made.
	Plan(pf *planfile.File) error
	Rendered(r *model.Rendered) error
}

// NewShow returns mcp show's view: JSON (-json), or text coloured when color.
func NewShow(asJSON bool, w io.Writer, color bool) Show {
	if asJSON {
		return showJSON{w}
	}
	return showHuman{text{w, color}}
}

type showHuman struct{ text }

func (v showHuman) Plan(pf *planfile.File) error { return v.plan(pf) }

// Rendered prints who wrote each file, unit and kernel argument, then the Ignition config,
// indented: what a booting node of the pool fetches (-json | jq .ignition gives it alone),
// sensitive files' content aside (redacted). The Ignition config is made of r as it is,
// then escaped as text: JSON escapes C0 controls itself, and a C1 control escaped as
// \u009b is the same JSON string.
func (v showHuman) Rendered(r *model.Rendered) error {
	full, err := redacted(r)
	if err != nil {
		return err
	}
	r = Shown(full.Rendered)
	var b bytes.Buffer
	c := painter(v.color)
	fmt.Fprintf(&b, "%s: pool %s, configs merged in order: %s\n", c.bold(r.Name), r.Pool, cmp.Or(strings.Join(r.Sources, ", "), "none"))
	if r.Provenance != nil && len(r.Entries())+len(r.Units)+len(r.KernelArgs) > 0 {
		fmt.Fprintf(&b, "\nWritten by:\n")
		if err := writeProvenance(&b, r, r.Provenance); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "\nIgnition config (spec %s):\n", r.IgnitionVersion)
	var ign bytes.Buffer
	if err := json.Indent(&ign, full.Ignition, "", "  "); err != nil {
		return err
	}
	b.WriteString(untrusted.Lines(ign.String()))
	b.WriteByte('\n')
	_, err = v.w.Write(b.Bytes())
	return err
}

// NewShowMarkdown returns mcp show -markdown's view: a saved plan as a summary for a
// pull-request comment (Markdown). It shows plans only.
func NewShowMarkdown(w io.Writer) Show { return showMarkdown{w} }

type showMarkdown struct{ w io.Writer }

func (v showMarkdown) Plan(pf *planfile.File) error { return Markdown(v.w, pf) }

func (showMarkdown) Rendered(*model.Rendered) error {
	return errors.New("-markdown shows a saved plan, not a rendered config")
}

type showJSON struct{ w io.Writer }

func (v showJSON) Plan(pf *planfile.File) error { return writeJSONPlan(v.w, pf) }

// Rendered prints the whole rendered object: files, units and kernel arguments beside the
// Ignition config, and their provenance beside that; sensitive files' content left out.
func (v showJSON) Rendered(r *model.Rendered) error {
	full, err := redacted(r)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(struct {
		content.Full
		Provenance *model.Provenance `json:"provenance,omitempty"`
	}{full, r.Provenance}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(v.w, string(b))
	return err
}
