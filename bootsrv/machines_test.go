package bootsrv

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// machineServer serves pool worker's config (pool) with machine m-1 (MAC, UUID, hostname)
// on its own config (own), and m-2 (a MAC) on bad, which cannot be served.
func machineServer(t *testing.T, pool, own, bad *model.Rendered) *Server {
	t.Helper()
	st := Stored{Serial: 1, Pointers: map[string]string{"worker": pool.Name},
		Rendered: map[string]*model.Rendered{pool.Name: pool, own.Name: own, bad.Name: bad},
		Machines: map[string]model.MachinePointer{
			"m-1": {Pool: "worker", Rendered: own.Name, MACs: []string{"52:54:00:12:34:56"}, UUID: "4c4c4544-0042-3510-8054-b4c04f384d32", Hostname: "m-1.example.com"},
			"m-2": {Pool: "worker", Rendered: bad.Name, MACs: []string{"52:54:00:00:00:02"}},
		}}
	snap, err := BuildStored(st, ignition.ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(prometheus.NewRegistry())
	s.Swap(snap)
	return s
}

// A machine told apart by a selector in the config URL's query gets its own config, by
// any of its selectors and in either MAC form (iPXE's hexhyp gives hyphens); a request
// naming no machine — no query, an unknown MAC, an empty value a boot loader left, other
// parameters — gets the pool's; a malformed MAC, or selectors naming two machines, are a
// 400 with the reason; a machine whose config cannot be served answers 503 alone, the
// pool and the other machine served. Each answer carries its own ETag.
func TestConfigBySelectors(t *testing.T) {
	pool, own := rendered(t, "worker", "pool\n"), rendered(t, "worker", "m-1's own\n")
	bad := unservable("worker")
	s := machineServer(t, pool, own, bad)
	body := func(path string) (int, string, string) {
		rec := get(t, s, "GET", path, "Accept", ign36)
		return rec.Code, rec.Body.String(), rec.Header().Get("ETag")
	}
	_, poolBody, poolTag := body("/config/worker")
	if !strings.Contains(poolBody, "data:,pool") {
		t.Fatalf("the pool's config: %s", poolBody)
	}
	for _, q := range []string{"?mac=52:54:00:12:34:56", "?mac=52-54-00-12-34-56", "?mac=52-54-00-12-34-56&uuid=", "?uuid=4C4C4544-0042-3510-8054-B4C04F384D32",
		"?hostname=m-1.example.com", "?mac=52-54-00-12-34-56&hostname=m-1.example.com&arch=x86_64"} {
		code, b, tag := body("/config/worker" + q)
		if code != 200 || !strings.Contains(b, "m-1's%20own") || tag == poolTag {
			t.Errorf("%s: %d, ETag %s (pool's %s): %.200s", q, code, tag, poolTag, b)
		}
	}
	for _, q := range []string{"", "?mac=52:54:00:99:99:99", "?mac=", "?serial=x", "?hostname=other"} {
		if code, b, _ := body("/config/worker" + q); code != 200 || b != poolBody {
			t.Errorf("%q: %d, want the pool's config: %.200s", q, code, b)
		}
	}
	if code, b, _ := body("/config/worker?mac=52:54:zz"); code != 400 || !strings.Contains(b, `mac "52:54:zz" is not a MAC address`) {
		t.Errorf("malformed MAC: %d %s", code, b)
	}
	if code, b, _ := body("/config/worker?mac=52:54:00:12:34:56&mac=52:54:00:00:00:02"); code != 400 || !strings.Contains(b, "two machines") {
		t.Errorf("two machines: %d %s", code, b)
	}
	if code, b, _ := body("/config/worker?mac=52:54:00:00:00:02"); code != 503 || !strings.Contains(b, "cannot be served") {
		t.Errorf("the machine whose config cannot be served: %d %s", code, b)
	}
	if code, _, _ := body("/config/infra?mac=52:54:00:12:34:56"); code != 404 {
		t.Errorf("a machine's selector on another pool's URL: %d, want 404 (no such pool)", code)
	}
	if rec := get(t, s, "GET", "/config/worker?mac=52-54-00-12-34-56", "Accept", ign36, "If-None-Match", poolTag); rec.Code != 200 {
		t.Errorf("the pool's ETag revalidated the machine's config: %d", rec.Code)
	}
	if rec := get(t, s, "GET", "/readyz"); rec.Code != 200 {
		t.Errorf("/readyz with one machine's config unservable: %d %s", rec.Code, rec.Body)
	}
}
