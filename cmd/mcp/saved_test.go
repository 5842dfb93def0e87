package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A saved plan is trusted for nothing it carries: apply derives the plan again and refuses
// one that differs — made for another directory, edited budgets, rendered configs or steps —
// before any node is touched. Each edit here was applied before (a plan edited to
// "slots": 99 took a whole pool down at once).
func TestSavedPlanIsDerivedAgain(t *testing.T) {
	dir := quickstart(t)
	if code, _, errOut := mcp(t, dir, "plan", "-out=p"); code != 0 {
		t.Fatal(errOut)
	}
	plan := filepath.Join(dir, "p")
	orig, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name string, f func(p map[string]any)) string {
		var pf map[string]any
		if err := json.Unmarshal(orig, &pf); err != nil {
			t.Fatal(err)
		}
		f(pf["plan"].(map[string]any))
		b, _ := json.Marshal(pf)
		path := filepath.Join(t.TempDir(), name)
		os.WriteFile(path, b, 0o600)
		return path
	}
	for _, tc := range []struct {
		name, want string
		edit       func(p map[string]any)
	}{
		{"slots", "pool.infra: slots is 99 in the plan, 1 here", func(p map[string]any) {
			for _, pp := range p["pools"].([]any) {
				pp.(map[string]any)["slots"] = 99
			}
		}},
		{"budget", "max_unavailable is 4 in the plan", func(p map[string]any) {
			p["pools"].([]any)[1].(map[string]any)["max_unavailable"] = 4 // worker
		}},
		{"no-rendered", "rendered", func(p map[string]any) { p["rendered"] = map[string]any{} }},
		{"extra-step", "node.", func(p map[string]any) {
			for _, n := range p["nodes"].([]any) {
				nm := n.(map[string]any)
				if steps, ok := nm["steps"].([]any); ok {
					nm["steps"] = append([]any{map[string]any{"kind": "reboot", "reason": "edited"}}, steps...)
					return
				}
			}
		}},
		{"wave", "wave", func(p map[string]any) {
			for _, n := range p["nodes"].([]any) {
				if nm := n.(map[string]any); nm["wave"] != nil {
					nm["wave"] = 1
				}
			}
		}},
	} {
		code, out, errOut := mcp(t, dir, "apply", edit(tc.name, tc.edit))
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", tc.name, code, tc.want, out, errOut)
		}
	}
	// Made for another directory: a copy of the same configuration and fleet.
	other := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(other, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mcp(t, other, "apply", plan)
	if code != 1 || !strings.Contains(errOut, "made for the configuration in "+dir) {
		t.Errorf("another directory: exit %d\n%s%s", code, out, errOut)
	}
	for _, d := range []string{dir, other} {
		if b, _ := os.ReadFile(filepath.Join(d, "fleet/nodes/worker-0/node.json")); strings.Contains(string(b), `"unschedulable": true`) {
			t.Errorf("%s: a refused plan cordoned worker-0", d)
		}
		if _, err := os.Stat(filepath.Join(d, "fleet/nodes/worker-0/root/etc/chrony.conf")); err == nil {
			t.Errorf("%s: a refused plan wrote to worker-0", d)
		}
	}
	if code, out, errOut := mcp(t, dir, "apply", plan); code != 0 {
		t.Fatalf("the plan as saved: exit %d\n%s%s", code, out, errOut)
	}
}

// A saved plan is applied with the variables it was made with, as Terraform's is: the
// derived plan is the same only with them. -var beside a saved plan is refused, and a value
// edited in the file changes the derived plan, so the plan is refused.
func TestSavedPlanKeepsItsVariables(t *testing.T) {
	dir := quickstart(t)
	if code, _, errOut := mcp(t, dir, "plan", "-out=p", "-var", "ntp_server=ntp.internal"); code != 0 {
		t.Fatal(errOut)
	}
	plan := filepath.Join(dir, "p")
	if code, _, errOut := mcp(t, dir, "apply", "-var", "ntp_server=x", plan); code != 1 || !strings.Contains(errOut, "-var") {
		t.Errorf("-var with a saved plan: exit %d\n%s", code, errOut)
	}
	b, _ := os.ReadFile(plan)
	edited := filepath.Join(t.TempDir(), "edited")
	os.WriteFile(edited, []byte(strings.Replace(string(b), `"ntp.internal"`, `"ntp.evil"`, 1)), 0o600)
	if code, _, errOut := mcp(t, dir, "apply", edited); code != 1 || !strings.Contains(errOut, "rendered") {
		t.Errorf("a plan whose variable was edited: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", plan); code != 0 {
		t.Fatalf("the saved plan: exit %d\n%s%s", code, out, errOut)
	}
	conf, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes/worker-0/root/etc/chrony.conf"))
	if !strings.Contains(string(conf), "ntp.internal") {
		t.Errorf("chrony.conf after applying the plan made with -var ntp_server=ntp.internal:\n%s", conf)
	}
}
