// Package kagent is the node agent's Kubernetes side (`mcp agent -node NAME`): it watches
// its own Node for the engine's hand-over (protocol.Handover: desired config, steps, update
// id), fetches the rendered configs from the boot server, runs exactly the handed-over
// steps through nodeexec.Agent — the code every provider runs — and reports through the
// Node's annotations (NodeState). When no hand-over is waiting it checks the disk against
// the current config every Interval and reports the drift. After an update the engine may
// ask it to run one of the pool's command health checks (Check): the request names the
// check, and the command is read from the Secret the engine wrote (protocol.HealthSecret),
// never from the Node. It reads nothing else from the cluster and writes nothing but its
// own Node's annotations. The protocol is described in docs/kubernetes.md.
package kagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/mcpfleet/mcp/kubeapi/nodeclient"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/nodeexec/bootclient"
)

// UpdatePath is where, inside the root, the agent records the update it runs, so that the
// agent starting after a reboot reports Done under the right update id (it sits next to
// nodeexec.PendingPath; nodeexec knows nothing of update ids).
const UpdatePath = nodeexec.StateDir + "/update.json"

type updateRecord struct {
	UpdateID string `json:"update_id"`
	// ProgressAtBoot is the progress to count from after the reboot: the steps up to and
	// including the first reboot step.
	ProgressAtBoot int `json:"progress_at_boot"`
}

// Agent is a node's agent on Kubernetes.
type Agent struct {
	Nodes nodeclient.Nodes
	Node  string
	// Server is the boot server's base URL (rendered configs: Server/rendered/NAME).
	Server string
	HTTP   *http.Client
	Agent  *nodeexec.Agent // its State is State
	State  *NodeState
	// Interval is the time between drift checks of a settled node.
	Interval time.Duration
	Log      *slog.Logger
	// Observe, when set, sees the node's state and drift after each pass (for metrics).
	Observe func(state string, drifted int, err error)
	// Checks runs the engine's command health checks; nil: every request is answered
	// "not run".
	Checks *Checker

	mu       sync.Mutex
	configs  map[string]*model.Rendered // fetched rendered configs (immutable)
	ran      string                     // the last update id this process ran
	checked  string                     // the last check run id this process answered
	observed string                     // the last observation request id it took up
}

// New builds the agent of node for root: host performs the non-file effects.
func New(nodes nodeclient.Nodes, node, root, server string, host nodeexec.Host) *Agent {
	a := &Agent{Nodes: nodes, Node: node, Server: server, HTTP: &http.Client{Timeout: 30 * time.Second},
		Interval: time.Minute, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), configs: map[string]*model.Rendered{}}
	a.State = &NodeState{Nodes: nodes, Node: node, Host: host,
		ReportError: func(err error) { a.Log.Error("report", "err", err.Error()) }}
	a.Agent = &nodeexec.Agent{Exec: &nodeexec.Executor{Root: root, Host: host}, State: a.State, RebootWait: 10 * time.Minute}
	return a
}

// Run finishes an update a reboot interrupted, then follows the Node until ctx ends. It
// returns nodeexec.ErrRebooting when it stopped because the node is going down for a
// reboot it asked for, nil when ctx ended otherwise.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Resume(ctx); errors.Is(err, nodeexec.ErrRebooting) {
		return err
	}
	if err := a.FirstBoot(ctx); errors.Is(err, nodeexec.ErrRebooting) {
		return err
	} else if err != nil {
		a.Log.Error("first boot", "err", err.Error())
	}
	// The informer's first list is made once the API server answers: started before (the
	// agent starts with its machine, not after the network is online), its reflector's
	// backoff would grow while the link comes up and hold the first pass back.
	if _, err := a.State.GetNode(ctx); err != nil && ctx.Err() == nil {
		a.Log.Error("start", "err", err.Error())
	}
	sel := fields.OneTermEqualSelector("metadata.name", a.Node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return a.Nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return a.Nodes.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, cache.Indexers{})
	kick := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: poke,
		UpdateFunc: func(_, n any) { poke(n) }}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go inf.RunWithContext(ctx)
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	// The first pass checks too: the node's report of what its host runs is not left to
	// wait an Interval after the agent starts.
	first := true
	for {
		check := first
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C:
			check = true
		}
		obj, ok, _ := inf.GetStore().GetByKey(a.Node)
		node, _ := obj.(*corev1.Node)
		if !ok || node == nil {
			continue
		}
		first = false
		ran, err := a.Reconcile(ctx, node)
		if errors.Is(err, nodeexec.ErrRebooting) {
			return err
		}
		if err != nil {
			a.Log.Error("update", "err", err.Error())
		}
		if check && !ran {
			a.CheckDrift(ctx, node)
		}
		a.Check(ctx, node)
		a.AnswerObserve(ctx, node)
	}
}

// Resume finishes an update a reboot interrupted (nodeexec.Agent.Resume), reporting under
// the update id recorded before the reboot. A first boot that rebooted is finished here.
func (a *Agent) Resume(ctx context.Context) error {
	if _, err := a.firstBootCurrent(ctx); err != nil {
		a.Log.Error("first boot", "err", err.Error())
	}
	rec := a.readUpdate()
	a.State.Begin(rec.UpdateID, rec.ProgressAtBoot)
	resumed, err := a.Agent.Resume(ctx, a.stepDone)
	if !resumed {
		return err
	}
	a.mu.Lock()
	a.ran = rec.UpdateID
	a.mu.Unlock()
	a.observe(err)
	if err != nil {
		a.Log.Error("resuming after reboot", "update", rec.UpdateID, "err", err.Error())
		return err
	}
	a.Log.Info("resumed after reboot", "update", rec.UpdateID)
	return nil
}

// FirstBoot runs the agent's first-boot path (nodeexec.Agent.FirstBoot) when the root holds
// the first-boot record and the Node reports no current config: its reports carry no update
// id (no hand-over asked for it), and its Done sets current-config — and desired-config,
// when the engine has written none — to the config the node was booted with. Run it after
// Resume. It returns nodeexec.ErrRebooting when the node goes down for the pivot's reboot.
func (a *Agent) FirstBoot(ctx context.Context) error {
	current, err := a.firstBootCurrent(ctx)
	if err != nil {
		return err
	}
	ran, err := a.Agent.FirstBoot(ctx, current, a.fetch, a.stepDone)
	if !ran {
		return err
	}
	a.observe(err)
	if err == nil {
		a.Log.Info("first boot done")
		a.CheckDrift(ctx, nil)
	}
	return err
}

// firstBootCurrent is, when the root holds the first-boot record, the Node's current
// config ("" when it reports none: a first boot); it also readies the reports of a first
// boot (NodeState.SetFirstBoot). With no record it asks nothing of the API.
func (a *Agent) firstBootCurrent(ctx context.Context) (string, error) {
	rec, err := a.Agent.Exec.ReadFirstBoot()
	if err != nil || rec == nil {
		return "", err
	}
	node, err := a.State.GetNode(ctx)
	if err != nil {
		return "", fmt.Errorf("first boot: %w", err)
	}
	current := node.Annotations[protocol.CurrentConfig]
	if current == "" && node.Annotations[protocol.DesiredConfig] == "" {
		a.State.SetFirstBoot(rec.Rendered)
	}
	a.State.Begin("", 0)
	return current, nil
}

// Reconcile does what the node's annotations ask: it runs the hand-over when its update id
// is not the one the node reports having observed — or when the node reports it Working
// although no agent runs it (an agent stopped in the middle) — and reports false when
// there was nothing to run. An update id this process ran is never run again.
func (a *Agent) Reconcile(ctx context.Context, node *corev1.Node) (bool, error) {
	ann := node.Annotations
	h, ok, herr := protocol.ReadHandover(ann)
	if !ok {
		return false, nil
	}
	rep := protocol.ReadReport(ann)
	a.mu.Lock()
	already := a.ran == h.UpdateID
	a.mu.Unlock()
	if already || (rep.ObservedUpdateID == h.UpdateID && rep.State != model.StateWorking) {
		return false, nil
	}
	a.mu.Lock()
	a.ran = h.UpdateID
	a.mu.Unlock()
	err := a.update(ctx, h, herr, rep.Current)
	a.observe(err)
	if err == nil {
		a.CheckDrift(ctx, nil)
	}
	return true, err
}

func (a *Agent) update(ctx context.Context, h protocol.Handover, herr error, current string) error {
	boot := slices.IndexFunc(h.Steps, func(s model.Step) bool { return s.Kind == model.StepReboot }) + 1
	a.State.Begin(h.UpdateID, 0)
	a.Log.Info("hand-over", "update", h.UpdateID, "from", current, "to", h.Desired, "steps", len(h.Steps))
	if herr != nil {
		return a.Agent.Degrade(fmt.Errorf("update %s: %w", h.UpdateID, herr))
	}
	if err := a.writeUpdate(updateRecord{UpdateID: h.UpdateID, ProgressAtBoot: boot}); err != nil {
		return a.Agent.Degrade(fmt.Errorf("recording update %s: %w", h.UpdateID, err))
	}
	// The hand-over's target was stored by the apply an instant before: a server that has
	// not seen it yet answers 404, and is asked again (fetchRetrying).
	target, err := a.fetchRetrying(ctx, h.Desired, true)
	if err != nil {
		return a.Agent.Degrade(err)
	}
	var from *model.Rendered
	if current != "" {
		// A current config the server does not serve is one the state does not know (the
		// MCO's, a lost state's): the engine planned the steps from nothing managed.
		if from, err = a.fetch(ctx, current); errors.Is(err, bootclient.ErrNotServed) {
			a.Log.Info("current config not served: updating from none", "current", current)
			from = nil
		} else if err != nil {
			return a.Agent.Degrade(fmt.Errorf("the node's current config: %w", err))
		}
	}
	err = a.Agent.Update(ctx, from, target, h.Steps, a.stepDone)
	var stale *nodeexec.StaleError
	switch {
	case err == nil && model.StageOnly(h.Steps):
		a.Log.Info("done", "update", h.UpdateID, "current", current, "staged", target.Name)
	case err == nil:
		a.Log.Info("done", "update", h.UpdateID, "current", target.Name)
	case errors.As(err, &stale):
		// Nothing changed on the node: the engine must still hear that it was not adopted.
		a.Log.Info("refused", "update", h.UpdateID, "err", err.Error())
		if rerr := a.State.Refused(err.Error()); rerr != nil {
			return fmt.Errorf("%w (and reporting it failed: %v)", err, rerr)
		}
	}
	return err
}

// CheckDrift compares the node with its current config — the disk, and what the host
// says the running boot runs (nodeexec.ObserveHost, model.CheckHost) — and reports the
// disk's drift and the host's word in the Node's annotations, where the engine compares
// them (model.HostDrift); node (nil: fetch it) gives the current config's name and what is
// reported already. A node with no current config still reports what its host runs: a
// plan for its first config reads the image it boots.
func (a *Agent) CheckDrift(ctx context.Context, node *corev1.Node) {
	if node == nil {
		n, err := a.State.GetNode(ctx)
		if err != nil {
			a.Log.Error("drift check", "err", err.Error())
			return
		}
		node = n
	}
	o, err := a.State.Observe()
	if err != nil {
		a.Log.Error("drift check", "err", err.Error())
	}
	name := node.Annotations[protocol.CurrentConfig]
	if name == "" {
		if err := a.State.ReportHost(node.Annotations, o); err != nil {
			a.Log.Error("drift check", "err", err.Error())
		}
		return
	}
	r, err := a.fetch(ctx, name)
	if err != nil {
		// A current config the server does not give (the MCO's name, not stored): its disk
		// cannot be checked, but what the host runs and the protocol spoken are still said
		// (the engine asks only an agent of protocol.ObserveVersion what the node carries).
		a.Log.Error("drift check", "current", name, "err", err.Error())
		if err := a.State.ReportHost(node.Annotations, o); err != nil {
			a.Log.Error("drift check", "err", err.Error())
		}
		return
	}
	var d []model.Drift
	if err == nil {
		d, err = a.Agent.Exec.Verify(r)
	}
	if err == nil {
		err = a.State.ReportDrift(node.Annotations, d, o)
	}
	if err != nil {
		a.Log.Error("drift check", "current", name, "err", err.Error())
		return
	}
	// The agent's own count (the engine compares the reported values itself).
	host := model.CheckHost(o.KernelArgs, o.OSImage, r, nil)
	for _, h := range host {
		a.Log.Warn("drift", "current", name, "drift", h.String())
	}
	if a.Observe != nil {
		a.Observe(node.Annotations[protocol.State], len(d)+len(host), nil)
	}
}

func (a *Agent) stepDone(s model.Step) {
	a.Log.Info("step done", "step", s.String())
	a.State.StepDone(s)
}

func (a *Agent) observe(err error) {
	if a.Observe == nil {
		return
	}
	state := model.StateDone
	if err != nil {
		state = model.StateDegraded
	}
	if errors.Is(err, nodeexec.ErrRebooting) {
		state = model.StateWorking
	}
	a.Observe(state, -1, err)
}

// fetch gets a rendered config from the boot server once (they are immutable), retrying a
// failed fetch a few times — but not a name the server does not store (a foreign current
// config: asking again gives the same answer).
func (a *Agent) fetch(ctx context.Context, name string) (*model.Rendered, error) {
	return a.fetchRetrying(ctx, name, false)
}

// fetchRetrying is fetch; notServed retries a name the server does not store too (a
// target published an instant before: the server may not have seen it yet).
func (a *Agent) fetchRetrying(ctx context.Context, name string, notServed bool) (*model.Rendered, error) {
	var err error
	for i, delay := 0, time.Second; i < 3; i, delay = i+1, 2*delay {
		var r *model.Rendered
		if r, err = a.fetchOnce(ctx, name); err == nil {
			return r, nil
		}
		if !notServed && errors.Is(err, bootclient.ErrNotServed) {
			return nil, err
		}
		if i < 2 {
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(delay):
			}
		}
	}
	return nil, err
}

// fetchOnce gives the cached config, else fetches it once and caches it.
func (a *Agent) fetchOnce(ctx context.Context, name string) (*model.Rendered, error) {
	if r := a.cached(name); r != nil {
		return r, nil
	}
	r, err := bootclient.FetchRendered(ctx, a.HTTP, a.Server, name)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.configs[name] = r
	a.mu.Unlock()
	return r, nil
}

func (a *Agent) cached(name string) *model.Rendered {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.configs[name]
}

func (a *Agent) readUpdate() updateRecord {
	var rec updateRecord
	r, err := os.OpenRoot(a.Agent.Exec.Root)
	if err != nil {
		return rec
	}
	defer r.Close()
	b, err := nodeexec.ReadRecord(r, UpdatePath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.Log.Error("reading the update record", "err", err.Error())
		}
		return rec
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		a.Log.Error("reading the update record", "path", "/"+UpdatePath, "err", err.Error())
	}
	return rec
}

func (a *Agent) writeUpdate(rec updateRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return a.Agent.Exec.WriteRecord(UpdatePath, b)
}
