package model

import "time"

// PointerChange is one move of a pool's boot pointer: the rendered config the pool was
// pointed at, and when (the state's per-pool history, what mcp rollback goes back along).
type PointerChange struct {
	Rendered string    `json:"rendered"`
	Applied  time.Time `json:"applied"`
	// Rollback: the move was a rollback (mcp rollback, or a failed rollout's on_failure
	// revert), not an apply of the configuration.
	Rollback bool `json:"rollback,omitempty"`
}

// RolledBack marks a pool whose pointer a rollback moved away from what the configuration
// rendered then: plan and status warn about it until the configuration renders To again
// (or an apply moves the pool to what it renders).
type RolledBack struct {
	To   string    `json:"to"`            // the rendered config the pool was rolled back to
	From string    `json:"from"`          // the one it ran before the rollback
	At   time.Time `json:"at"`            // when the rollback started
	Why  string    `json:"why,omitempty"` // what rolled it back, for people: "mcp rollback", a failed gate
}
