package planfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func testRendered(pool string) *model.Rendered {
	r := &model.Rendered{Pool: pool, IgnitionVersion: "3.4.0", OSImage: "img:1"}
	r.Name = content.Name(r)
	return r
}

// validFile is a small plan as mcp plan -out writes one: a pool, a node to update and one
// unchanged.
func validFile() *File {
	r := testRendered("worker")
	return &File{MCPVersion: "test", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ConfigDir: "/cfg",
		Lineage: "0b1c", Serial: 3, FleetFingerprint: "abcdef",
		Rollout: &planner.Rollout{
			Pools: []planner.PoolPlan{{Name: "worker", Rendered: r.Name, ReRendered: true, Size: 2,
				MaxUnavailable: 1, Slots: 1, Updates: 1, Waves: 1}},
			Nodes: []planner.NodePlan{
				{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate, From: "rendered-worker-old", To: r.Name, Wave: 1,
					Steps: []model.Step{{Kind: model.StepCordon, Reason: "r"}, {Kind: model.StepWrite, Target: "/etc/x", Reason: "r"}}},
				{Name: "w-2", Pool: "worker", Action: planner.NodeNoOp, From: r.Name, To: r.Name},
			},
			Rendered: map[string]*model.Rendered{r.Name: r},
		}}
}

// writeRaw saves f and returns its path and JSON.
func writeRaw(t *testing.T, f *File) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan")
	if err := Write(p, f); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	return p, string(b)
}

func TestReadAcceptsWhatWriteWrote(t *testing.T) {
	p, _ := writeRaw(t, validFile())
	f, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Serial != 3 || len(f.Rollout.Nodes) != 2 || len(f.Rollout.Rendered) != 1 {
		t.Errorf("read %+v", f)
	}
}

// TestReadsPlanWithIgnitionConfigs: a plan saved by an older mcp carries each rendered
// config's Ignition config beside its content; it reads, and its configs are then what
// this mcp derives (each file's content once), so apply can compare them.
func TestReadsPlanWithIgnitionConfigs(t *testing.T) {
	f := validFile()
	r := f.Rollout.Rendered[f.Rollout.Pools[0].Rendered]
	full, err := json.Marshal(content.FullOf(r))
	if err != nil {
		t.Fatal(err)
	}
	derived, _ := json.Marshal(r)
	p, raw := writeRaw(t, f)
	old := strings.Replace(raw, string(derived), string(full), 1)
	if old == raw || !strings.Contains(old, `"ignition":{"ignition":{"version":"3.4.0"}}`) {
		t.Fatalf("not in the older form: %s", old)
	}
	os.WriteFile(p, []byte(old), 0o600)
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got.Rollout.Rendered[r.Name]); string(b) != string(derived) {
		t.Errorf("read %s, derived %s", b, derived)
	}
}

// TestReadRefusesDamagedPlan: an empty, null, cut-off, hand-edited or otherwise damaged plan
// is an error naming the file and what is wrong.
func TestReadRefusesDamagedPlan(t *testing.T) {
	_, good := writeRaw(t, validFile())
	name := testRendered("worker").Name
	other := testRendered("infra").Name
	for _, c := range []struct{ name, content, want string }{
		{"empty", "", "empty"},
		{"white space", " \n", "empty"},
		{"null", "null", "null"},
		{"array", "[]", "not a JSON object"},
		{"cut off", good[:len(good)/2], "cut off"},
		{"trailing data", good + "{}", "after"},
		{"unknown field", strings.Replace(good, `"serial":3`, `"serial":3,"approved":true`, 1), "approved"},
		{"other format", strings.Replace(good, `"format_version":1`, `"format_version":9`, 1), "format version 9"},
		{"no plan", `{"format_version":1,"lineage":"0b1c","plan":null}`, "no plan"},
		{"rendered edited", strings.Replace(good, `"os_image":"img:1"`, `"os_image":"img:evil"`, 1), "does not match its content"},
		{"rendered under another key", strings.Replace(good, `"rendered":{"`+name, `"rendered":{"`+other, 1), other},
		{"pool's config missing", strings.Replace(good, `"rendered":"`+name, `"rendered":"`+other, 1), other},
		{"node of no pool", strings.Replace(good, `"pool":"worker","action":"update"`, `"pool":"nope","action":"update"`, 1), "nope"},
		{"unknown action", strings.Replace(good, `"action":"update"`, `"action":"explode"`, 1), "explode"},
		{"unknown step", strings.Replace(good, `"kind":"write"`, `"kind":"format-disk"`, 1), "format-disk"},
		{"step kind as a number", strings.Replace(good, `"kind":"write"`, `"kind":99`, 1), "kind"},
		{"duplicate node", strings.Replace(good, `"name":"w-2"`, `"name":"w-1"`, 1), "w-1"},
		{"negative slots", strings.Replace(good, `"slots":1`, `"slots":-1`, 1), "slots"},
		{"node without target", strings.Replace(good, `"to":"`+name+`","steps"`, `"to":"","steps"`, 1), "w-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.content == good {
				t.Fatal("the edit did not apply")
			}
			p := filepath.Join(t.TempDir(), "plan")
			os.WriteFile(p, []byte(c.content), 0o600)
			_, err := Read(p)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read: %v, want an error naming %s and %q", err, p, c.want)
			}
		})
	}
}

// TestReadRefusesNonRegularFiles: a FIFO is refused at once, not waited on; so is a file
// larger than any plan.
func TestReadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read(fifo): %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read(fifo) hangs")
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Read(dir): %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxSize+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if _, err := Read(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Read(big): %v", err)
	}
}
