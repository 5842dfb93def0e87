package clusters

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/model"
)

func TestSelect(t *testing.T) {
	res := &config.Result{Clusters: []model.Cluster{{Name: "canary"}, {Name: "prod-eu"}, {Name: "prod-us"}}}
	names := func(cs []model.Cluster) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	all, err := Select(res, nil)
	if err != nil || !cmp.Equal(names(all), []string{"canary", "prod-eu", "prod-us"}) {
		t.Errorf("Select(nil) = %v, %v", names(all), err)
	}
	// In the configuration's (stage) order, whatever the order of -cluster.
	some, err := Select(res, []string{"prod-us", "canary"})
	if err != nil || !cmp.Equal(names(some), []string{"canary", "prod-us"}) {
		t.Errorf("Select(prod-us, canary) = %v, %v", names(some), err)
	}
	_, err = Select(res, []string{"canary", "prd-eu"})
	if err == nil || !strings.Contains(err.Error(), `"canary", "prod-eu", "prod-us"`) || !strings.Contains(err.Error(), `Did you mean "prod-eu"?`) {
		t.Errorf("unknown cluster: %v", err)
	}
}
