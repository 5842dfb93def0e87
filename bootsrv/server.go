package bootsrv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Server answers from the current Snapshot. Serve is how mcp serve carries it: the boot
// request path (fastpath.go) and fasthttp for everything else, every answer a prepared
// byte slice, since it must keep up with a static-file server in a boot storm
// (docs/boot-server.md). ServeHTTP carries the same answers for embedding in a net/http
// server.
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
	// FleetLock, when set, answers the FleetLock protocol under /v1/ (bootsrv/fleetlock:
	// mcp serve -fleetlock).
	FleetLock http.Handler
	m         *metrics
}

// New returns a server that registers its metrics with reg (nil: none).
func New(reg prometheus.Registerer) *Server {
	return &Server{m: newMetrics(reg)}
}

// Swap puts a snapshot in service in one step.
func (s *Server) Swap(snap *Snapshot) {
	s.snap.Store(snap)
	s.m.pools(snap)
}

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
	if s.FleetLock != nil && strings.HasPrefix(r.URL.Path, "/v1/") {
		s.FleetLock.ServeHTTP(w, r)
		return
	}
	rp := s.answer(request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, accept: r.Header.Get("Accept"),
		ifNoneMatch: r.Header.Get("If-None-Match"), authorization: r.Header.Get("Authorization")})
	h := w.Header()
	for _, f := range rp.header {
		h.Set(f.key, f.value)
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

// FastHandler answers through fasthttp.
func (s *Server) FastHandler() fasthttp.RequestHandler {
	metricsHandler := fasthttpadaptor.NewFastHTTPHandler(s.m.handler)
	var fleetLock fasthttp.RequestHandler
	if s.FleetLock != nil {
		fleetLock = fasthttpadaptor.NewFastHTTPHandler(s.FleetLock)
	}
	return func(ctx *fasthttp.RequestCtx) {
		start := ctx.Time() // read by fasthttp as the request came in
		path := ctx.Path()
		if string(path) == "/metrics" {
			metricsHandler(ctx)
			s.m.observe("metrics", "", 200, 0, time.Since(start))
			return
		}
		if fleetLock != nil && bytes.HasPrefix(path, []byte("/v1/")) {
			fleetLock(ctx)
			return
		}
		// The request's bytes are read in place (answer keeps none of them) and the
		// prepared headers are set as they are: nothing is copied or allocated for them.
		h := &ctx.Request.Header
		rp := s.answer(request{method: unsafeString(h.Method()), path: unsafeString(path), query: unsafeString(ctx.URI().QueryString()), accept: unsafeString(h.Peek("Accept")),
			ifNoneMatch: unsafeString(h.Peek("If-None-Match")), authorization: unsafeString(h.Peek("Authorization"))})
		for _, f := range rp.header {
			ctx.Response.Header.SetCanonical(unsafeBytes(f.key), unsafeBytes(f.value)) // copied by fasthttp
		}
		ctx.SetStatusCode(rp.code)
		ctx.Response.SetBodyRaw(rp.body) // the snapshot's bytes are never written to
		n := len(rp.body)                // 0 for a 304
		if ctx.IsHead() {
			n = 0
		}
		s.m.observe(rp.endpoint, rp.pool, rp.code, n, time.Since(start))
	}
}

// Serve answers on ln until ctx ends, then closes the connections: at once those waiting
// for a request, within 5 seconds those answering one.
func (s *Server) Serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	lim := limits{read: or(s.ReadTimeout, 15*time.Second), idle: or(s.IdleTimeout, 2*time.Minute),
		write: 60 * time.Second, maxHeader: or(s.MaxHeaderBytes, 16<<10)}
	// fasthttp serves what the boot request path hands it, and TLS connections.
	fs := &fasthttp.Server{
		Handler:               s.FastHandler(),
		NoDefaultServerHeader: true,
		ReadTimeout:           lim.read,
		WriteTimeout:          lim.write,
		IdleTimeout:           lim.idle,
		ReadBufferSize:        lim.maxHeader,
		Logger:                printfLogger{log},
	}
	cs := &conns{open: map[*fastConn]struct{}{}}
	fs.ConnState = cs.connState
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		<-ctx.Done()
		ln.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cs.shutdown(sctx)
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				<-shut
				return nil
			}
			if !temporary(err) {
				return err
			}
			// Out of file descriptors, or a connection gone before it was accepted: wait
			// and go on, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Warn("accept", "error", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		fc := &fastConn{c: c}
		if tc, ok := c.(*net.TCPConn); ok {
			// A send buffer that holds a whole config: one writev hands the answer over.
			tc.SetWriteBuffer(256 << 10)
			if raw, err := tc.SyscallConn(); err == nil {
				fc.raw = raw
				fc.readFn, fc.writeFn = fc.rawRead, fc.rawWritev
			}
		}
		if !cs.add(fc) {
			c.Close()
			continue
		}
		go s.serveConn(fc, fs, lim, cs)
	}
}

func temporary(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.As(err, &ne) && ne.Timeout()
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
func unsafeBytes(s string) []byte  { return unsafe.Slice(unsafe.StringData(s), len(s)) }

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
