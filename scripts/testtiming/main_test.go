package main

import (
	"io"
	"strings"
	"testing"
)

// TestTimingTakesOffWaitsAndKeepsCutRuns: an acceptance test's wait for a slot of its class
// is shown apart from the time it ran, and a package the run was cut short in (no end
// event) is listed with its events' span, marked, rather than as 0s or not at all, and
// the run is said to be cut short.
func TestTimingTakesOffWaitsAndKeepsCutRuns(t *testing.T) {
	const stream = `{"Time":"2026-12-07T00:00:00Z","Action":"start","Package":"m/acceptance"}
{"Time":"2026-12-07T00:00:01Z","Action":"run","Package":"m/acceptance","Test":"TestSlow"}
{"Time":"2026-12-07T00:04:00Z","Action":"output","Package":"m/acceptance","Test":"TestSlow","Output":"    main_test.go:48: waited 3m0s for a slot of its class\n"}
{"Time":"2026-12-07T00:05:01Z","Action":"pass","Package":"m/acceptance","Test":"TestSlow","Elapsed":300}
{"Time":"2026-12-07T00:05:01Z","Action":"run","Package":"m/acceptance","Test":"TestBusy"}
{"Time":"2026-12-07T00:07:31Z","Action":"pass","Package":"m/acceptance","Test":"TestBusy","Elapsed":150}
{"Time":"2026-12-07T00:00:00Z","Action":"start","Package":"m/config"}
{"Time":"2026-12-07T00:00:02Z","Action":"pass","Package":"m/config","Test":"TestX","Elapsed":1}
{"Time":"2026-12-07T00:00:02Z","Action":"pass","Package":"m/config","Elapsed":2}
`
	r, err := read(strings.NewReader(stream), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	doc := document(r, 0, "load average at its end: 1")
	for _, want := range []string{
		"took 7m31s, over the budget, cut short (m/acceptance did not finish);",
		"| m/acceptance (did not finish) | 7m31s | 2 | 0 | 0 |",
		"| m/config | 2.0s | 1 | 0 | 0 |",
		"| TestBusy | m/acceptance | 2m30s |  | pass |\n| TestSlow | m/acceptance | 2m0s | 3m0s | pass |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
}
