// Package providers defines how mcp observes and acts on a fleet. A provider observes
// (Refresh) and acts (cordon, drain, hand steps to a node's executor); it never decides
// what to do: that is the planner's job, and the engine drives the provider.
package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Provider is one fleet backend: providers/local (node directories), providers/record (in
// memory, for tests) or providers/kubernetes. Each declares itself with a Spec.
type Provider interface {
	// Refresh observes the fleet: nodes, pods and PodDisruptionBudgets.
	Refresh(ctx context.Context) (*model.Fleet, error)
	// Cordon marks the node unschedulable.
	Cordon(ctx context.Context, node string) error
	// Uncordon marks the node schedulable again.
	Uncordon(ctx context.Context, node string) error
	// Drain evicts the node's pods, honouring PodDisruptionBudgets and ignoring DaemonSet
	// pods, retrying refused evictions until opts.Timeout. An error names the node, and the
	// PodDisruptionBudget and pod that blocked it.
	Drain(ctx context.Context, node string, opts DrainOptions) error
	// RunNodeSteps hands steps (each Kind.OnNode()) to the node's executor, which moves the
	// node from config from (nil when the node had none) to target. done is called after
	// each finished step, in order. It returns nil once the node reports Done on target
	// (its current config is then target), or an error with the executor's reason.
	RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error
}

// ErrOutcomeUnknown is wrapped by RunNodeSteps' errors when the provider stopped hearing
// from the node's executor (a timeout, the API server gone, apply interrupted) and cannot
// tell what it did: the engine then leaves the node as it is, cordoned, instead of
// putting a node that may be mid-reboot back in service.
var ErrOutcomeUnknown = errors.New("what the node did is not known")

// DrainOptions tune a drain.
type DrainOptions struct {
	// Timeout bounds the whole drain; zero means the provider's default.
	Timeout time.Duration
	// RetryDelay is the pause after an eviction refused by a PodDisruptionBudget.
	RetryDelay time.Duration
}

// DriftReporter is implemented by providers that check a node's disk on request (the local
// provider); others report drift in Refresh (Node.Drift, from the agents' reports).
type DriftReporter interface {
	// Drift compares the node's disk with current, the config it runs.
	Drift(ctx context.Context, node string, current *model.Rendered) ([]model.Drift, error)
}

// ConfigObserver is implemented by providers whose nodes can say what they carry against a
// rendered config they are not recorded on (the local provider checks the node's root).
// Refresh asks it for each node whose current config is absent or unknown to the state, so
// that the plan derives the steps of exactly the items that differ, and adopts a node that
// differs in none, instead of rewriting and rebooting it.
//
// On Kubernetes the engine cannot read a node's files: a provider would implement it by
// asking the node's agent (an observation request on its Node naming target, answered with
// the bounded drift of the agent's own CheckNode), the target being fetched by the agent
// from the boot server as for an update.
type ConfigObserver interface {
	// ObserveConfig compares what the node carries with target, as the node's verify step
	// does (every managed path's digest, mode, owner and type, links, units with their
	// drop-ins, enablement and mask, kernel arguments, booted image), in bounded time and
	// memory: at most model.MaxObserved entries listed, a file too large or of the wrong
	// type a drift entry saying so. An error means the node could not be asked at all.
	ObserveConfig(ctx context.Context, node string, target *model.Rendered) (model.Observation, error)
}

// FileReader is implemented by providers that can read a file on a node (the local
// provider): refresh then shows how a drifted file's content differs (model.Drift.Diff).
type FileReader interface {
	// ReadNodeFile reads at most max bytes of the regular file at path (absolute) on the
	// node, without following a link out of the node's root.
	ReadNodeFile(ctx context.Context, node, path string, max int64) ([]byte, error)
}

// NodesRefresher is implemented by providers that can observe the nodes alone. A drift run
// needs nothing else (no pods, budgets or machine templates), so its identity needs read
// access to nothing else (deploy/30-drift.yaml); without it, drift refreshes everything.
type NodesRefresher interface {
	// RefreshNodes is Refresh with only Fleet.Nodes filled in.
	RefreshNodes(ctx context.Context) (*model.Fleet, error)
}

// NodeObserver is implemented by providers that can observe some nodes without a whole
// refresh. Apply uses it to count a pool's unavailable nodes, live, before it starts each
// node; without it, apply refreshes the whole fleet instead.
type NodeObserver interface {
	// ObserveNodes returns the named nodes as they are now (no drift, no pods); a name the
	// fleet does not have is an error. The nodes are the caller's to read, not to change: a
	// provider may share their maps and slices between calls.
	ObserveNodes(ctx context.Context, names []string) ([]model.Node, error)
}

// RequestCounter is implemented by providers that talk to an API server (providers/
// kubernetes): APIRequests is the number of HTTP requests made so far, so a caller can show
// what a refresh or an apply cost (take the difference of two readings).
type RequestCounter interface {
	APIRequests() int64
}

// WatchSharer is implemented by providers whose waits can share one watch of the fleet
// (providers/kubernetes): apply calls ShareWatches once before its first node and stop
// after its last, so that the many waits of a rollout (observations before each start,
// agents' reports, Ready gates) cost no request per node.
type WatchSharer interface {
	ShareWatches(ctx context.Context) (stop func())
}

// HealthGater is implemented by providers that can tell when a node is healthy again after
// its steps. Apply waits for it before a node counts as done and its slot frees.
type HealthGater interface {
	// WaitHealthy waits until the node is Ready and every DaemonSet pod on it is Ready,
	// watching the node rather than polling it where the provider can. After timeout it
	// returns a *GateError naming the gate (GateReady, GateDaemonSets) and what it saw last.
	WaitHealthy(ctx context.Context, node string, timeout time.Duration) error
	// NodeAddress is an address apply can reach the node at (health checks'
	// ${node.address}), or an error naming the node when it has none.
	NodeAddress(ctx context.Context, node string) (string, error)
}

// DegradedMarker is implemented by providers that can record on a node an outcome the
// engine judged: a health gate the node did not pass after its steps. The node then
// reports Degraded with reason, as if its agent had, so that status, drift and the next
// plan read the failure from the node itself; the node's next update clears it.
type DegradedMarker interface {
	MarkDegraded(ctx context.Context, node, reason string) error
}

// CommandChecker is implemented by providers that can run a pool's command health checks
// (health_check { command = [...] }) on its nodes. Apply calls PublishChecks once, before
// its first node, then RunCheck for each try of a command check after a node's steps.
type CommandChecker interface {
	// PublishChecks makes the command checks among checks (by pool) the ones each pool's
	// nodes may run, and a pool given none keeps none: on Kubernetes it writes the Secret
	// the agents read the commands from. An error names what could not be written.
	PublishChecks(ctx context.Context, checks map[string][]model.HealthCheck) error
	// RunCheck runs check, a command check of pool, once on node and returns what the
	// command did. An error says the run could not be asked for or its answer not heard
	// (the API refused, the node's agent did not answer).
	RunCheck(ctx context.Context, node, pool string, check model.HealthCheck) (model.CheckResult, error)
}

// The built-in health gates.
const (
	GateReady      = "node-ready"     // the node's Ready condition is True
	GateDaemonSets = "daemonset-pods" // every DaemonSet pod on the node is Ready
)

// GateError is a health gate a node did not pass in time: Gate names it (a built-in one or
// a pool's health_check), Output says what it saw last.
type GateError struct {
	Gate   string
	Output string
}

func (e *GateError) Error() string {
	return fmt.Sprintf("health gate %q did not pass: %s", e.Gate, e.Output)
}

// TemplatePatcher is implemented by providers whose fleets have machine templates
// (providers/kubernetes: MachineSets and Cluster API infrastructure templates, observed in
// Refresh as Fleet.Templates). Apply calls it for each template the plan updates.
type TemplatePatcher interface {
	// SetTemplateImage sets the boot image of template t from from to to, changing only
	// its image field (t.Field), and only if the field still holds from: a template changed
	// since it was observed is an error naming it and what it holds now, not overwritten.
	SetTemplateImage(ctx context.Context, t model.MachineTemplate, from, to string) error
}

// UserDataStore is implemented by providers that hold the user-data Secrets machine
// templates give new nodes (providers/kubernetes): a pool's user_data block names one, and
// apply keeps it holding the pool's pointer config.
type UserDataStore interface {
	// UserData returns the value of the Secret's key; ok is false when the Secret or the
	// key does not exist.
	UserData(ctx context.Context, namespace, name, key string) (value []byte, ok bool, err error)
	// SetUserData sets the Secret's key to value, creating the Secret if it does not
	// exist, and only if the key's value still has the digest from ("" for absent): a
	// Secret changed since it was observed is an error, not overwritten. Other keys are kept.
	SetUserData(ctx context.Context, namespace, name, key string, value []byte, from string) error
}

// Digest is "sha256:<hex>" of b: how plans name the user-data they compare.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
