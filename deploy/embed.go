// Package deploy holds mcp's Kubernetes manifests (README.md says how to apply them) and
// embeds them, so the acceptance tests apply exactly the files users apply.
package deploy

import "embed"

// Manifests are the *.yaml files of this directory; applied in the order of their names
// (the namespace first), as `kubectl apply -f deploy/` does.
//
//go:embed [0-9]*.yaml
var Manifests embed.FS

// FleetLock is deploy/fleetlock, the opt-in identity of `mcp serve -fleetlock`.
//
//go:embed fleetlock/rbac.yaml
var FleetLock embed.FS
