package kagent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// The agent's drift check reports what the host says the running boot runs, not what the
// config says: an image and a kernel argument changed on the machine behind mcp's back
// show in the os-image and kernel-args annotations, and a value the host can no longer
// give is removed. Nothing is patched while nothing changed.
func TestDriftCheckReportsWhatTheHostRuns(t *testing.T) {
	nosmt := *chrony
	nosmt.Name, nosmt.KernelArgs = "rendered-worker-n", []string{"nosmt"}
	client, p := cluster(t, map[string]string{protocol.CurrentConfig: nosmt.Name, protocol.State: model.StateDone})
	host := &nodeexec.RecordingHost{}
	a, root := newAgent(t, client, serveRendered(t, &nosmt), host)
	dir := machine(t, host, root, a, nosmt.OSImage, "root=UUID=34bf nosmt")
	for _, f := range nosmt.Files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f.Path)), 0o755)
		os.WriteFile(filepath.Join(root, f.Path), f.Contents, 0o644)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	waitFor(t, client, "the host's first report", func(ann map[string]string) bool {
		return ann[protocol.OSImage] == nosmt.OSImage && ann[protocol.KernelArgs] == `["root=UUID=34bf","nosmt"]` && ann[protocol.DriftCount] == "0"
	})
	// Several drift checks with nothing changed: no patch. (A check that began before the
	// agent's own watch showed its first report may repeat it once: let it land first.)
	time.Sleep(2 * a.Interval)
	n := len(p.get())
	time.Sleep(5 * a.Interval)
	if got := p.get()[n:]; len(got) != 0 {
		t.Errorf("drift checks with nothing changed patched the node: %v", got)
	}

	// Someone on the machine: another image booted, nosmt gone.
	os.WriteFile(filepath.Join(dir, nodeexec.MachineBootedImage), []byte("quay.io/fcos@sha256:9\n"), 0o644)
	os.WriteFile(filepath.Join(dir, nodeexec.MachineCmdline), []byte("root=UUID=34bf mitigations=off\n"), 0o644)
	ann := waitFor(t, client, "the changed image and kernel arguments", func(ann map[string]string) bool {
		return ann[protocol.OSImage] == "quay.io/fcos@sha256:9" && ann[protocol.KernelArgs] == `["root=UUID=34bf","mitigations=off"]`
	})
	// The engine's comparison of what the node reports (model.HostDrift) sees both.
	got := model.HostDrift(&model.Node{OSImage: ann[protocol.OSImage], KernelArgs: []string{"root=UUID=34bf", "mitigations=off"}}, &nosmt)
	if len(got) != 2 {
		t.Errorf("drift from the reported values: %v", got)
	}
	// A command line the host can no longer read: unknown, not the old value.
	os.Remove(filepath.Join(dir, nodeexec.MachineCmdline))
	waitFor(t, client, "the kernel arguments removed", func(ann map[string]string) bool {
		_, ok := ann[protocol.KernelArgs]
		return !ok && ann[protocol.OSImage] == "quay.io/fcos@sha256:9"
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A reboot into the wrong image (the staged deployment rolled back at boot): the agent
// after boot verifies what the host runs and reports Degraded with the expected and found
// image, not Done.
func TestRebootIntoTheWrongImageDegrades(t *testing.T) {
	from := &model.Rendered{Name: "rendered-worker-a", OSImage: "quay.io/fcos@sha256:1"}
	target := &model.Rendered{Name: "rendered-worker-b", OSImage: "quay.io/fcos@sha256:2"}
	steps := nodeSteps(from, target)
	client, _ := cluster(t, handover(t, protocol.Handover{Desired: target.Name, Steps: steps, UpdateID: "u9"}))
	url := serveRendered(t, from, target)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := &nodeexec.RecordingHost{OnCall: func(call string) error {
		if call == "reboot" {
			cancel()
		}
		return nil
	}}
	a, root := newAgent(t, client, url, host)
	dir := machine(t, host, root, a, from.OSImage, "root=UUID=34bf")
	if err := a.Run(ctx); !errors.Is(err, nodeexec.ErrRebooting) {
		t.Fatalf("Run: %v, want ErrRebooting", err)
	}
	// The boot fails, and the machine comes back on the deployment it ran.
	os.WriteFile(filepath.Join(dir, nodeexec.MachineRollback), nil, 0o644)
	os.WriteFile(a.State.BootIDPath, []byte("boot-2\n"), 0o644)
	b := New(client.CoreV1().Nodes(), nodeName, root, url, recordHost(root, a))
	b.State.BootIDPath = a.State.BootIDPath
	if err := b.Resume(context.Background()); err == nil {
		t.Fatal("Resume after a boot into the old image: no error")
	}
	ann := getNode(t, client).Annotations
	rep := protocol.ReadReport(ann)
	if rep.State != model.StateDegraded || rep.ObservedUpdateID != "u9" || rep.Current != "" {
		t.Errorf("report %+v, want Degraded on u9 with no current config", rep)
	}
	for _, want := range []string{"os-image", "expected " + target.OSImage, "found " + from.OSImage} {
		if !strings.Contains(rep.Reason, want) {
			t.Errorf("reason %q does not say %q", rep.Reason, want)
		}
	}
}

// Done records what the host runs at that moment in the rolled-out annotation: the
// baseline a drift run compares what the config does not manage with (a kernel argument
// added by hand later). What the host cannot say is not recorded.
func TestDoneRecordsWhatWasRolledOut(t *testing.T) {
	client, _ := cluster(t, nil)
	host := &nodeexec.RecordingHost{}
	a, root := newAgent(t, client, "", host)
	machine(t, host, root, a, "quay.io/fcos@sha256:1", "root=UUID=34bf nosmt")
	if err := a.State.Done("rendered-worker-a"); err != nil {
		t.Fatal(err)
	}
	ann := getNode(t, client).Annotations
	if got, want := ann[protocol.RolledOut], `{"kernel_args":["root=UUID=34bf","nosmt"],"os_image":"quay.io/fcos@sha256:1"}`; got != want {
		t.Errorf("rolled-out after Done: %q, want %q", got, want)
	}
	// The engine reads it back as the node's baseline.
	var r model.HostRecord
	if err := json.Unmarshal([]byte(ann[protocol.RolledOut]), &r); err != nil || r.OSImage != "quay.io/fcos@sha256:1" {
		t.Errorf("rolled-out does not read as a model.HostRecord: %v %+v", err, r)
	}
}
