package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// A node's update through the provider API leaves its whole story in its event log.
func TestEventsOfAnUpdate(t *testing.T) {
	p, dir := newFleet(t, 3, Options{RebootDuration: 50 * time.Millisecond})
	ctx := context.Background()
	target := &model.Rendered{Name: "rendered-worker-1", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a")}}}
	steps := []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}, {Kind: model.StepKargs}, {Kind: model.StepReboot}, {Kind: model.StepVerify}}
	boot := observe1(t, p, "worker-0").BootID
	if err := p.Cordon(ctx, "worker-0"); err != nil {
		t.Fatal(err)
	}
	if err := p.Drain(ctx, "worker-0", providers.DrainOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := p.RunNodeSteps(ctx, "worker-0", nil, target, steps, func(model.Step) {}); err != nil {
		t.Fatal(err)
	}
	if err := p.Uncordon(ctx, "worker-0"); err != nil {
		t.Fatal(err)
	}
	evs := events(t, dir, "worker-0")
	if k := kinds(evs); k != "cordon drain working reboot not-ready ready done uncordon" {
		t.Fatalf("events %s", k)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.Node != "worker-0" || e.Time.Location() != time.UTC || e.Recovered {
			t.Errorf("event %d: %+v", i, e)
		}
		if i > 0 && e.Time.Before(evs[i-1].Time) {
			t.Errorf("event %d (%s) is earlier than the one before", i, e.Kind)
		}
	}
	next := observe1(t, p, "worker-0").BootID
	if d := evs[1]; !slices.Equal(d.Pods, []string{"demo/web-0"}) {
		t.Errorf("drain event %+v, want demo/web-0 evicted", d)
	}
	if w := evs[2]; w.DesiredConfig != target.Name {
		t.Errorf("working event %+v", w)
	}
	if r := evs[3]; r.BootID != boot || r.NextBootID != next || r.DesiredConfig != target.Name || r.Until.IsZero() {
		t.Errorf("reboot event %+v, want boot ids %s then %s", r, boot, next)
	}
	if d := evs[6]; d.CurrentConfig != target.Name {
		t.Errorf("done event %+v", d)
	}
	b, _ := os.ReadFile(eventsFile(dir, "worker-0"))
	first := string(b[:bytes.IndexByte(b, '\n')])
	if !regexp.MustCompile(`^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z","node":"worker-0","event":"cordon","seq":1\}$`).MatchString(first) {
		t.Errorf("first line %s", first)
	}
	if evs := events(t, dir, "worker-1"); len(evs) != 0 {
		t.Errorf("worker-1, untouched, has events %s", kinds(evs))
	}
}

// mcp fleet set changes go through the same write path, so they are logged too; a change
// that changes nothing is not.
func TestEventsOfSet(t *testing.T) {
	_, dir := newFleet(t, 1, Options{})
	for _, a := range [][]string{
		{"ready=false", "unschedulable=true"},
		{"label.gpu=yes"},
		{"ready=false"},
		{"state=Degraded", "reason=disk full"},
		{"unschedulable=false", "ready=true", "state=Done", "current_config=rendered-worker-1"},
	} {
		if err := Set(dir, "worker-0", a); err != nil {
			t.Fatal(err)
		}
	}
	evs := events(t, dir, "worker-0")
	if k := kinds(evs); k != "cordon not-ready degraded done uncordon ready" {
		t.Fatalf("events %s", k)
	}
	if evs[2].Reason != "disk full" || evs[3].CurrentConfig != "rendered-worker-1" {
		t.Errorf("events %+v", evs)
	}
}

// A writer killed between node.json and events.jsonl leaves the events in node.json; the
// next writer, or ReadEvents, appends them once, marked Recovered, and an uncordon so
// recovered is stamped no earlier than the change.
func TestEventsOfAKilledWriterAreRecovered(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	ctx := context.Background()
	p.Cordon(ctx, "worker-0")
	st, _ := os.Stat(eventsFile(dir, "worker-0"))
	p.Uncordon(ctx, "worker-0")
	changed := time.Now()
	os.Truncate(eventsFile(dir, "worker-0"), st.Size()) // the append never happened
	for range 2 {
		evs := events(t, dir, "worker-0")
		if kinds(evs) != "cordon uncordon" || !evs[1].Recovered || evs[1].Seq != 2 || evs[1].Time.Before(changed) {
			t.Fatalf("after recovery: %+v", evs)
		}
	}
	// Again, recovered by the next write this time.
	st, _ = os.Stat(eventsFile(dir, "worker-0"))
	p.Cordon(ctx, "worker-0")
	os.Truncate(eventsFile(dir, "worker-0"), st.Size())
	p.Uncordon(ctx, "worker-0")
	evs := events(t, dir, "worker-0")
	if k := kinds(evs); k != "cordon uncordon cordon uncordon" || !evs[2].Recovered || evs[3].Recovered || evs[3].Seq != 4 {
		t.Errorf("events %+v", evs)
	}
}

// A torn last line (a write cut short) is ignored by readers and cut off by the next
// writer; any other bad line is an error naming the file and line.
func TestTornAndBadEventLines(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	ctx := context.Background()
	p.Cordon(ctx, "worker-0")
	path := eventsFile(dir, "worker-0")
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"time":"2026-01-0`)
	f.Close()
	b, _ := os.ReadFile(path)
	if evs, err := parseEvents(path, "worker-0", b); err != nil || kinds(evs) != "cordon" {
		t.Errorf("torn last line: %v %v", kinds(evs), err)
	}
	p.Uncordon(ctx, "worker-0")
	if evs := events(t, dir, "worker-0"); kinds(evs) != "cordon uncordon" {
		t.Errorf("after a write: %s", kinds(evs))
	}
	b, _ = os.ReadFile(path)
	for _, bad := range []string{"not json\n", `{"time":"2026-01-01T00:00:00Z","node":"worker-1","event":"cordon","seq":3}` + "\n",
		`{"time":"2026-01-01T00:00:00Z","node":"worker-0","event":"exploded","seq":3}` + "\n"} {
		os.WriteFile(path, append(slices.Clone(b[:bytes.IndexByte(b, '\n')+1]), bad+string(b[bytes.IndexByte(b, '\n')+1:])...), 0o644)
		if _, err := ReadEvents(dir); err == nil || !strings.Contains(err.Error(), path+":2:") {
			t.Errorf("bad line %q: %v", bad, err)
		}
	}
}

// Writers of one node are serialised: concurrent changes lose nothing, and the log's
// cordons and uncordons alternate with contiguous numbers.
func TestConcurrentWritersOfANode(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				if err := Set(dir, "worker-0", []string{fmt.Sprintf("label.l%d-%d=x", i, j)}); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					p.Cordon(ctx, "worker-0")
				} else {
					p.Uncordon(ctx, "worker-0")
				}
			}
		})
	}
	wg.Wait()
	if n := observe1(t, p, "worker-0"); len(n.Labels) != 3+40 {
		t.Errorf("%d labels, want 43: a concurrent write was lost", len(n.Labels))
	}
	evs := events(t, dir, "worker-0")
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, e := range evs {
		want := map[bool]EventKind{true: EventCordon, false: EventUncordon}[i%2 == 0]
		if e.Seq != int64(i+1) || e.Kind != want {
			t.Fatalf("event %d: %s seq %d, want %s seq %d", i, e.Kind, e.Seq, want, i+1)
		}
	}
}
