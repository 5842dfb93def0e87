package bootsrv

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Server answers from the current Snapshot. Serve is how mcp serve carries it (fasthttp:
// every answer is a prepared byte slice, and this path must keep up with a static-file
// server in a boot storm, docs/benchmarks.md); ServeHTTP carries the same answers for
// embedding in a net/http server.
type Server struct {
	snap atomic.Pointer[Snapshot]
	// Token, when set, is required as "Authorization: Bearer <token>" on /config and
	// /rendered (an Ignition pointer config can send it).
	Token string
	// Limits for Serve, so a slow or hostile client cannot hold the server; zero values
	// take the defaults in brackets.
	ReadTimeout    time.Duration // to read a whole request, headers included [15s]
	IdleTimeout    time.Duration // a kept-alive connection waits for its next request [2m]
	MaxHeaderBytes int           // larger request headers get 431 [16 KiB]
	m              *metrics
}

// New returns a server that registers its metrics with reg (nil: none).
func New(reg prometheus.Registerer) *Server {
	return &Server{m: newMetrics(reg)}
}

// Swap puts a snapshot in service in one step.
func (s *Server) Swap(snap *Snapshot) { s.snap.Store(snap) }

// Current is the snapshot in service (nil before the first).
func (s *Server) Current() *Snapshot { return s.snap.Load() }

// ServeHTTP answers through net/http.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.URL.Path == "/metrics" {
		s.m.handler.ServeHTTP(w, r)
		s.m.observe("metrics", "", 200, 0, time.Since(start))
		return
	}
	rp := s.answer(request{method: r.Method, path: r.URL.Path, accept: r.Header.Get("Accept"),
		ifNoneMatch: r.Header.Get("If-None-Match"), authorization: r.Header.Get("Authorization")})
	h := w.Header()
	for _, kv := range rp.headers() {
		h.Set(kv[0], kv[1])
	}
	if rp.code != http.StatusNotModified {
		h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	}
	w.WriteHeader(rp.code)
	n := 0
	if r.Method != http.MethodHead {
		n, _ = w.Write(rp.body)
	}
	s.m.observe(rp.endpoint, rp.pool, rp.code, n, time.Since(start))
}

// headers are the reply's response headers but Content-Length, which each transport sets.
func (rp *reply) headers() [][2]string {
	out := make([][2]string, 0, 6)
	add := func(k, v string) {
		if v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	add("Content-Type", rp.contentType)
	add("ETag", rp.etag)
	add("Cache-Control", rp.cacheControl)
	add("Vary", rp.vary)
	add("Allow", rp.allow)
	add("WWW-Authenticate", rp.authenticate)
	if rp.nosniff {
		add("X-Content-Type-Options", "nosniff")
	}
	return out
}

// FastHandler answers through fasthttp.
func (s *Server) FastHandler() fasthttp.RequestHandler {
	metricsHandler := fasthttpadaptor.NewFastHTTPHandler(s.m.handler)
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		path := string(ctx.Path())
		if path == "/metrics" {
			metricsHandler(ctx)
			s.m.observe("metrics", "", 200, 0, time.Since(start))
			return
		}
		h := &ctx.Request.Header
		rp := s.answer(request{method: string(h.Method()), path: path, accept: string(h.Peek("Accept")),
			ifNoneMatch: string(h.Peek("If-None-Match")), authorization: string(h.Peek("Authorization"))})
		for _, kv := range rp.headers() {
			ctx.Response.Header.Set(kv[0], kv[1])
		}
		ctx.SetStatusCode(rp.code)
		ctx.Response.SetBodyRaw(rp.body) // the snapshot's bytes are never written to
		n := len(rp.body)
		if ctx.IsHead() || rp.code == http.StatusNotModified {
			n = 0
		}
		s.m.observe(rp.endpoint, rp.pool, rp.code, n, time.Since(start))
	}
}

// Serve answers on ln until ctx ends, then closes open connections within 5 seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	fs := &fasthttp.Server{
		Handler:               s.FastHandler(),
		NoDefaultServerHeader: true,
		ReadTimeout:           or(s.ReadTimeout, 15*time.Second),
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           or(s.IdleTimeout, 2*time.Minute),
		ReadBufferSize:        or(s.MaxHeaderBytes, 16<<10),
		CloseOnShutdown:       true,
		Logger:                printfLogger{log},
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			fs.ShutdownWithContext(sctx)
		case <-done:
		}
	}()
	return fs.Serve(sndbufListener{ln})
}

type printfLogger struct{ log *slog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Warn("http", "error", fmt.Sprintf(format, args...))
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// sndbufListener gives each connection a send buffer that holds a whole config, so one
// write hands the answer to the kernel instead of waiting on the socket in pieces.
type sndbufListener struct{ net.Listener }

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(256 << 10)
	}
	return c, err
}
