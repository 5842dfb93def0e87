package bootsrv

import (
	"crypto/subtle"
	"maps"
	"slices"
	"strings"
)

// request is what the server reads of an HTTP request, whichever server carries it. Its
// strings may alias the transport's buffers: answer must not keep them.
type request struct {
	method, path                       string
	query                              string // the raw query, without "?"
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
		return s.snap.Load().ready()
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
	// Rendered configs are served once the store is read, before any pool has one: an
	// agent asked what its node carries of a pool's first target fetches it before
	// anything was applied (adoption), and a name not stored is 404 (the MCO's, say).
	if !isConfig && snap != nil {
		b := snap.rendered[name]
		if why := snap.unreadable[name]; b == nil && why != "" {
			return textReply(endpoint, 503, why+"\n")
		}
		if b == nil {
			return textReply(endpoint, 404, "not found\n")
		}
		return bodyReply(q, endpoint, "", b)
	}
	if !snap.loaded() {
		return textReply(endpoint, 503, "no configuration loaded yet\n")
	}
	pc := snap.pools[name]
	if pc == nil {
		return textReply(endpoint, 404, "not found\n")
	}
	if q.query != "" {
		m, why := snap.machineFor(name, q.query)
		if why != "" {
			r := textReply(endpoint, 400, why+"\n")
			r.pool = pc.name
			return r
		}
		if m != nil {
			pc = m.pc
		}
	}
	if pc.failed != "" {
		r := textReply(endpoint, 503, pc.failed+"\n")
		r.pool = pc.name
		return r
	}
	b, why := pc.negotiate(q.accept)
	if b == nil {
		r := textReply(endpoint, 406, why+"\n")
		r.pool = pc.name
		return r
	}
	return bodyReply(q, endpoint, pc.name, b)
}

// ready is /readyz's answer: 503 until a configuration is loaded, or while no pool's config
// can be served; otherwise 200, naming each pool whose config cannot be (it answers 503):
// the server is ready for the others, and must stay in a load balancer's rotation for them.
func (s *Snapshot) ready() reply {
	if !s.loaded() {
		return textReply("readyz", 503, "no configuration loaded yet\n")
	}
	failed := s.Failed()
	if len(failed) == 0 {
		return textReply("readyz", 200, "ok\n")
	}
	var b strings.Builder
	code := 200
	if len(failed) == len(s.pools) {
		code = 503
		b.WriteString("no pool's config can be served\n")
	} else {
		b.WriteString("ok, but for these pools\n")
	}
	for _, pool := range slices.Sorted(maps.Keys(failed)) {
		b.WriteString(failed[pool] + "\n")
	}
	return textReply("readyz", code, b.String())
}

func bodyReply(q request, endpoint, pool string, b *body) reply {
	r := reply{code: 200, endpoint: endpoint, pool: pool, header: b.header, body: b.data}
	if q.ifNoneMatch != "" && noneMatch(q.ifNoneMatch, b.etag) {
		r.code, r.body = 304, nil
	}
	return r
}

// noneMatch reports whether an If-None-Match value matches etag (RFC 9110 §13.1.2): "*"
// matches whatever exists; otherwise a list of entity-tags, compared weakly, so W/"x"
// matches "x". A malformed list matches nothing, and then the body is sent, which is
// always safe. It allocates nothing: it runs on the boot path.
func noneMatch(v, etag string) bool {
	if strings.Trim(v, " \t") == "*" {
		return true
	}
	etag = strings.TrimPrefix(etag, "W/")
	for {
		v = strings.TrimLeft(v, " \t,")
		if v == "" {
			return false
		}
		v = strings.TrimPrefix(v, "W/")
		if v[0] != '"' {
			return false
		}
		end := strings.IndexByte(v[1:], '"')
		if end < 0 {
			return false
		}
		if v[:end+2] == etag {
			return true
		}
		v = strings.TrimLeft(v[end+2:], " \t")
		if v != "" && v[0] != ',' {
			return false
		}
	}
}

// authorized checks a Bearer credential. The scheme is case-insensitive and may be followed
// by more than one space (RFC 9110 §11.1, §11.4); the token is compared exactly.
func (s *Server) authorized(header string) bool {
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got = strings.TrimLeft(got, " ")
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) == 1
}
