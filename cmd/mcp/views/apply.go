package views

import (
	"fmt"
	"io"

	"github.com/mcpfleet/mcp/engine/planfile"
)

// Apply is what mcp apply shows: the plan it made (a saved plan was shown when it was
// made), the question for approval, then the progress of every node and a summary.
type Apply interface {
	// Plan shows the plan apply made itself.
	Plan(pf *planfile.File) error
	// AskApproval asks for "yes"; Cancelled says that apply stopped on another answer.
	AskApproval()
	Cancelled()
	// Targeted warns that a plan made with -target may have left changes out.
	Targeted()
	// LeftOut warns, at the end, of the nodes the plan itself kept out: held, excluded,
	// untargeted.
	LeftOut(nodes []LeftOutNode)
	Progress
}

// NewApply returns mcp apply's view: JSON lines (-json), or text coloured when color.
func NewApply(asJSON bool, w io.Writer, color bool) Apply {
	if asJSON {
		return applyJSON{Progress: NewJSONProgress(w), approval: approval{w}}
	}
	return applyHuman{Progress: NewHumanProgress(w, color), approval: approval{w}, text: text{w, color}}
}

type applyHuman struct {
	Progress
	approval
	text
}

func (v applyHuman) Plan(pf *planfile.File) error { return v.planBody(pf) }

// applyJSON leaves the plan out: its output is the progress stream (mcp plan -json shows
// a plan).
type applyJSON struct {
	Progress
	approval
}

func (applyJSON) Plan(*planfile.File) error { return nil }

// approval is asked in words in either view: a person at the terminal answers it.
type approval struct{ w io.Writer }

func (a approval) AskApproval() {
	fmt.Fprint(a.w, "\nDo you want to perform these actions?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ")
}

func (a approval) Cancelled() { fmt.Fprintln(a.w, "\nApply cancelled.") }
