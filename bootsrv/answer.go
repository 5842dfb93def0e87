package bootsrv

import (
	"crypto/subtle"
	"strings"
)

// request is what the server reads of an HTTP request, whichever server carries it.
type request struct {
	method, path                       string
	accept, ifNoneMatch, authorization string
}

// reply is the whole answer to one request: the transports only copy it out, so the
// routing, negotiation and caching rules live here once.
type reply struct {
	code           int
	endpoint, pool string // for the metrics
	contentType    string
	etag           string
	cacheControl   string
	vary           string
	allow          string
	authenticate   string
	nosniff        bool
	body           []byte // the whole body; a HEAD request gets the headers only
}

func textReply(endpoint string, code int, msg string) reply {
	return reply{endpoint: endpoint, code: code, contentType: "text/plain; charset=utf-8", nosniff: true, body: []byte(msg)}
}

// answer routes a request. /metrics is not answered here: each transport hands it to the
// Prometheus handler.
func (s *Server) answer(q request) reply {
	switch q.path {
	case "/healthz":
		return textReply("healthz", 200, "ok\n")
	case "/readyz":
		if s.snap.Load() == nil {
			return textReply("readyz", 503, "no configuration loaded yet\n")
		}
		return textReply("readyz", 200, "ok\n")
	}
	name, isConfig := strings.CutPrefix(q.path, "/config/")
	endpoint := "config"
	if !isConfig {
		var ok bool
		if name, ok = strings.CutPrefix(q.path, "/rendered/"); !ok {
			return textReply("other", 404, "not found\n")
		}
		endpoint = "rendered"
	}
	if q.method != "GET" && q.method != "HEAD" {
		r := textReply(endpoint, 405, "method not allowed\n")
		r.allow = "GET, HEAD"
		return r
	}
	if s.Token != "" && !s.authorized(q.authorization) {
		r := textReply(endpoint, 401, "unauthorized\n")
		r.authenticate = "Bearer"
		return r
	}
	snap := s.snap.Load()
	if snap == nil {
		return textReply(endpoint, 503, "no configuration loaded yet\n")
	}
	if !isConfig {
		b := snap.rendered[name]
		if b == nil {
			return textReply(endpoint, 404, "not found\n")
		}
		// Rendered configs are named by their content: they never change.
		return bodyReply(q, endpoint, "", b, "public, max-age=31536000, immutable", "")
	}
	pc := snap.pools[name]
	if pc == nil {
		return textReply(endpoint, 404, "not found\n")
	}
	b, why := pc.negotiate(q.accept)
	if b == nil {
		r := textReply(endpoint, 406, why+"\n")
		r.pool = name
		return r
	}
	// The pointer moves: caches must revalidate.
	return bodyReply(q, endpoint, name, b, "no-cache", "Accept")
}

func bodyReply(q request, endpoint, pool string, b *body, cacheControl, vary string) reply {
	r := reply{code: 200, endpoint: endpoint, pool: pool, contentType: b.contentType, etag: b.etag,
		cacheControl: cacheControl, vary: vary, body: b.data}
	if q.ifNoneMatch != "" && strings.Contains(q.ifNoneMatch, b.etag) {
		r.code, r.body = 304, nil
	}
	return r
}

func (s *Server) authorized(header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) == 1
}
