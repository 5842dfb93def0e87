// Package endless serves an answer that never ends, for tests of the bounds on what mcp
// reads from a network peer (a Prometheus, a boot server): a prefix, then a chunk repeated
// until the client hangs up — or, so a test run against a reader without a bound does not
// take the machine's memory, until Cap bytes have gone.
package endless

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Cap is where the answer stops when the client reads on: well past every bound mcp sets.
const Cap = 512 << 20

// Server answers every request with status 200, contentType, prefix and then chunk again
// and again. It is closed when the test ends.
func Server(t *testing.T, contentType, prefix, chunk string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write([]byte(prefix)); err != nil {
			return
		}
		buf := make([]byte, 0, 64<<10)
		for len(buf)+len(chunk) <= cap(buf) {
			buf = append(buf, chunk...)
		}
		for sent := len(prefix); sent < Cap; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}
