package bootsrv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"
)

// The boot request path. Every Ignition client and agent asks in one narrow form: GET or
// HEAD of an origin-form path, HTTP/1.1, no body, a few headers. A plain-TCP connection
// parses requests of that form itself and answers each from the snapshot with one writev;
// at the first request outside the form (any other method, a body, a query, escapes or dot
// segments in the path, HTTP/1.0, /metrics, a header block past the limit, ...) it hands
// the connection, with every byte read so far, to fasthttp for the rest of its life. The
// narrow form is where all the boot-storm traffic is, and fasthttp's general machinery per
// request (header objects, deadline timers, the runtime's system calls) cost more CPU
// there than nginx spends (docs/boot-server.md). FuzzParseHead checks that whatever is
// parsed here, fasthttp parses the same way.

// conns tracks the open connections for shutdown.
type conns struct {
	mu      sync.Mutex
	open    map[*fastConn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
}

func (cs *conns) add(fc *fastConn) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing.Load() {
		return false
	}
	cs.open[fc] = struct{}{}
	cs.wg.Add(1)
	return true
}

func (cs *conns) remove(fc *fastConn) {
	cs.mu.Lock()
	delete(cs.open, fc)
	cs.mu.Unlock()
	cs.wg.Done()
}

// shutdown wakes every connection waiting for a request (it closes), lets those answering
// finish, and closes what is left when ctx ends.
func (cs *conns) shutdown(ctx context.Context) {
	cs.mu.Lock()
	cs.closing.Store(true)
	for fc := range cs.open {
		fc.c.SetReadDeadline(time.Now())
		if fc.idle.Load() {
			fc.c.Close()
		}
	}
	cs.mu.Unlock()
	done := make(chan struct{})
	go func() { cs.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		cs.mu.Lock()
		for fc := range cs.open {
			fc.c.Close()
		}
		cs.mu.Unlock()
		<-done
	}
}

func (cs *conns) isClosing() bool { return cs.closing.Load() }

// limits are the timeouts and sizes both paths keep.
type limits struct {
	read, idle, write time.Duration
	maxHeader         int
}

// fastConn is one accepted connection and what its boot path reuses from request to request.
type fastConn struct {
	c   net.Conn
	raw syscall.RawConn // nil: TLS or another kind of connection, served by fasthttp alone
	io  rawIO
	// readFn and writeFn are rawRead and rawWritev, bound once.
	readFn, writeFn func(uintptr) bool
	buf             []byte // bytes read and not yet answered are buf[:n]
	n               int
	out             []byte // the response head being written
	// idle: handed to fasthttp, which waits for a request on it (fasthttp.ConnState).
	idle atomic.Bool
	// The deadlines set on the connection (moveDeadline).
	readBy, writeBy time.Time
}

// serveConn serves one connection until it closes.
func (s *Server) serveConn(fc *fastConn, fs *fasthttp.Server, lim limits, cs *conns) {
	defer cs.remove(fc)
	if fc.raw == nil {
		fs.ServeConn(&replayConn{Conn: fc.c, fc: fc})
		return
	}
	fc.buf = make([]byte, 4<<10)
	var headStart time.Time // when the request being read started (see below)
	var last time.Time      // when the last answer was written
	for {
		end := bytes.Index(fc.buf[:fc.n], crlfcrlf)
		if end < 0 {
			if bareLF(fc.buf[:fc.n]) {
				s.handOff(fc, fs) // lines ended by LF alone: fasthttp reads those
				return
			}
			if fc.n == len(fc.buf) {
				if len(fc.buf) >= lim.maxHeader {
					s.handOff(fc, fs) // fasthttp answers 431
					return
				}
				fc.buf = append(fc.buf, make([]byte, min(len(fc.buf), lim.maxHeader-len(fc.buf)))...)
			}
			if fc.n == 0 && !last.IsZero() {
				// The wait for the next request. The clock read at the last answer is close
				// enough: the deadline moves only once a second anyway.
				moveDeadline(&fc.readBy, last.Add(lim.idle), time.Second, fc.c.SetReadDeadline)
			} else {
				// A request being read, or the first one: it has the read timeout from its
				// first byte, or from the connection's start.
				if headStart.IsZero() {
					headStart = time.Now()
				}
				moveDeadline(&fc.readBy, headStart.Add(lim.read), 0, fc.c.SetReadDeadline)
			}
			if fc.n == 0 && cs.isClosing() { // about to wait for the next request: shutdown closes it
				fc.c.Close()
				return
			}
			m, err := fc.read(fc.buf[fc.n:])
			fc.n += m
			if err != nil {
				if fc.n > 0 && errors.Is(err, io.EOF) {
					s.handOff(fc, fs) // fasthttp decides what a cut-off request gets
					return
				}
				fc.c.Close()
				return
			}
			continue
		}
		headLen := end + len(crlfcrlf)
		q, ok := parseHead(fc.buf[:headLen])
		if !ok {
			s.handOff(fc, fs)
			return
		}
		start := time.Now()
		rp := s.answer(q.request)
		n, err := fc.write(q, rp, start, lim.write)
		last, headStart = time.Now(), time.Time{}
		s.m.observe(rp.endpoint, rp.pool, rp.code, n, last.Sub(start))
		fc.n = copy(fc.buf, fc.buf[headLen:fc.n])
		if err != nil || q.close || cs.isClosing() {
			fc.c.Close()
			return
		}
	}
}

var crlfcrlf = []byte("\r\n\r\n")

func bareLF(b []byte) bool {
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

// moveDeadline sets a deadline to t, kept in *cur, unless t is later than it by no more
// than slack. A deadline is a runtime timer, and moving it on every request was a
// measurable cost: the idle and write deadlines move only once they are a second stale.
func moveDeadline(cur *time.Time, t time.Time, slack time.Duration, set func(time.Time) error) {
	if t.Sub(*cur) > slack || t.Before(*cur) {
		*cur = t
		set(t)
	}
}

// handOff gives the connection to fasthttp, which reads the bytes not yet answered first.
func (s *Server) handOff(fc *fastConn, fs *fasthttp.Server) {
	fc.c.SetReadDeadline(time.Time{})
	fc.c.SetWriteDeadline(time.Time{})
	fs.ServeConn(&replayConn{Conn: fc.c, fc: fc, pending: fc.buf[:fc.n]})
}

// replayConn is a connection fasthttp serves. It reads pending before the connection.
type replayConn struct {
	net.Conn
	fc      *fastConn
	pending []byte
}

// connState follows fasthttp's connections: at shutdown, one waiting for a request closes.
func (cs *conns) connState(c net.Conn, state fasthttp.ConnState) {
	rc, ok := c.(*replayConn)
	if !ok {
		return
	}
	idle := state == fasthttp.StateIdle
	rc.fc.idle.Store(idle)
	if idle && cs.isClosing() {
		c.Close()
	}
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}

// write sends the answer: the head and the body in one writev. It returns the body bytes
// sent.
func (fc *fastConn) write(q fastRequest, rp reply, now time.Time, timeout time.Duration) (int, error) {
	b := fc.head(q, rp, now)
	body := rp.body // nil for a 304
	if q.method == "HEAD" {
		body = nil
	}
	moveDeadline(&fc.writeBy, now.Add(timeout), time.Second, fc.c.SetWriteDeadline)
	return len(body), fc.writev(b, body)
}

// head is the answer's head: status, Date, the prepared headers and Content-Length, made
// in the connection's buffer.
func (fc *fastConn) head(q fastRequest, rp reply, now time.Time) []byte {
	b := fc.out[:0]
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(rp.code), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(rp.code)...)
	b = append(b, "\r\nDate: "...)
	b = append(b, httpDate(now)...)
	b = append(b, "\r\n"...)
	for _, f := range rp.header {
		b = append(b, f.key...)
		b = append(b, ": "...)
		b = append(b, f.value...)
		b = append(b, "\r\n"...)
	}
	if rp.code != http.StatusNotModified {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(rp.body)), 10)
		b = append(b, "\r\n"...)
	}
	if q.close {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	fc.out = b
	return b
}

// The socket is non-blocking and the runtime's poller does the waiting, so read and writev
// never block: they are made as raw system calls, which the scheduler does not see. With
// the runtime's own calls, a writev that delivered a config over loopback often outlasted
// a scheduler tick, and the runtime handed the processor to another thread in the
// meantime: that churn, not the copying, was most of the serving CPU left.

// read reads into p (not empty), waiting in the poller while there is nothing to read.
func (fc *fastConn) read(p []byte) (int, error) {
	fc.io = rawIO{p: p}
	if err := fc.raw.Read(fc.readFn); err != nil {
		return 0, err
	}
	switch {
	case fc.io.errno != 0:
		return 0, fc.io.errno
	case fc.io.n == 0:
		return 0, io.EOF
	}
	return fc.io.n, nil
}

// writev writes head and body, waiting in the poller while the socket is full.
func (fc *fastConn) writev(head, body []byte) error {
	fc.io = rawIO{p: head, q: body}
	err := fc.raw.Write(fc.writeFn)
	fc.io.q = nil // the snapshot may go
	if err != nil {
		return err
	}
	if fc.io.errno != 0 {
		return fc.io.errno
	}
	return nil
}

// rawIO is the state of one read or writev, kept in the connection so that the functions
// handed to the poller are made once per connection, not per request.
type rawIO struct {
	p, q  []byte
	n     int
	errno syscall.Errno
}

func (fc *fastConn) rawRead(fd uintptr) bool {
	st := &fc.io
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&st.p[0])), uintptr(len(st.p)))
		if e == syscall.EINTR {
			continue
		}
		st.n, st.errno = int(r), e
		return e != syscall.EAGAIN
	}
}

func (fc *fastConn) rawWritev(fd uintptr) bool {
	st := &fc.io
	for len(st.p)+len(st.q) > 0 {
		var iov [2]syscall.Iovec
		cnt := 0
		for _, b := range [2][]byte{st.p, st.q} {
			if len(b) > 0 {
				iov[cnt].Base = &b[0]
				iov[cnt].SetLen(len(b))
				cnt++
			}
		}
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(cnt))
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			st.errno = e
			return true
		}
		n := int(r)
		k := min(n, len(st.p))
		st.p, st.q = st.p[k:], st.q[n-k:]
	}
	return true
}

// httpDate is the Date header's value, made once a second.
func httpDate(now time.Time) string {
	sec := now.Unix()
	if d := cachedDate.Load(); d != nil && d.sec == sec {
		return d.text
	}
	d := &dateText{sec: sec, text: now.UTC().Format(http.TimeFormat)}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	sec  int64
	text string
}

var cachedDate atomic.Pointer[dateText]

// fastRequest is a request head of the narrow form.
type fastRequest struct {
	request
	close bool // Connection: close
}

// parseHead reads a request head (ending in CRLFCRLF) of the narrow form, or reports false
// for anything else: such a request goes to fasthttp, so nothing here has to be lenient.
func parseHead(h []byte) (fastRequest, bool) {
	var q fastRequest
	line, rest, _ := bytes.Cut(h, crlf)
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		q.method, line = "GET", line[4:]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		q.method, line = "HEAD", line[5:]
	default:
		return q, false
	}
	target, proto, ok := bytes.Cut(line, []byte(" "))
	if !ok || string(proto) != "HTTP/1.1" || !plainPath(target) {
		return q, false
	}
	q.path = unsafeString(target)
	if !knownPath(q.path) {
		return q, false
	}
	var seen [4]bool    // accept, if-none-match, authorization, host
	for len(rest) > 2 { // the last line is the empty one
		line, rest, _ = bytes.Cut(rest, crlf)
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !httpguts.ValidHeaderFieldName(unsafeString(name)) {
			return q, false // also obs-fold: a continuation line starts with a space
		}
		value = bytes.Trim(value, " \t")
		if !httpguts.ValidHeaderFieldValue(unsafeString(value)) {
			return q, false
		}
		var slot *string
		switch {
		case asciiEqualFold(name, "accept"):
			slot, ok = &q.accept, !seen[0]
			seen[0] = true
		case asciiEqualFold(name, "if-none-match"):
			slot, ok = &q.ifNoneMatch, !seen[1]
			seen[1] = true
		case asciiEqualFold(name, "authorization"):
			slot, ok = &q.authorization, !seen[2]
			seen[2] = true
		case asciiEqualFold(name, "host"):
			ok = !seen[3] && plainHost(value) // fasthttp reads the URI with the host: "#" or "/" would move the path
			seen[3] = true
		case asciiEqualFold(name, "connection"):
			switch {
			case asciiEqualFold(value, "close"):
				q.close = true
			case asciiEqualFold(value, "keep-alive"):
			default:
				return q, false
			}
		case asciiEqualFold(name, "content-length"), asciiEqualFold(name, "transfer-encoding"),
			asciiEqualFold(name, "expect"), asciiEqualFold(name, "upgrade"):
			return q, false
		}
		if !ok {
			return q, false // a repeated header: fasthttp's rules decide
		}
		if slot != nil {
			*slot = unsafeString(value)
		}
	}
	return q, seen[3] // HTTP/1.1 requires Host
}

var crlf = []byte("\r\n")

// plainPath: an origin-form path with no query, escapes, empty or dot segments, whose
// bytes are the path fasthttp would hand the handler.
func plainPath(p []byte) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	prev := byte(0)
	for i, c := range p {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '~':
		case c == '.':
			if prev == '/' || prev == '.' { // "/." starts a dot segment, or a hidden name: fasthttp's business
				return false
			}
		case c == '/':
			if prev == '/' || (i > 0 && prev == '.') {
				return false
			}
		default:
			return false
		}
		prev = c
	}
	return true
}

// plainHost: a host name, IPv4 or bracketed IPv6 address, with an optional port.
func plainHost(h []byte) bool {
	name, port := h, []byte(nil)
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h[i:], ']') < 0 {
		name, port = h[:i], h[i+1:]
		if len(port) == 0 || len(port) > 5 || bytes.IndexFunc(port, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return false
		}
	}
	if len(name) > 2 && name[0] == '[' && name[len(name)-1] == ']' {
		for _, c := range name[1 : len(name)-1] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' || c == ':' || c == '.') {
				return false
			}
		}
		return true
	}
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func knownPath(p string) bool {
	switch p {
	case "/healthz", "/readyz":
		return true
	}
	return len(p) > len("/config/") && strings.HasPrefix(p, "/config/") ||
		len(p) > len("/rendered/") && strings.HasPrefix(p, "/rendered/")
}

// asciiEqualFold compares b with lower ignoring ASCII case only: bytes.EqualFold also folds
// Unicode (the Kelvin sign matches "k"), which fasthttp does not.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
