package bootsrv

import (
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// unservable is a rendered config of pool an older mcp could store and Ignition refuses
// once the boot server adds the first-boot record: a link on the record's way
// ("file path includes link in config").
func unservable(pool string) *model.Rendered {
	r := &model.Rendered{Pool: pool, IgnitionVersion: "3.4.0",
		Links: []model.Link{{Entry: model.Entry{Path: "/var/lib"}, Target: "../etc/fakelib"}},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/fakelib/mcp/desired"}, Mode: 0o644, Contents: []byte("rendered-worker-0\n")}}}
	r.Name = content.Name(r)
	return r
}

// TestOnePoolsBadConfigLeavesTheOthersServed: a snapshot with one pool whose config cannot
// be served is built all the same: that pool answers 503 with the reason, /readyz is 200
// and names it, mcp_bootsrv_pool_served says which, and every other pool is served.
// With no pool servable, /readyz is 503.
func TestOnePoolsBadConfigLeavesTheOthersServed(t *testing.T) {
	good, bad := rendered(t, "worker", "hello\n"), unservable("infra")
	s := serverWith(t, good, bad)
	if rec := get(t, s, "GET", "/config/worker", "Accept", ign36); rec.Code != 200 || !strings.Contains(rec.Body.String(), content.FirstBootPath) {
		t.Errorf("the good pool: %d %s", rec.Code, rec.Body)
	}
	rec := get(t, s, "GET", "/config/infra", "Accept", ign36)
	if body := rec.Body.String(); rec.Code != 503 || !strings.Contains(body, "pool infra: its config "+bad.Name+" cannot be served") ||
		!strings.Contains(body, "file path includes link in config") {
		t.Errorf("the bad pool: %d %s", rec.Code, body)
	}
	if rec := get(t, s, "HEAD", "/config/infra"); rec.Code != 503 {
		t.Errorf("HEAD of the bad pool: %d", rec.Code)
	}
	if rec := get(t, s, "GET", "/rendered/"+good.Name); rec.Code != 200 {
		t.Errorf("the good pool's rendered config: %d", rec.Code)
	}
	rec = get(t, s, "GET", "/readyz")
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, "pool infra:") || strings.Contains(body, "pool worker") {
		t.Errorf("/readyz: %d %s", rec.Code, body)
	}
	metrics := get(t, s, "GET", "/metrics").Body.String()
	for _, want := range []string{`mcp_bootsrv_pool_served{pool="infra"} 0`, `mcp_bootsrv_pool_served{pool="worker"} 1`,
		`mcp_bootsrv_requests_total{code="503",endpoint="config",pool="infra"} `} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	if rec := get(t, serverWith(t, bad), "GET", "/readyz"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "pool infra:") {
		t.Errorf("/readyz with no pool servable: %d %s", rec.Code, rec.Body)
	}
}
