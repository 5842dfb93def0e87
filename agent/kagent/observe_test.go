package kagent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

func carry(t *testing.T, root string, r *model.Rendered) {
	t.Helper()
	for _, f := range r.Files {
		p := filepath.Join(root, f.Path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, f.Contents, os.FileMode(f.Mode)); err != nil {
			t.Fatal(err)
		}
	}
}

func observeRequest(t *testing.T, target, id string) map[string]string {
	t.Helper()
	ann, err := protocol.ObserveRun{Target: target, RequestID: id}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	return ann
}

// TestAnswerObserve: the agent answers a request with its own check of the disk against
// the config the request names, fetched from the boot server; a request answered is not
// answered again; a config the server does not give is answered with why.
func TestAnswerObserve(t *testing.T) {
	client, p := cluster(t, observeRequest(t, chrony.Name, "r1"))
	a, root := newAgent(t, client, serveRendered(t, chrony), &nodeexec.RecordingHost{})
	carry(t, root, chrony)
	os.WriteFile(filepath.Join(root, "etc/motd"), []byte("changed\n"), 0o644)
	if !a.AnswerObserve(context.Background(), getNode(t, client)) {
		t.Fatal("the request was not answered")
	}
	rep, ok := protocol.ReadObserveReport(getNode(t, client).Annotations)
	if !ok || rep.RequestID != "r1" || rep.Target != chrony.Name || rep.Reason != "" || len(rep.Drift) != 1 || rep.Drift[0].Path != "/etc/motd" {
		t.Fatalf("answer %+v (%v): want /etc/motd differing, alone", rep, ok)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/motd")); string(b) != "changed\n" {
		t.Errorf("observing changed the node: /etc/motd = %q", b)
	}
	n := len(p.get())
	if a.AnswerObserve(context.Background(), getNode(t, client)) || len(p.get()) != n {
		t.Error("an answered request was answered again")
	}
	client, _ = cluster(t, observeRequest(t, "rendered-worker-unknown", "r2"))
	a, _ = newAgent(t, client, serveRendered(t, chrony), &nodeexec.RecordingHost{})
	a.AnswerObserve(context.Background(), getNode(t, client))
	if rep, ok := protocol.ReadObserveReport(getNode(t, client).Annotations); !ok || rep.RequestID != "r2" || !strings.Contains(rep.Reason, "404") {
		t.Errorf("a config not served: %+v", rep)
	}
}

// TestUpdateFromAForeignConfig: a node whose current config the boot server does not
// serve (the MCO's name) runs the steps planned from its observation, from nothing
// managed, instead of failing to fetch that config.
func TestUpdateFromAForeignConfig(t *testing.T) {
	ann := handover(t, protocol.Handover{Desired: chrony.Name, UpdateID: "u1",
		Steps: []model.Step{{Kind: model.StepWrite, Target: "/etc/motd"}}})
	ann[protocol.CurrentConfig] = "rendered-worker-0123456789abcdef"
	client, _ := cluster(t, ann)
	a, root := newAgent(t, client, serveRendered(t, chrony), &nodeexec.RecordingHost{})
	carry(t, root, chrony)
	os.WriteFile(filepath.Join(root, "etc/motd"), []byte("old\n"), 0o644)
	if ran, err := a.Reconcile(context.Background(), getNode(t, client)); !ran || err != nil {
		t.Fatalf("Reconcile: ran %v, %v", ran, err)
	}
	if rep := protocol.ReadReport(getNode(t, client).Annotations); rep.State != model.StateDone || rep.Current != chrony.Name {
		t.Errorf("report %+v: want Done on %s", rep, chrony.Name)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/motd")); string(b) != "managed\n" {
		t.Errorf("/etc/motd = %q", b)
	}
}

// TestStaleAdoptionIsRefusedNotDegraded: an adoption of a node that no longer carries the
// target changes nothing and says so beside Done on the config the node was on (the
// engine's waiter reports it as a stale plan), not Degraded.
func TestStaleAdoptionIsRefusedNotDegraded(t *testing.T) {
	ann := handover(t, protocol.Handover{Desired: chrony.Name, UpdateID: "u1", Steps: []model.Step{{Kind: model.StepAdopt}}})
	ann[protocol.CurrentConfig] = "rendered-worker-0123456789abcdef"
	client, _ := cluster(t, ann)
	a, root := newAgent(t, client, serveRendered(t, chrony), &nodeexec.RecordingHost{})
	carry(t, root, chrony)
	os.Remove(filepath.Join(root, "etc/motd"))
	a.Reconcile(context.Background(), getNode(t, client))
	rep := protocol.ReadReport(getNode(t, client).Annotations)
	if rep.State != model.StateDone || rep.Current != "rendered-worker-0123456789abcdef" || rep.ObservedUpdateID != "u1" || !strings.Contains(rep.Reason, "stale plan") {
		t.Errorf("report %+v: want Done on the foreign config under u1, the reason a stale plan", rep)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/motd")); !os.IsNotExist(err) {
		t.Errorf("the refused adoption wrote /etc/motd: %v", err)
	}
}

// TestForeignCurrentConfigAnnounced: an agent whose node runs a config the boot server
// does not give (the MCO's name) still says which protocol it speaks at its first check:
// the engine asks only such an agent what its node carries.
func TestForeignCurrentConfigAnnounced(t *testing.T) {
	client, _ := cluster(t, map[string]string{protocol.CurrentConfig: "rendered-worker-0123456789abcdef"})
	a, _ := newAgent(t, client, serveRendered(t), &nodeexec.RecordingHost{})
	a.CheckDrift(context.Background(), nil)
	if v := getNode(t, client).Annotations[protocol.AgentProtocol]; v != strconv.Itoa(protocol.Version) {
		t.Errorf("agent-protocol %q after the first check, want %d", v, protocol.Version)
	}
}
