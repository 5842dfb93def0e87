package kagent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/steps"
)

const nodeName = "worker-0"

// serveRendered serves rendered configs by name, as the boot server's /rendered/ does.
func serveRendered(t *testing.T, rs ...*model.Rendered) string {
	t.Helper()
	byName := map[string][]byte{}
	for _, r := range rs {
		b, _ := json.Marshal(r)
		byName[r.Name] = b
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, ok := byName[strings.TrimPrefix(req.URL.Path, "/rendered/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// patches records the annotation patches of the agent, in order.
type patches struct {
	mu   sync.Mutex
	list []map[string]string
}

func (p *patches) get() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]string(nil), p.list...)
}

// cluster is a fake clientset holding one node with ann, recording the patches to it.
func cluster(t *testing.T, ann map[string]string) (*fake.Clientset, *patches) {
	t.Helper()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Annotations: ann}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})
	p := &patches{}
	client.PrependReactor("patch", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pa := action.(k8stesting.PatchAction)
		if pa.GetName() != nodeName {
			t.Errorf("patch of node %s", pa.GetName())
		}
		var body struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		var all map[string]any
		json.Unmarshal(pa.GetPatch(), &all)
		if len(all) != 1 || all["metadata"] == nil || len(all["metadata"].(map[string]any)) != 1 {
			t.Errorf("patch touches more than metadata.annotations: %s", pa.GetPatch())
		}
		json.Unmarshal(pa.GetPatch(), &body)
		p.mu.Lock()
		p.list = append(p.list, body.Metadata.Annotations)
		p.mu.Unlock()
		return false, nil, nil
	})
	return client, p
}

func handover(t *testing.T, h protocol.Handover) map[string]string {
	t.Helper()
	ann, err := h.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	return ann
}

func nodeSteps(from, to *model.Rendered) []model.Step {
	var out []model.Step
	for _, s := range steps.Derive(from, to) {
		if s.Kind.OnNode() {
			out = append(out, s)
		}
	}
	return out
}

func newAgent(t *testing.T, client *fake.Clientset, url string, host nodeexec.Host) (*Agent, string) {
	t.Helper()
	root := t.TempDir()
	bootID := filepath.Join(t.TempDir(), "boot_id")
	os.WriteFile(bootID, []byte("boot-1\n"), 0o644)
	a := New(client.CoreV1().Nodes(), nodeName, root, url, host)
	a.State.BootIDPath = bootID
	a.Interval = 50 * time.Millisecond
	return a, root
}

// machine makes host stand in for the node's machine, kept in root as `mcp agent
// -host=record` keeps it (nodeexec.MachineDir), booted with image ("": Booted) and the
// kernel command line cmdline; it returns the machine's directory.
func machine(t *testing.T, host *nodeexec.RecordingHost, root string, a *Agent, image, cmdline string) string {
	t.Helper()
	r := recordHost(root, a)
	host.Root, host.Machine, host.BootID = r.Root, r.Machine, r.BootID
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(host.Machine, name), []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(host.Machine, 0o755)
	write(nodeexec.MachineCmdline, cmdline)
	if image != "" {
		write(nodeexec.MachineBootedImage, image)
	}
	return host.Machine
}

// recordHost is the recording host of a's node, keeping its machine in root.
func recordHost(root string, a *Agent) *nodeexec.RecordingHost {
	path := a.State.BootIDPath
	return &nodeexec.RecordingHost{Root: root, Machine: filepath.Join(root, nodeexec.MachineDir),
		BootID: func() (string, error) { return nodeexec.ReadBootID(path) }}
}

func getNode(t *testing.T, client *fake.Clientset) *corev1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, client *fake.Clientset, what string, ok func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ann := getNode(t, client).Annotations
		if ok(ann) {
			return ann
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; node annotations: %v", what, ann)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var chrony = &model.Rendered{Name: "rendered-worker-a", OSImage: "quay.io/fcos@sha256:1", Files: []model.File{
	{
		Entry:    model.Entry{Path: "/etc/chrony.conf", OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "chronyd.service"}}},
		Mode:     0o644,
		Contents: []byte("server ntp.internal\n"),
	},
	{Entry: model.Entry{Path: "/etc/motd", OnChange: []model.Policy{{Kind: model.PolicyNone}}}, Mode: 0o644, Contents: []byte("managed\n")},
}}

// A hand-over on the Node: the agent writes the files into the root and reports Done
// under the observed update id with what the host says it runs; then the drift check
// reports no drift.
func TestHandoverRunsAndReports(t *testing.T) {
	steps := nodeSteps(&model.Rendered{OSImage: chrony.OSImage}, chrony)
	client, p := cluster(t, handover(t, protocol.Handover{Desired: chrony.Name, Steps: steps, UpdateID: "u1"}))
	host := &nodeexec.RecordingHost{}
	a, root := newAgent(t, client, serveRendered(t, chrony), host)
	machine(t, host, root, a, chrony.OSImage, "BOOT_IMAGE=(hd0,gpt3)/vmlinuz root=UUID=34bf console=ttyS0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	ann := waitFor(t, client, "Done and the drift check", func(ann map[string]string) bool {
		return ann[protocol.State] == model.StateDone && ann[protocol.DriftCount] != ""
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	rep := protocol.ReadReport(ann)
	want := protocol.Report{Current: chrony.Name, State: model.StateDone, ObservedUpdateID: "u1", Progress: len(steps)}
	if rep != want {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	if ann[protocol.KernelArgs] != `["root=UUID=34bf","console=ttyS0"]` || ann[protocol.OSImage] != chrony.OSImage || ann[protocol.Drift] != "[]" || ann[protocol.DriftCount] != "0" {
		t.Errorf("kernel args %q, drift %q count %q", ann[protocol.KernelArgs], ann[protocol.Drift], ann[protocol.DriftCount])
	}
	for _, f := range chrony.Files {
		if b, err := os.ReadFile(filepath.Join(root, f.Path)); err != nil || string(b) != string(f.Contents) {
			t.Errorf("%s: %q, %v", f.Path, b, err)
		}
	}
	if got := strings.Join(host.Recorded(), ";"); !strings.Contains(got, "restart chronyd.service") {
		t.Errorf("host calls: %s", got)
	}
	// An update shorter than WorkingAfter reports its end alone: Done with every step
	// counted and the protocol version, in one patch.
	var reports []map[string]string
	for _, pa := range p.get() {
		if pa[protocol.ObservedUpdateID] != "" {
			reports = append(reports, pa)
		}
	}
	if len(reports) != 1 {
		t.Fatalf("reports %v: want Done alone", reports)
	}
	if d := reports[0]; d[protocol.State] != model.StateDone || d[protocol.CurrentConfig] != chrony.Name ||
		d[protocol.Progress] != strconv.Itoa(len(steps)) || d[protocol.AgentProtocol] != strconv.Itoa(protocol.Version) {
		t.Errorf("report: %v, want Done with progress %d and protocol version %d", d, len(steps), protocol.Version)
	}
}

// A failing step: Degraded with the reason under the update id, the disk rolled back.
func TestFailingStepReportsDegraded(t *testing.T) {
	steps := nodeSteps(&model.Rendered{OSImage: chrony.OSImage}, chrony)
	client, _ := cluster(t, handover(t, protocol.Handover{Desired: chrony.Name, Steps: steps, UpdateID: "u2"}))
	a, root := newAgent(t, client, serveRendered(t, chrony), &nodeexec.RecordingHost{Fail: "restart chronyd.service"})
	ran, err := a.Reconcile(context.Background(), getNode(t, client))
	if !ran || err == nil {
		t.Fatalf("Reconcile: ran %v, err %v; want a failed update", ran, err)
	}
	rep := protocol.ReadReport(getNode(t, client).Annotations)
	if rep.State != model.StateDegraded || rep.ObservedUpdateID != "u2" ||
		!strings.Contains(rep.Reason, "restart chronyd.service") || !strings.Contains(rep.Reason, "rolled back") {
		t.Errorf("report %+v, want Degraded on u2 naming the failed restart", rep)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/chrony.conf")); !os.IsNotExist(err) {
		t.Errorf("/etc/chrony.conf after the rollback: %v", err)
	}
	// Not run again by this process, even though the node still carries the hand-over.
	if ran, _ := a.Reconcile(context.Background(), getNode(t, client)); ran {
		t.Error("the failed update ran again")
	}
}

// A hand-over whose update id the node reports observed is not run again, Done or
// Degraded; one reported Working with no agent running it is.
func TestObservedUpdateIsNotRerun(t *testing.T) {
	steps := nodeSteps(&model.Rendered{OSImage: chrony.OSImage}, chrony)
	for _, state := range []string{model.StateDone, model.StateDegraded, model.StateWorking} {
		ann := handover(t, protocol.Handover{Desired: chrony.Name, Steps: steps, UpdateID: "u3"})
		ann[protocol.ObservedUpdateID], ann[protocol.State] = "u3", state
		client, p := cluster(t, ann)
		host := &nodeexec.RecordingHost{}
		a, root := newAgent(t, client, serveRendered(t, chrony), host)
		ran, err := a.Reconcile(context.Background(), getNode(t, client))
		_, statErr := os.Stat(filepath.Join(root, "etc/chrony.conf"))
		if state == model.StateWorking {
			if !ran || err != nil || statErr != nil || getNode(t, client).Annotations[protocol.State] != model.StateDone {
				t.Errorf("an interrupted update (Working): ran %v, err %v, file %v", ran, err, statErr)
			}
			continue
		}
		if ran || err != nil || len(p.get()) != 0 || len(host.Recorded()) != 0 || statErr == nil {
			t.Errorf("%s: ran %v, err %v, patches %v, host calls %v", state, ran, err, p.get(), host.Recorded())
		}
	}
}

// An update with a reboot: the agent records it, asks for the reboot and stops
// (ErrRebooting); the agent started after boot (new boot id) verifies and reports Done
// under the update id, with the whole progress.
func TestRebootResumesUnderTheUpdateID(t *testing.T) {
	target := &model.Rendered{Name: "rendered-worker-k", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/sysctl.d/90-mcp.conf"}, Mode: 0o644, Contents: []byte("vm.swappiness=10\n")}}}
	steps := nodeSteps(nil, target)
	if !slices.ContainsFunc(steps, func(s model.Step) bool { return s.Kind == model.StepReboot }) {
		t.Fatalf("steps %v have no reboot", steps)
	}
	client, _ := cluster(t, handover(t, protocol.Handover{Desired: target.Name, Steps: steps, UpdateID: "u4"}))
	url := serveRendered(t, target)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := &nodeexec.RecordingHost{OnCall: func(call string) error {
		if call == "reboot" {
			cancel() // the machine goes down
		}
		return nil
	}}
	a, root := newAgent(t, client, url, host)
	machine(t, host, root, a, "", "root=UUID=34bf quiet")
	if err := a.Run(ctx); !errors.Is(err, nodeexec.ErrRebooting) {
		t.Fatalf("Run: %v, want ErrRebooting", err)
	}
	if rep := protocol.ReadReport(getNode(t, client).Annotations); rep.State != model.StateWorking {
		t.Errorf("report before the reboot: %+v", rep)
	}
	for _, p := range []string{nodeexec.PendingPath, UpdatePath} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("before the reboot: %v", err)
		}
	}
	// Boot: a new boot id, a new agent process.
	os.WriteFile(a.State.BootIDPath, []byte("boot-2\n"), 0o644)
	b := New(client.CoreV1().Nodes(), nodeName, root, url, recordHost(root, a))
	b.State.BootIDPath = a.State.BootIDPath
	if err := b.Resume(context.Background()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	rep := protocol.ReadReport(getNode(t, client).Annotations)
	want := protocol.Report{Current: target.Name, State: model.StateDone, ObservedUpdateID: "u4", Progress: len(steps)}
	if rep != want {
		t.Errorf("report after boot %+v, want %+v", rep, want)
	}
	// What the machine booted with: its own arguments, and the one the kargs step staged.
	if k := getNode(t, client).Annotations[protocol.KernelArgs]; k != `["root=UUID=34bf","quiet","nosmt"]` {
		t.Errorf("kernel args after boot %q", k)
	}
	if _, err := os.Stat(filepath.Join(root, nodeexec.PendingPath)); !os.IsNotExist(err) {
		t.Errorf("pending record after boot: %v", err)
	}
	if ran, _ := b.Reconcile(context.Background(), getNode(t, client)); ran {
		t.Error("the resumed update ran again")
	}
}

// bootedWith writes into root what Ignition writes from the served config of r: its files
// and the first-boot record.
func bootedWith(t *testing.T, root string, r *model.Rendered) {
	t.Helper()
	for _, f := range r.Files {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f.Path)), 0o755)
		if err := os.WriteFile(filepath.Join(root, f.Path), f.Contents, os.FileMode(f.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, nodeexec.StateDir), 0o755)
	if err := os.WriteFile(filepath.Join(root, nodeexec.FirstBootPath), content.FirstBootOf(r).Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A first boot on Kubernetes from an older image: the agent pivots and goes down for the
// reboot (reporting Working under no update id); the agent that starts after boot reports
// Done with current-config and desired-config both on the config the node was booted with,
// and the config's OS image. No hand-over is needed, and none is run.
func TestFirstBootReportsCurrentAndDesired(t *testing.T) {
	client, p := cluster(t, nil)
	url := serveRendered(t, chrony)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := &nodeexec.RecordingHost{Booted: "quay.io/fcos@sha256:0", OnCall: func(call string) error {
		if call == "reboot" {
			cancel()
		}
		return nil
	}}
	a, root := newAgent(t, client, url, host)
	bootedWith(t, root, chrony)
	if err := a.Run(ctx); !errors.Is(err, nodeexec.ErrRebooting) {
		t.Fatalf("Run: %v, want ErrRebooting", err)
	}
	if got := strings.Join(host.Recorded(), ";"); got != "pivot "+chrony.OSImage+";reboot" {
		t.Errorf("host calls %s", got)
	}
	if w := p.get()[0]; w[protocol.State] != model.StateWorking || w[protocol.ObservedUpdateID] != "" || w[protocol.DesiredConfig] != "" {
		t.Errorf("first report %v, want Working under no update id", w)
	}
	os.WriteFile(a.State.BootIDPath, []byte("boot-2\n"), 0o644)
	b := New(client.CoreV1().Nodes(), nodeName, root, url, &nodeexec.RecordingHost{Booted: chrony.OSImage})
	b.State.BootIDPath = a.State.BootIDPath
	if err := b.Resume(context.Background()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	ann := getNode(t, client).Annotations
	if ann[protocol.CurrentConfig] != chrony.Name || ann[protocol.DesiredConfig] != chrony.Name ||
		ann[protocol.State] != model.StateDone || ann[protocol.OSImage] != chrony.OSImage || ann[protocol.ObservedUpdateID] != "" {
		t.Errorf("annotations after boot: %v", ann)
	}
	if _, ok, _ := protocol.ReadHandover(ann); ok {
		t.Errorf("the first report reads as a hand-over: %v", ann)
	}
	if _, err := os.Stat(filepath.Join(root, nodeexec.FirstBootPath)); !os.IsNotExist(err) {
		t.Errorf("first-boot record after Done: %v", err)
	}
	n := len(p.get())
	if err := b.FirstBoot(context.Background()); err != nil || len(p.get()) != n {
		t.Errorf("FirstBoot after the first boot: %v, patches %v", err, p.get()[n:])
	}
}

// A first boot on the pool's image: no pivot, no reboot, Done at once. A desired-config
// the engine wrote is the engine's: the first report leaves it.
func TestFirstBootOnThePoolsImage(t *testing.T) {
	for _, engineDesired := range []string{"", "rendered-worker-b"} {
		ann := map[string]string{}
		if engineDesired != "" {
			ann[protocol.DesiredConfig] = engineDesired
		}
		client, _ := cluster(t, ann)
		host := &nodeexec.RecordingHost{Booted: chrony.OSImage}
		a, root := newAgent(t, client, serveRendered(t, chrony), host)
		bootedWith(t, root, chrony)
		if err := a.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := a.FirstBoot(context.Background()); err != nil {
			t.Fatalf("FirstBoot: %v", err)
		}
		got := getNode(t, client).Annotations
		want := engineDesired
		if want == "" {
			want = chrony.Name
		}
		if got[protocol.CurrentConfig] != chrony.Name || got[protocol.State] != model.StateDone || got[protocol.DesiredConfig] != want {
			t.Errorf("engine's desired %q: annotations %v", engineDesired, got)
		}
		if len(host.Recorded()) != 0 {
			t.Errorf("host calls %v, want none", host.Recorded())
		}
	}
}

// A hand-over's target the boot server has not seen yet (the apply stored it an instant
// before: a 404 the first time) is asked for again, not taken as a config that does not
// exist: the update runs and reports Done, not Degraded.
func TestHandoverTargetNotServedYet(t *testing.T) {
	steps := nodeSteps(&model.Rendered{OSImage: chrony.OSImage}, chrony)
	client, _ := cluster(t, handover(t, protocol.Handover{Desired: chrony.Name, Steps: steps, UpdateID: "u1"}))
	served := serveRendered(t, chrony)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if asked.Add(1) == 1 {
			http.NotFound(w, req)
			return
		}
		http.Redirect(w, req, served+req.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	host := &nodeexec.RecordingHost{}
	a, root := newAgent(t, client, srv.URL, host)
	machine(t, host, root, a, chrony.OSImage, "root=UUID=34bf")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	ann := waitFor(t, client, "the update's end", func(ann map[string]string) bool {
		return ann[protocol.ObservedUpdateID] == "u1" && (ann[protocol.State] == model.StateDone || ann[protocol.State] == model.StateDegraded)
	})
	cancel()
	<-errc
	if ann[protocol.State] != model.StateDone || ann[protocol.CurrentConfig] != chrony.Name {
		t.Errorf("state %s (%s), current %q: want Done on %s after a first 404", ann[protocol.State], ann[protocol.Reason], ann[protocol.CurrentConfig], chrony.Name)
	}
}
