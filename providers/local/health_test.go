package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/providertest"
)

func TestHealthGates(t *testing.T) {
	f := providertest.Standard()
	f.Nodes[0].Ready = false // w-0
	for i := range f.Pods {
		if f.Pods[i].Name == "agent-w-1" {
			f.Pods[i].Ready = false
		}
	}
	dir := fixture(t, f)
	p, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for node, want := range map[string]struct{ gate, output string }{
		"w-0": {providers.GateReady, "node w-0 is not ready"},
		"w-1": {providers.GateDaemonSets, "DaemonSet pods on node w-1 not ready: kube-system/agent-w-1"},
	} {
		err := p.WaitHealthy(ctx, node, 300*time.Millisecond)
		var ge *providers.GateError
		if !errors.As(err, &ge) || ge.Gate != want.gate || !strings.Contains(ge.Output, want.output) {
			t.Errorf("%s: err = %v, want gate %s saying %q", node, err, want.gate, want.output)
		}
	}
	if err := p.WaitHealthy(ctx, "w-2", time.Second); err != nil {
		t.Errorf("w-2 is healthy: %v", err)
	}

	// A node that comes back while the gate waits passes it: the gate watches, through the
	// cache, what another process writes.
	done := make(chan error, 1)
	go func() { done <- p.WaitHealthy(ctx, "w-0", 10*time.Second) }()
	time.Sleep(200 * time.Millisecond)
	set(t, dir, "w-0", "ready=true")
	if err := <-done; err != nil {
		t.Errorf("w-0 came back Ready: %v", err)
	}

	if a, err := p.NodeAddress(ctx, "w-0"); err != nil || a != DefaultAddress {
		t.Errorf("address of w-0 = %q, %v; want %s", a, err, DefaultAddress)
	}
}

// TestRunCheck: a command check runs on this machine in the node's root, with the node's
// name and root in its environment; a node the fleet lacks is an error, not a result.
func TestRunCheck(t *testing.T) {
	dir := fixture(t, providertest.Standard())
	p, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	root, _ := filepath.Abs(filepath.Join(dir, "nodes", "w-1", "root"))
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "broken"), nil, 0o644)
	check := model.HealthCheck{Name: "not-broken", Timeout: 10 * time.Second,
		Command: []string{"/bin/sh", "-c", `test ! -e "$MCP_NODE_ROOT/etc/broken" || { echo "$MCP_NODE broken in $(pwd)"; exit 4; }`}}
	if err := p.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {check}}); err != nil {
		t.Fatal(err)
	}
	res, err := p.RunCheck(ctx, "w-1", "worker", check)
	if err != nil || res.ExitCode != 4 || res.Output != "w-1 broken in "+root+"\n" {
		t.Errorf("w-1: %+v, %v; want exit 4 naming w-1 and its root %s", res, err, root)
	}
	if res, err := p.RunCheck(ctx, "w-2", "worker", check); err != nil || !res.Passed() {
		t.Errorf("w-2: %+v, %v; want passed", res, err)
	}
	if _, err := p.RunCheck(ctx, "nope", "worker", check); err == nil {
		t.Error("a check on a node the fleet lacks ran")
	}
}
