package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func bootImagePlan() *planner.Rollout {
	from := model.BootImageDef{Name: "fcos-40", OSImage: "q:40", Images: map[string]string{"gcp": "img-40"}}
	to := model.BootImageDef{Name: "fcos-41", OSImage: "q:41", Images: map[string]string{"gcp": "img-41"}}
	ms := func(name string) model.MachineTemplate {
		return model.MachineTemplate{Kind: "MachineSet", Namespace: "m", Name: name, Platform: "gcp", Field: "spec.x.image", Image: "img-40"}
	}
	return &planner.Rollout{BootImages: []planner.BootImagePlan{{Pool: "worker", Policy: model.BootImageManaged, Skew: model.SkewWarn,
		From: &from, To: &to, Changed: true, OSImage: "q:41", Lagging: []string{"w-3"},
		Templates: []planner.TemplatePlan{
			{Template: ms("a"), Action: planner.TemplateUpdate, From: "img-40", To: "img-41"},
			{Template: ms("b"), Action: planner.TemplateNoOp, From: "img-41", To: "img-41"},
			{Template: ms("c"), Action: planner.TemplateDegraded, From: "img-40", Reason: "no image for platform \"azure\""},
		}}}}
}

func TestBootImageViews(t *testing.T) {
	p := bootImagePlan()
	var text bytes.Buffer
	writeBootImages(&text, painter(false), p)
	for _, want := range []string{
		"boot_image.worker boot_image.fcos-40 → boot_image.fcos-41  [managed, skew warn]",
		"new nodes boot q:41 (gcp: img-41)",
		"MachineSet/m/a    gcp       img-40 → img-41",
		"MachineSet/m/c    gcp       degraded: no image for platform \"azure\"",
		"1 machine template already on the pool's image",
		"skew: 1 node would keep another OS image than q:41 after this apply: w-3",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if s := PlanSummary(p); !strings.Contains(s, "1 boot image changed, 1 machine template to update") {
		t.Errorf("summary %q", s)
	}
	var md bytes.Buffer
	w := bufio.NewWriter(&md)
	mdBootImages(w, p)
	w.Flush()
	for _, want := range []string{"#### Boot image of `worker`: `boot_image.fcos-40` → `boot_image.fcos-41`", "- 1 machine template to update",
		"- **degraded:** `MachineSet/m/c`", "- **skew:** left on another OS image: `w-3`"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	b, err := JSONPlan(p, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceChanges []struct {
			Address string
			Index   string
			Change  struct {
				Actions []string
				Before  map[string]any
				After   map[string]any
			}
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rc := range doc.ResourceChanges {
		got[rc.Address] = strings.Join(rc.Change.Actions, ",") + " " + asString(rc.Change.After["image"]) + asString(rc.Change.After["name"])
	}
	want := map[string]string{
		"boot_image.worker":                         "update fcos-41",
		`machine_template.worker["MachineSet/m/a"]`: "update img-41",
		`machine_template.worker["MachineSet/m/b"]`: "no-op img-41",
		`machine_template.worker["MachineSet/m/c"]`: "no-op img-40",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}
