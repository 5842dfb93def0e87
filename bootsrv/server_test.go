package bootsrv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// rendered renders a pool's config through the real planner.
func rendered(t testing.TB, pool, content string, kargs ...string) *model.Rendered {
	t.Helper()
	d := &model.Desired{Pools: []model.Pool{{Name: pool, KernelArgs: kargs}},
		Configs: []model.Config{{Name: "10-x", Pools: []string{pool},
			Files: []model.File{{Entry: model.Entry{Path: "/etc/motd"}, Mode: 0o644, Contents: []byte(content)}}}}}
	out, diags := planner.Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return out[pool]
}

func serverWith(t testing.TB, rs ...*model.Rendered) *Server {
	t.Helper()
	ptr, byName := map[string]string{}, map[string]*model.Rendered{}
	for _, r := range rs {
		ptr[r.Pool], byName[r.Name] = r.Name, r
	}
	snap, err := Build(1, ptr, byName)
	if err != nil {
		t.Fatal(err)
	}
	s := New(prometheus.NewRegistry())
	s.Swap(snap)
	return s
}

// get answers a request through ServeHTTP and, over loopback, through the fasthttp server
// mcp serve runs; the two must give the same status, headers and body.
func get(t testing.TB, s *Server, method, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if path == "/metrics" {
		return rec
	}
	wreq, _ := http.NewRequest(method, wire(t, s)+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		wreq.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(wreq)
	if err != nil {
		t.Fatalf("%s %s over the wire: %v", method, path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != rec.Code || !bytes.Equal(body, rec.Body.Bytes()) {
		t.Errorf("%s %s: ServeHTTP %d %q, fasthttp %d %q", method, path, rec.Code, rec.Body, resp.StatusCode, body)
	}
	for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Cache-Control", "Vary", "Allow", "WWW-Authenticate", "X-Content-Type-Options"} {
		if a, b := rec.Header().Get(k), resp.Header.Get(k); a != b {
			t.Errorf("%s %s: %s is %q from ServeHTTP, %q from fasthttp", method, path, k, a, b)
		}
	}
	return rec
}

var (
	wiresMu sync.Mutex
	wires   = map[*Server]string{}
)

// wire serves s with Serve on a loopback port for the rest of the test.
func wire(t testing.TB, s *Server) string {
	t.Helper()
	wiresMu.Lock()
	defer wiresMu.Unlock()
	if u, ok := wires[s]; ok {
		return u
	}
	addr, cancel, done := serveLoopback(t, s)
	u := "http://" + addr
	wires[s] = u
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		wiresMu.Lock()
		delete(wires, s)
		wiresMu.Unlock()
	})
	return u
}

// serveLoopback runs s.Serve on a loopback port; cancel ends it, and done gets its result.
func serveLoopback(t testing.TB, s *Server) (addr string, cancel func(), done <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- s.Serve(ctx, ln, discardLog()) }()
	return ln.Addr().String(), cancel, ch
}

const ign36 = "application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1"

func TestNegotiation(t *testing.T) {
	plain := rendered(t, "worker", "hello\n")
	kargs := rendered(t, "infra", "hi\n", "nosmt") // kernelArguments: spec 3.3 or newer
	s := serverWith(t, plain, kargs)
	tests := []struct {
		name, pool, accept string
		code               int
		version            string // served spec, or a phrase of the 406 body
	}{
		{"ignition 2.27 asks 3.6", "worker", ign36, 200, "3.6.0"},
		{"ignition 2.24 asks 3.5", "worker", "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1", 200, "3.5.0"},
		{"old client asks 3.2, config fits", "worker", "application/vnd.coreos.ignition+json; version=3.2.0", 200, "3.2.0"},
		{"old client asks 3.0", "worker", "application/vnd.coreos.ignition+json;version=3.0.0", 200, "3.0.0"},
		{"newer spec than known is capped", "worker", "application/vnd.coreos.ignition+json;version=3.9.0", 200, "3.6.0"},
		{"no version: rendered spec", "worker", "*/*", 200, "3.4.0"},
		{"no header: rendered spec", "worker", "", 200, "3.4.0"},
		{"kargs need 3.3, client has 3.2", "infra", "application/vnd.coreos.ignition+json;version=3.2.0", 406, "needs spec 3.3.0 or newer"},
		{"kargs fit 3.3", "infra", "application/vnd.coreos.ignition+json;version=3.3.0", 200, "3.3.0"},
		{"spec 2 client", "worker", "application/vnd.coreos.ignition+json;version=2.2.0", 406, "accepts only 2.2.0"},
		{"q=0 refuses", "worker", "application/vnd.coreos.ignition+json;version=3.6.0;q=0", 406, "accepts neither"},
		{"html only", "worker", "text/html", 406, "accepts neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, s, "GET", "/config/"+tt.pool, "Accept", tt.accept)
			if rec.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if tt.code == 406 {
				if !strings.Contains(rec.Body.String(), tt.version) {
					t.Errorf("406 body %q lacks %q", rec.Body, tt.version)
				}
				return
			}
			var doc struct{ Ignition struct{ Version string } }
			json.Unmarshal(rec.Body.Bytes(), &doc)
			if doc.Ignition.Version != tt.version || !strings.HasSuffix(rec.Header().Get("Content-Type"), "version="+tt.version) {
				t.Errorf("served %s (%s), want %s", doc.Ignition.Version, rec.Header().Get("Content-Type"), tt.version)
			}
		})
	}
}

func TestRoutesMethodsAndCaching(t *testing.T) {
	r := rendered(t, "worker", "hello\n")
	s := serverWith(t, r)
	if rec := get(t, s, "GET", "/config/nope", "Accept", ign36); rec.Code != 404 || strings.Contains(rec.Body.String(), "worker") {
		t.Errorf("unknown pool: %d %q", rec.Code, rec.Body)
	}
	if rec := get(t, s, "GET", "/rendered/rendered-x-0"); rec.Code != 404 {
		t.Errorf("unknown rendered config: %d", rec.Code)
	}
	if rec := get(t, s, "POST", "/config/worker"); rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", rec.Code, rec.Header())
	}
	head := get(t, s, "HEAD", "/config/worker", "Accept", ign36)
	full := get(t, s, "GET", "/config/worker", "Accept", ign36)
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != fmt.Sprint(full.Body.Len()) {
		t.Errorf("HEAD: %d, %d bytes, length %s (GET %d)", head.Code, head.Body.Len(), head.Header().Get("Content-Length"), full.Body.Len())
	}
	rec := get(t, s, "GET", "/rendered/"+r.Name)
	var back model.Rendered
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &back) != nil || back.Name != r.Name ||
		!strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("rendered: %d %v", rec.Code, rec.Header())
	}
	// Each file's content once: its contents, and no Ignition config carrying them again.
	if strings.Contains(rec.Body.String(), `"ignition":`) || strings.Count(rec.Body.String(), base64.StdEncoding.EncodeToString([]byte("hello\n"))) != 1 {
		t.Errorf("rendered config served with its content twice: %s", rec.Body)
	}
	if again := get(t, s, "GET", "/rendered/"+r.Name, "If-None-Match", rec.Header().Get("ETag")); again.Code != 304 {
		t.Errorf("If-None-Match: %d, want 304", again.Code)
	}
	if rec := get(t, s, "GET", "/readyz"); rec.Code != 200 {
		t.Errorf("readyz: %d", rec.Code)
	}
	if rec := get(t, New(nil), "GET", "/readyz"); rec.Code != 503 {
		t.Errorf("readyz before any config: %d", rec.Code)
	}
	if rec := get(t, s, "GET", "/metrics"); !strings.Contains(rec.Body.String(), `mcp_bootsrv_requests_total{code="404",endpoint="config",pool=""}`) {
		t.Errorf("metrics:\n%s", rec.Body)
	}
}

func TestBearerToken(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	s.Token = "s3cret"
	if rec := get(t, s, "GET", "/config/worker"); rec.Code != 401 {
		t.Errorf("no token: %d", rec.Code)
	}
	if rec := get(t, s, "GET", "/config/worker", "Authorization", "Bearer wrong"); rec.Code != 401 {
		t.Errorf("wrong token: %d", rec.Code)
	}
	if rec := get(t, s, "GET", "/config/worker", "Authorization", "Bearer s3cret"); rec.Code != 200 {
		t.Errorf("right token: %d", rec.Code)
	}
	if rec := get(t, s, "GET", "/healthz"); rec.Code != 200 {
		t.Errorf("healthz needs no token: %d", rec.Code)
	}
}

// TestIfNoneMatch: RFC 9110 §13.1.2. "*" matches any current representation, a list
// matches when one of its tags does, and the comparison is weak: W/"x" matches "x".
// Preconditions apply only to what would otherwise be a 2xx.
func TestIfNoneMatch(t *testing.T) {
	r := rendered(t, "worker", "hello\n")
	s := serverWith(t, r)
	etag := get(t, s, "GET", "/config/worker", "Accept", ign36).Header().Get("ETag")
	rendered := get(t, s, "GET", "/rendered/"+r.Name).Header().Get("ETag")
	if etag == "" || rendered == "" || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("ETags %q and %q", etag, rendered)
	}
	bare := strings.Trim(etag, `"`)
	tests := []struct {
		name, path, ifNoneMatch string
		code                    int
	}{
		{"star", "/config/worker", "*", 304},
		{"star on a rendered config", "/rendered/" + r.Name, "*", 304},
		{"star on a missing pool", "/config/nope", "*", 404},
		{"star on a missing rendered config", "/rendered/rendered-x-0", "*", 404},
		{"the ETag", "/config/worker", etag, 304},
		{"a list holding it", "/config/worker", `"a", ` + etag + `,"b"`, 304},
		{"a list without spaces", "/config/worker", `"a",` + etag, 304},
		{"weak", "/config/worker", "W/" + etag, 304},
		{"weak in a list", "/config/worker", `W/"a" , W/` + etag, 304},
		{"another tag", "/config/worker", `"a"`, 200},
		{"another weak tag", "/config/worker", `W/"a"`, 200},
		{"the tag unquoted", "/config/worker", bare, 200},
		{"the tag inside another", "/config/worker", `"x` + bare + `"`, 200},
		{"the tag glued to garbage", "/config/worker", `x` + etag, 200},
		{"a star inside a tag", "/config/worker", `"*"`, 200},
		{"the rendered config's tag on the pool", "/config/worker", rendered, 200},
		{"empty list members", "/config/worker", ", ," + etag, 304},
	}
	for _, tt := range tests {
		for _, method := range []string{"GET", "HEAD"} {
			t.Run(tt.name+" "+method, func(t *testing.T) {
				rec := get(t, s, method, tt.path, "Accept", ign36, "If-None-Match", tt.ifNoneMatch)
				if rec.Code != tt.code {
					t.Errorf("If-None-Match %s: %d, want %d", tt.ifNoneMatch, rec.Code, tt.code)
				}
				if rec.Code == 304 && (rec.Body.Len() != 0 || rec.Header().Get("ETag") == "") {
					t.Errorf("304 with %d bytes of body and ETag %q", rec.Body.Len(), rec.Header().Get("ETag"))
				}
			})
		}
	}
	s.Token = "t"
	if rec := get(t, s, "GET", "/config/worker", "If-None-Match", "*"); rec.Code != 401 {
		t.Errorf("If-None-Match * without the token: %d, want 401", rec.Code)
	}
}

// TestBearerSchemeIgnoresCase: RFC 9110 §11.1, the scheme is case-insensitive and
// separated from the token by one or more spaces.
func TestBearerSchemeIgnoresCase(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	s.Token = "s3cret"
	for _, tt := range []struct {
		header string
		code   int
	}{
		{"Bearer s3cret", 200},
		{"bearer s3cret", 200},
		{"BEARER s3cret", 200},
		{"bEaReR s3cret", 200},
		{"Bearer   s3cret", 200},
		{"bearer S3CRET", 401}, // the token is compared exactly
		{"bearer wrong", 401},
		{"Bearers3cret", 401},
		{"Basic s3cret", 401},
		{"Bearer", 401},
		{"Bearer ", 401},
		{"s3cret", 401},
	} {
		if rec := get(t, s, "GET", "/config/worker", "Authorization", tt.header); rec.Code != tt.code {
			t.Errorf("Authorization %q: %d, want %d", tt.header, rec.Code, tt.code)
		}
	}
}

// TestRevalidationAllocatesNothing: the If-None-Match and Authorization parsing keeps the
// boot path free of allocations, for a 304 as for a 200.
func TestRevalidationAllocatesNothing(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	s.Token = "s3cret"
	etag := get(t, s, "GET", "/config/worker", "Accept", ign36, "Authorization", "Bearer s3cret").Header().Get("ETag")
	req := []byte("GET /config/worker HTTP/1.1\r\nHost: boot:8080\r\nAccept: " + ign36 +
		"\r\nAuthorization: bearer s3cret\r\nIf-None-Match: W/\"a\", W/" + etag + "\r\n\r\n")
	var fc fastConn
	serve := func() {
		q, ok := parseHead(req)
		if !ok {
			t.Fatal("not of the boot form")
		}
		start := time.Now()
		rp := s.answer(q.request)
		if rp.code != 304 {
			t.Fatalf("answer %d", rp.code)
		}
		fc.head(q, rp, start)
		s.m.observe(rp.endpoint, rp.pool, rp.code, len(rp.body), time.Since(start))
	}
	serve()
	if n := testing.AllocsPerRun(1000, serve); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

// TestHammerWhilePointersMove: clients fetch /config/worker while apply-like writers store
// new rendered configs and move the pointer through the real local state backend; every
// answer is a complete, valid config of one of the rendered configs.
func TestHammerWhilePointersMove(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &localstate.Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	st := state.New()
	versions := map[string]bool{}
	var vmu sync.Mutex
	publish := func(i int) {
		r := rendered(t, "worker", fmt.Sprintf("version %d\n", i))
		pc, err := preparePool("p", r, ignition.ServeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vmu.Lock()
		versions[string(pc.byMinor[4].data)] = true
		vmu.Unlock()
		st.Rendered[r.Name] = r
		st.Pointers["worker"] = r.Name
		st.Serial++
		if err := b.Write(ctx, st); err != nil {
			t.Error(err)
		}
	}
	publish(0)
	srv := New(nil)
	snap, err := fileSource(b).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Swap(snap)
	go Follow(ctx, srv, fileSource(b), time.Millisecond, discardLog())
	url := wire(t, srv)

	var wg sync.WaitGroup
	var requests, bad atomic.Int64
	stop := make(chan struct{})
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", url+"/config/worker", nil)
				req.Header.Set("Accept", "application/vnd.coreos.ignition+json;version=3.4.0")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				requests.Add(1)
				vmu.Lock()
				ok := resp.StatusCode == 200 && versions[string(body)]
				vmu.Unlock()
				if !ok {
					bad.Add(1)
					t.Errorf("bad answer during pointer moves: %d %q", resp.StatusCode, body)
					return
				}
			}
		}()
	}
	for i := 1; i <= 40; i++ {
		publish(i)
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if bad.Load() != 0 || requests.Load() < 100 {
		t.Errorf("%d requests, %d bad", requests.Load(), bad.Load())
	}
	for deadline := time.Now().Add(5 * time.Second); srv.Current().Serial != st.Serial && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.Current().Serial; got != st.Serial {
		t.Errorf("server at serial %d, state at %d", got, st.Serial)
	}
}

func FuzzServePath(f *testing.F) {
	s := serverWith(f, rendered(f, "worker", "x"))
	for _, p := range []string{"/config/worker", "/config/", "/rendered/../config/worker", "/config/worker/../../x", "/%00", "//config//worker", "/metrics"} {
		f.Add(p, ign36)
	}
	f.Fuzz(func(t *testing.T, path, accept string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t") {
			return
		}
		req := httptest.NewRequest("GET", "http://x/", nil)
		req.URL.Path = path
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code == 200 && strings.HasPrefix(path, "/config/") && path != "/config/worker" {
			t.Errorf("%q served a config", path)
		}
	})
}

func FuzzAccept(f *testing.F) {
	pc, err := preparePool("infra", rendered(f, "infra", "x", "nosmt"), ignition.ServeOptions{})
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range []string{ign36, "", "*/*", "application/vnd.coreos.ignition+json;version=3.2.0", "a/b;q=x;version=3.", ";;;,,,", "application/vnd.coreos.ignition+json;version=99999999999999999999.1.0"} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		b, why := pc.negotiate(accept)
		if (b == nil) == (why == "") {
			t.Errorf("accept %q: body %v and reason %q", accept, b != nil, why)
		}
	})
}

// TestFirstBootRecordServed: every spec a pool's config is served in carries the first-boot
// record (content.FirstBoot) naming the pool's rendered config and OS image, as a file its
// parser takes; the rendered config itself is served unchanged, under its content's name.
// A config that writes the record's path itself is refused.
func TestFirstBootRecordServed(t *testing.T) {
	d := &model.Desired{Pools: []model.Pool{{Name: "worker", OSImage: "quay.io/example/os:2"}},
		Configs: []model.Config{{Name: "10-x", Pools: []string{"worker"},
			Files: []model.File{{Entry: model.Entry{Path: "/etc/motd"}, Mode: 0o644, Contents: []byte("hi\n")}}}}}
	out, diags := planner.Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := out["worker"]
	s := serverWith(t, r)
	want := content.FirstBoot{Rendered: r.Name, OSImage: "quay.io/example/os:2"}
	for m := 0; m <= 6; m++ {
		accept := fmt.Sprintf("application/vnd.coreos.ignition+json;version=3.%d.0", m)
		rec := get(t, s, "GET", "/config/worker", "Accept", accept)
		if rec.Code != 200 {
			t.Fatalf("spec 3.%d: %d %s", m, rec.Code, rec.Body)
		}
		cfg, _, err := ignition.ParseAny(rec.Body.Bytes())
		if err != nil {
			t.Fatalf("spec 3.%d: %v", m, err)
		}
		var found bool
		for _, f := range cfg.Storage.Files {
			if f.Path != content.FirstBootPath {
				continue
			}
			found = true
			b64, ok := strings.CutPrefix(*f.Contents.Source, "data:;base64,")
			raw, err := base64.StdEncoding.DecodeString(b64)
			if !ok || err != nil {
				t.Fatalf("spec 3.%d: record source %q", m, *f.Contents.Source)
			}
			got, err := content.ParseFirstBoot(raw)
			if err != nil || got != want || *f.Mode != content.FirstBootMode || !*f.Overwrite {
				t.Errorf("spec 3.%d: record %+v (%v), mode %o, want %+v mode %o", m, got, err, *f.Mode, want, content.FirstBootMode)
			}
		}
		if !found {
			t.Errorf("spec 3.%d: no %s in %s", m, content.FirstBootPath, rec.Body)
		}
	}
	rec := get(t, s, "GET", "/rendered/"+r.Name)
	var back model.Rendered
	if err := json.Unmarshal(rec.Body.Bytes(), &back); err != nil || content.Check(&back) != nil ||
		strings.Contains(rec.Body.String(), "firstboot") {
		t.Errorf("the rendered config served changed: %v %s", err, rec.Body)
	}

	own := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0",
		Files: []model.File{{Entry: model.Entry{Path: content.FirstBootPath}, Mode: 0o600, Contents: []byte("x")}}}
	own.Name = content.Name(own)
	if rec := get(t, serverWith(t, own), "GET", "/config/worker"); rec.Code != 503 ||
		!strings.Contains(rec.Body.String(), "where the boot server puts the first-boot record") {
		t.Errorf("a config writing the record's path: %d %s", rec.Code, rec.Body)
	}
}

// A rendered config stored before anything was applied (no pool points anywhere: the
// target refresh publishes for agents to observe against) is served to agents; the
// pools' configs still answer 503 until a pool has one; a name not stored is 404.
func TestRenderedServedBeforeAnyPool(t *testing.T) {
	r := rendered(t, "worker", "x")
	snap, err := Build(0, nil, map[string]*model.Rendered{r.Name: r})
	if err != nil {
		t.Fatal(err)
	}
	s := New(nil)
	s.Swap(snap)
	if rec := get(t, s, "GET", "/rendered/"+r.Name); rec.Code != 200 || !strings.Contains(rec.Body.String(), r.Name) {
		t.Errorf("/rendered/%s before any pool: %d %s", r.Name, rec.Code, rec.Body)
	}
	if rec := get(t, s, "GET", "/rendered/rendered-worker-other"); rec.Code != 404 {
		t.Errorf("a name not stored, before any pool: %d, want 404", rec.Code)
	}
	if rec := get(t, s, "GET", "/config/worker"); rec.Code != 503 {
		t.Errorf("/config/worker before any pool: %d, want 503", rec.Code)
	}
}
