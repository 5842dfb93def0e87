package kagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/nodeclient"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// NodeState is the nodeexec.NodeState of an agent on Kubernetes: the agent's annotations
// on its own Node (protocol.CurrentConfig, State, Reason, ObservedUpdateID, Progress, Drift,
// OSImage, KernelArgs, AgentProtocol). Every write is a JSON merge patch of
// metadata.annotations and nothing else.
//
// It speaks protocol.Version 3: an update's reports are its Done or Degraded, in one patch.
// Working (and from then on the progress of each step) is written only when it tells what
// the hand-over does not: the update still runs WorkingAfter after it began, or the machine
// is about to reboot (Rebooting, which the reboot waits for).
type NodeState struct {
	Nodes nodeclient.Nodes
	Node  string
	// BootIDPath is read by BootID (default /proc/sys/kernel/random/boot_id).
	BootIDPath string
	// Host, when set, is asked what the running boot runs: Done and ReportDrift report its
	// OS image and kernel arguments (the node's word, not the config's).
	Host nodeexec.Host
	// PatchTimeout bounds each patch with its retries (default 1 minute).
	PatchTimeout time.Duration
	// StartRetry is the time between tries of a patch while the API server has never
	// answered this process (default 250 ms), and StartTimeout bounds such a patch
	// (default 5 minutes): an agent started with its machine, before its link is up,
	// reports its Done as soon as the server can be reached — not a doubling backoff
	// later — and does not give it up while the network comes up. Once the server has
	// answered (any status: a busy server is not asked faster), the backoff doubles from
	// 200 ms to 5 s within PatchTimeout.
	StartRetry, StartTimeout time.Duration
	// WorkingAfter is how long an update runs before Working is reported (default
	// protocol.WorkingAfter).
	WorkingAfter time.Duration
	// ReportError is told of what a report could not carry: a Working or progress report
	// not made — the update goes on, and the next report carries the progress —, or a host
	// that could not say what it runs (Done reports both unknown).
	ReportError func(error)

	// send orders the reports: each patch is made holding it, so a progress report in
	// flight reaches the API server before a later report is sent.
	send     sync.Mutex
	mu       sync.Mutex
	updateID string // the update the reports are about (protocol.ObservedUpdateID)
	progress int    // its steps finished
	queued   bool   // a progress report is waiting to be sent
	// running: an update began (Working) and has not reported its end; working: its
	// Working is on the Node (progress reports follow it); gen tells one update's
	// Working timer from the next's.
	running, working bool
	gen              int
	timer            *time.Timer
	// firstBoot is the config of a first boot whose Done also reports it as the desired
	// config (the engine has set none): SetFirstBoot.
	firstBoot string
	// answered: the API server has answered one of this process's requests.
	answered atomic.Bool
}

var _ nodeexec.NodeState = (*NodeState)(nil)

// Begin starts the reports of update id, progress counting from progress.
func (s *NodeState) Begin(id string, progress int) {
	s.mu.Lock()
	s.updateID, s.progress, s.queued = id, progress, false
	s.endLocked()
	s.mu.Unlock()
}

// UpdateID is the update the reports are about.
func (s *NodeState) UpdateID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateID
}

// SetFirstBoot makes a Done on config also set the node's desired-config annotation to it:
// after a first boot the node's first report says current = desired, as the MCO's daemon
// sets both from the node-annotations file its first boot leaves. The agent sets it only
// when the engine has written no desired-config, which is the engine's otherwise.
func (s *NodeState) SetFirstBoot(config string) {
	s.mu.Lock()
	s.firstBoot = config
	s.mu.Unlock()
}

// Working notes that the node moves to desired under the update begun, progress 0. It
// writes nothing: Working is reported WorkingAfter from now if no Done or Degraded has
// been by then.
func (s *NodeState) Working(desired string) error {
	after := s.WorkingAfter
	if after <= 0 {
		after = protocol.WorkingAfter
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked()
	s.progress, s.queued, s.running = 0, false, true
	gen := s.gen
	s.timer = time.AfterFunc(after, func() {
		if err := s.reportWorking(gen); err != nil && s.ReportError != nil {
			s.ReportError(err)
		}
	})
	return nil
}

// endLocked ends the update's reports: no Working follows. The caller holds mu.
func (s *NodeState) endLocked() {
	s.gen++
	s.running, s.working = false, false
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// reportWorking reports Working with the progress so far, unless update gen has ended or
// reported Working already.
func (s *NodeState) reportWorking(gen int) error {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	if gen != s.gen || !s.running || s.working {
		s.mu.Unlock()
		return nil
	}
	ann := s.workingLocked()
	s.mu.Unlock()
	return s.patch(ann)
}

// workingLocked is the Working report, and marks it made. The caller holds mu.
func (s *NodeState) workingLocked() map[string]any {
	s.working, s.queued = true, false
	return s.withUpdateLocked(map[string]any{protocol.State: model.StateWorking, protocol.Reason: "",
		protocol.AgentProtocol: strconv.Itoa(protocol.Version)})
}

// Rebooting reports Working with the progress so far, and returns once the API server has
// it: the node's last word before it goes down says that it is under way, whoever looks
// at it while it is down (an apply started meanwhile waits for it rather than hand the
// update over again). nodeexec.Agent asks for no reboot this could not report.
func (s *NodeState) Rebooting() error {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	ann := s.workingLocked()
	s.mu.Unlock()
	return s.patch(ann)
}

// StepDone counts a finished step. Once Working is on the Node, it reports the progress
// off the caller's path: the next step does not wait for the API server. Reports stay in
// order, and a progress report not yet sent when a later one is made is folded into it
// (every report carries the progress), so the last step's report usually goes out with
// Done in one patch.
func (s *NodeState) StepDone(model.Step) {
	s.mu.Lock()
	s.progress++
	report := s.working
	s.queued = s.queued || report
	s.mu.Unlock()
	if !report {
		return
	}
	go func() {
		if err := s.Flush(); err != nil && s.ReportError != nil {
			s.ReportError(err)
		}
	}()
}

// Flush sends the progress report waiting to be sent, if any, and returns once every
// report made before it has reached the API server.
func (s *NodeState) Flush() error {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	if !s.queued {
		s.mu.Unlock()
		return nil
	}
	s.queued = false
	// Read with queued: a report of one update is never sent under the next one's id.
	ann := s.withUpdateLocked(map[string]any{})
	s.mu.Unlock()
	return s.patch(ann)
}

// Done reports that the node runs current, with the OS image and kernel arguments the
// host says it runs.
func (s *NodeState) Done(current string) error {
	s.send.Lock()
	defer s.send.Unlock()
	ann := s.report(map[string]any{protocol.CurrentConfig: current, protocol.State: model.StateDone,
		protocol.Reason: ""})
	s.mu.Lock()
	firstBoot := s.firstBoot == current
	s.mu.Unlock()
	if firstBoot {
		ann[protocol.DesiredConfig] = current
	}
	o, err := s.Observe()
	if err != nil && s.ReportError != nil {
		s.ReportError(err)
	}
	maps.Copy(ann, s.observed(nil, o))
	if s.Host != nil {
		ann[protocol.RolledOut] = nil
		if o.KernelArgs != nil || o.OSImage != "" {
			b, _ := json.Marshal(model.HostRecord{KernelArgs: o.KernelArgs, OSImage: o.OSImage})
			ann[protocol.RolledOut] = string(b)
		}
	}
	if err := s.patch(ann); err != nil {
		return err
	}
	if firstBoot {
		s.SetFirstBoot("")
	}
	return nil
}

// Refused reports that the agent refused the update and changed nothing (nodeexec's
// StaleError: an adoption of a node that no longer carries its target): Done, on the
// config the node was on, with reason. Not Degraded: nothing on the node went wrong.
func (s *NodeState) Refused(reason string) error {
	s.send.Lock()
	defer s.send.Unlock()
	return s.patch(s.report(map[string]any{protocol.State: model.StateDone, protocol.Reason: reason}))
}

// Degraded reports that the update failed for reason.
func (s *NodeState) Degraded(reason string) error {
	s.send.Lock()
	defer s.send.Unlock()
	return s.patch(s.report(map[string]any{protocol.State: model.StateDegraded, protocol.Reason: reason}))
}

// report is withUpdate for the report that ends an update (Done, Degraded): a progress
// report still waiting is folded into it, and no Working follows it. The caller holds send.
func (s *NodeState) report(ann map[string]any) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued = false
	s.endLocked()
	ann[protocol.AgentProtocol] = strconv.Itoa(protocol.Version)
	return s.withUpdateLocked(ann)
}

// BootID reads the running boot's id.
func (s *NodeState) BootID() (string, error) { return nodeexec.ReadBootID(s.BootIDPath) }

// ReportDrift writes the drift annotations (protocol.EncodeDrift) and the host's word o
// (Observe), each only when the node (its annotations) does not already carry that value;
// nothing when it carries them all.
func (s *NodeState) ReportDrift(node map[string]string, d []model.Drift, o Observation) error {
	drift, count := protocol.EncodeDrift(d)
	ann := s.observed(node, o)
	announce(node, ann)
	if node[protocol.Drift] != drift || node[protocol.DriftCount] != count {
		ann[protocol.Drift], ann[protocol.DriftCount] = drift, count
	}
	return s.patchIfAny(ann)
}

// ReportHost is ReportDrift for a node whose disk was not checked (it runs no config).
func (s *NodeState) ReportHost(node map[string]string, o Observation) error {
	ann := s.observed(node, o)
	announce(node, ann)
	return s.patchIfAny(ann)
}

// announce adds the protocol version the agent speaks to ann when the node (its
// annotations) does not carry it: an agent's first check after it starts writes it, before
// the engine hands it an update.
func announce(node map[string]string, ann map[string]any) {
	if v := strconv.Itoa(protocol.Version); node[protocol.AgentProtocol] != v {
		ann[protocol.AgentProtocol] = v
	}
}

func (s *NodeState) patchIfAny(ann map[string]any) error {
	if len(ann) == 0 {
		return nil
	}
	return s.patch(ann)
}

// Observation is the host's word on what the running boot runs.
type Observation struct {
	KernelArgs []string // nil: unknown
	OSImage    string   // "": unknown, or no container image
}

// Observe asks the host what the running boot runs (nodeexec.ObserveHost); an error leaves
// both unknown. With no Host nothing is known.
func (s *NodeState) Observe() (Observation, error) {
	if s.Host == nil {
		return Observation{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kargs, image, err := nodeexec.ObserveHost(ctx, s.Host)
	if err != nil {
		return Observation{}, fmt.Errorf("reading what the host runs: %w", err)
	}
	return Observation{KernelArgs: kargs, OSImage: image}, nil
}

// observed is the os-image and kernel-args annotations of o, less those the node (its
// annotations; nil: not known) already carries. What the host cannot say is removed (a
// JSON null): an older value is not left standing as the node's word.
func (s *NodeState) observed(node map[string]string, o Observation) map[string]any {
	ann := map[string]any{}
	if s.Host == nil {
		return ann
	}
	kargs := ""
	if o.KernelArgs != nil {
		b, _ := json.Marshal(o.KernelArgs)
		kargs = string(b)
	}
	for key, value := range map[string]string{protocol.OSImage: o.OSImage, protocol.KernelArgs: kargs} {
		cur, ok := node[key]
		switch {
		case value == "" && (ok || node == nil):
			ann[key] = nil
		case value != "" && (!ok || cur != value):
			ann[key] = value
		}
	}
	return ann
}

func (s *NodeState) withUpdateLocked(ann map[string]any) map[string]any {
	if s.updateID != "" {
		ann[protocol.ObservedUpdateID] = s.updateID
		if _, ok := ann[protocol.Progress]; !ok {
			ann[protocol.Progress] = strconv.Itoa(s.progress)
		}
	}
	return ann
}

// patch merges ann into the node's annotations, retrying transient failures. It does not
// take the caller's context: a report of a failure caused by a cancelled context (the
// agent stopping) must still go out.
func (s *NodeState) patch(ann map[string]any) error {
	body, err := protocol.AnnotationsPatch(ann)
	if err != nil {
		return err
	}
	timeout, delay := cmp.Or(s.PatchTimeout, time.Minute), 200*time.Millisecond
	starting := !s.answered.Load()
	if starting {
		timeout, delay = cmp.Or(s.StartTimeout, 5*time.Minute), cmp.Or(s.StartRetry, 250*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		err = s.try(ctx, starting, func(ctx context.Context) error {
			_, err := s.Nodes.Patch(ctx, s.Node, types.MergePatchType, body, metav1.PatchOptions{})
			return err
		})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) ||
			apierrors.IsBadRequest(err) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("patching node %s annotations: %w (gave up after %s)", s.Node, err, timeout)
		case <-time.After(delay):
		}
		switch {
		case !starting:
			delay = min(2*delay, 5*time.Second)
		case s.answered.Load(): // the server answers now: its backoff from the start
			starting, delay = false, 200*time.Millisecond
		}
	}
	if err != nil {
		return fmt.Errorf("patching node %s annotations: %w", s.Node, err)
	}
	return nil
}

// startTry bounds one try while the API server has never answered: a connection whose
// packets go nowhere yet (a link still coming up) is given up and tried again, rather
// than waiting out the client's dial timeout.
const startTry = 10 * time.Second

// try makes one request, noting when the API server answered it (a status is an answer).
func (s *NodeState) try(ctx context.Context, starting bool, req func(context.Context) error) error {
	if starting {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTry)
		defer cancel()
	}
	err := req(ctx)
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		s.answered.Store(true)
	}
	return err
}

// GetNode reads the agent's Node. While the API server has never answered this process
// (the agent started with its machine, its link maybe not up yet) a failure to reach it
// is tried again every StartRetry, within StartTimeout and ctx; afterwards it is one
// request, as the agent's other reads are.
func (s *NodeState) GetNode(ctx context.Context) (*corev1.Node, error) {
	var node *corev1.Node
	get := func(ctx context.Context) error {
		var err error
		if node, err = s.Nodes.Get(ctx, s.Node, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading node %s: %w", s.Node, err)
		}
		return nil
	}
	if s.answered.Load() {
		return node, get(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.StartTimeout, 5*time.Minute))
	defer cancel()
	for {
		err := s.try(ctx, true, get)
		if err == nil || s.answered.Load() {
			return node, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (the API server never answered)", err)
		case <-time.After(cmp.Or(s.StartRetry, 250*time.Millisecond)):
		}
	}
}
