package bootsrv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// TestFileSourceRefusesChangedRenderedConfig: a stored rendered config edited after it was
// stored is not served: Load fails naming the file (Follow then keeps the snapshot in
// service).
func TestFileSourceRefusesChangedRenderedConfig(t *testing.T) {
	ctx := context.Background()
	b := &localstate.Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	st := state.New()
	r := rendered(t, "worker", "hello\n")
	st.Rendered[r.Name] = r
	st.Pointers["worker"] = r.Name
	if err := b.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, err := fileSource(b).Load(ctx); err != nil {
		t.Fatal(err)
	}
	p := b.RenderedPath(r.Name)
	raw, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(raw, []byte(`"pool": "worker"`), []byte(`"pool": "worker", "os_image": "evil"`), 1), 0o644)
	_, err := fileSource(b).Load(ctx)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "does not match its content") {
		t.Fatalf("load with a changed rendered config: %v, want an error naming %s", err, p)
	}
}

// fileSource is how mcp serve follows a local state.
func fileSource(b *localstate.Local) FileSource { return FileSource{Path: b.Path, Read: b.Served} }
