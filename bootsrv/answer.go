package bootsrv

import (
	"crypto/subtle"
	"strings"
)

// request is what the server reads of an HTTP request, whichever server carries it. Its
// strings may alias the transport's buffers: answer must not keep them.
type request struct {
	method, path                       string
	accept, ifNoneMatch, authorization string
}

// reply is the whole answer to one request: the transports only copy it out, so the
// routing, negotiation and caching rules live here once.
type reply struct {
	code           int
	endpoint, pool string  // for the metrics; pool is the snapshot's own string, never the request's
	header         []field // response headers but Content-Length: prepared, shared, never written to
	body           []byte  // the whole body; a HEAD request gets the headers only
}

// field is one response header.
type field struct{ key, value string }

// The header sets of the answers that are not a config.
var (
	textHeader = []field{{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}}
	allowGet   = append(textHeader[:2:2], field{"Allow", "GET, HEAD"})
	wantBearer = append(textHeader[:2:2], field{"WWW-Authenticate", "Bearer"})
)

func textReply(endpoint string, code int, msg string) reply {
	return reply{endpoint: endpoint, code: code, header: textHeader, body: []byte(msg)}
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
		r.header = allowGet
		return r
	}
	if s.Token != "" && !s.authorized(q.authorization) {
		r := textReply(endpoint, 401, "unauthorized\n")
		r.header = wantBearer
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
		return bodyReply(q, endpoint, "", b)
	}
	pc := snap.pools[name]
	if pc == nil {
		return textReply(endpoint, 404, "not found\n")
	}
	b, why := pc.negotiate(q.accept)
	if b == nil {
		r := textReply(endpoint, 406, why+"\n")
		r.pool = pc.name
		return r
	}
	return bodyReply(q, endpoint, pc.name, b)
}

func bodyReply(q request, endpoint, pool string, b *body) reply {
	r := reply{code: 200, endpoint: endpoint, pool: pool, header: b.header, body: b.data}
	if q.ifNoneMatch != "" && strings.Contains(q.ifNoneMatch, b.etag) {
		r.code, r.body = 304, nil
	}
	return r
}

func (s *Server) authorized(header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) == 1
}
