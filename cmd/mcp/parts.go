package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/providers/kubernetes/kubesource"
	"github.com/mcpfleet/mcp/providers/kubernetes/kubestate"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// This file is mcp's composition root: the only place that names the concrete providers,
// state backends and boot-server sources. The engine and the boot server know their
// interfaces alone.

// parts are the providers and state backends of this build, by the name a configuration
// gives them.
var parts = engine.Parts{
	Providers: map[string]func(string, map[string]string) (providers.Provider, error){
		"local":      provider(local.FromAttrs),
		"kubernetes": provider(kubernetes.FromAttrs),
	},
	Backends: map[string]func(string, model.StateConfig) (state.Backend, error){
		"local": backend(localstate.FromConfig),
		"kubernetes": backend(func(_ string, c model.StateConfig) (*kubestate.Backend, error) {
			return kubestate.Open(c.Attrs)
		}),
	},
}

// bootSources give, per state backend, what `mcp serve` follows, and a name for it in logs.
var bootSources = map[string]func(ctx context.Context, dir string, c model.StateConfig) (bootsrv.Source, string, error){
	"local": func(_ context.Context, dir string, c model.StateConfig) (bootsrv.Source, string, error) {
		l, _ := localstate.FromConfig(dir, c)
		return localSource(l), l.Path, nil
	},
	"kubernetes": func(ctx context.Context, _ string, c model.StateConfig) (bootsrv.Source, string, error) {
		kb, err := kubestate.Open(c.Attrs)
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

// provider and backend adapt a constructor of a concrete type to the engine's table (and
// keep a failed constructor's nil pointer from becoming a non-nil interface).
func provider[P providers.Provider](f func(string, map[string]string) (P, error)) func(string, map[string]string) (providers.Provider, error) {
	return func(dir string, attrs map[string]string) (providers.Provider, error) {
		p, err := f(dir, attrs)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

func backend[B state.Backend](f func(string, model.StateConfig) (B, error)) func(string, model.StateConfig) (state.Backend, error) {
	return func(dir string, c model.StateConfig) (state.Backend, error) {
		b, err := f(dir, c)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}
