package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// templateFake is the fake provider with machine templates: SetTemplateImage changes the
// image when the template still holds from, as the Kubernetes provider's JSON patch does.
type templateFake struct {
	*fakeProvider
	tmu    sync.Mutex
	images map[string]string // template ID → image
	calls  []string
}

func (f *templateFake) SetTemplateImage(_ context.Context, t model.MachineTemplate, from, to string) error {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	f.calls = append(f.calls, t.ID())
	if got := f.images[t.ID()]; got != from {
		return fmt.Errorf("its image is %s now, not %s", got, from)
	}
	f.images[t.ID()] = to
	return nil
}

func bootPlan(p *planner.Rollout, skew model.SkewPolicy, templates ...planner.TemplatePlan) {
	to := model.BootImageDef{Name: "fcos-41", OSImage: "quay.io/fcos:41", Images: map[string]string{"gcp": "img-41"}}
	p.BootImages = []planner.BootImagePlan{{Pool: "worker", Policy: model.BootImageManaged, Skew: skew, To: &to, Changed: true,
		OSImage: to.OSImage, Templates: templates}}
}

func tmplPlan(name, from, to string) planner.TemplatePlan {
	return planner.TemplatePlan{Template: model.MachineTemplate{Kind: "MachineSet", Namespace: "m", Name: name, Platform: "gcp", Image: from},
		Action: planner.TemplateUpdate, From: from, To: to}
}

func TestApplySetsTemplatesAndRecordsTheBootImage(t *testing.T) {
	f := &templateFake{fakeProvider: newFake(map[string]int{"worker": 2}), images: map[string]string{"MachineSet/m/a": "img-40"}}
	w, st := newTestWorkspace(t, f.fakeProvider)
	w.Provider = f
	p := planFor(f.fakeProvider, map[string]int{"worker": 1}, rebootSteps())
	bootPlan(p, model.SkewWarn, tmplPlan("a", "img-40", "img-41"))
	var events []Event
	var mu sync.Mutex
	if _, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{Observer: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}); err != nil {
		t.Fatal(err)
	}
	if f.images["MachineSet/m/a"] != "img-41" {
		t.Errorf("template image %s, want img-41", f.images["MachineSet/m/a"])
	}
	back, err := w.Backend.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b := back.BootImages["worker"]; b.Name != "fcos-41" || b.Images["gcp"] != "img-41" {
		t.Errorf("stored boot image %+v", b)
	}
	if events[0].Kind != EventTemplate || !strings.Contains(events[0].Reason, "MachineSet/m/a: img-40 → img-41") {
		t.Errorf("first event %+v: the template is set before any node starts", events[0])
	}
}

// A template changed since the plan is not overwritten: the apply fails for it and keeps
// the state's boot image; with skew = "enforce" the pool's nodes do not start either.
func TestApplyTemplateChangedSincePlan(t *testing.T) {
	for _, skew := range []model.SkewPolicy{model.SkewWarn, model.SkewEnforce} {
		t.Run(string(skew), func(t *testing.T) {
			f := &templateFake{fakeProvider: newFake(map[string]int{"worker": 2}), images: map[string]string{"MachineSet/m/a": "img-hand-edited"}}
			w, st := newTestWorkspace(t, f.fakeProvider)
			w.Provider = f
			p := planFor(f.fakeProvider, map[string]int{"worker": 1}, rebootSteps())
			bootPlan(p, skew, tmplPlan("a", "img-40", "img-41"))
			res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
			if err == nil || !strings.Contains(err.Error(), "machine template MachineSet/m/a: its image is img-hand-edited now") {
				t.Fatalf("err %v", err)
			}
			if f.images["MachineSet/m/a"] != "img-hand-edited" {
				t.Error("the hand-edited template was overwritten")
			}
			if _, ok := st.BootImages["worker"]; ok {
				t.Error("the state records a boot image its template does not boot")
			}
			if started := len(res.Updated) + len(res.Failed); (skew == model.SkewEnforce) != (started == 0) {
				t.Errorf("skew %s: %d nodes started", skew, started)
			}
		})
	}
}

func TestApplyRefusedBySkewChangesNothing(t *testing.T) {
	f := &templateFake{fakeProvider: newFake(map[string]int{"worker": 2}), images: map[string]string{"MachineSet/m/a": "img-40"}}
	w, st := newTestWorkspace(t, f.fakeProvider)
	w.Provider = f
	p := planFor(f.fakeProvider, map[string]int{"worker": 1}, rebootSteps())
	bootPlan(p, model.SkewEnforce, tmplPlan("a", "img-40", "img-41"))
	p.BootImages[0].Refused = "pool worker has skew = \"enforce\", and …"
	serial := st.Serial
	_, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "apply refused, nothing changed") {
		t.Fatalf("err %v", err)
	}
	if len(f.calls) > 0 || len(f.trace) > 0 || st.Serial != serial {
		t.Errorf("a refused apply acted: templates %v, nodes %v, serial %d → %d", f.calls, f.trace, serial, st.Serial)
	}
}
