package bootsrv

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Server answers from the current Snapshot.
type Server struct {
	snap atomic.Pointer[Snapshot]
	// Token, when set, is required as "Authorization: Bearer <token>" on /config and
	// /rendered (an Ignition pointer config can send it).
	Token string
	m     *metrics
}

// New returns a server that registers its metrics with reg (nil: none).
func New(reg prometheus.Registerer) *Server {
	return &Server{m: newMetrics(reg)}
}

// Swap puts a snapshot in service in one step.
func (s *Server) Swap(snap *Snapshot) { s.snap.Store(snap) }

// Current is the snapshot in service (nil before the first).
func (s *Server) Current() *Snapshot { return s.snap.Load() }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	endpoint, pool, code, n := s.serve(w, r)
	s.m.observe(endpoint, pool, code, n, time.Since(start))
}

// serve routes a request and reports what it answered, for the metrics.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) (endpoint, pool string, code, n int) {
	path := r.URL.Path
	switch {
	case path == "/healthz":
		return "healthz", "", text(w, http.StatusOK, "ok\n"), 0
	case path == "/readyz":
		if s.snap.Load() == nil {
			return "readyz", "", text(w, http.StatusServiceUnavailable, "no configuration loaded yet\n"), 0
		}
		return "readyz", "", text(w, http.StatusOK, "ok\n"), 0
	case path == "/metrics":
		s.m.handler.ServeHTTP(w, r)
		return "metrics", "", http.StatusOK, 0
	}
	name, isConfig := strings.CutPrefix(path, "/config/")
	if !isConfig {
		var ok bool
		if name, ok = strings.CutPrefix(path, "/rendered/"); !ok {
			return "other", "", text(w, http.StatusNotFound, "not found\n"), 0
		}
	}
	endpoint = "rendered"
	if isConfig {
		endpoint = "config"
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return endpoint, "", text(w, http.StatusMethodNotAllowed, "method not allowed\n"), 0
	}
	if s.Token != "" && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		return endpoint, "", text(w, http.StatusUnauthorized, "unauthorized\n"), 0
	}
	snap := s.snap.Load()
	if snap == nil {
		return endpoint, "", text(w, http.StatusServiceUnavailable, "no configuration loaded yet\n"), 0
	}
	if !isConfig {
		b := snap.rendered[name]
		if b == nil {
			return endpoint, "", text(w, http.StatusNotFound, "not found\n"), 0
		}
		// Rendered configs are named by their content: they never change.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		code, n = write(w, r, b)
		return endpoint, "", code, n
	}
	pc := snap.pools[name]
	if pc == nil {
		return endpoint, "", text(w, http.StatusNotFound, "not found\n"), 0
	}
	b, why := pc.negotiate(r.Header.Get("Accept"))
	if b == nil {
		return endpoint, name, text(w, http.StatusNotAcceptable, why+"\n"), 0
	}
	// The pointer moves: caches must revalidate.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Vary", "Accept")
	code, n = write(w, r, b)
	return endpoint, name, code, n
}

func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) == 1
}

func write(w http.ResponseWriter, r *http.Request, b *body) (int, int) {
	h := w.Header()
	h.Set("Content-Type", b.contentType)
	h.Set("ETag", b.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, b.etag) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified, 0
	}
	h.Set("Content-Length", strconv.Itoa(len(b.data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return http.StatusOK, 0
	}
	n, _ := w.Write(b.data)
	return http.StatusOK, n
}

func text(w http.ResponseWriter, code int, msg string) int {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write([]byte(msg))
	return code
}
