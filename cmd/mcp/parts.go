package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/bootsrv/kubesource"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/alerts"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/kubestate"
	"github.com/mcpfleet/mcp/state/localstate"
)

// This file is mcp's composition root: the only place that names the concrete providers,
// state backends and boot-server sources. Each part declares itself (its spec: the name a
// configuration gives it, its settings, its constructor); the engine and the configuration
// language read the specs and know no part by name. A new provider is its package and a
// line here.

// parts are the providers and state backends of this build.
var parts = engine.Parts{
	Providers: []providers.Spec{local.Spec, kubernetes.Spec},
	// The first backend is the one a configuration without a state block uses.
	Backends: []state.BackendSpec{localstate.Spec, kubestate.Spec},
	// The pools' alert gates ask Prometheus through its own API client.
	Alerts: alerts.Prometheus{},
}

// bootSources give, per state backend, what `mcp serve` follows, and a name for it in logs.
var bootSources = map[string]func(ctx context.Context, s model.Settings) (bootsrv.Source, string, error){
	localstate.Spec.Name: func(_ context.Context, s model.Settings) (bootsrv.Source, string, error) {
		l := localstate.Open(s)
		return localSource(l), l.Path, nil
	},
	kubestate.Spec.Name: func(ctx context.Context, s model.Settings) (bootsrv.Source, string, error) {
		kb, err := kubestate.Open(s)
		if err != nil {
			return nil, "", err
		}
		// The cluster's Secrets, followed by an informer: every replica serves the same
		// bytes, and requests never reach the apiserver.
		ks, err := kubesource.New(kb.Client(), kb.Namespace())
		if err != nil {
			return nil, "", fmt.Errorf("following the state in namespace %s: %w", kb.Namespace(), err)
		}
		if err := ks.Start(ctx, time.Minute); err != nil {
			return nil, "", err
		}
		return ks, "kubernetes:" + kb.Namespace(), nil
	},
}

// localSource follows the local state l.
func localSource(l *localstate.Local) bootsrv.Source {
	return bootsrv.FileSource{Path: l.Path, Read: l.Served}
}
