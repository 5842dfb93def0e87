package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/mcpfleet/mcp/model"
)

// stalledServer is an API server that answers some requests and leaves the others
// hanging, as a frozen kube-apiserver does: the connection is taken, nothing comes back.
func stalledServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) bool) *Provider {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer(w, r) {
			return
		}
		select { // stalled
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	p, err := New(&rest.Config{Host: srv.URL}, Options{RequestTimeout: 200 * time.Millisecond, NodeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func apiNode(name string) *corev1.Node {
	n := kNode(name, "a", true, nil)
	n.APIVersion, n.Kind, n.ResourceVersion = "v1", "Node", "7"
	return n
}

// A request the API server does not answer fails after the request timeout, naming it; a
// watch is not cut by it once its stream has begun.
func TestRequestTimeout(t *testing.T) {
	p := stalledServer(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("watch") != "true" {
			return false
		}
		// A watch: headers at once, then silence for three request timeouts, then an event.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return true
		case <-time.After(600 * time.Millisecond):
		}
		writeJSON(w, metav1.WatchEvent{Type: string(watch.Added), Object: runtimeRaw(t, apiNode("w-0"))})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return true
	})
	ctx := context.Background()

	start := time.Now()
	err := p.Cordon(ctx, "w-0")
	var rte *RequestTimeoutError
	if !errors.As(err, &rte) || !strings.Contains(err.Error(), "cordon node w-0") ||
		!strings.Contains(err.Error(), "no answer from the API server within 200ms") {
		t.Fatalf("cordon on a stalled API server: %v; want a RequestTimeoutError naming the node and the timeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cordon on a stalled API server took %v; the request timeout is 200ms", took)
	}

	w, err := p.client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if n, ok := ev.Object.(*corev1.Node); ev.Type != watch.Added || !ok || n.Name != "w-0" {
			t.Errorf("watch event %s %#v; want the node added (a watch silent for longer than the request timeout is not cut)", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
}

// RunNodeSteps stops waiting for the agent when the API server stops answering: its
// lists and watches of the node fail for the request timeout, and the error says so.
func TestRunNodeStepsStopsWhenTheAPIServerStopsAnswering(t *testing.T) {
	p := stalledServer(t, func(w http.ResponseWriter, r *http.Request) bool {
		// The node can be read and handed over; after that, nothing answers.
		if r.URL.Path == "/api/v1/nodes/w-0" && (r.Method == http.MethodGet || r.Method == http.MethodPatch) {
			writeJSON(w, apiNode("w-0"))
			return true
		}
		return false
	})
	target := &model.Rendered{Name: "rendered-w-1"}
	start := time.Now()
	err := p.RunNodeSteps(context.Background(), "w-0", nil, target, []model.Step{{Kind: model.StepReboot}}, nil)
	took := time.Since(start)
	var rte *RequestTimeoutError
	if !errors.As(err, &rte) {
		t.Fatalf("RunNodeSteps on an API server that stopped answering: %v; want the request timeout as the cause", err)
	}
	for _, want := range []string{"node w-0: waiting for the agent", "to rendered-w-1", "the agent has not taken up the update",
		"the API server has failed every request for", "the node is left as it is"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took > 20*time.Second {
		t.Errorf("RunNodeSteps gave up after %v; the request timeout is 200ms", took)
	}
	t.Logf("gave up after %v: %v", took.Round(time.Millisecond), err)
}

func runtimeRaw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}
