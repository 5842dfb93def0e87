package state

import "github.com/mcpfleet/mcp/model"

// BackendSpec is what a state backend declares about itself: its settings in the state
// block (state { backend = NAME … }) and how to open it from them. Each backend package
// exports one, and cmd/mcp hands the build's specs to the engine (providers.Spec is the
// same for providers).
type BackendSpec struct {
	model.BlockSpec
	// Open opens the backend from the state block's settings, checked against BlockSpec.
	// An error about one setting is a *model.SettingError, shown at that setting.
	Open func(model.Settings) (Backend, error)
}
