package bootsrv

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// FuzzParseHead: whatever the boot request path parses itself, fasthttp parses the same
// way (method, path, the headers answer reads, Connection: close). Anything else goes to
// fasthttp, so this is what makes the two paths give the same answers.
func FuzzParseHead(f *testing.F) {
	for _, h := range []string{
		"GET /config/worker HTTP/1.1\r\nHost: x\r\nAccept: " + ign36 + "\r\n\r\n",
		"HEAD /rendered/rendered-worker-1 HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"abc\"\r\nConnection: close\r\n\r\n",
		"GET /config/worker HTTP/1.1\r\nhost: x\r\naccept:  a/b ;q=1 \t\r\nAUTHORIZATION: Bearer t\r\nConnection: Keep-Alive\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /healthz HTTP/1.1\r\n\r\n",
		"GET /config/a.b HTTP/1.1\r\nX-Y: \r\nHost: h\r\n\r\n",
		"GET /config/w%6Frker HTTP/1.1\r\n\r\n",
		"GET /config/../x HTTP/1.1\r\n\r\n",
		"GET /config/worker?x=1 HTTP/1.1\r\n\r\n",
		"GET http://x/config/worker HTTP/1.1\r\n\r\n",
		"POST /config/worker HTTP/1.1\r\nContent-Length: 1\r\n\r\n",
		"GET /config/worker HTTP/1.0\r\n\r\n",
		"GET /config/worker HTTP/1.1\r\nAccept: a\r\nAccept: b\r\n\r\n",
		"GET /config/worker HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"GET /config/worker HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /config/worker HTTP/1.1\r\nConnection: close, upgrade\r\n\r\n",
	} {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end := bytes.Index(data, crlfcrlf)
		if end < 0 {
			return
		}
		head := data[:end+4]
		q, ok := parseHead(head)
		if !ok {
			return
		}
		var req fasthttp.Request
		if err := req.Read(bufio.NewReader(bytes.NewReader(head))); err != nil {
			t.Fatalf("parsed %q, which fasthttp refuses: %v", head, err)
		}
		h := &req.Header
		for _, c := range []struct{ what, ours, theirs string }{
			{"method", q.method, string(h.Method())},
			{"path", q.path, string(req.URI().Path())},
			{"Accept", q.accept, string(h.Peek("Accept"))},
			{"If-None-Match", q.ifNoneMatch, string(h.Peek("If-None-Match"))},
			{"Authorization", q.authorization, string(h.Peek("Authorization"))},
		} {
			if c.ours != c.theirs {
				t.Errorf("%q: %s %q here, %q in fasthttp", head, c.what, c.ours, c.theirs)
			}
		}
		if q.close != h.ConnectionClose() {
			t.Errorf("%q: Connection: close %v here, %v in fasthttp", head, q.close, h.ConnectionClose())
		}
		if (q.method == "HEAD") != req.Header.IsHead() {
			t.Errorf("%q: HEAD %v here, %v in fasthttp", head, q.method == "HEAD", req.Header.IsHead())
		}
	})
}

// TestOneConnectionBothPaths: pipelined requests on one connection are answered in order,
// those of the boot form by the boot request path, and from the first one outside it (a
// POST with a body, split across writes) on by fasthttp, with the bytes already read.
func TestOneConnectionBothPaths(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "hello\n"))
	c, err := net.Dial("tcp", strings.TrimPrefix(wire(t, s), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	get := "GET /config/worker HTTP/1.1\r\nHost: x\r\nAccept: " + ign36 + "\r\n\r\n"
	io.WriteString(c, get+"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"+get+"POST /config/worker HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab")
	time.Sleep(50 * time.Millisecond)
	io.WriteString(c, "cde"+get+"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(c)
	want := []struct {
		method string
		code   int
		body   string
	}{{"GET", 200, "hello"}, {"HEAD", 200, ""}, {"GET", 200, "hello"}, {"POST", 405, "method not allowed"}, {"GET", 200, "hello"}, {"GET", 200, "mcp_bootsrv_requests_total"}}
	for i, w := range want {
		resp, err := http.ReadResponse(br, &http.Request{Method: w.method})
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != w.code || !strings.Contains(string(b), w.body) {
			t.Errorf("answer %d: %d %.80q, want %d with %q", i, resp.StatusCode, b, w.code, w.body)
		}
		if w.method == "HEAD" && resp.ContentLength != 3 {
			t.Errorf("HEAD /healthz: Content-Length %d, want 3", resp.ContentLength)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close the connection stays open (%v)", err)
	}
}

// TestShutdownClosesWaitingConnections: at shutdown, kept-alive connections waiting for a
// request are closed at once, on either path, and Serve returns.
func TestShutdownClosesWaitingConnections(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	addr, cancel, done := serveLoopback(t, s)
	var open []*bufio.Reader
	for _, path := range []string{"/healthz", "/metrics"} { // the boot path, and fasthttp
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		open = append(open, br)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %v with only waiting connections", d)
	}
	for i, br := range open {
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("connection %d still open after shutdown (%v)", i, err)
		}
	}
}

// TestBootRequestsTakeTheBootPath: the requests Ignition and the agents send (Go's HTTP
// client, as both use) are of the boot form, so they never fall back to fasthttp.
func TestBootRequestsTakeTheBootPath(t *testing.T) {
	for _, tc := range []struct{ method, url string }{
		{"GET", "http://10.0.0.1:8080/config/worker"},
		{"HEAD", "http://boot.example:8080/config/infra"},
		{"GET", "http://[fd00::1]:8080/rendered/rendered-worker-0123abcd"},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		req.Header.Set("Accept", ign36)
		req.Header.Set("User-Agent", "Ignition/2.27.0")
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("Authorization", "Bearer abc.def")
		var b bytes.Buffer
		if err := req.Write(&b); err != nil {
			t.Fatal(err)
		}
		q, ok := parseHead(b.Bytes())
		if !ok || q.method != tc.method || q.accept != ign36 || q.authorization != "Bearer abc.def" {
			t.Errorf("%s %s falls back to fasthttp (%v, %+v):\n%s", tc.method, tc.url, ok, q, b.Bytes())
		}
	}
}

// TestHeaderBlockGrows: a request head past the first read buffer, within the limit, is
// still answered.
func TestHeaderBlockGrows(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	if rec := get(t, s, "GET", "/config/worker", "Accept", ign36, "X-Pad", strings.Repeat("a", 9000)); rec.Code != 200 {
		t.Errorf("a 9 KB header: %d", rec.Code)
	}
}

// TestBootPathAllocatesNothing: parsing a boot request, answering it, counting it and
// making the answer's head allocate nothing once the connection's buffers have grown.
func TestBootPathAllocatesNothing(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	req := []byte("GET /config/worker HTTP/1.1\r\nHost: boot:8080\r\nUser-Agent: Ignition/2.27.0\r\nAccept: " + ign36 + "\r\nAccept-Encoding: gzip\r\n\r\n")
	var fc fastConn
	serve := func() {
		q, ok := parseHead(req)
		if !ok {
			t.Fatal("not of the boot form")
		}
		start := time.Now()
		rp := s.answer(q.request)
		if rp.code != 200 || !bytes.HasPrefix(fc.head(q, rp, start), []byte("HTTP/1.1 200 OK\r\nDate: ")) {
			t.Fatalf("answer %d %q", rp.code, fc.out)
		}
		s.m.observe(rp.endpoint, rp.pool, rp.code, len(rp.body), time.Since(start))
	}
	serve()
	if n := testing.AllocsPerRun(1000, serve); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

func BenchmarkBootPath(b *testing.B) {
	s := serverWith(b, rendered(b, "worker", strings.Repeat("x", 40<<10)))
	req := []byte("GET /config/worker HTTP/1.1\r\nHost: boot:8080\r\nAccept: " + ign36 + "\r\n\r\n")
	var fc fastConn
	b.ReportAllocs()
	for b.Loop() {
		q, _ := parseHead(req)
		start := time.Now()
		rp := s.answer(q.request)
		fc.head(q, rp, start)
		s.m.observe(rp.endpoint, rp.pool, rp.code, len(rp.body), time.Since(start))
	}
}
