package views

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/testkit/printed"
)

// hostile is what a configuration, a node or a file may say (printed.Text), with a byte
// that is not UTF-8 besides.
var hostile = printed.Text("T") + "\xff"

// hostileLines is hostile for the texts that are lines by nature (a content, a diff, a
// diagnostic's detail): their line breaks are kept, so it forges none.
const hostileLines = "one\n\x1b]0;T\x07\x1b[2J\u009b2J\rX\xff\u202e\ttwo\n"

// hostilize appends hostile text to every plain string v holds (named string types —
// kinds, actions — keep theirs, so that the views take their usual paths), and gives each
// nil slice, map and pointer that may hold text one element, hostilized too.
func hostilize(v reflect.Value, lines bool) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() == reflect.TypeFor[string]() {
			v.SetString(v.String() + map[bool]string{false: hostile, true: hostileLines}[lines])
		}
	case reflect.Pointer:
		if v.IsNil() && holdsText(v.Type().Elem()) {
			v.Set(reflect.New(v.Type().Elem()))
		}
		if !v.IsNil() {
			hostilize(v.Elem(), lines)
		}
	case reflect.Struct:
		for _, f := range fieldsOf(v.Type()) {
			hostilize(v.Field(f.index), f.lines)
		}
	case reflect.Slice:
		if v.Len() == 0 && holdsText(v.Type().Elem()) {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			hostilize(v.Index(i), lines)
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		if v.Len() == 0 && (holdsText(v.Type().Key()) || holdsText(v.Type().Elem())) {
			v.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		}
		old := map[reflect.Value]reflect.Value{}
		for it := v.MapRange(); it.Next(); {
			old[it.Key()] = it.Value()
		}
		for k, e := range old {
			v.SetMapIndex(k, reflect.Value{})
			k2, e2 := reflect.New(k.Type()).Elem(), reflect.New(e.Type()).Elem()
			k2.Set(k)
			e2.Set(e)
			hostilize(k2, lines)
			hostilize(e2, lines)
			v.SetMapIndex(k2, e2)
		}
	}
}

func hostileOf[T any](v T) T {
	hostilize(reflect.ValueOf(&v).Elem(), false)
	return v
}

// TestShownEscapesEveryString: every string of a plan file, a drift report, a status, an
// event, diagnostics and a rendered config — whatever field holds it — comes out of Shown
// escaped, the input is left as it was, and input with nothing to escape is not copied.
func TestShownEscapesEveryString(t *testing.T) {
	for _, c := range [][2]any{
		shownBeside(hostileOf(&planfile.File{Rollout: samplePlan()})), shownBeside(hostileOf(&planner.DriftReport{})),
		shownBeside(hostileOf(&planner.Status{})), shownBeside(hostileOf(engine.Event{})), shownBeside(hostileOf(model.Diagnostics{{}})),
		shownBeside(hostileOf(&model.Rendered{})), shownBeside(hostileOf(ApplySummary{})),
	} {
		v, got := c[0], reflect.ValueOf(c[1])
		strs := 0
		walkStrings(got, func(s string) {
			strs++
			if bad := printed.Unsafe(s, strings.Contains(s, "one\n")); bad != "" {
				t.Errorf("%T: Shown left %s in %q", v, bad, s)
			}
		})
		raw := 0
		walkStrings(reflect.ValueOf(v), func(s string) {
			if strings.Contains(s, "\x1b") {
				raw++
			}
		})
		if strs == 0 || raw == 0 {
			t.Errorf("%T: %d strings shown, %d hostile ones left in the input: the test reaches nothing", v, strs, raw)
		}
	}
	clean := samplePlan()
	if got := Shown(clean); got != clean {
		t.Error("Shown copied a plan with nothing to escape")
	}
}

// shownBeside is v and Shown(v).
func shownBeside[T any](v T) [2]any { return [2]any{v, Shown(v)} }

// walkStrings calls f with every string v holds (map keys too).
func walkStrings(v reflect.Value, f func(string)) {
	switch v.Kind() {
	case reflect.String:
		f(v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), f)
		}
	case reflect.Struct:
		for _, fl := range fieldsOf(v.Type()) {
			walkStrings(v.Field(fl.index), f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStrings(v.Index(i), f)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkStrings(it.Key(), f)
			walkStrings(it.Value(), f)
		}
	}
}

// hostilePlanFile is a saved plan with every kind of thing a plan shows — drift, holds,
// blockers, warnings, files, units, drop-ins, directories, links, kernel arguments, OS
// images, boot images — each string of it hostile.
func hostilePlanFile() *planfile.File {
	p := samplePlan()
	p.Nodes = append(p.Nodes, driftPlan(model.OnDriftRestore).Nodes[0])
	p.Nodes[1].Held, p.Nodes[1].Condition = "held by ", "cordoned"
	p.Nodes[3].Happened, p.Nodes[3].Warnings = "rebooted ", []string{"node is Degraded: "}
	p.Pools[1].Warnings = []string{"first boot "}
	p.Pools[1].Changes[0].Items = append(p.Pools[1].Changes[0].Items,
		planner.ItemChange{Kind: planner.ItemDirectory, Name: "/etc/d", Action: planner.ItemCreate, After: &planner.Item{Mode: 0o755}},
		planner.ItemChange{Kind: planner.ItemLink, Name: "/etc/l", Action: planner.ItemUpdate, Before: &planner.Item{Target: "/a"}, After: &planner.Item{Target: "/b"}})
	p.BootImages = []planner.BootImagePlan{{Pool: "worker", Changed: true, From: &model.BootImageDef{Name: "a"}, To: &model.BootImageDef{Name: "b"},
		Lagging: []string{"worker-0"}, Refused: "refused ", FirstBootPivot: true,
		Templates: []planner.TemplatePlan{{Action: planner.TemplateDegraded, Reason: "degraded "}, {Action: planner.TemplateUpdate, From: "ami-1", To: "ami-2"}}}}
	return hostileOf(&planfile.File{Rollout: p, Targets: []string{"node.worker-0"}})
}

// TestEveryViewForPeopleEscapes: plan, show, apply (its plan, progress, errors and
// summary, in lines and live), drift, status, graph, diagnostics and the errors' box print
// hostile text escaped, with colour and without; none prints a forged line.
func TestEveryViewForPeopleEscapes(t *testing.T) {
	pf := hostilePlanFile()
	rendered := hostileOf(&model.Rendered{Files: []model.File{{}}, Units: []model.Unit{{Dropins: []model.Dropin{{}}}},
		Directories: []model.Directory{{}}, Links: []model.Link{{}}, KernelArgs: []string{""},
		Provenance: &model.Provenance{}})
	diags := hostileOf(model.Diagnostics{{Subject: &model.Range{Start: model.Pos{Line: 1}, End: model.Pos{Line: 2}}}})
	for _, color := range []bool{false, true} {
		views := map[string]func(w *bytes.Buffer) error{
			"plan":           func(w *bytes.Buffer) error { return NewPlan(false, w, color).Plan(pf) },
			"show":           func(w *bytes.Buffer) error { return NewShow(false, w, color).Plan(pf) },
			"show -rendered": func(w *bytes.Buffer) error { return NewShow(false, w, color).Rendered(rendered) },
			"apply": func(w *bytes.Buffer) error {
				v := NewApply(false, w, color)
				v.Plan(pf)
				progress(v, pf)
				v.LeftOut(LeftOutOf(pf.Rollout))
				return nil
			},
			"apply (live)": func(w *bytes.Buffer) error {
				progress(NewLiveProgress(w, color, pf.Rollout), pf)
				return nil
			},
			"drift": func(w *bytes.Buffer) error {
				return NewDrift(false, w, color).Report(hostileOf(&planner.DriftReport{Nodes: []planner.DriftNode{{Status: planner.DriftDrifted},
					{Status: planner.DriftUnknownConfig}}}), DriftRun{})
			},
			"validate": func(w *bytes.Buffer) error {
				return Diagnostics(w, map[string][]byte{diags[0].Subject.Filename: []byte(hostileLines)}, diags, color)
			},
			"errors box": func(w *bytes.Buffer) error { // as mcp's commands print an error (cmd/mcp: failErr)
				lines := ErrorLines(errors.Join(errors.New(hostile), fmt.Errorf("saving: %w", errors.New(hostile))))
				return Error(w, lines[0], strings.Join(lines[1:], "\n"), color)
			},
		}
		for name, view := range views {
			var out bytes.Buffer
			if err := view(&out); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			printed.Check(t, fmt.Sprintf("%s (color %t)", name, color), out.String(), printed.Options{Color: color, Cursor: name == "apply (live)"}, "T")
		}
	}
	status := hostileOf(&planner.Status{Nodes: []planner.NodeStatus{{Held: true, Drift: []model.Drift{{}}}}})
	for _, o := range []StatusOptions{{}, {Nodes: true}, {Nodes: true, Output: OutputWide}} {
		var out bytes.Buffer
		if err := NewStatus(o, &out).Status(status, time.Now()); err != nil {
			t.Fatal(err)
		}
		printed.Check(t, fmt.Sprintf("status %+v", o), out.String(), printed.Options{}, "T")
	}
	var out bytes.Buffer
	if err := Graph(&out, pf.Rollout); err != nil {
		t.Fatal(err)
	}
	printed.Check(t, "graph", out.String(), printed.Options{}, "T")
}

// progress sends p every kind of event, each from a hostile node, and a summary of an
// apply that failed with hostile errors.
func progress(p Progress, pf *planfile.File) {
	n := pf.Rollout.Nodes[0]
	err := errors.Join(errors.New("node "+n.Name+": "+hostile), fmt.Errorf("saving state: %w", errors.New(hostile)))
	for _, k := range []engine.EventKind{engine.EventStepStart, engine.EventNodeWaiting, engine.EventStepDone, engine.EventStepFailed,
		engine.EventWaiting, engine.EventHeld, engine.EventClaimed, engine.EventSincePlan, engine.EventAlertsFiring, engine.EventTemplate,
		engine.EventUnconfirmed, engine.EventNodeFailed, engine.EventPoolStopped} {
		e := hostileOf(engine.Event{Kind: k, Node: n.Name, Pool: n.Pool, Step: model.Step{Kind: model.StepWrite}})
		e.Node, e.Pool, e.Err = n.Name, n.Pool, err
		p.Event(e)
	}
	res := hostileOf(&engine.ApplyResult{Failed: []string{n.Name}})
	p.Summary(SummaryOf(res, err))
}

// TestMarkdownKeepsHostileTextInItsPlace: in mcp show -markdown, hostile text stays in its
// code span, its table cell and its line — it opens no HTML tag, adds no cell, forges no
// line — while the control characters are escaped as everywhere.
func TestMarkdownKeepsHostileTextInItsPlace(t *testing.T) {
	var out bytes.Buffer
	if err := Markdown(&out, hostilePlanFile()); err != nil {
		t.Fatal(err)
	}
	printed.Check(t, "show -markdown", out.String(), printed.Options{}, "T")
	printed.CheckMarkdown(t, out.String())
}
