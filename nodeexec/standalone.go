package nodeexec

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
	"path"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec/bootclient"
	"github.com/mcpfleet/mcp/steps"
)

// Paths of a standalone agent's own state inside the root.
const (
	StateDir    = "var/lib/mcp"
	CurrentPath = StateDir + "/current.json" // the rendered config the node runs
	StatusPath  = StateDir + "/status.json"  // the agent's report
	DesiredPath = StateDir + "/desired"      // the rendered config to move to (one name)
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

// Standalone is `mcp agent` without a cluster: it finishes a first boot (Agent.FirstBoot),
// reads the desired config name (a flag or DesiredPath), fetches the rendered config from
// the boot server, derives the steps with the one derivation (package steps), and runs them
// through an Agent, recording its state in the root.
type Standalone struct {
	Agent      *Agent
	Server     string // boot server base URL; GET {Server}/rendered/{name}
	Desired    string // overrides DesiredPath
	BootIDPath string // default /proc/sys/kernel/random/boot_id
	Client     *http.Client
	Log        *slog.Logger
	current    *model.Rendered
	target     *model.Rendered // of the update running
	status     Status
}

// NewStandalone builds a standalone agent for the root.
func NewStandalone(root, server string, host Host) *Standalone {
	s := &Standalone{Server: strings.TrimSuffix(server, "/"), Client: &http.Client{Timeout: 30 * time.Second},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), BootIDPath: "/proc/sys/kernel/random/boot_id"}
	s.Agent = &Agent{Exec: &Executor{Root: root, Host: host}, State: (*standaloneState)(s), RebootWait: 10 * time.Minute}
	return s
}

// Reconcile does one pass: finish an update a reboot interrupted, then a first boot, then
// move to the desired config if the node is not on it. It returns the status it reported.
func (s *Standalone) Reconcile(ctx context.Context) (Status, error) {
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
	if err := s.Agent.Exec.Sweep(target); err != nil {
		return s.status, s.Agent.Degrade(err)
	}
	var todo []model.Step
	for _, st := range steps.Derive(s.current, target) {
		if st.Kind.OnNode() { // no cluster: nobody cordons or drains
			todo = append(todo, st)
		}
	}
	s.target = target
	s.Log.Info("updating", "from", nameOf(s.current), "to", target.Name, "steps", len(todo))
	err = s.Agent.Update(ctx, s.current, target, todo, logStep)
	return s.status, err
}

// firstBootFetch gives the config the first-boot record names — embedded in it, or fetched
// from the boot server — which the update then runs to (Done takes it from target).
func (s *Standalone) firstBootFetch(ctx context.Context, name string) (*model.Rendered, error) {
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

func (s *Standalone) desired() (string, error) {
	if s.Desired != "" {
		return s.Desired, nil
	}
	b, err := s.readFile(DesiredPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

func (s *Standalone) fetch(ctx context.Context, name string) (*model.Rendered, error) {
	return bootclient.FetchRendered(ctx, s.Client, s.Server, name)
}

func (s *Standalone) readFile(rel string) ([]byte, error) {
	r, err := os.OpenRoot(s.Agent.Exec.Root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadRecord(r, rel)
}

func (s *Standalone) writeJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(s.Agent.Exec.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	return s.Agent.Exec.writeAtomic(r, rel, b, 0o600)
}

func (s *Standalone) load() error {
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

func (s *Standalone) save() error {
	s.status.Updated = time.Now().UTC()
	return s.writeJSON(StatusPath, &s.status)
}

// standaloneState is the NodeState of a standalone agent: files in the root.
type standaloneState Standalone

func (st *standaloneState) Working(desired string) error {
	st.status.Desired, st.status.State, st.status.Reason = desired, model.StateWorking, ""
	return (*Standalone)(st).save()
}

func (st *standaloneState) Done(current string) error {
	s := (*Standalone)(st)
	if p, err := s.Agent.readPending(); err == nil && p != nil && p.Target.Name == current {
		s.current = p.Target // after a reboot
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

func (st *standaloneState) Degraded(reason string) error {
	st.status.State, st.status.Reason = model.StateDegraded, reason
	st.Log.Error("degraded", "reason", reason)
	return (*Standalone)(st).save()
}

func (st *standaloneState) BootID() (string, error) { return ReadBootID(st.BootIDPath) }

// Sweep removes temporary files an interrupted write left in the directories of target's
// files (names ".<base>.tmp-<hex>"): atomic writes leave nothing half-written at a managed
// path, but a kill can leave the temporary file beside it.
func (e *Executor) Sweep(target *model.Rendered) error {
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	dirs := map[string]bool{}
	for _, f := range target.Files {
		dirs[path.Dir(strings.TrimPrefix(f.Path, "/"))] = true
	}
	for _, u := range target.Units {
		dirs[strings.TrimPrefix(UnitDir, "/")] = true
		dirs[strings.TrimPrefix(unitPath(u.Name), "/")+".d"] = true
	}
	for d := range dirs {
		f, err := boundedfile.OpenDirIn(r, d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if atomicfile.IsTemp(n) {
				if err := r.Remove(path.Join(d, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
		}
	}
	return nil
}
