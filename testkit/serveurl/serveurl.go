// Package serveurl reads the URL `mcp serve` listens on from its log, for tests that start
// one (in-process or as a process).
package serveurl

import (
	"bufio"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// Wait reads log (mcp serve's JSON lines on standard error) until the "listening" line and
// returns its URL; it fails the test when none comes within 15 seconds. The rest of log is
// read and dropped, so that the server never blocks writing it.
func Wait(t testing.TB, log io.Reader) string {
	t.Helper()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(log)
		for sc.Scan() {
			var line struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				urls <- line.URL
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(15 * time.Second):
		t.Fatal("mcp serve did not start listening")
	}
	return ""
}
