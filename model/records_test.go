package model

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClaims(t *testing.T) {
	since := time.Date(2025, 3, 1, 10, 58, 6, 0, time.UTC)
	a := &Claim{Apply: "A", Host: "root@build-1", Process: Process{PID: 4242}, Since: since}
	released := *a
	released.Released = since.Add(time.Minute)
	for _, c := range []struct {
		name string
		c    *Claim
		held bool
	}{
		{"none", nil, false}, {"empty", &Claim{}, false}, {"held", a, true}, {"released", &released, false},
	} {
		if c.c.Held() != c.held {
			t.Errorf("%s: held %v", c.name, c.c.Held())
		}
	}
	inZone := *a
	inZone.Since = since.In(time.FixedZone("CET", 3600))
	for _, c := range []struct {
		name string
		x, y *Claim
		same bool
	}{
		{"both none", nil, nil, true}, {"one none", a, nil, false}, {"itself", a, a, true},
		{"the same instant elsewhere", a, &inZone, true}, {"released since", a, &released, false},
		{"another apply", a, &Claim{Apply: "B", Host: a.Host, Process: a.Process, Since: since}, false},
		{"another process", a, &Claim{Apply: "A", Host: a.Host, Process: Process{PID: 1}, Since: since}, false},
	} {
		if c.x.Same(c.y) != c.same || c.y.Same(c.x) != c.same {
			t.Errorf("%s: same %v, want %v", c.name, c.x.Same(c.y), c.same)
		}
	}
	if s := a.String(); !strings.HasPrefix(s, "apply A (pid 4242 on root@build-1, since ") {
		t.Errorf("String %q", s)
	}
}

// A node reads back from its JSON as it was: the claim's times, zero ones left out, the
// pending reboot, the drift; a hold by annotation or by label.
func TestNodeJSONRoundTripAndHold(t *testing.T) {
	since := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	n := Node{Name: "w-0", Labels: map[string]string{"a": "b"}, Zone: "a", Created: since, Ready: true, CurrentConfig: "rendered-worker-1",
		KernelArgs: []string{"nosmt"}, State: StateDegraded, Reason: "gate", Drift: []Drift{{Path: "/etc/a", Kind: DriftContent, Expected: "x", Found: "y"}},
		PendingReboot: &PendingReboot{Config: "rendered-worker-1", BootID: "b1"}, Claim: &Claim{Apply: "A", Since: since}}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "expires") || strings.Contains(string(b), "released") {
		t.Errorf("zero claim times written: %s", b)
	}
	var back Node
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(n, back); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	// An empty list of kernel arguments is left out, and reads back unknown (nil): a reader
	// that knows the node reports them (the local provider) sets the empty list itself.
	b, _ = json.Marshal(Node{Name: "w-1", KernelArgs: []string{}})
	var none Node
	if err := json.Unmarshal(b, &none); err != nil || none.KernelArgs != nil {
		t.Errorf("no kernel arguments read back as %#v, %v", none.KernelArgs, err)
	}
	for _, c := range []struct {
		n      Node
		reason string
		held   bool
	}{
		{Node{}, "", false},
		{Node{Hold: "disk check"}, "disk check", true},
		{Node{Labels: map[string]string{HoldKey: ""}}, "", true},
		{Node{Hold: "annotation", Labels: map[string]string{HoldKey: "label"}}, "annotation", true},
	} {
		if r, h := c.n.HoldReason(); r != c.reason || h != c.held {
			t.Errorf("%+v: hold %q %v, want %q %v", c.n, r, h, c.reason, c.held)
		}
	}
}

func TestDriftText(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, c := range []struct {
		d      Drift
		want   string
		onHost bool
	}{
		{Drift{Path: "/etc/a", Kind: DriftMissing}, "/etc/a: missing", false},
		{Drift{Path: "/etc/a", Kind: DriftContent, Expected: sum, Found: ""}, "/etc/a: content (expected " + sum[:16] + ", found (none))", false},
		{Drift{Path: "/etc/a", Kind: DriftMode, Expected: "0644", Found: "0600"}, "/etc/a: mode (expected 0644, found 0600)", false},
		{Drift{Path: DriftPathKernelArgs, Kind: DriftKernelArgs, Expected: "nosmt", Found: "quiet"}, "kernel_args: kernel-args (expected nosmt, found quiet)", true},
		{Drift{Path: DriftPathOSImage, Kind: DriftOSImage, Expected: "os:1", Found: "os:2"}, "os_image: os-image (expected os:1, found os:2)", true},
	} {
		if got := c.d.String(); got != c.want || c.d.OnHost() != c.onHost {
			t.Errorf("%q (on host %v), want %q (%v)", got, c.d.OnHost(), c.want, c.onHost)
		}
	}
}

func TestHealthCheckText(t *testing.T) {
	h := HealthCheck{HTTPGet: "https://" + NodeAddressVar + ":9100/healthz?node=" + NodeNameVar}
	if got := h.URLFor("w-0", "10.0.0.5"); got != "https://10.0.0.5:9100/healthz?node=w-0" || !h.NeedsAddress() {
		t.Errorf("URLFor %q, needs address %v", got, h.NeedsAddress())
	}
	if (HealthCheck{HTTPGet: "https://lb/" + NodeNameVar}).NeedsAddress() {
		t.Error("a URL with the name only needs an address")
	}
	for _, c := range []struct {
		r      CheckResult
		passed bool
		text   string
	}{
		{CheckResult{ExitCode: 0}, true, "exit 0"},
		{CheckResult{ExitCode: 3, Output: " probe failed\n"}, false, "exit 3: probe failed"},
		{CheckResult{ExitCode: -1, Error: "killed at its timeout (5m)", Output: "half"}, false, "killed at its timeout (5m): half"},
		{CheckResult{ExitCode: 0, Error: "not published"}, false, "not published"},
	} {
		if c.r.Passed() != c.passed || c.r.String() != c.text {
			t.Errorf("%+v: passed %v %q, want %v %q", c.r, c.r.Passed(), c.r.String(), c.passed, c.text)
		}
	}
}

func TestSourcePlaces(t *testing.T) {
	r := Range{Filename: "configs.hcl", Start: Pos{Line: 12, Column: 3}}
	if r.String() != "configs.hcl:12,3" || (Range{}).String() != "" {
		t.Errorf("Range.String: %q, zero %q", r, Range{})
	}
	for _, c := range []struct {
		o    Origin
		want string
	}{
		{OriginAt("config.50-chrony", r, TextRef{}), "config.50-chrony at configs.hcl:12,3"},
		{OriginAt("config.50-chrony", r, TextRef{Kind: TextButane, Path: "storage.files.0"}), "config.50-chrony at configs.hcl:12,3 (butane storage.files.0)"},
		{OriginAt("config.50-chrony", r, TextRef{Kind: TextIgnition, Path: "storage.files.0"}), "config.50-chrony at configs.hcl:12,3 (ignition storage.files.0)"},
		{OriginAt("config.99-mc", r, TextRef{Kind: TextMachineConfig, Path: "spec.config.storage.files.0", File: "mc.yaml", Line: 14, Column: 9}),
			"config.99-mc at configs.hcl:12,3 (MachineConfig mc.yaml:14,9 spec.config.storage.files.0)"},
		{OriginAt("config.99-bu", r, TextRef{Kind: TextButane, Path: "openshift.kernel_arguments.0", Line: 9, Column: 7}),
			"config.99-bu at configs.hcl:12,3 (butane openshift.kernel_arguments.0, line 9, column 7)"},
		{Origin{Block: "pool.worker", File: "main.hcl"}, "pool.worker at main.hcl"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

func TestPolicies(t *testing.T) {
	for _, c := range []struct {
		s, want string // want: the policy's String, or the error's start
	}{
		{"none", "none"}, {"reboot", "reboot"}, {"drain", "drain"}, {"daemon-reload", "daemon-reload"},
		{"restart:chronyd.service", "restart:chronyd.service"}, {"reload:nginx.service", "reload:nginx.service"},
		{"restart", `error: policy "restart" needs a unit`}, {"restart:", `error: policy "restart" needs a unit`},
		{"none:x.service", `error: policy "none" takes no unit`}, {"Reboot", `error: unknown policy "Reboot"`},
		{"", `error: unknown policy ""`},
	} {
		p, err := ParsePolicy(c.s)
		got := p.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("ParsePolicy(%q) = %q, want %q", c.s, got, c.want)
		}
	}
	for name, ok := range map[string]bool{"a.service": true, "getty@tty1.service": true, "x": true, "": false, ".": false,
		"..": false, "a/b.service": false, "a b.service": false, "a\tb": false, "a\x7f": false, "\xff.service": false,
		strings.Repeat("u", 255): true, strings.Repeat("u", 256): false} {
		if ValidUnitName(name) != ok {
			t.Errorf("ValidUnitName(%q) = %v", name, !ok)
		}
	}
}
