package config

import (
	"github.com/mcpfleet/mcp/model"

	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state/kubestate"
	"github.com/mcpfleet/mcp/state/localstate"
)

// testSchemas are the blocks of mcp's own parts, as cmd/mcp hands them to Load: the
// language's tests read the provider and state blocks people write.
var testSchemas = Schemas{
	Providers: []model.BlockSpec{local.Spec.BlockSpec, kubernetes.Spec.BlockSpec},
	Backends:  []model.BlockSpec{localstate.Spec.BlockSpec, kubestate.Spec.BlockSpec},
}
