package engine

import (
	"reflect"
	"sync"

	"github.com/mcpfleet/mcp/providers"
)

// adapted is a workspace's provider with its optional capabilities resolved
// (providers.Adapt): the engine reaches every capability, and its fallback, through it.
type adapted struct {
	mu sync.Mutex
	a  *providers.Adapter
}

// provider is w.Provider resolved once, and again only when Provider was set to another.
func (w *Workspace) provider() *providers.Adapter {
	w.adapted.mu.Lock()
	defer w.adapted.mu.Unlock()
	if w.adapted.a == nil || !same(w.adapted.a.Provider, w.Provider) {
		w.adapted.a = providers.Adapt(w.Provider)
	}
	return w.adapted.a
}

// same says whether a and b are one provider; a value of a type that cannot be compared
// is taken as another (resolving it again costs a few type assertions).
func same(a, b providers.Provider) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t != nil && t.Comparable() && a == b
}
