package views

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/mcpfleet/mcp/model"
)

// jsonStep is a step of the plan JSON with the provenance of what it writes: a write's
// file or unit, a kargs step's added arguments. Display only, as the reason.
type jsonStep struct {
	model.Step
	// Phase, on the steps of a node whose update stages ahead (its pool's max_staging
	// above 0): "stage" for the stage, run before the node's slot and outside its pool's
	// budget, "slot" for the rest.
	Phase      string        `json:"phase,omitempty"`
	Provenance []itemWritten `json:"provenance,omitempty"`
}

// itemWritten is the provenance of one item, named.
type itemWritten struct {
	Item string `json:"item"`
	model.Written
}

// stepsJSON gives steps with their provenance from prov, the provenance of the rendered
// config the node moves to (nil: none known); ahead: the node's pool stages ahead of the
// slots, so steps that begin with a stage have their phases.
func stepsJSON(steps []model.Step, ahead bool, from, to string, known func(string) *model.Rendered, prov *model.Provenance) []jsonStep {
	out := make([]jsonStep, len(steps))
	staged := ahead && model.StagesFirst(steps)
	for i, s := range steps {
		out[i].Step = s
		if staged {
			out[i].Phase = map[bool]string{true: "stage", false: "slot"}[s.Kind == model.StepStage]
		}
		if prov == nil {
			continue
		}
		switch s.Kind {
		case model.StepWrite:
			if w, ok := prov.Files[s.Target]; ok {
				out[i].Provenance = []itemWritten{{s.Target, w}}
			} else if w, ok := prov.Units[s.Target]; ok {
				out[i].Provenance = []itemWritten{{s.Target, w}}
			}
		case model.StepKargs:
			var old []string
			if r := known(from); r != nil {
				old = r.KernelArgs
			}
			var args []string
			if r := known(to); r != nil {
				args, _ = model.DiffArgs(old, r.KernelArgs)
			}
			for _, a := range args {
				if w, ok := prov.KernelArgs[a]; ok {
					out[i].Provenance = append(out[i].Provenance, itemWritten{a, w})
				}
			}
		}
	}
	return out
}

// writeProvenance lists who wrote each file, unit and kernel argument of r, and what each
// overrode, in the order the rendered config holds them.
func writeProvenance(w io.Writer, r *model.Rendered, prov *model.Provenance) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(kind, item string, wr model.Written) {
		fmt.Fprintf(tw, "  %s %s\t%s\t%s\n", kind, item, wr.By.Block, wr.By.Place())
		for _, o := range slices.Backward(wr.Overrode) {
			fmt.Fprintf(tw, "    overrides\t%s\t%s\n", o.Block, o.Place())
		}
	}
	for _, e := range r.Entries() {
		p := e.Common().Path
		row(string(e.Kind()), p, prov.Files[p])
	}
	for _, u := range r.Units {
		row("unit", u.Name, prov.Units[u.Name])
	}
	for _, k := range r.KernelArgs {
		row("kernel_arg", k, prov.KernelArgs[k])
	}
	return tw.Flush()
}
