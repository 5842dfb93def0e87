package nodeexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// fakeState is a NodeState in memory; boot is the boot id the machine reports.
type fakeState struct {
	boot    string
	reports []string
}

func (s *fakeState) Working(d string) error { s.reports = append(s.reports, "working "+d); return nil }
func (s *fakeState) Done(c string) error    { s.reports = append(s.reports, "done "+c); return nil }
func (s *fakeState) Degraded(r string) error {
	s.reports = append(s.reports, "degraded "+r)
	return nil
}
func (s *fakeState) BootID() (string, error) { return s.boot, nil }

// resumeFixture is a node moving from old to target (a file and a reboot) and an agent on
// it whose host's reboots give a new boot id, unless rebootsStick is false.
type resumeFixture struct {
	root        string
	old, target *model.Rendered
	steps       []model.Step
	state       *fakeState
	host        *RecordingHost
	agent       *Agent
}

func newResumeFixture(t *testing.T) *resumeFixture {
	f := &resumeFixture{root: t.TempDir(), state: &fakeState{boot: "boot-1"}, host: &RecordingHost{}}
	f.old = &model.Rendered{Name: "rendered-w-old", Files: []model.File{
		{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("old a")}, {Entry: model.Entry{Path: "/etc/gone"}, Mode: 0o644, Contents: []byte("g")}}}
	f.target = &model.Rendered{Name: "rendered-w-new", Files: []model.File{
		{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("new a")}}}
	makeTree(t, f.root, tree{"etc/a": {Content: "old a", Mode: 0o644}, "etc/gone": {Content: "g", Mode: 0o644}})
	f.steps = []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}, {Kind: model.StepWrite, Target: "/etc/gone"},
		{Kind: model.StepReboot}, {Kind: model.StepVerify}}
	f.agent = &Agent{Exec: &Executor{Root: f.root, Host: f.host}, State: f.state, RebootWait: 50 * time.Millisecond}
	f.host.OnCall = func(call string) error {
		if call == "reboot" {
			f.state.boot += "+"
		}
		return nil
	}
	return f
}

func (f *resumeFixture) update(steps []model.Step) ([]string, error) {
	var done []string
	err := f.agent.Update(context.Background(), f.old, f.target, steps, func(s model.Step) { done = append(done, s.Key()) })
	return done, err
}

func (f *resumeFixture) reboots() int {
	return strings.Count(strings.Join(f.host.Recorded(), "\n"), "reboot")
}

func (f *resumeFixture) pendingLeft(t *testing.T) bool {
	_, err := os.Stat(filepath.Join(f.root, PendingPath))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// writePending leaves the record an update killed around its reboot would leave.
func (f *resumeFixture) writePending(t *testing.T, target *model.Rendered, from, boot string) {
	t.Helper()
	if err := f.agent.writePending(&pending{From: from, Target: target, BootID: boot,
		Steps: []model.Step{{Kind: model.StepVerify}}, Since: time.Now(), Attempts: 1}); err != nil {
		t.Fatal(err)
	}
}

// A retry of an update whose writes were done before it was stopped finds those files as
// the target has them: progress, not drift.
func TestUpdateRetryTakesWrittenFilesAsProgress(t *testing.T) {
	f := newResumeFixture(t)
	makeTree(t, f.root, tree{"etc/a": {Content: "new a", Mode: 0o644}})
	os.Remove(filepath.Join(f.root, "etc/gone"))
	done, err := f.update(f.steps[2:])
	if err != nil {
		t.Fatalf("retry after the writes: %v (reports %v)", err, f.state.reports)
	}
	if !slices.Equal(done, []string{"reboot", "verify"}) || f.reboots() != 1 || f.pendingLeft(t) {
		t.Errorf("done %v, reboots %d, pending left %v", done, f.reboots(), f.pendingLeft(t))
	}
	// Drift that is neither the old config nor the target is still refused.
	g := newResumeFixture(t)
	makeTree(t, g.root, tree{"etc/a": {Content: "hand edit", Mode: 0o644}})
	if _, err := g.update(g.steps[2:]); err == nil || !strings.Contains(err.Error(), "/etc/a") {
		t.Errorf("hand-edited file taken as progress: %v", err)
	}
}

// Stopped after the machine rebooted into the update but before anyone heard: the retry
// does not reboot again; it reports the reboot done and finishes.
func TestUpdateAfterRebootHappenedDoesNotRebootAgain(t *testing.T) {
	f := newResumeFixture(t)
	makeTree(t, f.root, tree{"etc/a": {Content: "new a", Mode: 0o644}})
	os.Remove(filepath.Join(f.root, "etc/gone"))
	f.writePending(t, f.target, f.old.Name, "boot-0") // asked under boot-0; the machine is on boot-1
	done, err := f.update(f.steps[2:])
	if err != nil {
		t.Fatal(err)
	}
	if f.reboots() != 0 || !slices.Equal(done, []string{"reboot", "verify"}) || f.pendingLeft(t) {
		t.Errorf("reboots %d, done %v, pending left %v", f.reboots(), done, f.pendingLeft(t))
	}
	if last := f.state.reports[len(f.state.reports)-1]; last != "done rendered-w-new" {
		t.Errorf("last report %q", last)
	}
}

// A reboot asked for that did not happen (same boot id) is asked for once more; a second
// one that does not happen degrades the node.
func TestUpdateRedoesAnUnhappenedRebootOnce(t *testing.T) {
	f := newResumeFixture(t)
	makeTree(t, f.root, tree{"etc/a": {Content: "new a", Mode: 0o644}})
	os.Remove(filepath.Join(f.root, "etc/gone"))
	f.writePending(t, f.target, f.old.Name, "boot-1")
	if _, err := f.update(f.steps[2:]); err != nil || f.reboots() != 1 {
		t.Fatalf("redo: %v, reboots %d", err, f.reboots())
	}
	g := newResumeFixture(t)
	g.host.OnCall = nil // reboots do nothing
	makeTree(t, g.root, tree{"etc/a": {Content: "new a", Mode: 0o644}})
	os.Remove(filepath.Join(g.root, "etc/gone"))
	g.writePending(t, g.target, g.old.Name, "boot-1")
	_, err := g.update(g.steps[2:])
	if err == nil || g.reboots() != 1 {
		t.Fatalf("first redo: %v, reboots %d", err, g.reboots())
	}
	_, err = g.update(g.steps[2:])
	if err == nil || !strings.Contains(err.Error(), "asked for 2 times") || g.reboots() != 1 {
		t.Errorf("third ask: %v, reboots %d", err, g.reboots())
	}
}

// A pending record for another config, or one the node has reported Done on since, does
// not stand for this update: it is removed and the reboot runs.
func TestUpdateSupersedesOtherPendingRecords(t *testing.T) {
	f := newResumeFixture(t)
	f.writePending(t, &model.Rendered{Name: "rendered-w-other"}, f.old.Name, "boot-0")
	if _, err := f.update(f.steps); err != nil || f.reboots() != 1 || f.pendingLeft(t) {
		t.Errorf("other config: %v, reboots %d, pending left %v", err, f.reboots(), f.pendingLeft(t))
	}
	// The node runs target (it reported Done after that reboot): a restore that needs a
	// reboot gets one.
	g := newResumeFixture(t)
	makeTree(t, g.root, tree{"etc/a": {Content: "drifted", Mode: 0o644}})
	os.Remove(filepath.Join(g.root, "etc/gone"))
	g.writePending(t, g.target, g.old.Name, "boot-0")
	err := g.agent.Update(context.Background(), g.target, g.target,
		[]model.Step{{Kind: model.StepWrite, Target: "/etc/a"}, {Kind: model.StepReboot}, {Kind: model.StepVerify}}, func(model.Step) {})
	if err != nil || g.reboots() != 1 {
		t.Errorf("restore after a leftover record: %v, reboots %d", err, g.reboots())
	}
}

// The agent that starts after boot redoes a reboot that did not happen once, then gives up.
func TestResumeRedoesAnUnhappenedRebootOnce(t *testing.T) {
	f := newResumeFixture(t)
	f.host.OnCall = nil
	f.writePending(t, f.target, f.old.Name, "boot-1")
	resumed, err := f.agent.Resume(context.Background(), func(model.Step) {})
	if !resumed || err == nil || f.reboots() != 1 {
		t.Fatalf("resume: %v %v, reboots %d", resumed, err, f.reboots())
	}
	b, _ := os.ReadFile(filepath.Join(f.root, PendingPath))
	var p pending
	if json.Unmarshal(b, &p) != nil || p.Attempts != 2 {
		t.Fatalf("record after the redo: %s", b)
	}
	if _, err := f.agent.Resume(context.Background(), func(model.Step) {}); err == nil || f.reboots() != 1 ||
		!strings.Contains(err.Error(), "unchanged") {
		t.Errorf("second resume: %v, reboots %d", err, f.reboots())
	}
}

// rebootingState is a fakeState that reports the coming reboot (kagent's): the report,
// whether the pending record was there when it was made, and the host's calls are recorded
// in one sequence; fail makes the report fail.
type rebootingState struct {
	fakeState
	root string
	seq  *[]string
	fail error
}

func (s *rebootingState) Rebooting() error {
	_, err := os.Stat(filepath.Join(s.root, PendingPath))
	*s.seq = append(*s.seq, fmt.Sprintf("rebooting (pending record: %v)", err == nil))
	return s.fail
}

// The coming reboot is reported before the pending record is written and the reboot asked
// for; one that cannot be reported is not asked for, and leaves no pending record for the
// next start to reboot on.
func TestRebootIsReportedFirst(t *testing.T) {
	f := newResumeFixture(t)
	var seq []string
	st := &rebootingState{fakeState: fakeState{boot: "boot-1"}, root: f.root, seq: &seq}
	f.agent.State = st
	f.host.OnCall = func(call string) error {
		seq = append(seq, call)
		if call == "reboot" {
			st.boot += "+"
		}
		return nil
	}
	if _, err := f.update(f.steps); err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(seq, "reboot"); i < 1 || seq[i-1] != "rebooting (pending record: false)" {
		t.Errorf("host calls and reports %v: want the reboot reported right before it, before the pending record", seq)
	}

	f = newResumeFixture(t)
	seq = nil
	st = &rebootingState{fakeState: fakeState{boot: "boot-1"}, root: f.root, seq: &seq, fail: errors.New("API server gone")}
	f.agent.State = st
	f.host.OnCall = func(call string) error { seq = append(seq, call); return nil }
	_, err := f.update(f.steps)
	if err == nil || !strings.Contains(err.Error(), "API server gone") {
		t.Errorf("update whose reboot cannot be reported: %v", err)
	}
	if slices.Contains(seq, "reboot") || f.pendingLeft(t) {
		t.Errorf("host calls %v, pending record left %v: want no reboot and no record", seq, f.pendingLeft(t))
	}
	if n := len(st.reports); n == 0 || !strings.HasPrefix(st.reports[n-1], "degraded ") {
		t.Errorf("reports %v: want Degraded last", st.reports)
	}
}

// Issue 41: a kill between making a temporary twin and renaming it left it on the node —
// a hard link's (/etc/.motd-hard.mcp-<hex>), a 4 MiB /var/lib/mcp/.pending.json.tmp-<hex> —
// through every later update. The agent sweeps mcp's own twins, by their exact pattern, in
// the directories it writes in, before each update and each resume; judged from the root:
// the twins are gone, and files that only look alike, or that lie where mcp does not
// write, are left.
func TestUpdateAndResumeSweepWhatAKillLeft(t *testing.T) {
	leftovers := []string{StateDir + "/.pending.json.tmp-0123456789ab", "etc/.a.tmp-0123456789ab", "etc/.motd-hard.mcp-0123456789ab",
		MachineDir + "/.staged.json.tmp-0123456789ab", "etc/systemd/system/multi-user.target.wants/.x.service.tmp-abcdefabcdef",
		"etc/.gone.tmp-0123456789ab"}
	kept := []string{"etc/.a.tmp-keep", "etc/notes.tmp-0123456789ab", "etc/.a.tmp-0123456789AB", "srv/.x.tmp-0123456789ab"}
	for _, resume := range []bool{false, true} {
		f := newResumeFixture(t)
		for _, p := range append(slices.Clone(leftovers), kept...) {
			size := 16
			if strings.HasPrefix(p, StateDir) {
				size = 4 << 20
			}
			if err := os.MkdirAll(filepath.Join(f.root, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.root, p), make([]byte, size), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if resume {
			makeTree(t, f.root, tree{"etc/a": {Content: "new a", Mode: 0o644}}) // rebooted into it
			f.writePending(t, f.target, f.old.Name, "boot-0")
			_, err = f.agent.Resume(context.Background(), func(model.Step) {})
		} else {
			_, err = f.update(f.steps)
		}
		if err != nil {
			t.Fatalf("resume %v: %v (reports %v)", resume, err, f.state.reports)
		}
		for _, p := range leftovers {
			if _, err := os.Lstat(filepath.Join(f.root, p)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("resume %v: /%s is left (%v)", resume, p, err)
			}
		}
		for _, p := range kept {
			if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
				t.Errorf("resume %v: /%s, not mcp's, was removed (%v)", resume, p, err)
			}
		}
	}
}

// A config may manage a file whose name has the pattern of mcp's temporary twins
// (/etc/.motd.tmp-0123456789ab): the sweep leaves the files, links, directories, units and
// drop-ins the old or the new config manages, and removes the twins beside them. (It
// removed the managed file after each write: the node failed verify, Degraded, every apply.)
func TestSweepLeavesManagedFilesOfTheTwinsPattern(t *testing.T) {
	root := t.TempDir()
	managed := []string{"etc/.motd.tmp-0123456789ab", "etc/.link.tmp-0123456789ab", "etc/systemd/system/.u.service.tmp-0123456789ab"}
	twins := []string{"etc/.motd.tmp-abcdefabcdef", "etc/systemd/system/.v.service.tmp-0123456789ab"}
	for _, p := range append(slices.Clone(managed), twins...) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	from := &model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/etc/.link.tmp-0123456789ab"}, Target: "x"}}}
	target := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/.motd.tmp-0123456789ab"}, Mode: 0o644}},
		Units: []model.Unit{{Name: ".u.service.tmp-0123456789ab"}}}
	if err := (&Executor{Root: root, Host: &RecordingHost{}}).Sweep(from, target); err != nil {
		t.Fatal(err)
	}
	for _, p := range managed {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("/%s, managed, was removed (%v)", p, err)
		}
	}
	for _, p := range twins {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/%s, a twin, is left (%v)", p, err)
		}
	}
}

// A hand-over of the stage step alone (before the node's slot) stages and ends Done on the
// config the node runs: nothing is written, no reboot, no pending record. The slot's
// hand-over then updates as usual.
func TestUpdateStageOnlyEndsOnTheCurrentConfig(t *testing.T) {
	f := newResumeFixture(t)
	f.target.OSImage, f.target.KernelArgs = "vm:os/v2", []string{"nosmt"}
	done, err := f.update([]model.Step{{Kind: model.StepStage}})
	if err != nil {
		t.Fatalf("stage: %v (reports %v)", err, f.state.reports)
	}
	want := []string{"working rendered-w-new", "done rendered-w-old"}
	if !slices.Equal(done, []string{"stage"}) || !slices.Equal(f.state.reports, want) {
		t.Errorf("done %v, reports %v; want [stage], %v", done, f.state.reports, want)
	}
	if rec := f.host.Recorded(); !slices.Equal(rec, []string{"stage vm:os/v2 +nosmt -"}) {
		t.Errorf("host calls %q, want the stage alone", rec)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "etc/a")); string(b) != "old a" || f.pendingLeft(t) {
		t.Errorf("the stage changed the node: /etc/a %q, pending record %v", b, f.pendingLeft(t))
	}
	// Without a config the node runs, there is nothing to end on: refused.
	g := newResumeFixture(t)
	err = g.agent.Update(context.Background(), nil, g.target, []model.Step{{Kind: model.StepStage}}, func(model.Step) {})
	if err == nil || len(g.host.Recorded()) != 0 {
		t.Errorf("a stage from no known config: %v, host calls %q", err, g.host.Recorded())
	}
}
