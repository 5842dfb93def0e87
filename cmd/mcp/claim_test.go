package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// putClaim writes c as node's claim in the quickstart's fleet, as an apply takes it.
func putClaim(t *testing.T, dir, node string, c model.Claim) {
	t.Helper()
	p, err := local.New(local.Options{Dir: filepath.Join(dir, "fleet")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Claim(context.Background(), node, c, func(model.Claim) (bool, string) { return false, "" }); err != nil {
		t.Fatal(err)
	}
}

// nodeClaim reads node's claim from its node.json, as the fleet has it.
func nodeClaim(t *testing.T, dir, node string) *model.Claim {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "fleet/nodes", node, "node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n model.Node
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return n.Claim
}

// Issue 41: a claim from another machine expiring in 2099 stalled its pool, the plan said
// "0 blocked", and mcp fleet set NODE claim- was refused as an unknown key. The plan names
// the node blocked, with its holder and until when; claim- refuses the claim (its apply
// may run: it cannot be checked from here) unless -force, which leaves it released on the
// node, with a release in its event log; then the node is planned and updated.
func TestFarClaimIsBlockedAndCleared(t *testing.T) {
	dir := quickstart(t)
	far := model.Claim{Apply: "FAR", Host: "eve@elsewhere", Since: time.Now().UTC(), Expires: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC),
		Process: model.Process{MachineID: "0123456789abcdef0123456789abcdef", BootID: "b", PIDNamespace: "pid:[1]", PID: 42}}
	putClaim(t, dir, "worker-0", far)

	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "blocked: held by apply FAR (pid 42 on eve@elsewhere") || !strings.Contains(out, "live until") ||
		!strings.Contains(out, "1 blocked") {
		t.Errorf("plan with worker-0 held by a far claim: exit %d, want it blocked by apply FAR, until when, 1 blocked\n%s%s", code, out, errOut)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-0", "claim-"); code != 1 || !strings.Contains(errOut, "-force") {
		t.Errorf("claim- of a claim that may be live: exit %d, want 1 naming -force\n%s", code, errOut)
	}
	if c := nodeClaim(t, dir, "worker-0"); !c.Same(&far) {
		t.Errorf("a refused claim- changed the claim: %+v", c)
	}
	if code, out, errOut := mcp(t, dir, "fleet", "set", "-force", "worker-0", "claim-"); code != 0 || !strings.Contains(out, "cleared the claim of apply FAR") {
		t.Fatalf("claim- -force: exit %d\n%s%s", code, out, errOut)
	}
	if c := nodeClaim(t, dir, "worker-0"); c == nil || c.Apply != "FAR" || c.Held() {
		t.Errorf("worker-0's claim after claim-: %+v, want FAR's, released", c)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	if evs := logs["worker-0"]; len(evs) == 0 || evs[len(evs)-1].Kind != local.EventRelease || evs[len(evs)-1].Apply != "FAR" {
		t.Errorf("worker-0's event log does not end with FAR's release: %v", evs)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 || !strings.Contains(out, "0 blocked") {
		t.Fatalf("apply after the claim was cleared: exit %d\n%s%s", code, out, errOut)
	}
	if c := nodeClaim(t, dir, "worker-0"); c == nil || c.Apply == "FAR" {
		t.Errorf("worker-0 was not updated by the apply after: claim %+v", c)
	}
}

// mcp unclaim judges a claim as apply does: one whose process runs on this machine is
// refused (the node is its apply's), and cleared only with -force; one whose process is
// gone is cleared without; a node no apply holds has nothing to clear.
func TestUnclaimRefusesALiveApply(t *testing.T) {
	dir := quickstart(t)
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	p, err := liveproc.Of(holder.Process.Pid)
	if err != nil || p.BootID == "" {
		t.Skipf("no /proc to record a process by (%v)", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	gone := p
	gone.PID, gone.Start = dead.ProcessState.Pid(), 1
	live := model.Claim{Apply: "LIVE", Host: "me@here", Process: p, Since: time.Now().UTC(), Expires: time.Now().Add(time.Minute).UTC()}
	putClaim(t, dir, "worker-1", live)
	putClaim(t, dir, "worker-2", model.Claim{Apply: "GONE", Host: "me@here", Process: gone, Since: time.Now().UTC(), Expires: live.Expires})

	code, out, errOut := mcp(t, dir, "unclaim", "worker-1", "worker-2", "worker-3")
	if code != 1 || !strings.Contains(errOut, "apply LIVE") || !strings.Contains(out, "node worker-2: cleared the claim of apply GONE") ||
		!strings.Contains(out, "node worker-3: no apply holds it") {
		t.Errorf("unclaim: exit %d, want worker-1 refused, worker-2 cleared, worker-3 nothing\n%s%s", code, out, errOut)
	}
	if c := nodeClaim(t, dir, "worker-1"); !c.Same(&live) {
		t.Errorf("worker-1, held by a live apply, was changed: %+v", c)
	}
	if c := nodeClaim(t, dir, "worker-2"); c == nil || c.Held() {
		t.Errorf("worker-2's claim, its apply gone: %+v, want it released", c)
	}
	if code, out, errOut := mcp(t, dir, "unclaim", "-force", "worker-1"); code != 0 || !strings.Contains(out, "forced") {
		t.Errorf("unclaim -force: exit %d\n%s%s", code, out, errOut)
	}
	if c := nodeClaim(t, dir, "worker-1"); c == nil || c.Held() {
		t.Errorf("worker-1's claim after -force: %+v, want it released", c)
	}
}

// Issue 41: mcp fleet set NODE hold=false held the node, for the reason "false" (the
// annotation holds with any value). true and false are refused, naming what hold takes;
// hold=REASON holds and hold= lifts.
func TestFleetSetHoldTakesAReason(t *testing.T) {
	dir := quickstart(t)
	hold := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes/worker-0/node.json"))
		var n struct{ Hold string }
		json.Unmarshal(b, &n)
		return n.Hold
	}
	for _, v := range []string{"false", "true", "FALSE"} {
		if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-0", "hold="+v); code != 1 || !strings.Contains(errOut, "hold= lifts") || hold() != "" {
			t.Errorf("hold=%s: exit %d, node holds %q; want it refused, the node not held\n%s", v, code, hold(), errOut)
		}
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-0", "hold=kernel bug 4711"); code != 0 || hold() != "kernel bug 4711" {
		t.Errorf("hold=REASON: exit %d, hold %q\n%s", code, hold(), errOut)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-0", "hold="); code != 0 || hold() != "" {
		t.Errorf("hold=: exit %d, hold %q\n%s", code, hold(), errOut)
	}
}

// Issue 41: what a write killed between making its temporary twin and renaming it leaves
// on a node — a hard link's /etc/.motd-hard.mcp-<hex>, a 4 MiB
// /var/lib/mcp/.pending.json.tmp-<hex> — survived every later update. The node's next
// update sweeps them; judged from the node's root, where nothing of that pattern is left
// and a file that only looks alike stays.
func TestApplySweepsWhatAKilledWriteLeft(t *testing.T) {
	dir := quickstart(t)
	root := filepath.Join(dir, "fleet/nodes/worker-0/root")
	for p, size := range map[string]int{"etc/.motd-hard.mcp-0123456789ab": 64, "var/lib/mcp/.pending.json.tmp-0123456789ab": 4 << 20,
		"etc/.motd.tmp-fedcba987654": 64, "etc/.motd.tmp-notmine": 1} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if left, err := chaos.Leftovers(root); err != nil || len(left) > 0 {
		t.Errorf("worker-0 after its update: %v left (%v)", left, err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/.motd.tmp-notmine")); err != nil {
		t.Errorf("a file that only looks like a temporary twin was removed: %v", err)
	}
}
