package nodeexec

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// records is a node's agent directory as an agent leaves it: the update in flight and a
// standalone agent's desired config.
var records = tree{
	PendingPath:             {Content: `{"target":{"name":"rendered-worker-2"},"boot_id":"b"}`, Mode: 0o600},
	StateDir + "/desired":   {Content: "rendered-worker-1\n", Mode: 0o600},
	"etc/passwd":            {Content: passwd, Mode: 0o644},
	"etc/group":             {Content: group, Mode: 0o644},
	"usr/lib/os-release":    {Content: "ID=fedora\n", Mode: 0o644},
	"var/lib/other/keep.db": {Content: "x", Mode: 0o644},
}

func with(base tree, more tree) tree {
	out := tree{}
	for _, tr := range []tree{base, more} {
		for k, v := range tr {
			out[k] = v
		}
	}
	return out
}

// TestManagedPathsIntoTheRecordsAreRefused: a managed path that the node's own links lead
// into the agent's records (/var/lib/mcp) — a file, link, directory, removal, unit or hard
// link target; through a CoreOS prefix made a link there, a link under /var, a chain — is
// refused before the update starts, naming the path, where it lands and the links, and
// the node's tree is as it was: no record overwritten or deleted, no other file written.
// Paths beside the records pass.
func TestManagedPathsIntoTheRecordsAreRefused(t *testing.T) {
	file := func(p string) model.File {
		return model.File{Entry: model.Entry{Path: p}, Mode: 0o644, Contents: []byte(`{"x":1}`)}
	}
	tests := []struct {
		name     string
		links    tree
		from, to *model.Rendered
		writes   []string // the write steps (then a reboot), the last one refused
		want     string   // in the error; "" when the update is fine
	}{
		{"/opt made a link to the records", tree{"opt": {Link: "var/lib/mcp"}}, nil,
			&model.Rendered{Files: []model.File{file("/etc/first"), file("/opt/pending.json")}}, []string{"/etc/first", "/opt/pending.json"},
			"path /opt/pending.json lands at /var/lib/mcp/pending.json through the node's link /opt → var/lib/mcp"},
		{"a link under /var", tree{"var/cache/x": {Link: "../lib/mcp"}}, nil,
			&model.Rendered{Files: []model.File{file("/var/cache/x/desired")}}, []string{"/var/cache/x/desired"},
			"lands at /var/lib/mcp/desired through the node's link /var/cache/x → ../lib/mcp"},
		{"a chain", tree{"etc/a": {Link: "b/../c"}, "etc/c": {Link: "../var/lib"}}, nil,
			&model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/etc/a/mcp/l"}, Target: "/etc/passwd"}}}, []string{"/etc/a/mcp/l"},
			"through the node's links /etc/a → b/../c, then /etc/c → ../var/lib"},
		{"a directory", tree{"opt": {Link: "var/lib/mcp"}}, nil,
			&model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/opt/d"}, Mode: 0o700}}}, []string{"/opt/d"}, "lands at /var/lib/mcp/d"},
		{"a removal", tree{"opt": {Link: "var/lib/mcp"}}, &model.Rendered{Files: []model.File{file("/opt/pending.json")}},
			&model.Rendered{}, []string{"/opt/pending.json"}, "lands at /var/lib/mcp/pending.json"},
		{"a hard link's target", tree{"opt": {Link: "var/lib/mcp"}}, nil,
			&model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/etc/p"}, Target: "/opt/pending.json", Hard: true}}}, []string{"/etc/p"},
			"path /opt/pending.json lands at /var/lib/mcp/pending.json"},
		{"a unit's drop-in", tree{"etc/systemd/system/x.service.d": {Link: "../../../var/lib/mcp"}}, nil,
			&model.Rendered{Units: []model.Unit{{Name: "x.service", Dropins: []model.Dropin{{Name: "desired", Contents: "rendered-infra-0"}}}}},
			[]string{"x.service"}, "lands at /var/lib/mcp/desired"},
		{"a file in place of /var/lib", tree{"etc/v": {Link: "../var"}}, nil,
			&model.Rendered{Files: []model.File{file("/etc/v/lib")}}, []string{"/etc/v/lib"},
			"lands at /var/lib through the node's link /etc/v → ../var: in place of a directory the node agent's own records (/var/lib/mcp) are in"},
		{"beside the records", tree{"opt": {Link: "var/lib/other"}}, nil,
			&model.Rendered{Files: []model.File{file("/opt/mcp")}}, []string{"/opt/mcp"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, with(records, tt.links))
			before := dirTree(t, root)
			st := &fakeState{boot: "b"}
			a := &Agent{Exec: &Executor{Root: root, Host: &RecordingHost{}, NoSync: true}, State: st}
			var steps []model.Step
			for _, w := range tt.writes {
				steps = append(steps, model.Step{Kind: model.StepWrite, Target: w})
			}
			tt.to.Name = "rendered-worker-2"
			if tt.want == "" {
				if err := a.Update(context.Background(), tt.from, tt.to, steps, func(model.Step) {}); err != nil {
					t.Fatalf("update: %v", err)
				}
				if b, err := os.ReadFile(filepath.Join(root, "var/lib/other/mcp")); err != nil || string(b) != `{"x":1}` {
					t.Errorf("not written through the node's link: %q %v", b, err)
				}
				return
			}
			steps = append(steps, model.Step{Kind: model.StepReboot})
			err := a.Update(context.Background(), tt.from, tt.to, steps, func(model.Step) {})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "the node agent's own records") {
				t.Fatalf("update: %v\nwant an error containing %q", err, tt.want)
			}
			if last := st.reports[len(st.reports)-1]; !strings.HasPrefix(last, "degraded write "+tt.writes[len(tt.writes)-1]) {
				t.Errorf("reported %q, want Degraded naming the write", last)
			}
			if d := cmp.Diff(before, dirTree(t, root)); d != "" {
				t.Errorf("the node's tree changed (-before +after):\n%s", d)
			}
			if calls := a.Exec.Host.(*RecordingHost).Recorded(); len(calls) > 0 {
				t.Errorf("host calls %v, want none", calls)
			}
		})
	}
}

// TestRecordsAreNotReachedThroughLinks: the agent reads and writes its records where it
// keeps them, never through a link on the way: with var/lib made a link to where a config
// wrote a forged desired and pending update, or var/lib/mcp itself a link, reading a record
// is an error naming the link, writing one writes nothing there, removing one removes
// nothing, and the forged files are as they were.
func TestRecordsAreNotReachedThroughLinks(t *testing.T) {
	forged := tree{
		"etc/fakelib/mcp/desired":      {Content: "rendered-infra-0\n", Mode: 0o644},
		"etc/fakelib/mcp/pending.json": {Content: `{"target":{"name":"rendered-infra-0"},"boot_id":"x","steps":[]}`, Mode: 0o644},
		"etc/passwd":                   {Content: passwd, Mode: 0o644},
	}
	for name, tt := range map[string]struct {
		link tree
		want string
	}{
		"var/lib a link":     {tree{"var/lib": {Link: "../etc/fakelib"}}, "/var/lib is a link (to ../etc/fakelib)"},
		"var/lib/mcp a link": {tree{"var/lib/mcp": {Link: "../../etc/fakelib/mcp"}}, "/var/lib/mcp is a link (to ../../etc/fakelib/mcp)"},
		"var a link":         {tree{"var": {Link: "etc/fakevar"}, "etc/fakevar/lib": {Link: "../fakelib"}}, "/var is a link (to etc/fakevar)"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, with(forged, tt.link))
			before := dirTree(t, root)
			e := &Executor{Root: root, Host: &RecordingHost{}}
			a := &Agent{Exec: e, State: &fakeState{boot: "b"}}
			if p, err := a.readPending(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("pending record: %+v, %v; want an error containing %q", p, err, tt.want)
			}
			r, _ := os.OpenRoot(root)
			defer r.Close()
			if b, err := ReadRecord(r, StateDir+"/desired"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("desired: %q, %v", b, err)
			}
			if err := e.WriteRecord(PendingPath, []byte("{}")); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("writing the pending record: %v", err)
			}
			if err := a.removePending(); err == nil {
				t.Errorf("removing the pending record through the link: no error")
			}
			if _, err := a.Resume(context.Background(), func(model.Step) {}); err == nil {
				t.Errorf("resume from the forged pending record: no error")
			}
			if d := cmp.Diff(before, dirTree(t, root)); d != "" {
				t.Errorf("the node's tree changed (-before +after):\n%s", d)
			}
		})
	}
	// Absent, the records are not there (made when written), not an error.
	root := t.TempDir()
	r, _ := os.OpenRoot(root)
	defer r.Close()
	if _, err := ReadRecord(r, PendingPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no records: %v", err)
	}
	if err := (&Executor{Root: root}).WriteRecord(PendingPath, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(root, StateDir)); err != nil || !st.IsDir() {
		t.Errorf("the records' directory: %v", err)
	}
}
