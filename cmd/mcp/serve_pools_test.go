package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
	"github.com/mcpfleet/mcp/testkit/serveurl"
)

// serveInProcess starts `mcp serve` in-process with args and returns its URL; it is
// stopped at the test's end.
func serveInProcess(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"-chdir=" + dir, "serve", "-listen", "127.0.0.1:0", "-poll", "50ms"}, args...), strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-done })
	return serveurl.Wait(t, pr)
}

// httpGet answers GET url with accept: status and body.
func httpGet(t *testing.T, url, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFreshServeServesTheOtherPools: a state one of whose pools points at a rendered config
// the boot server cannot serve (stored before render refused it: a link on the first-boot
// record's way) does not stop a freshly started mcp serve: the other pool's config is
// served, the bad pool answers 503 saying why, /readyz is 200 naming it, and the metrics
// say which pool is not served.
func TestFreshServeServesTheOtherPools(t *testing.T) {
	d := &model.Desired{Pools: []model.Pool{{Name: "worker"}},
		Configs: []model.Config{{Name: "10-motd", Pools: []string{"worker"},
			Files: []model.File{{Entry: model.Entry{Path: "/etc/motd"}, Mode: 0o644, Contents: []byte("hello\n")}}}}}
	out, diags := planner.Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	good := out["worker"]
	bad := &model.Rendered{Pool: "infra", IgnitionVersion: "3.4.0",
		Links: []model.Link{{Entry: model.Entry{Path: "/var/lib"}, Target: "../etc/fakelib"}},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/fakelib/mcp/desired"}, Mode: 0o644, Contents: []byte(good.Name + "\n")}}}
	bad.Name = content.Name(bad)
	dir := t.TempDir()
	st := state.New()
	st.Rendered[good.Name], st.Rendered[bad.Name] = good, bad
	st.Pointers["worker"], st.Pointers["infra"] = good.Name, bad.Name
	if err := (&localstate.Local{Path: filepath.Join(dir, "mcp.state")}).Write(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	url := serveInProcess(t, dir, "-state", "mcp.state")
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, body = httpGet(t, url+"/config/worker", bootsrv.IgnitionAccept); code == 200 {
			break
		}
	}
	if code != 200 || !strings.Contains(body, "/etc/motd") {
		t.Fatalf("/config/worker: %d %s", code, body)
	}
	if code, body := httpGet(t, url+"/config/infra", bootsrv.IgnitionAccept); code != 503 ||
		!strings.Contains(body, "pool infra: its config "+bad.Name+" cannot be served") || !strings.Contains(body, "file path includes link in config") {
		t.Errorf("/config/infra: %d %s", code, body)
	}
	if code, body := httpGet(t, url+"/readyz", ""); code != 200 || !strings.Contains(body, "pool infra:") {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if _, body := httpGet(t, url+"/metrics", ""); !strings.Contains(body, `mcp_bootsrv_pool_served{pool="infra"} 0`) ||
		!strings.Contains(body, `mcp_bootsrv_pool_served{pool="worker"} 1`) {
		t.Errorf("metrics do not say which pool is not served:\n%s", body)
	}
}
