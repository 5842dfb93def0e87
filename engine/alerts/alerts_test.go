package alerts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/endless"
)

// fakePrometheus answers /api/v1/alerts with body (status code), as Prometheus does, and
// records the paths asked.
func fakePrometheus(t *testing.T, code int, body string) (*httptest.Server, *[]string) {
	t.Helper()
	var paths []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.URL.Path != "/api/v1/alerts" && r.URL.Path != "/prom/api/v1/alerts" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s, &paths
}

const twoFiringOnePending = `{"status":"success","data":{"alerts":[
 {"labels":{"alertname":"Watchdog","severity":"none"},"annotations":{},"state":"firing","activeAt":"2026-11-26T10:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"NodeDown","instance":"a:9100","severity":"critical"},"annotations":{"summary":"down"},"state":"firing","activeAt":"2026-11-26T10:01:00Z","value":"1e+00"},
 {"labels":{"alertname":"DiskFull","severity":"critical"},"annotations":{},"state":"pending","activeAt":"2026-11-26T10:02:00Z","value":"1e+00"}]}}`

// Firing reports the firing alerts with their labels; pending ones are left out. Behind
// a path prefix (a proxy), the API is asked under it.
func TestFiringLeavesPendingOut(t *testing.T) {
	s, paths := fakePrometheus(t, 200, twoFiringOnePending)
	for _, base := range []string{s.URL, s.URL + "/prom/"} {
		got, err := Prometheus{}.Firing(context.Background(), base)
		if err != nil {
			t.Fatal(err)
		}
		want := []model.Alert{
			{Labels: map[string]string{"alertname": "Watchdog", "severity": "none"}, ActiveAt: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)},
			{Labels: map[string]string{"alertname": "NodeDown", "instance": "a:9100", "severity": "critical"}, ActiveAt: time.Date(2026, 11, 26, 10, 1, 0, 0, time.UTC)},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: alerts (-want +got):\n%s", base, d)
		}
	}
	if d := cmp.Diff([]string{"/api/v1/alerts", "/prom/api/v1/alerts"}, *paths); d != "" {
		t.Errorf("paths asked (-want +got):\n%s", d)
	}
}

// The gate's filter over what a real answer holds: ignored names and unmatched labels
// leave the alerts that count.
func TestGateSelectsFromAnAnswer(t *testing.T) {
	s, _ := fakePrometheus(t, 200, twoFiringOnePending)
	firing, err := Prometheus{}.Firing(context.Background(), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		gate model.AlertGate
		want []string
	}{
		{model.AlertGate{}, []string{"Watchdog", "NodeDown"}},
		{model.AlertGate{Ignore: []string{"^Watchdog$"}}, []string{"NodeDown"}},
		{model.AlertGate{Ignore: []string{"Down"}}, []string{"Watchdog"}}, // unanchored, as kured's
		{model.AlertGate{Ignore: []string{"^Down$"}}, []string{"Watchdog", "NodeDown"}},
		{model.AlertGate{MatchLabels: map[string]string{"severity": "critical"}}, []string{"NodeDown"}},
		{model.AlertGate{MatchLabels: map[string]string{"severity": "critical", "instance": "b:9100"}}, nil},
		{model.AlertGate{Ignore: []string{"^NodeDown$"}, MatchLabels: map[string]string{"severity": "critical"}}, nil},
		{model.AlertGate{Ignore: []string{"("}}, []string{"Watchdog", "NodeDown"}}, // uncompilable: ignores nothing
	} {
		var got []string
		for _, a := range tt.gate.Select(firing) {
			got = append(got, a.Name())
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%+v: counted (-want +got):\n%s", tt.gate, d)
		}
	}
}

// Every way of not getting an answer is an error naming the server: refused, an HTTP
// error, Prometheus' own error, not JSON, no answer within the request timeout.
func TestFiringErrors(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	errBody, _ := fakePrometheus(t, 422, `{"status":"error","errorType":"bad_data","error":"no rules"}`)
	html, _ := fakePrometheus(t, 200, `<html>a login page</html>`)
	server500, _ := fakePrometheus(t, 500, `oops`)
	notProm, _ := fakePrometheus(t, 404, ``)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	for _, tt := range []struct {
		base string
		want string
	}{
		{closed.URL, "connection refused"},
		{errBody.URL, "no rules"},
		{html.URL, "invalid character"},
		{server500.URL, "500"},
		{notProm.URL + "/nothing", "404"},
		{hang.URL, "no answer within 200ms"},
	} {
		_, err := Prometheus{RequestTimeout: 200 * time.Millisecond}.Firing(context.Background(), tt.base)
		if err == nil || !strings.Contains(err.Error(), "asking Prometheus at "+tt.base) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to name the server and say %q", tt.base, err, tt.want)
		}
		if err != nil && strings.Count(err.Error(), tt.base) != 1 {
			t.Errorf("%s: error %q names the server more than once", tt.base, err)
		}
	}
}

// An answer that never ends is an error naming the server and the bound, at the bound —
// not a read until memory runs out.
func TestEndlessAnswerIsRefused(t *testing.T) {
	s := endless.Server(t, "application/json", `{"status":"success","data":{"alerts":[`,
		`{"labels":{"alertname":"A"},"annotations":{},"state":"pending","activeAt":"2026-11-26T10:00:00Z","value":"1"},`)
	_, err := Prometheus{RequestTimeout: time.Minute}.Firing(context.Background(), s.URL)
	if err == nil || !strings.Contains(err.Error(), "asking Prometheus at "+s.URL) || !strings.Contains(err.Error(), "larger than 64 MiB") {
		t.Errorf("error %v, want it to name the server and the bound (64 MiB)", err)
	}
}
