package model

// JournalEntry records the steps of one node that an earlier apply finished.
type JournalEntry struct {
	From   string   `json:"from"`   // the node's config before that apply
	Target string   `json:"target"` // the rendered config that apply moved it to
	Done   []string `json:"done"`   // model.Step.Key of each finished step, in order
}
