package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/agent/kagent"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// observedCluster is a fake cluster whose node w-0 runs the agent's own code for
// observation requests (kagent.AnswerObserve) on root, fetching from a server holding
// served; v is the protocol version its agent announced ("": none).
func observedCluster(t *testing.T, root, v string, served ...*model.Rendered) *fake.Clientset {
	t.Helper()
	by := map[string][]byte{}
	for _, r := range served {
		by[r.Name], _ = json.Marshal(r)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := by[strings.TrimPrefix(r.URL.Path, "/rendered/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	ann := map[string]string{}
	if v != "" {
		ann[protocol.AgentProtocol] = v
	}
	c := fake.NewClientset(kNode("w-0", "a", true, ann))
	c.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if node, ok := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.RequiresExactMatch("metadata.name"); ok && node == "w-0" {
			go func() {
				n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
				if err != nil {
					return
				}
				kagent.New(c.CoreV1().Nodes(), node, root, srv.URL, &nodeexec.RecordingHost{}).AnswerObserve(context.Background(), n)
			}()
		}
		return true, w, err
	})
	return c
}

func observeTarget() *model.Rendered {
	return &model.Rendered{Name: "rendered-worker-observed", Pool: "worker", Files: []model.File{
		{Entry: model.Entry{Path: "/etc/a.conf"}, Mode: 0o644, Contents: []byte("a\n")},
		{Entry: model.Entry{Path: "/etc/b.conf"}, Mode: 0o644, Contents: []byte("b\n")},
	}}
}

func writeFile(t *testing.T, root, path, content string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestObserveConfigAsksTheAgent: the provider's request is answered by the agent's own
// check on its disk: a node carrying the config whole is observed so; one whose file
// differs is observed differing in exactly that file, a FIFO where a file should be a
// drift entry saying so (no hang); the request names the config, not its content.
func TestObserveConfigAsksTheAgent(t *testing.T) {
	target := observeTarget()
	root := t.TempDir()
	writeFile(t, root, "/etc/a.conf", "a\n")
	writeFile(t, root, "/etc/b.conf", "b\n")
	c := observedCluster(t, root, "3", target)
	p := NewForClient(c, Options{ObserveTimeout: 10 * time.Second})
	o, err := p.ObserveConfig(t.Context(), "w-0", target)
	if err != nil || !o.Carries(target.Name) {
		t.Fatalf("ObserveConfig = %+v, %v; want the node carries %s whole", o, err, target.Name)
	}
	if req := nodeAnn(t, c, "w-0")[protocol.ObserveRequest]; strings.Contains(req, "a\\n") || !strings.Contains(req, target.Name) {
		t.Errorf("request %s: want the config's name and no content", req)
	}
	writeFile(t, root, "/etc/b.conf", "changed\n")
	os.Remove(filepath.Join(root, "etc/a.conf"))
	if err := syscall.Mkfifo(filepath.Join(root, "etc/a.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err = p.ObserveConfig(t.Context(), "w-0", target)
	if err != nil || o.Target != target.Name || len(o.Drift) != 2 || o.Unlisted != 0 {
		t.Fatalf("ObserveConfig after two changes = %+v, %v; want a.conf and b.conf", o, err)
	}
	if o.Drift[0].Path != "/etc/a.conf" || o.Drift[0].Kind != model.DriftType || o.Drift[1].Path != "/etc/b.conf" || o.Drift[1].Kind != model.DriftContent {
		t.Errorf("drift %v; want /etc/a.conf of the wrong type, /etc/b.conf's content", o.Drift)
	}
}

// TestObserveConfigFallsBack: every way the node cannot be observed is an error naming
// why (refresh plans the node without an observation, the error its reason): an agent of
// an older protocol (not asked at all), a config the boot server does not serve, no agent
// answering within the bound, a request the API server refuses.
func TestObserveConfigFallsBack(t *testing.T) {
	target := observeTarget()
	p := NewForClient(observedCluster(t, t.TempDir(), "2", target), Options{ObserveTimeout: 5 * time.Second})
	if _, err := p.ObserveConfig(t.Context(), "w-0", target); err == nil || !strings.Contains(err.Error(), "protocol version 2") {
		t.Errorf("an agent of version 2: %v; want refused naming its version", err)
	}
	p = NewForClient(observedCluster(t, t.TempDir(), "3"), Options{ObserveTimeout: 10 * time.Second})
	if _, err := p.ObserveConfig(t.Context(), "w-0", target); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a config not served: %v; want the agent's reason (404)", err)
	}
	silent := fake.NewClientset(kNode("w-0", "a", true, map[string]string{protocol.AgentProtocol: "3"}))
	p = NewForClient(silent, Options{ObserveTimeout: 300 * time.Millisecond})
	if _, err := p.ObserveConfig(t.Context(), "w-0", target); err == nil || !strings.Contains(err.Error(), "did not say what it carries") {
		t.Errorf("no agent answering: %v", err)
	}
	silent.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "w-0", fmt.Errorf("read-only"))
	})
	if _, err := p.ObserveConfig(t.Context(), "w-0", target); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a refused request: %v", err)
	}
}
