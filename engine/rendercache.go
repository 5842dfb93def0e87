package engine

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// RenderCache renders the pools of configurations that render alike once: the clusters of
// a fleet share their pools and configs, and most share their values, so most of their
// rendered configs are identical (docs/fleets.md). It is keyed by a digest of everything
// rendering reads of a configuration — the Ignition version, pools, configs and boot
// images, their places included (provenance) —, not of the provider or the state. The
// rendered configs it gives are shared between workspaces: read only, as every
// workspace's are. It serves the loads of one configuration directory (places outside
// the digest are alike there). Safe for concurrent use; the zero value is ready.
type RenderCache struct {
	mu sync.Mutex
	m  map[[32]byte]rendering
}

type rendering struct {
	rendered map[string]*model.Rendered
	diags    model.Diagnostics
}

// render is planner.Render of d, from the cache when a configuration rendered alike
// before (c nil: no cache).
func (c *RenderCache) render(d *model.Desired) (map[string]*model.Rendered, model.Diagnostics) {
	if c == nil {
		return planner.Render(d, ignition.Renderer{})
	}
	key, ok := renderKey(d)
	if ok {
		c.mu.Lock()
		r, hit := c.m[key]
		c.mu.Unlock()
		if hit {
			return r.rendered, r.diags
		}
	}
	rendered, diags := planner.Render(d, ignition.Renderer{})
	if ok {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[[32]byte]rendering{}
		}
		c.m[key] = rendering{rendered, diags}
		c.mu.Unlock()
	}
	return rendered, diags
}

// renderKey digests what rendering reads of d; ok is false when it cannot (then d is
// rendered afresh).
func renderKey(d *model.Desired) ([32]byte, bool) {
	b, err := json.Marshal(struct {
		IgnitionVersion string
		Pools           []model.Pool
		Configs         []model.Config
		BootImages      []model.BootImageDef
	}{d.IgnitionVersion, d.Pools, d.Configs, d.BootImages})
	if err != nil {
		return [32]byte{}, false
	}
	return sha256.Sum256(b), true
}
