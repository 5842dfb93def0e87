package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// A plan says, per pool, what each move of its nodes changes: once per config they move
// from, not per node; before as that config has it, after as the new one.
func TestPlanCarriesChangesPerMoveNotPerNode(t *testing.T) {
	yes := true
	old := &model.Rendered{Name: "rendered-worker-old", Pool: "worker", KernelArgs: []string{"a"}, OSImage: "img:1",
		Files: []model.File{file("/etc/chrony.conf", "server a\n"), file("/etc/gone", "x"),
			{Entry: model.Entry{Path: "/etc/secret"}, Mode: 0o600, Contents: []byte("hunter2"), Sensitive: true}},
		Units: []model.Unit{{Name: "x.service", Contents: "[Service]\n", Dropins: []model.Dropin{{Name: "10.conf", Contents: "a"}}}}}
	older := &model.Rendered{Name: "rendered-worker-older", Pool: "worker", Files: []model.File{file("/etc/chrony.conf", "server z\n")}}
	tg := target("worker", file("/etc/chrony.conf", "server b\n"),
		model.File{Entry: model.Entry{Path: "/etc/secret"}, Mode: 0o600, Contents: []byte("hunter3"), Sensitive: true})
	tg.KernelArgs, tg.OSImage = []string{"b"}, "img:2"
	tg.Units = []model.Unit{{Name: "x.service", Contents: "[Service]\n", Enabled: &yes, Dropins: []model.Dropin{{Name: "10.conf", Contents: "b"}}}}
	nodes := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2), node("w-3", "worker", "a", 3)}
	nodes[0].CurrentConfig, nodes[1].CurrentConfig, nodes[2].CurrentConfig = old.Name, old.Name, older.Name
	nodes[3].CurrentConfig = tg.Name // settled: no change
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 4}}),
		Rendered: map[string]*model.Rendered{"worker": tg}, Known: map[string]*model.Rendered{old.Name: old, older.Name: older},
		Pointers: map[string]string{"worker": old.Name}, Fleet: &model.Fleet{Nodes: nodes}})
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) *Content { return ContentOf([]byte(s), false) }
	hidden := &Content{Hidden: HiddenSensitive}
	want := []Change{
		{From: old.Name, To: tg.Name, Nodes: []string{"w-0", "w-1"}, Items: []ItemChange{
			{Kind: ItemFile, Name: "/etc/chrony.conf", Action: ItemUpdate, ContentChanged: true,
				Before: &Item{Mode: 0o644, Content: text("server a\n")}, After: &Item{Mode: 0o644, Content: text("server b\n")}},
			{Kind: ItemFile, Name: "/etc/gone", Action: ItemDelete, ContentChanged: true, Before: &Item{Mode: 0o644, Content: text("x")}},
			{Kind: ItemFile, Name: "/etc/secret", Action: ItemUpdate, ContentChanged: true,
				Before: &Item{Mode: 0o600, Sensitive: true, Content: hidden}, After: &Item{Mode: 0o600, Sensitive: true, Content: hidden}},
			{Kind: ItemUnit, Name: "x.service", Action: ItemUpdate,
				Before: &Item{Content: text("[Service]\n"), Dropins: map[string]*Content{"10.conf": text("a")}},
				After:  &Item{Content: text("[Service]\n"), Enabled: &yes, Dropins: map[string]*Content{"10.conf": text("b")}}},
			{Kind: ItemKernelArgs, Action: ItemUpdate, Before: &Item{KernelArgs: []string{"a"}}, After: &Item{KernelArgs: []string{"b"}}},
			{Kind: ItemOSImage, Action: ItemUpdate, Before: &Item{OSImage: "img:1"}, After: &Item{OSImage: "img:2"}},
		}},
		{From: older.Name, To: tg.Name, Nodes: []string{"w-2"}, Items: []ItemChange{
			{Kind: ItemFile, Name: "/etc/chrony.conf", Action: ItemUpdate, ContentChanged: true,
				Before: &Item{Mode: 0o644, Content: text("server z\n")}, After: &Item{Mode: 0o644, Content: text("server b\n")}},
			{Kind: ItemFile, Name: "/etc/secret", Action: ItemCreate, ContentChanged: true, After: &Item{Mode: 0o600, Sensitive: true, Content: hidden}},
			{Kind: ItemUnit, Name: "x.service", Action: ItemCreate, ContentChanged: true,
				After: &Item{Content: text("[Service]\n"), Enabled: &yes, Dropins: map[string]*Content{"10.conf": text("b")}}},
			{Kind: ItemKernelArgs, Action: ItemCreate, After: &Item{KernelArgs: []string{"b"}}},
			{Kind: ItemOSImage, Action: ItemCreate, After: &Item{OSImage: "img:2"}},
		}},
	}
	if d := cmp.Diff(want, p.Pools[0].Changes); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if c := text("server a\n"); c.Size != 9 || len(c.SHA256) != 64 {
		t.Errorf("content summary: %+v", c)
	}
}

// A pool whose boot pointer moves with no node making the move (no nodes yet, or every
// node elsewhere) still shows what new nodes will boot; an unknown config says so.
func TestPointerMoveAndUnknownConfig(t *testing.T) {
	tg := target("worker", file("/etc/a", "new\n"))
	n := node("w-0", "worker", "a", 0)
	n.CurrentConfig = "rendered-worker-lost"
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
		Rendered: map[string]*model.Rendered{"worker": tg}, Pointers: map[string]string{"worker": "rendered-worker-lost"},
		Fleet: &model.Fleet{Nodes: []model.Node{n}}})
	if err != nil {
		t.Fatal(err)
	}
	cs := p.Pools[0].Changes
	if len(cs) != 1 || !cs[0].FromUnknown || cs[0].Items[0].Action != ItemCreate || cs[0].Nodes[0] != "w-0" {
		t.Errorf("unknown config: %+v", cs)
	}
	p, err = MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}), Rendered: map[string]*model.Rendered{"worker": tg},
		Fleet: &model.Fleet{}})
	if err != nil {
		t.Fatal(err)
	}
	if cs := p.Pools[0].Changes; len(cs) != 1 || cs[0].From != "" || cs[0].Nodes == nil || len(cs[0].Nodes) != 0 || len(cs[0].Items) != 1 {
		t.Errorf("an empty pool's first config: %+v", cs)
	}
}

// Large and binary content is summarised, never carried whole in a plan.
func TestContentOfIsBounded(t *testing.T) {
	big := make([]byte, 70<<10)
	for i := range big {
		big[i] = 'x'
	}
	if c := ContentOf(big, false); c.Text != "" || c.Hidden != "large" || c.Size != len(big) {
		t.Errorf("large: hidden %q, size %d, text %d bytes", c.Hidden, c.Size, len(c.Text))
	}
	if c := ContentOf([]byte{0, 1, 2}, false); c.Text != "" || c.Hidden != "binary" {
		t.Errorf("binary: %+v", c)
	}
	if c := ContentOf([]byte("pw"), true); *c != (Content{Hidden: HiddenSensitive}) {
		t.Errorf("sensitive: %+v", c)
	}
}

// A paused pool's blocker counts its node changes in the singular when there is one.
func TestBlockerWordsCountRight(t *testing.T) {
	n := node("w-0", "worker", "a", 0)
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", Paused: model.PauseAll, MaxUnavailable: model.IntOrPercent{Value: 1}}),
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))}, Fleet: &model.Fleet{Nodes: []model.Node{n}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Pools[0].Blockers[0].Message; got != "pool worker is paused: 1 node change deferred" {
		t.Errorf("%q", got)
	}
}

// A paused pool's boot pointer stays: no change is shown for it alone.
func TestPausedPoolShowsNoPointerMove(t *testing.T) {
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", Paused: model.PauseAll}),
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))}, Fleet: &model.Fleet{}})
	if err != nil {
		t.Fatal(err)
	}
	if cs := p.Pools[0].Changes; len(cs) != 0 {
		t.Errorf("changes of a paused pool with no nodes: %+v", cs)
	}
}

// A first os_image (the nodes' config named none) is an update of what the nodes run:
// its Before lists their booted images, most nodes first, and counts those that report
// none; a move whose nodes report no image stays a creation.
func TestFirstOSImageShowsWhatNodesRun(t *testing.T) {
	old := &model.Rendered{Name: "rendered-worker-old", Pool: "worker"}
	tg := target("worker")
	tg.OSImage = "img:41"
	nodes := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2),
		node("w-3", "worker", "a", 3)}
	for i, img := range []string{"img:40", "img:stable", "img:stable", ""} {
		nodes[i].CurrentConfig, nodes[i].OSImage = old.Name, img
	}
	in := Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 4}}),
		Rendered: map[string]*model.Rendered{"worker": tg}, Known: map[string]*model.Rendered{old.Name: old},
		Pointers: map[string]string{"worker": old.Name}, Fleet: &model.Fleet{Nodes: nodes}}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []ItemChange{{Kind: ItemOSImage, Action: ItemUpdate,
		Before: &Item{OSImage: "img:stable", Running: []ImageNodes{{"img:stable", 2}, {"img:40", 1}}, Unreported: 1},
		After:  &Item{OSImage: "img:41"}}}
	if d := cmp.Diff(want, p.Pools[0].Changes[0].Items); d != "" {
		t.Errorf("items (-want +got):\n%s", d)
	}
	var why []string
	for _, n := range p.Nodes {
		for _, s := range n.Steps {
			if s.Kind == model.StepPivot && n.Name == "w-1" {
				why = append(why, s.Reason)
			}
		}
	}
	if d := cmp.Diff([]string{"os image img:stable (booted) → img:41"}, why); d != "" {
		t.Errorf("w-1's pivot reason (-want +got):\n%s", d)
	}

	for i := range nodes {
		nodes[i].OSImage = ""
	}
	if p, err = MakePlan(in); err != nil {
		t.Fatal(err)
	}
	want = []ItemChange{{Kind: ItemOSImage, Action: ItemCreate, After: &Item{OSImage: "img:41"}}}
	if d := cmp.Diff(want, p.Pools[0].Changes[0].Items); d != "" {
		t.Errorf("no node reports an image: items (-want +got):\n%s", d)
	}
}
