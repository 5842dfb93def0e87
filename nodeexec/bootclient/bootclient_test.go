package bootclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/endless"
)

// TestFetchRendered: the config the server holds under the name is fetched; a missing one,
// one the server answers with under another name, and no server at all are errors that say
// what was asked of whom.
func TestFetchRendered(t *testing.T) {
	held := map[string]*model.Rendered{
		"rendered-worker-1": {Name: "rendered-worker-1", Pool: "worker"},
		"rendered-worker-2": {Name: "rendered-worker-1", Pool: "worker"}, // a server that lies
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc, ok := held[strings.TrimPrefix(r.URL.Path, "/rendered/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(rc)
	}))
	defer srv.Close()
	ctx := context.Background()
	if r, err := FetchRendered(ctx, nil, srv.URL+"/", "rendered-worker-1"); err != nil || r.Name != "rendered-worker-1" {
		t.Errorf("held config: %+v, %v", r, err)
	}
	for name, want := range map[string]string{
		"rendered-worker-0": "/rendered/rendered-worker-0: 404 Not Found",
		"rendered-worker-2": `the server answered with rendered config "rendered-worker-1"`,
	} {
		if _, err := FetchRendered(ctx, srv.Client(), srv.URL, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
	if _, err := FetchRendered(ctx, nil, "", "rendered-worker-1"); err == nil || !strings.Contains(err.Error(), "no boot server URL given") {
		t.Errorf("no server: got %v", err)
	}
}

// TestEndlessAnswerIsRefused: a server whose answer never ends is an error naming what was
// fetched and the bound, at the bound.
func TestEndlessAnswerIsRefused(t *testing.T) {
	s := endless.Server(t, "application/json", `{"name":"rendered-worker-1","pool":"worker","files":[`, `{"path":"/etc/a","contents":"eA=="},`)
	_, err := FetchRendered(context.Background(), s.Client(), s.URL, "rendered-worker-1")
	if err == nil || !strings.Contains(err.Error(), s.URL+"/rendered/rendered-worker-1") || !strings.Contains(err.Error(), "larger than 64 MiB") {
		t.Errorf("error %v, want it to name the URL and the bound (64 MiB)", err)
	}
}
