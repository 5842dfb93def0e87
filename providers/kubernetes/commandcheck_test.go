package kubernetes

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

var (
	kubeletCheck = model.HealthCheck{Name: "kubelet", Command: []string{"/usr/bin/systemctl", "is-active", "kubelet"}, Timeout: 2 * time.Minute}
	httpCheck    = model.HealthCheck{Name: "app", HTTPGet: "http://${node.address}/", Timeout: time.Minute}
)

func readChecks(t *testing.T, c *fake.Clientset) protocol.PoolChecks {
	t.Helper()
	s, err := c.CoreV1().Secrets(DefaultNamespace).Get(context.Background(), protocol.HealthSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels[protocol.ManagedByLabel] != protocol.ManagedByValue || s.Labels[protocol.KindLabel] != protocol.KindHealthChecks {
		t.Errorf("labels %v", s.Labels)
	}
	pc, err := protocol.DecodeChecks(s.Data[protocol.HealthKey])
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// writes counts the Secret creates and updates.
func writes(c *fake.Clientset) *int {
	n := new(int)
	c.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			*n++
		}
		return false, nil, nil
	})
	return n
}

// TestPublishChecks: the pools' command checks (not their HTTP ones) land in the Secret;
// a later publish sets the pools it names — a pool with none is removed — and keeps the
// others; one that changes nothing writes nothing.
func TestPublishChecks(t *testing.T) {
	c := fake.NewClientset()
	n := writes(c)
	p := NewForClient(c, Options{})
	ctx := context.Background()
	if err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {httpCheck}}); err != nil || *n != 0 {
		t.Fatalf("no command check: %v, %d writes; want nothing written", err, *n)
	}
	if err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {httpCheck, kubeletCheck}, "infra": {kubeletCheck}}); err != nil {
		t.Fatal(err)
	}
	want := protocol.PoolChecks{"worker": {{Name: "kubelet", Command: kubeletCheck.Command, Timeout: "2m0s"}}}
	want["infra"] = want["worker"]
	if d := cmp.Diff(want, readChecks(t, c)); d != "" {
		t.Errorf("checks (-want +got):\n%s", d)
	}
	if err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {kubeletCheck}, "infra": {kubeletCheck}}); err != nil || *n != 1 {
		t.Errorf("the same checks again: %v, %d writes; want 1 (the first)", err, *n)
	}
	if err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"infra": nil}); err != nil {
		t.Fatal(err)
	}
	delete(want, "infra")
	if d := cmp.Diff(want, readChecks(t, c)); d != "" {
		t.Errorf("after infra dropped its checks (-want +got):\n%s", d)
	}
}

// TestPublishChecksRefused: an apply identity that may not write the Secret gets an error
// that names it and what is needed — unless no pool has a command check.
func TestPublishChecksRefused(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, protocol.HealthSecret,
			nil)
	})
	p := NewForClient(c, Options{})
	ctx := context.Background()
	err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {kubeletCheck}})
	for _, want := range []string{"reading Secret mcp-system/mcp-health-checks", "forbidden", "get, create and update on Secrets in namespace mcp-system", "deploy/04-rbac-apply.yaml"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
	if err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {httpCheck}}); err != nil {
		t.Errorf("no command check, Secret forbidden: %v; want nothing to do", err)
	}
}

// agentAnswers plays the node's agent: each check request on node is answered with res.
// The answer is patched again every 20ms until a newer request supersedes it or the test
// ends, as a real agent's report stays on the Node: the fake clientset's watch does not
// replay what changed between its list and its watch (a real apiserver's does), so one
// patch could fall in that gap on a loaded machine and never be seen.
func agentAnswers(t *testing.T, c *fake.Clientset, node string, res model.CheckResult) *[]protocol.CheckRun {
	var runs []protocol.CheckRun
	var mu sync.Mutex
	latest := ""
	c.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if pa.GetName() != node || !strings.Contains(string(pa.GetPatch()), protocol.CheckRequest) {
			return false, nil, nil
		}
		var ann struct {
			Metadata struct{ Annotations map[string]string } `json:"metadata"`
		}
		if err := json.Unmarshal(pa.GetPatch(), &ann); err != nil {
			t.Error(err)
		}
		run, ok, err := protocol.ReadCheckRun(ann.Metadata.Annotations)
		if !ok || err != nil {
			t.Errorf("request %v, %v", ok, err)
		}
		mu.Lock()
		runs = append(runs, run)
		latest = run.RunID
		mu.Unlock()
		rep, _ := protocol.CheckReport{RunID: run.RunID, Check: run.Check, CheckResult: res}.Annotations()
		body, _ := protocol.AnnotationsPatch(rep)
		go func() {
			for {
				select {
				case <-t.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
				mu.Lock()
				current := latest == run.RunID
				mu.Unlock()
				if !current {
					return
				}
				if _, err := c.CoreV1().Nodes().Patch(t.Context(), node, types.MergePatchType, body, metav1.PatchOptions{}); err != nil && t.Context().Err() == nil {
					t.Error(err)
				}
			}
		}()
		return false, nil, nil
	})
	return &runs
}

func TestRunCheckAsksTheAgentByName(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	runs := agentAnswers(t, c, "w-0", model.CheckResult{ExitCode: 3, Output: "inactive\n"})
	p := NewForClient(c, Options{})
	res, err := p.RunCheck(context.Background(), "w-0", "worker", kubeletCheck)
	if err != nil || res != (model.CheckResult{ExitCode: 3, Output: "inactive\n"}) {
		t.Fatalf("RunCheck = %+v, %v", res, err)
	}
	if len(*runs) != 1 || (*runs)[0].Pool != "worker" || (*runs)[0].Check != "kubelet" || (*runs)[0].RunID == "" {
		t.Errorf("requests %+v, want one naming worker/kubelet", *runs)
	}
	ann := nodeAnn(t, c, "w-0")
	if strings.Contains(ann[protocol.CheckRequest], "systemctl") {
		t.Errorf("the command travelled in the Node annotation: %s", ann[protocol.CheckRequest])
	}
	// A second run has a run id of its own: an old answer is not taken for it.
	if _, err := p.RunCheck(context.Background(), "w-0", "worker", kubeletCheck); err != nil || len(*runs) != 2 || (*runs)[0].RunID == (*runs)[1].RunID {
		t.Errorf("second run: %v, requests %+v", err, *runs)
	}
}

func TestRunCheckWithoutAnAgent(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	p := NewForClient(c, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.RunCheck(ctx, "w-0", "worker", kubeletCheck)
	if err == nil || !strings.Contains(err.Error(), `node w-0: waiting for its agent to run check "kubelet"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := p.RunCheck(context.Background(), "nope", "worker", kubeletCheck); err == nil || !strings.Contains(err.Error(), "node nope: asking its agent") {
		t.Errorf("a node that does not exist: %v", err)
	}
}

func nodeAnn(t *testing.T, c *fake.Clientset, node string) map[string]string {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Annotations
}
