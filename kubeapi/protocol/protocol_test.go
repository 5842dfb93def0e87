package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

const name = "rendered-worker-0123456789abcdef0123456789abcdef"

func handoverAnn(steps string) map[string]string {
	return map[string]string{DesiredConfig: name, UpdateID: "ABCDEFGHIJKLMNOPQRSTUVWXYZ", Steps: steps}
}

func TestHandoverRoundTrip(t *testing.T) {
	h := Handover{Desired: name, UpdateID: "NDKXA6YSVKM3FMNV4QK2G5EJ2Q", Steps: []model.Step{
		{Kind: model.StepWrite, Target: "/etc/chrony.conf", Reason: "file changed"},
		{Kind: model.StepWrite, Target: "chronyd.service", Reason: "unit changed"},
		{Kind: model.StepDaemonReload}, {Kind: model.StepKargs}, {Kind: model.StepPivot},
		{Kind: model.StepReload, Target: "a.service"}, {Kind: model.StepRestart, Target: "chronyd.service"},
		{Kind: model.StepReboot}, {Kind: model.StepVerify}}}
	ann, err := h.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	back, ok, err := ReadHandover(ann)
	if err != nil || !ok || back.Desired != h.Desired || back.UpdateID != h.UpdateID || fmt.Sprint(back.Steps) != fmt.Sprint(h.Steps) {
		t.Errorf("read back %+v, %v, %v; want %+v", back, ok, err, h)
	}
	if _, ok, err := ReadHandover(map[string]string{DesiredConfig: name}); ok || err != nil {
		t.Errorf("no update id: ok %v, err %v; want no hand-over", ok, err)
	}
}

// TestReadHandoverRefuses: the agent acts only on what the engine would have written.
func TestReadHandoverRefuses(t *testing.T) {
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"kind":"daemon-reload"},`, MaxSteps+1), ",") + "]"
	tests := []struct {
		name string
		ann  map[string]string
		want string
	}{
		{"cordon", handoverAnn(`[{"kind":"cordon"}]`), "not a node step"},
		{"drain", handoverAnn(`[{"kind":"write","target":"/etc/a"},{"kind":"drain"}]`), "not a node step"},
		{"uncordon", handoverAnn(`[{"kind":"uncordon"}]`), "not a node step"},
		{"no kind", handoverAnn(`[{}]`), "no kind"},
		{"unknown kind", handoverAnn(`[{"kind":"format-disk"}]`), "unknown step"},
		{"numeric kind", handoverAnn(`[{"kind":3}]`), "steps"},
		{"null step list member", handoverAnn(`[null]`), "no kind"},
		{"too many", handoverAnn(many), "more than"},
		{"not a list", handoverAnn(`{"kind":"write"}`), "steps"},
		{"write without a target", handoverAnn(`[{"kind":"write"}]`), "target"},
		{"write of a relative path", handoverAnn(`[{"kind":"write","target":"etc/../a/b"}]`), "target"},
		{"write of an unclean path", handoverAnn(`[{"kind":"write","target":"/etc/../root/.ssh/authorized_keys"}]`), "target"},
		{"write with a NUL", handoverAnn(`[{"kind":"write","target":"/etc/a\u0000b"}]`), "target"},
		{"restart without a unit", handoverAnn(`[{"kind":"restart"}]`), "target"},
		{"restart of a path", handoverAnn(`[{"kind":"restart","target":"/etc/x.service"}]`), "target"},
		{"reboot with a target", handoverAnn(`[{"kind":"reboot","target":"now"}]`), "target"},
		{"out of order", handoverAnn(`[{"kind":"reboot"},{"kind":"write","target":"/etc/a"}]`), "order"},
		{"twice", handoverAnn(`[{"kind":"write","target":"/etc/a"},{"kind":"write","target":"/etc/a"}]`), "twice"},
		{"desired not a rendered config", map[string]string{DesiredConfig: "../../config/worker", UpdateID: "u1"}, DesiredConfig},
		{"desired with a slash", map[string]string{DesiredConfig: "rendered-a/b", UpdateID: "u1"}, DesiredConfig},
		{"desired too long", map[string]string{DesiredConfig: "rendered-" + strings.Repeat("a", 300), UpdateID: "u1"}, DesiredConfig},
		{"update id with a newline", map[string]string{DesiredConfig: name, UpdateID: "u1\nX"}, UpdateID},
		{"update id too long", map[string]string{DesiredConfig: name, UpdateID: strings.Repeat("A", 200)}, UpdateID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok, err := ReadHandover(tt.ann)
			if !ok || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadHandover: ok %v, err %v; want a hand-over refused with %q (steps %d)", ok, err, tt.want, len(h.Steps))
			}
			if err != nil && h.Steps != nil {
				t.Errorf("a refused hand-over carries %d steps", len(h.Steps))
			}
		})
	}
}

func TestHandoverAnnotationsRefuseWhatReadRefuses(t *testing.T) {
	if _, err := (Handover{Desired: name, UpdateID: "u1", Steps: []model.Step{{Kind: model.StepDrain}}}).Annotations(); err == nil {
		t.Error("the engine side encoded a drain step for the agent")
	}
}

func TestReadReportProgress(t *testing.T) {
	for in, want := range map[string]int{"": 0, "3": 3, "-1": 0, "x": 0, "99999999999999999999": 0} {
		if got := ReadReport(map[string]string{Progress: in}).Progress; got != want {
			t.Errorf("progress %q read as %d, want %d", in, got, want)
		}
	}
}

// FuzzReadHandover: any annotations read without a panic, and a hand-over that is
// accepted holds only sane node steps.
func FuzzReadHandover(f *testing.F) {
	f.Add(name, "NDKXA6YSVKM3FMNV4QK2G5EJ2Q", `[{"kind":"write","target":"/etc/chrony.conf","reason":"file changed"},{"kind":"restart","target":"chronyd.service","reason":"x"}]`)
	f.Add(name, "u1", `[]`)
	f.Add(name, "u1", `[{"kind":"cordon"},{"kind":"drain"},{"kind":"write","target":"/etc/a"},{"kind":"reboot"},{"kind":"verify"},{"kind":"uncordon"}]`)
	f.Add(name, "u1", `[{}]`)
	f.Add(name, "u1", `[null,{"kind":"kargs"},{"kind":"pivot"},{"kind":"daemon-reload"},{"kind":"reload","target":"a.service"}]`)
	f.Add("", "", "")
	f.Add("../x", "u1\n", `{"kind":"write"}`)
	f.Fuzz(func(t *testing.T, desired, id, steps string) {
		ann := map[string]string{DesiredConfig: desired, UpdateID: id, Steps: steps}
		h, ok, err := ReadHandover(ann)
		if !ok || err != nil {
			return
		}
		if len(h.Steps) > MaxSteps {
			t.Fatalf("%d steps accepted", len(h.Steps))
		}
		if CheckHandover(h) != nil {
			t.Fatalf("accepted a hand-over CheckHandover refuses: %v", CheckHandover(h))
		}
		prev := model.StepKind(0)
		for _, s := range h.Steps {
			if !s.Kind.Valid() || !s.Kind.OnNode() || s.Kind < prev {
				t.Fatalf("accepted step %v (%d)", s, s.Kind)
			}
			prev = s.Kind
			if strings.ContainsRune(s.Target, 0) {
				t.Fatalf("accepted target %q", s.Target)
			}
		}
		// What is accepted is what the engine writes: it encodes back to the same hand-over.
		ann2, err := h.Annotations()
		if err != nil {
			t.Fatalf("accepted hand-over does not encode: %v", err)
		}
		h2, ok2, err2 := ReadHandover(ann2)
		if !ok2 || err2 != nil || fmt.Sprint(h2) != fmt.Sprint(h) {
			t.Fatalf("round trip: %+v, %v, %v; want %+v", h2, ok2, err2, h)
		}
	})
}

// FuzzReadReport: any annotations read without a panic, and the progress is never negative.
func FuzzReadReport(f *testing.F) {
	f.Add(name, model.StateDone, "", "u1", "3")
	f.Add("", model.StateDegraded, "write /etc/a: permission denied", "u1", "-1")
	f.Add("", "", "", "", "99999999999999999999")
	f.Fuzz(func(t *testing.T, current, state, reason, observed, progress string) {
		r := ReadReport(map[string]string{CurrentConfig: current, State: state, Reason: reason,
			ObservedUpdateID: observed, Progress: progress})
		if r.Progress < 0 {
			t.Fatalf("progress %d from %q", r.Progress, progress)
		}
		if n, err := strconv.Atoi(progress); err == nil && n >= 0 && r.Progress != n {
			t.Fatalf("progress %d from %q", r.Progress, progress)
		}
		if r.Current != current || r.State != state || r.Reason != reason || r.ObservedUpdateID != observed {
			t.Fatalf("report %+v does not carry the annotations", r)
		}
	})
}
