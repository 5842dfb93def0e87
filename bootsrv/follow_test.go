package bootsrv

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// storeOf is a local state holding rs, each its pool's pointer.
func storeOf(t *testing.T, rs ...*model.Rendered) *localstate.Local {
	t.Helper()
	b := &localstate.Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	st := state.New()
	for _, r := range rs {
		st.Rendered[r.Name] = r
		st.Pointers[r.Pool] = r.Name
	}
	if err := b.Write(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return b
}

// serving is a server on what src loads now, as mcp serve starts (Follow's first swap).
func serving(t *testing.T, src Source, prev *Server) *Server {
	t.Helper()
	snap, err := src.Load(context.Background())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	s := prev
	if s == nil {
		s = New(prometheus.NewRegistry())
	}
	swap(s, snap, discardLog())
	return s
}

// TestFileSourceRefusesChangedRenderedConfig: a stored rendered config edited after it was
// stored is not served: its pool answers 503 naming the file and why.
func TestFileSourceRefusesChangedRenderedConfig(t *testing.T) {
	r := rendered(t, "worker", "hello\n")
	b := storeOf(t, r)
	p := b.RenderedPath(r.Name)
	raw, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(raw, []byte(`"pool": "worker"`), []byte(`"pool": "worker", "os_image": "evil"`), 1), 0o644)
	rec := get(t, serving(t, fileSource(b), nil), "GET", "/config/worker", "Accept", ign36)
	if body := rec.Body.String(); rec.Code != 503 || !strings.Contains(body, p) || !strings.Contains(body, "does not match its content") {
		t.Fatalf("a changed rendered config: %d %s, want 503 naming %s", rec.Code, body, p)
	}
}

// TestOnePoolsDamagedStoreLeavesTheOthersServed: a freshly started server whose state holds
// one pool's rendered config damaged — gone, cut off, a FIFO, too large — serves every other
// pool, and that pool answers 503 naming the file; a damaged journal (which holds no
// pointer) stops no pool.
func TestOnePoolsDamagedStoreLeavesTheOthersServed(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		damage     func(p string)
	}{
		{"missing", "the store lacks it", func(p string) { os.Remove(p) }},
		{"cut off", "is not a rendered config", func(p string) { os.Truncate(p, 40) }},
		{"fifo", "named pipe", func(p string) { os.Remove(p); syscall.Mkfifo(p, 0o644) }},
		{"too large", "more than mcp reads", func(p string) { os.Truncate(p, model.MaxRenderedSize+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worker, infra := rendered(t, "worker", "hello\n"), rendered(t, "infra", "infra\n")
			b := storeOf(t, worker, infra)
			tc.damage(b.RenderedPath(infra.Name))
			os.WriteFile(b.Path+".journal", []byte("not a journal record\n"), 0o644)
			s := serving(t, fileSource(b), nil)
			if rec := get(t, s, "GET", "/config/worker", "Accept", ign36); rec.Code != 200 {
				t.Errorf("the other pool: %d %s", rec.Code, rec.Body)
			}
			if rec := get(t, s, "GET", "/rendered/"+worker.Name); rec.Code != 200 {
				t.Errorf("the other pool's rendered config: %d %s", rec.Code, rec.Body)
			}
			rec := get(t, s, "GET", "/config/infra", "Accept", ign36)
			if body := rec.Body.String(); rec.Code != 503 || !strings.Contains(body, "pool infra: its config "+infra.Name) || !strings.Contains(body, tc.want) {
				t.Errorf("the damaged pool: %d %s, want 503 saying %q", rec.Code, body, tc.want)
			}
			if rec := get(t, s, "GET", "/readyz"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "pool infra:") {
				t.Errorf("/readyz: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// TestServedConfigOutlivesItsDamagedFile: a server serving a pool's config keeps serving
// it when its file in the store is damaged later (the config is named by its content: the
// copy in service is it), while the other pools follow the state; a pool that moves to a
// config that does not read answers 503.
func TestServedConfigOutlivesItsDamagedFile(t *testing.T) {
	worker, infra := rendered(t, "worker", "hello\n"), rendered(t, "infra", "infra\n")
	b := storeOf(t, worker, infra)
	src := fileSource(b)
	s := serving(t, src, nil)
	before := get(t, s, "GET", "/config/infra", "Accept", ign36).Body.String()
	os.Truncate(b.RenderedPath(infra.Name), 40)
	worker2 := rendered(t, "worker", "hello again\n")
	st := state.New()
	st.Rendered[worker2.Name], st.Pointers["worker"], st.Pointers["infra"] = worker2, worker2.Name, infra.Name
	if err := b.Write(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	serving(t, src, s)
	if rec := get(t, s, "GET", "/config/infra", "Accept", ign36); rec.Code != 200 || rec.Body.String() != before {
		t.Errorf("the pool whose file was damaged: %d, same bytes %v", rec.Code, rec.Body.String() == before)
	}
	if rec := get(t, s, "GET", "/config/worker", "Accept", ign36); rec.Code != 200 || !strings.Contains(rec.Body.String(), "hello%20again") {
		t.Errorf("the pool that moved on: %d %s", rec.Code, rec.Body)
	}
	infra2 := rendered(t, "infra", "infra 2\n")
	st.Rendered[infra2.Name], st.Pointers["infra"] = infra2, infra2.Name
	if err := b.Write(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	os.Truncate(b.RenderedPath(infra2.Name), 40)
	serving(t, src, s)
	if rec := get(t, s, "GET", "/config/infra", "Accept", ign36); rec.Code != 503 || !strings.Contains(rec.Body.String(), infra2.Name) {
		t.Errorf("a pool moved to a config that does not read: %d %s", rec.Code, rec.Body)
	}
}

// fileSource is how mcp serve follows a local state.
func fileSource(b *localstate.Local) FileSource { return LocalSource(b) }

// failingSource's state changes at every check and never loads.
type failingSource struct{ n atomic.Int64 }

func (s *failingSource) Token() (string, error) { return strconv.FormatInt(s.n.Add(1), 10), nil }
func (s *failingSource) Load(context.Context) (*Snapshot, error) {
	return nil, errors.New("reading state: mcp.state is cut off")
}

// TestFollowLogsALoadErrorOnce: a state that keeps failing to load the same way is logged
// once, not at every poll (a server polling every 500ms logged the same error 170,000
// times a day).
func TestFollowLogsALoadErrorOnce(t *testing.T) {
	var logged bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	src := &failingSource{}
	done := make(chan struct{})
	go func() {
		Follow(ctx, New(prometheus.NewRegistry()), src, time.Millisecond, slog.New(slog.NewTextHandler(&logged, nil)))
		close(done)
	}()
	for src.n.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if n := strings.Count(logged.String(), "mcp.state is cut off"); n != 1 {
		t.Errorf("the load error is logged %d times:\n%s", n, logged.String())
	}
}
