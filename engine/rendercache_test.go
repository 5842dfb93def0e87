package engine

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/config"
)

// The quickstart loaded twice alike renders once; with a variable changing a file it
// renders again, and its configs differ.
func TestRenderCacheRendersAlikeOnce(t *testing.T) {
	var cache RenderCache
	dir := "../examples/quickstart"
	a, _, diags := RenderShared(dir, config.Options{}, localParts, &cache)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b, _, _ := RenderShared(dir, config.Options{}, localParts, &cache)
	if len(a.Rendered) == 0 || len(cache.m) != 1 {
		t.Fatalf("%d rendered, %d in the cache", len(a.Rendered), len(cache.m))
	}
	for pool, r := range a.Rendered {
		if b.Rendered[pool] != r {
			t.Errorf("pool %s rendered twice", pool)
		}
	}
	c, _, diags := RenderShared(dir, config.Options{Values: map[string]cty.Value{"ntp_server": cty.StringVal("ntp.other.example")}}, localParts, &cache)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(cache.m) != 2 || c.Rendered["worker"].Name == a.Rendered["worker"].Name {
		t.Errorf("another value rendered alike: %d in the cache", len(cache.m))
	}
}
