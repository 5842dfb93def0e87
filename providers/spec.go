package providers

import "github.com/mcpfleet/mcp/model"

// Spec is what a provider declares about itself: its block in the configuration (its
// name, its settings with their kinds and defaults) and how to build it from those
// settings. Each provider package exports one; cmd/mcp hands the build's specs to the
// engine, which reads the provider block against them. Adding a provider is its package
// and a line in cmd/mcp/parts.go: nothing in the engine names one.
type Spec struct {
	model.BlockSpec
	// New builds the provider from its block's settings, as the configuration language
	// checked them against BlockSpec (kinds, Checks, paths resolved, defaults filled in).
	// An error about one setting is a *model.SettingError, shown at that setting.
	New func(model.Settings) (Provider, error)
}
