package model

import (
	"strings"
	"testing"
	"time"
)

// max_unavailable: a count as it is, a percentage of the pool rounded down; at least 1.
func TestIntOrPercent(t *testing.T) {
	for _, c := range []struct {
		v    IntOrPercent
		pool int
		want int
		text string
	}{
		{IntOrPercent{Value: 2}, 10, 2, "2"},
		{IntOrPercent{Value: 0}, 10, 1, "0"},
		{IntOrPercent{Value: 50, Percent: true}, 10, 5, "50%"},
		{IntOrPercent{Value: 50, Percent: true}, 3, 1, "50%"},
		{IntOrPercent{Value: 33, Percent: true}, 10, 3, "33%"},
		{IntOrPercent{Value: 10, Percent: true}, 5, 1, "10%"},
		{IntOrPercent{Value: 100, Percent: true}, 7, 7, "100%"},
		{IntOrPercent{Value: 20}, 3, 20, "20"}, // more than the pool: all of it may go
	} {
		if got := c.v.Resolve(c.pool); got != c.want || c.v.String() != c.text {
			t.Errorf("%s of %d = %d (%q), want %d (%q)", c.v, c.pool, got, c.v.String(), c.want, c.text)
		}
	}
}

func TestDesiredLookups(t *testing.T) {
	d := &Desired{Pools: []Pool{{Name: "infra"}, {Name: "worker"}}, BootImages: []BootImageDef{{Name: "v1", OSImage: "os:1"}}}
	if p := d.Pool("worker"); p == nil || p != &d.Pools[1] {
		t.Errorf("Pool(worker) = %v", p)
	}
	if d.Pool("nope") != nil || d.BootImageDef("nope") != nil {
		t.Error("a lookup found what the configuration lacks")
	}
	if b := d.BootImageDef("v1"); b == nil || b.OSImage != "os:1" {
		t.Errorf("BootImageDef(v1) = %v", b)
	}
	if OnDrift("").Reports() || !OnDriftReport.Reports() {
		t.Error("on_drift: only report reports")
	}
}

// Which boot_image block a pool's new nodes boot: a pinned one by name, a managed one by
// the pool's OS image; nothing when boot images are not managed; errors that name what
// is missing and what is known.
func TestResolveBootImage(t *testing.T) {
	v1, v2 := BootImageDef{Name: "v1", OSImage: "os:1"}, BootImageDef{Name: "v2", OSImage: "os:2"}
	declared := BootImage{Declared: true, Policy: BootImageManaged}
	for _, c := range []struct {
		name    string
		images  []BootImageDef
		boot    BootImage
		osImage string
		want    string // the block's name, "" for none, or the error's start
	}{
		{"not managed", nil, BootImage{}, "os:1", ""},
		{"managed by the pool's OS image", []BootImageDef{v1, v2}, BootImage{}, "os:2", "v2"},
		{"declared blocks manage every pool", []BootImageDef{v1}, BootImage{}, "os:1", "v1"},
		{"no OS image, nothing asked", []BootImageDef{v1}, BootImage{}, "", ""},
		{"no OS image, a block asked for one", []BootImageDef{v1}, declared, "", `error: pool "p" has a managed boot image but no OS image`},
		{"no block for the OS image", []BootImageDef{v1}, declared, "os:3", `error: pool "p" has a managed boot image, and no boot_image block has its OS image "os:3" (known: boot_image.v1 (os_image "os:1"))`},
		{"pinned", []BootImageDef{v1, v2}, BootImage{Declared: true, Policy: BootImagePinned, Image: "v1"}, "os:2", "v1"},
		{"pinned to none", []BootImageDef{v2}, BootImage{Declared: true, Policy: BootImagePinned, Image: "v9"}, "os:2", `error: pool "p" pins boot_image.v9, which is not declared (known: boot_image.v2`},
		{"pinned, none declared", nil, BootImage{Declared: true, Policy: BootImagePinned, Image: "v9"}, "os:2", "error: pool \"p\" pins boot_image.v9, which is not declared (known: none)"},
	} {
		d := &Desired{BootImages: c.images}
		p := &Pool{Name: "p", BootImage: c.boot}
		b, err := d.ResolveBootImage(p, c.osImage)
		got := ""
		switch {
		case err != nil:
			got = "error: " + err.Error()
		case b != nil:
			got = b.Name
		}
		if !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestBootImageDefImages(t *testing.T) {
	b := &BootImageDef{Name: "v1", OSImage: "os:1", Images: map[string]string{"gcp": "projects/x", "aws": "ami-1"}}
	for platform, want := range map[string]string{"aws": "ami-1", "gcp": "projects/x", PlatformLocal: "os:1", "azure": ""} {
		if got, ok := b.ImageFor(platform); got != want || ok != (want != "") {
			t.Errorf("ImageFor(%s) = %q %v, want %q", platform, got, ok, want)
		}
	}
	b.Images[PlatformLocal] = "os:local"
	if got, _ := b.ImageFor(PlatformLocal); got != "os:local" {
		t.Errorf("an explicit local image: %q", got)
	}
	if got := strings.Join(b.Platforms(), ","); got != "aws,gcp,local" {
		t.Errorf("platforms %s", got)
	}
}

func TestTemplateSelection(t *testing.T) {
	managed := map[string]string{"mcpfleet.io/boot-images": "managed", "team": "a"}
	for _, c := range []struct {
		name   string
		sel    *TemplateSelection
		labels map[string]string
		want   bool
	}{
		{"no block: none", nil, managed, false},
		{"all", &TemplateSelection{Mode: TemplatesAll}, nil, true},
		{"partial, labels match", &TemplateSelection{Mode: TemplatesPartial, MatchLabels: map[string]string{"mcpfleet.io/boot-images": "managed"}}, managed, true},
		{"partial, another value", &TemplateSelection{Mode: TemplatesPartial, MatchLabels: map[string]string{"team": "b"}}, managed, false},
		{"partial, label absent", &TemplateSelection{Mode: TemplatesPartial, MatchLabels: map[string]string{"zone": ""}}, managed, false},
	} {
		if got := c.sel.Selects(c.labels); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	tm := &MachineTemplate{Kind: "MachineSet", Namespace: "ns", Name: "w-a", NodeLabels: map[string]string{"node-role.kubernetes.io/worker": "", "zone": "a"}}
	if tm.ID() != "MachineSet/ns/w-a" {
		t.Errorf("ID %s", tm.ID())
	}
	for sel, want := range map[string]bool{"node-role.kubernetes.io/worker=": true, "zone=a": true, "zone=b": false, "gpu=": false, "": true} {
		p := &Pool{NodeSelector: map[string]string{}}
		if k, v, ok := strings.Cut(sel, "="); ok {
			p.NodeSelector[k] = v
		}
		if got := tm.MakesNodesFor(p); got != want {
			t.Errorf("MakesNodesFor(%q) = %v", sel, got)
		}
	}
}

func TestWindowText(t *testing.T) {
	for _, c := range []struct {
		w    Window
		want string
	}{
		{Window{Days: []time.Weekday{time.Saturday, time.Sunday}, Start: 2 * time.Hour, Duration: 4 * time.Hour, Zone: "Europe/Berlin"},
			"sat,sun 02:00 for 4h (Europe/Berlin)"},
		{Window{Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}, Start: 23*time.Hour + 30*time.Minute, Duration: 90 * time.Minute, Zone: "UTC"},
			"daily 23:30 for 1h30m (UTC)"},
	} {
		if got := c.w.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", 90 * time.Second: "1m30s", 10 * time.Minute: "10m",
		4 * time.Hour: "4h", 90 * time.Minute: "1h30m", time.Hour + time.Second: "1h0m1s", 45 * time.Second: "45s"} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
