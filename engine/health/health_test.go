package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// gater is a provider with health gates: waitErr is WaitHealthy's answer, address the node's.
type gater struct {
	providers.Provider
	waitErr error
	address string
	waited  []string
}

func (g *gater) WaitHealthy(_ context.Context, node string, _ time.Duration) error {
	g.waited = append(g.waited, node)
	return g.waitErr
}

func (g *gater) NodeAddress(context.Context, string) (string, error) {
	if g.address == "" {
		return "", errors.New("no address")
	}
	return g.address, nil
}

func TestHTTPCheckRetriesUntil2xx(t *testing.T) {
	var tries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz/n-1" {
			http.NotFound(w, r)
			return
		}
		if tries.Add(1) < 3 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	g := &gater{address: strings.TrimPrefix(srv.URL, "http://")}
	gates := Gates{Provider: g, Interval: time.Millisecond}
	err := gates.Check(context.Background(), "n-1", []model.HealthCheck{
		{Name: "app", HTTPGet: "http://" + model.NodeAddressVar + "/healthz/" + model.NodeNameVar, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if tries.Load() != 3 {
		t.Errorf("%d tries, want 3 (two 503s, then 200)", tries.Load())
	}
	if len(g.waited) != 1 || g.waited[0] != "n-1" {
		t.Errorf("the provider's gate waited for %v, want n-1 once", g.waited)
	}
}

func TestHTTPCheckFailsWithItsNameAndAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "db down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	gates := Gates{Provider: &gater{}, Interval: 10 * time.Millisecond}
	err := gates.Check(context.Background(), "n-1", []model.HealthCheck{{Name: "app", HTTPGet: srv.URL + "/h", Timeout: 100 * time.Millisecond}})
	var ge *providers.GateError
	if !errors.As(err, &ge) || ge.Gate != "app" {
		t.Fatalf("err = %v, want a GateError of gate app", err)
	}
	for _, want := range []string{"GET " + srv.URL + "/h: 500 Internal Server Error: db down", "none answered 2xx within 100ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestProviderGateComesFirst(t *testing.T) {
	asked := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { asked = true }))
	defer srv.Close()
	notReady := &providers.GateError{Gate: providers.GateReady, Output: "node n-1 is not Ready"}
	gates := Gates{Provider: &gater{waitErr: notReady}}
	err := gates.Check(context.Background(), "n-1", []model.HealthCheck{{Name: "app", HTTPGet: srv.URL, Timeout: time.Second}})
	if !errors.Is(err, notReady) {
		t.Fatalf("err = %v, want the provider's gate error", err)
	}
	if asked {
		t.Error("the HTTP check ran although the node is not Ready")
	}
}

func TestAddressNeedsAGater(t *testing.T) {
	gates := Gates{Provider: struct{ providers.Provider }{}}
	err := gates.Check(context.Background(), "n-1", []model.HealthCheck{{Name: "app", HTTPGet: "http://" + model.NodeAddressVar + "/", Timeout: time.Second}})
	if err == nil || !strings.Contains(err.Error(), `health gate "app"`) || !strings.Contains(err.Error(), "addresses") {
		t.Fatalf("err = %v, want gate app refused: the provider knows no addresses", err)
	}
}

func TestSkipBuiltInStillRunsThePoolsChecks(t *testing.T) {
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { asked++ }))
	defer srv.Close()
	g := &gater{waitErr: errors.New("not ready")}
	gates := Gates{Provider: g, SkipBuiltIn: true}
	if err := gates.Check(context.Background(), "n-1", []model.HealthCheck{{Name: "app", HTTPGet: srv.URL, Timeout: time.Second}}); err != nil {
		t.Fatal(err)
	}
	if len(g.waited) != 0 || asked != 1 {
		t.Errorf("provider gates waited %v, HTTP check asked %d times; want none and once", g.waited, asked)
	}
}

// runner is a provider that runs command checks: results are its answers in turn (the last
// one repeats), err fails every run.
type runner struct {
	gater
	results []model.CheckResult
	err     error
	runs    []string // pool/node/check of each run
}

func (r *runner) PublishChecks(context.Context, map[string][]model.HealthCheck) error { return nil }

func (r *runner) RunCheck(_ context.Context, node, pool string, c model.HealthCheck) (model.CheckResult, error) {
	r.runs = append(r.runs, pool+"/"+node+"/"+c.Name)
	if r.err != nil {
		return model.CheckResult{}, r.err
	}
	res := r.results[min(len(r.runs), len(r.results))-1]
	return res, nil
}

var kubelet = model.HealthCheck{Name: "kubelet", Command: []string{"/usr/bin/systemctl", "is-active", "kubelet"}, Timeout: 5 * time.Second}

func TestCommandCheckRetriesUntilExit0(t *testing.T) {
	r := &runner{results: []model.CheckResult{{ExitCode: 3, Output: "activating"}, {ExitCode: -1, Error: "killed after 5s"}, {ExitCode: 0}}}
	gates := Gates{Provider: r, Interval: time.Millisecond, Pool: "worker"}
	if err := gates.Check(context.Background(), "n-1", []model.HealthCheck{kubelet}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.runs, ","); got != "worker/n-1/kubelet,worker/n-1/kubelet,worker/n-1/kubelet" {
		t.Errorf("runs %s, want three of worker/n-1/kubelet", got)
	}
}

func TestCommandCheckFailsWithItsNameAndOutput(t *testing.T) {
	r := &runner{results: []model.CheckResult{{ExitCode: 3, Output: "inactive\n"}}}
	gates := Gates{Provider: r, Interval: 10 * time.Millisecond, Pool: "worker"}
	kubelet := kubelet
	kubelet.Timeout = 100 * time.Millisecond
	err := gates.Check(context.Background(), "n-1", []model.HealthCheck{kubelet})
	var ge *providers.GateError
	if !errors.As(err, &ge) || ge.Gate != "kubelet" {
		t.Fatalf("err = %v, want a GateError of gate kubelet", err)
	}
	for _, want := range []string{`["/usr/bin/systemctl" "is-active" "kubelet"]: exit 3: inactive`, "none exited 0 within 100ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// The provider's own failure (no answer from the agent) is what the gate saw last.
	r = &runner{err: errors.New("node n-1: the agent did not answer run X")}
	err = (&Gates{Provider: r, Interval: 10 * time.Millisecond}).Check(context.Background(), "n-1", []model.HealthCheck{kubelet})
	if err == nil || !strings.Contains(err.Error(), "the agent did not answer run X") {
		t.Errorf("err = %v, want the provider's error in the gate's", err)
	}
}

func TestCommandNeedsACommandChecker(t *testing.T) {
	gates := Gates{Provider: &gater{}}
	err := gates.Check(context.Background(), "n-1", []model.HealthCheck{kubelet})
	if err == nil || !strings.Contains(err.Error(), `health gate "kubelet"`) || !strings.Contains(err.Error(), "cannot run commands") {
		t.Fatalf("err = %v, want gate kubelet refused: the provider runs no commands", err)
	}
}
