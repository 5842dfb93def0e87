package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/bootsrv/kubesource"
	"github.com/mcpfleet/mcp/config"
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
// state backends and boot-server sources. Each part declares itself once, here (its spec:
// the name a configuration gives it, its settings, its constructor; a state backend also the
// boot source `mcp serve` follows in it); the engine and the configuration language read the
// specs and know no part by name. A new provider is its package and a line here.

// parts are the providers and state backends of this build.
var parts = buildParts{
	Providers: []providers.Spec{local.Spec, kubernetes.Spec},
	// The first backend is the one a configuration without a state block uses.
	Backends: []backendPart{
		{BackendSpec: localstate.Spec, Boot: localBoot},
		{BackendSpec: kubestate.Spec, Boot: kubeBoot},
	},
	// The pools' alert gates ask Prometheus through its own API client.
	Alerts: alerts.Prometheus{},
}

// buildParts are the parts of a build. The engine is given engine.Parts (Engine), which
// carries no boot source: the engine knows no boot server (internal/layering), so the type
// that joins a backend to its source lives here, with the only code that needs both.
type buildParts struct {
	Providers []providers.Spec
	Backends  []backendPart
	Alerts    engine.AlertSource
}

// backendPart is a state backend: its spec, and what `mcp serve` follows in its state.
type backendPart struct {
	state.BackendSpec
	// Boot opens the boot server's source over the backend's state (settings s), and names
	// it for logs.
	Boot func(ctx context.Context, s model.Settings) (bootsrv.Source, string, error)
}

// Engine are the parts as the engine knows them.
func (p buildParts) Engine() engine.Parts {
	e := engine.Parts{Providers: p.Providers, Alerts: p.Alerts}
	for _, b := range p.Backends {
		e.Backends = append(e.Backends, b.BackendSpec)
	}
	return e
}

// Schemas are the blocks of the parts, for the configuration language.
func (p buildParts) Schemas() config.Schemas { return p.Engine().Schemas() }

// backend is the backend part named name, or nil.
func (p buildParts) backend(name string) *backendPart {
	for i := range p.Backends {
		if p.Backends[i].Name == name {
			return &p.Backends[i]
		}
	}
	return nil
}

// localBoot follows the local state file, as the state names it.
func localBoot(_ context.Context, s model.Settings) (bootsrv.Source, string, error) {
	l := localstate.Open(s)
	return localSource(l), l.Path, nil
}

// localSource follows the local state l: bootsrv's FileSource (a file replaced atomically,
// and a reader of what it names) reading it through the backend.
func localSource(l *localstate.Local) bootsrv.Source {
	return bootsrv.LocalSource(l)
}

// kubeBoot follows the cluster's Secrets with an informer: every replica serves the same
// bytes, and requests never reach the apiserver.
func kubeBoot(ctx context.Context, s model.Settings) (bootsrv.Source, string, error) {
	kb, err := kubestate.Open(s)
	if err != nil {
		return nil, "", err
	}
	ks, err := kubesource.New(kb.Client(), kb.Namespace())
	if err != nil {
		return nil, "", fmt.Errorf("following the state in namespace %s: %w", kb.Namespace(), err)
	}
	if err := ks.Start(ctx, time.Minute); err != nil {
		return nil, "", err
	}
	return ks, "kubernetes:" + kb.Namespace(), nil
}
