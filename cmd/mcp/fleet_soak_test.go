package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/state/localstate"
)

// backdate moves every run recorded in cluster's state back by d, as if its nodes had
// reached their configs d earlier: the gate's tests wait for no real hour (the recording
// of real times is engine's TestApplyRecordsWhereConfigsRan).
func backdate(t *testing.T, dir, cluster string, d time.Duration) {
	t.Helper()
	b := &localstate.Local{Path: filepath.Join(dir, "clusters", cluster, "mcp.state")}
	st, err := b.Read(context.Background())
	if err != nil || len(st.Ran) == 0 {
		t.Fatalf("%s's state: %v, records %v", cluster, err, st.Ran)
	}
	for _, r := range st.Ran {
		for node, n := range r.Nodes {
			n.Since, n.Seen = n.Since.Add(-d), n.Seen.Add(-d)
			r.Nodes[node] = n
		}
	}
	st.Serial++
	if err := b.Write(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}

// A later stage's cluster does not take what has not soaked in the stage before: staging's
// plan and apply are refused while canary's nodes have run their config less than canary's
// soak (1h), naming how long and until when, and staging's nodes are left as they were;
// once canary's run is an hour old (backdated), staging's plan is allowed and its apply
// changes its nodes. Plan, show and show -markdown say it in words.
func TestFleetSoakGate(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging")
	if code, out, errOut := mcp(t, dir, "apply", "-cluster", "canary", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply -cluster canary: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "plan", "-cluster", "staging", "-no-color", "-out=p")
	soaking := regexp.MustCompile(`pool worker: refused, not soaked: rendered-worker-\w+ \(rendered-worker-\w+ as canary renders it, with its values\) has soaked \d+s of 1h on canary \(2 nodes, healthy\); staging waits until (\d\d:\d\d) UTC`)
	m := soaking.FindStringSubmatch(out)
	if code != 1 || m == nil || !strings.Contains(errOut, "Apply will refuse this plan") {
		t.Fatalf("plan -cluster staging right after canary's apply: exit %d, want 1 and the gate's words\n%s%s", code, out, errOut)
	}
	if want := time.Now().UTC().Add(time.Hour).Format("15:04"); m[1] != want && m[1] != time.Now().UTC().Add(time.Hour-time.Minute).Format("15:04") {
		t.Errorf("staging waits until %s, want about %s (canary's soak from its apply)", m[1], want)
	}
	for _, show := range [][]string{{"show", "-no-color", "p"}, {"show", "-markdown", "p"}} {
		_, out, _ := mcp(t, dir, show...)
		if !strings.Contains(out, "has soaked") || !strings.Contains(out, "refused, not soaked") {
			t.Errorf("mcp %s does not say the plan is refused as not soaked:\n%s", strings.Join(show, " "), out)
		}
	}
	var doc struct {
		Applyable bool `json:"applyable"`
		MCP       struct {
			Soak []planfile.SoakNote `json:"soak"`
		} `json:"mcp"`
	}
	code, out, _ = mcp(t, dir, "plan", "-cluster", "staging", "-json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Applyable || len(doc.MCP.Soak) != 1 ||
		!doc.MCP.Soak[0].Refused || !strings.Contains(doc.MCP.Soak[0].Reason, "of 1h on canary") {
		t.Errorf("plan -json -cluster staging: exit %d, %v, %+v; want it not applyable, the pool refused\n%s", code, err, doc, out)
	}
	code, out, errOut = mcp(t, dir, "apply", "-cluster", "staging", "-auto-approve", "-no-color")
	if code != 1 || !strings.Contains(errOut, "Not soaked") || !strings.Contains(errOut, "of 1h on canary") {
		t.Fatalf("apply -cluster staging before the soak: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-no-color", filepath.Join(dir, "p")); code != 1 || !strings.Contains(errOut, "Not soaked") {
		t.Fatalf("apply of staging's saved plan before the soak: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if got := nodeFile(t, dir, "staging", n, "etc/chrony.conf"); got != "" {
			t.Fatalf("staging %s changed by a refused apply: /etc/chrony.conf = %q", n, got)
		}
	}

	backdate(t, dir, "canary", time.Hour+time.Minute)
	code, out, errOut = mcp(t, dir, "plan", "-cluster", "staging", "-no-color", "-detailed-exitcode")
	if code != 2 || !regexp.MustCompile(`pool worker: soaked: rendered-worker-\w+ .* has soaked 1h\dm of 1h on canary \(2 nodes, healthy\)`).MatchString(out) {
		t.Fatalf("plan -cluster staging after canary's soak: exit %d, want 2\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-cluster", "staging", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply -cluster staging after canary's soak: exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if got := nodeFile(t, dir, "staging", n, "etc/chrony.conf"); !strings.HasPrefix(got, "server ntp.staging.example.com iburst") {
			t.Errorf("staging %s after its apply: /etc/chrony.conf = %q", n, got)
		}
	}
	// Status of canary says where its config ran, and for how long.
	if _, out, _ := mcp(t, dir, "status", "-cluster", "canary", "-no-color"); !regexp.MustCompile(`(?m)^rendered-worker-\w+ +worker +2 +\d{4}-\d\d-\d\d \d\d:\d\d UTC +1h\dm(\d+s)? +healthy$`).MatchString(out) {
		t.Errorf("status -cluster canary does not say where its config ran:\n%s", out)
	}
}

// A canary node that went Degraded on the config keeps staging from taking it, however long
// the other ran; -ignore-soak takes it all the same, and says so.
func TestFleetSoakGateUnhealthy(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging")
	if code, out, errOut := mcp(t, dir, "apply", "-cluster", "canary", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply -cluster canary: exit %d\n%s%s", code, out, errOut)
	}
	backdate(t, dir, "canary", 2*time.Hour)
	canaryFleet := filepath.Join(dir, "clusters", "canary", "fleet")
	if code, _, errOut := mcp(t, dir, "fleet", "set", "-fleet", canaryFleet, "worker-1", "state=Degraded", "reason=chronyd keeps failing"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := mcp(t, dir, "plan", "-cluster", "staging", "-no-color")
	if code != 1 || !strings.Contains(out, "did not stay healthy on canary: node worker-1 went Degraded: chronyd keeps failing; staging does not take it") {
		t.Fatalf("plan -cluster staging with a Degraded canary node: exit %d, want 1\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "plan", "-no-color", "-cluster", "canary", "-cluster", "staging")
	if code != 1 || !regexp.MustCompile(`(?m)^ staging +staging \(soak 4h\*\) .* waits for soak$`).MatchString(out) {
		t.Errorf("fleet plan: staging's row does not say it waits for the soak: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "apply", "-cluster", "staging", "-auto-approve", "-no-color", "-ignore-soak")
	if code != 0 || !strings.Contains(out, "pool worker: not soaked, let through by -ignore-soak: ") {
		t.Fatalf("apply -cluster staging -ignore-soak: exit %d, want 0 and the override said\n%s%s", code, out, errOut)
	}
	if got := nodeFile(t, dir, "staging", "worker-0", "etc/chrony.conf"); !strings.HasPrefix(got, "server ntp.staging.example.com iburst") {
		t.Errorf("staging worker-0 after apply -ignore-soak: /etc/chrony.conf = %q", got)
	}
}
