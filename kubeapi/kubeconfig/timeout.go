package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// DefaultRequestTimeout is the deadline mcp gives a request by default: the API server's
// own default --request-timeout, so a request that takes longer is one the server would
// have cut off itself.
const DefaultRequestTimeout = time.Minute

// RequestTimeoutError is a request the API server did not answer within the provider's
// request timeout (a server that hangs, or a network that drops packets without a reset).
type RequestTimeoutError struct {
	Timeout time.Duration
	Err     error // what the transport returned
}

func (e *RequestTimeoutError) Error() string {
	msg := fmt.Sprintf("no answer from the API server within %s (request_timeout)", e.Timeout)
	// The transport says only that the request's context ended (with the cause or not):
	// nothing to add.
	if errors.Is(e.Err, errTimedOut) || errors.Is(e.Err, context.Canceled) {
		return msg
	}
	return msg + ": " + e.Err.Error()
}

func (e *RequestTimeoutError) Unwrap() error { return e.Err }

// errTimedOut is the cause a request's context is cancelled with at its deadline.
var errTimedOut = errors.New("request timeout")

// timeoutTransport gives every request a deadline d: a watch must have its response
// headers within d, after which its stream may be silent as long as it likes; any other
// request must be over — its body read and closed — within d. client-go has no timeout by
// default, so a request to a server that took the connection and then stopped answering
// waits forever on HTTP/1.1, and until the HTTP/2 health check gives the connection up
// otherwise. rest.Config.Timeout is not used: it is an http.Client timeout, which would
// also cut every watch after d.
type timeoutTransport struct {
	rt http.RoundTripper
	d  time.Duration
}

// isWatch reports whether r is a watch, a request whose answer is a stream of events.
func isWatch(r *http.Request) bool {
	switch r.URL.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return false
}

func (t timeoutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.d <= 0 {
		return t.rt.RoundTrip(r)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	timer := time.AfterFunc(t.d, func() { cancel(errTimedOut) })
	resp, err := t.rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		timer.Stop()
		err = t.explain(ctx, err)
		cancel(nil)
		return nil, err
	}
	if isWatch(r) {
		timer.Stop() // the stream has begun
	}
	resp.Body = &timeoutBody{rc: resp.Body, t: t, ctx: ctx, done: func() { timer.Stop(); cancel(nil) }}
	return resp, nil
}

// WithRequestTimeout gives every request made with cfg the deadline d (timeoutTransport).
func WithRequestTimeout(cfg *rest.Config, d time.Duration) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return timeoutTransport{rt: rt, d: d} })
}

// explain names the request timeout when it, and not the caller, ended the request.
func (t timeoutTransport) explain(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errTimedOut) {
		return &RequestTimeoutError{Timeout: t.d, Err: err}
	}
	return err
}

// timeoutBody ends the request's deadline when the body is closed.
type timeoutBody struct {
	rc   io.ReadCloser
	t    timeoutTransport
	ctx  context.Context
	done func()
}

func (b *timeoutBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.t.explain(b.ctx, err)
	}
	return n, err
}

func (b *timeoutBody) Close() error {
	err := b.rc.Close()
	b.done()
	return err
}
