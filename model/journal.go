package model

// JournalEntry records an update of one node that an apply began and did not finish: it
// is opened before the apply's first action on the node, gets each step as it finishes,
// and is dropped when the node finishes (docs/decisions.md, "Intent before action").
type JournalEntry struct {
	// Apply is the apply run that began (or took over) the update ("": a journal of an mcp
	// that did not name runs).
	Apply  string   `json:"apply,omitempty"`
	From   string   `json:"from"`   // the node's config before that apply
	Target string   `json:"target"` // the rendered config that apply moved it to
	Done   []string `json:"done"`   // model.Step.Key of each finished step, in order
}
