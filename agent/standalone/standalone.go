// Package standalone is the node agent without a cluster (`mcp agent -server URL`): it
// finishes an update a reboot interrupted and a first boot, reads the desired config name
// (a flag, or DesiredPath in the root), fetches the rendered config from the boot server
// (bootclient), derives the steps with the one derivation (package steps) and runs them
// through nodeexec.Agent — the code every provider runs —, recording what it runs and its
// report as files in the root (docs/agent.md, "Standalone use").
package standalone

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
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/nodeexec/bootclient"
	"github.com/mcpfleet/mcp/steps"
)

// Paths of a standalone agent's own records inside the root, beside the executor's.
const (
	CurrentPath = nodeexec.StateDir + "/current.json" // the rendered config the node runs
	StatusPath  = nodeexec.StateDir + "/status.json"  // the agent's report
	DesiredPath = nodeexec.StateDir + "/desired"      // the rendered config to move to (one name)
)

// Status is a standalone agent's report.
type Status struct {
	Desired string        `json:"desired,omitempty"`
	Current string        `json:"current,omitempty"`
	State   string        `json:"state"`
	Reason  string        `json:"reason,omitempty"`
	Drift   []model.Drift `json:"drift,omitempty"`
	Updated time.Time     `json:"updated"`
}

// Agent is `mcp agent` without a cluster, on one root.
type Agent struct {
	Agent      *nodeexec.Agent // its State is the agent's files in the root
	Server     string          // boot server base URL; GET {Server}/rendered/{name}
	Desired    string          // overrides DesiredPath
	BootIDPath string          // default nodeexec.DefaultBootIDPath
	Client     *http.Client
	Log        *slog.Logger
	current    *model.Rendered
	target     *model.Rendered // of the update running
	status     Status
}

// New builds a standalone agent for the root.
func New(root, server string, host nodeexec.Host) *Agent {
	s := &Agent{Server: strings.TrimSuffix(server, "/"), Client: &http.Client{Timeout: 30 * time.Second},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), BootIDPath: nodeexec.DefaultBootIDPath}
	s.Agent = &nodeexec.Agent{Exec: &nodeexec.Executor{Root: root, Host: host}, State: (*nodeState)(s), RebootWait: 10 * time.Minute}
	return s
}

// Reconcile does one pass: finish an update a reboot interrupted, then a first boot, then
// move to the desired config if the node is not on it. It returns the status it reported.
func (s *Agent) Reconcile(ctx context.Context) (Status, error) {
	if err := s.load(); err != nil {
		return s.status, err
	}
	logStep := func(st model.Step) { s.Log.Info("step done", "step", st.String()) }
	if resumed, err := s.Agent.Resume(ctx, logStep); resumed || err != nil {
		return s.status, err
	}
	if ran, err := s.Agent.FirstBoot(ctx, nameOrNone(s.current), s.firstBootFetch, logStep); ran || err != nil {
		return s.status, err
	}
	desired, err := s.desired()
	if err != nil || desired == "" {
		return s.status, err
	}
	if s.current != nil && s.current.Name == desired {
		drift, err := s.Agent.Exec.CheckNode(ctx, nil, s.current)
		s.status.Drift = drift
		return s.status, errors.Join(err, s.save())
	}
	target, err := s.fetch(ctx, desired)
	if err != nil {
		return s.status, s.Agent.Degrade(err)
	}
	var todo []model.Step
	for _, st := range steps.Derive(s.current, target) {
		if st.Kind.OnNode() { // no cluster: nobody cordons or drains
			todo = append(todo, st)
		}
	}
	s.target = target
	from := "the unmanaged state"
	if s.current != nil {
		from = s.current.Name
	}
	s.Log.Info("updating", "from", from, "to", target.Name, "steps", len(todo))
	err = s.Agent.Update(ctx, s.current, target, todo, logStep)
	return s.status, err
}

// firstBootFetch gives the config the first-boot record names — embedded in it, or fetched
// from the boot server — which the update then runs to (Done takes it from target).
func (s *Agent) firstBootFetch(ctx context.Context, name string) (*model.Rendered, error) {
	s.Log.Info("first boot", "config", name)
	// The boot server may have embedded the config in the record (the first-boot unit's
	// case, run before the node joins): no server to reach, no CA or token to hold.
	if rec, err := s.Agent.Exec.ReadFirstBoot(); err == nil && rec != nil && rec.Config != nil && rec.Config.Name == name {
		s.target = rec.Config
		return rec.Config, nil
	}
	r, err := s.fetch(ctx, name)
	if err == nil {
		s.target = r
	}
	return r, err
}

func nameOrNone(r *model.Rendered) string {
	if r == nil {
		return ""
	}
	return r.Name
}

func (s *Agent) desired() (string, error) {
	if s.Desired != "" {
		return s.Desired, nil
	}
	b, err := s.readFile(DesiredPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

func (s *Agent) fetch(ctx context.Context, name string) (*model.Rendered, error) {
	return bootclient.FetchRendered(ctx, s.Client, s.Server, name)
}

func (s *Agent) readFile(rel string) ([]byte, error) {
	r, err := os.OpenRoot(s.Agent.Exec.Root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return nodeexec.ReadRecord(r, rel)
}

func (s *Agent) writeJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return s.Agent.Exec.WriteRecord(rel, b)
}

func (s *Agent) load() error {
	b, err := s.readFile(CurrentPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.current = nil
	case err != nil:
		return err
	default:
		s.current = new(model.Rendered)
		if err := json.Unmarshal(b, s.current); err != nil {
			return fmt.Errorf("reading /%s: %w", CurrentPath, err)
		}
	}
	if b, err := s.readFile(StatusPath); err == nil {
		json.Unmarshal(b, &s.status)
	}
	return nil
}

func (s *Agent) save() error {
	s.status.Updated = time.Now().UTC()
	return s.writeJSON(StatusPath, &s.status)
}

// nodeState is the nodeexec.NodeState of a standalone agent: files in the root.
type nodeState Agent

func (st *nodeState) Working(desired string) error {
	st.status.Desired, st.status.State, st.status.Reason = desired, model.StateWorking, ""
	return (*Agent)(st).save()
}

func (st *nodeState) Done(current string) error {
	s := (*Agent)(st)
	if p, err := s.Agent.Exec.PendingTarget(); err == nil && p != nil && p.Name == current {
		s.current = p // after a reboot
	} else if s.target != nil && s.target.Name == current {
		s.current = s.target
	} else {
		return fmt.Errorf("done on %s, but the agent does not hold that config", current)
	}
	if err := s.writeJSON(CurrentPath, s.current); err != nil {
		return err
	}
	s.status.Current, s.status.State, s.status.Reason, s.status.Drift = current, model.StateDone, "", nil
	return s.save()
}

func (st *nodeState) Degraded(reason string) error {
	st.status.State, st.status.Reason = model.StateDegraded, reason
	st.Log.Error("degraded", "reason", reason)
	return (*Agent)(st).save()
}

func (st *nodeState) BootID() (string, error) { return nodeexec.ReadBootID(st.BootIDPath) }
