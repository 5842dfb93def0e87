package engine

import (
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// localParts are the local provider and backend, composed for the engine's tests as cmd
// composes every part for mcp.
var localParts = Parts{
	Providers: []providers.Spec{local.Spec},
	Backends:  []state.BackendSpec{localstate.Spec},
}
