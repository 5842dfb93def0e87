package engine

import (
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// localParts are the local provider and backend, composed for the engine's tests as cmd
// composes every part for mcp.
var localParts = Parts{
	Providers: map[string]func(string, map[string]string) (providers.Provider, error){
		"local": func(dir string, attrs map[string]string) (providers.Provider, error) {
			return local.FromAttrs(dir, attrs)
		},
	},
	Backends: map[string]func(string, model.StateConfig) (state.Backend, error){
		"local": func(dir string, c model.StateConfig) (state.Backend, error) {
			return localstate.FromConfig(dir, c)
		},
	},
}
