package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
	"github.com/mcpfleet/mcp/testkit/quickstarttest"
)

// mcp runs the CLI in-process in dir and returns its exit code and output.
func mcp(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"-chdir=" + dir}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// quickstart copies examples/quickstart (configuration and fleet) into a temp dir, with the
// simulated durations set to zero.
func quickstart(t *testing.T) string {
	t.Helper()
	return quickstarttest.Copy(t, "../../examples/quickstart", "0s", "0s")
}

func TestQuickstartPlanApplyConverges(t *testing.T) {
	dir := quickstart(t)
	code, out, errOut := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color")
	if code != 2 {
		t.Fatalf("first plan exit %d, want 2 (changes)\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"worker-0", "worker-3", "infra-1"} {
		if !strings.Contains(out, "node."+n) {
			t.Errorf("plan does not list node.%s:\n%s", n, out)
		}
	}
	if code, out, errOut := mcp(t, dir, "plan", "-out=p", "-no-color"); code != 0 {
		t.Fatalf("plan -out exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "show", "-json", filepath.Join(dir, "p"))
	if code != 0 {
		t.Fatalf("show -json exit %d: %s", code, errOut)
	}
	var pj struct {
		FormatVersion   string `json:"format_version"`
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &pj); err != nil {
		t.Fatalf("show -json is not JSON: %v\n%s", err, out)
	}
	if pj.FormatVersion == "" {
		t.Error("plan JSON has no format_version")
	}
	updates := 0
	for _, rc := range pj.ResourceChanges {
		if strings.HasPrefix(rc.Address, "node.") && slices.Equal(rc.Change.Actions, []string{"update"}) {
			updates++
		}
	}
	if updates != 6 {
		t.Errorf("plan JSON has %d node updates, want 6: %s", updates, out)
	}
	code, out, errOut = mcp(t, dir, "apply", "-auto-approve", "-no-color", filepath.Join(dir, "p"))
	if code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"worker-0", "worker-3", "infra-0"} {
		b, err := os.ReadFile(filepath.Join(dir, "fleet/nodes", n, "root/etc/chrony.conf"))
		if err != nil || !strings.Contains(string(b), "server time.example.com iburst") {
			t.Errorf("%s: chrony.conf not written: %v %q", n, err, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fleet/nodes/infra-0/root/etc/sysconfig/node-exporter")); err == nil {
		t.Error("a worker-only file reached an infra node")
	}
	if code, out, errOut := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("second plan exit %d, want 0 (no changes)\n%s%s", code, out, errOut)
	}

	// A change under a restart: policy touches only that pool, in place.
	p := filepath.Join(dir, "configs.hcl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte("--collector.systemd"), []byte("--collector.systemd --collector.ntp"), 1), 0o644)
	code, out, errOut = mcp(t, dir, "plan", "-json", "-detailed-exitcode")
	if code != 2 {
		t.Fatalf("plan after edit exit %d, want 2\n%s%s", code, out, errOut)
	}
	var pj2 struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
			MCP struct {
				Steps []struct{ Kind, Target string } `json:"steps"`
			} `json:"mcp"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &pj2); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, rc := range pj2.ResourceChanges {
		if !strings.HasPrefix(rc.Address, "node.") || len(rc.MCP.Steps) == 0 {
			continue
		}
		changed++
		if !strings.HasPrefix(rc.Address, "node.worker-") {
			t.Errorf("%s changes, but only the worker pool's config changed", rc.Address)
		}
		var kinds []string
		for _, s := range rc.MCP.Steps {
			kinds = append(kinds, s.Kind+" "+s.Target)
		}
		want := []string{"write /etc/sysconfig/node-exporter", "restart node-exporter.service"}
		if !slices.Equal(kinds, want) {
			t.Errorf("%s steps %q, want %q", rc.Address, kinds, want)
		}
	}
	if changed != 4 {
		t.Errorf("%d nodes change, want the 4 workers", changed)
	}
}

func TestValidatePrintsPlaces(t *testing.T) {
	dir := quickstart(t)
	os.WriteFile(filepath.Join(dir, "broken.hcl"), []byte(`config "99-broken" {
  pools = ["nosuchpool"]
  file "etc/relative" {
    content = "x"
  }
}
`), 0o644)
	code, out, errOut := mcp(t, dir, "validate", "-no-color")
	if code != 1 {
		t.Fatalf("validate exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"broken.hcl:2,", "broken.hcl:3,"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validate output lacks %q:\n%s", want, errOut)
		}
	}
}

func TestStalePlanAndLockRefused(t *testing.T) {
	dir := quickstart(t)
	if code, _, errOut := mcp(t, dir, "plan", "-out=p"); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-1", "ready=false"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := mcp(t, dir, "apply", filepath.Join(dir, "p"))
	if code != 1 || !strings.Contains(errOut, "stale") {
		t.Fatalf("stale plan: exit %d, want 1 and a stale-plan error\n%s%s", code, out, errOut)
	}

	// Another apply holds the lock: the second is refused naming the holder.
	info := holdLock(t, filepath.Join(dir, "mcp.state"), "ci-runner@build-7")
	code, out, errOut = mcp(t, dir, "apply", "-auto-approve")
	if code != 1 || !strings.Contains(errOut, "ci-runner@build-7") || !strings.Contains(errOut, info.ID) {
		t.Fatalf("locked apply: exit %d, want 1 naming the holder\n%s%s", code, out, errOut)
	}
}

// -input=false, which CI scripts carry from Terraform, is accepted; it never asks: apply
// fails where it would have asked, and -auto-approve or a saved plan runs as without it.
func TestInputFalse(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "plan", "-input=false", "-no-color", "-out=ci.plan"); code != 0 {
		t.Fatalf("plan -input=false: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut := mcp(t, dir, "apply", "-input=false")
	if code != 1 || !strings.Contains(errOut, "Cannot ask for approval with -input=false") {
		t.Fatalf("apply -input=false: exit %d, want 1 and why\n%s", code, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-input=false", "-no-color", "ci.plan"); code != 0 {
		t.Fatalf("apply -input=false PLANFILE: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"validate", "-input=false"}, {"prune", "-input=false", "-dry-run"}, {"graph", "-input=false"}} {
		if code, _, errOut := mcp(t, dir, args...); code != 0 {
			t.Errorf("mcp %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
	}
}

func TestApplyWithoutTerminalNeedsApproval(t *testing.T) {
	dir := quickstart(t)
	code, _, errOut := mcp(t, dir, "apply")
	if code != 1 || !strings.Contains(errOut, "-auto-approve") {
		t.Fatalf("apply without a terminal: exit %d, want 1 and a hint\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "fleet/nodes/worker-0/root/etc/chrony.conf")); err == nil {
		t.Error("apply changed a node without approval")
	}
}

// As Terraform: apply -json cannot ask for approval, so it needs -auto-approve or a saved
// plan, and says so before it plans or touches anything.
func TestApplyJSONNeedsAutoApprove(t *testing.T) {
	dir := quickstart(t)
	code, out, errOut := mcp(t, dir, "apply", "-json")
	if code != 1 || !strings.Contains(errOut, "-json needs -auto-approve") || out != "" {
		t.Fatalf("apply -json: exit %d, want 1, no output and a hint\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state")); err == nil {
		t.Error("apply -json without approval wrote the state")
	}
}

func TestFmtCheckAndValidateJSON(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "fmt", "-check"); code != 0 {
		t.Fatalf("fmt -check on the formatted quickstart: exit %d\n%s%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "extra.hcl"), []byte("variable \"x\" {\ndefault=1\n}\n"), 0o644)
	code, out, _ := mcp(t, dir, "fmt", "-check")
	if code != 3 || !strings.Contains(out, "extra.hcl") {
		t.Fatalf("fmt -check on an unformatted file: exit %d, want 3 listing it\n%s", code, out)
	}
	if code, _, errOut := mcp(t, dir, "fmt"); code != 0 {
		t.Fatal(errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "extra.hcl")); string(b) != "variable \"x\" {\n  default = 1\n}\n" {
		t.Errorf("fmt wrote %q", b)
	}
	code, out, _ = mcp(t, dir, "validate", "-json")
	var v struct {
		Valid bool `json:"valid"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.Valid {
		t.Errorf("validate -json: exit %d %s", code, out)
	}
}

// TestDriftIsPlannedAndRestored: a file changed on a node behind mcp's back shows as drift
// in the plan (and in resource_drift), and apply restores it with the file's own policy.
func TestDriftIsPlannedAndRestored(t *testing.T) {
	dir := quickstart(t)
	if code, _, errOut := mcp(t, dir, "apply", "-auto-approve"); code != 0 {
		t.Fatal(errOut)
	}
	chrony := filepath.Join(dir, "fleet/nodes/worker-2/root/etc/chrony.conf")
	os.WriteFile(chrony, []byte("server evil.example.com\n"), 0o644)
	// Apply would restart chronyd on worker-2: -detailed-exitcode exits 2, as Terraform's
	// for an update that undoes drift; =config does not count drift restores.
	code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, "drift: /etc/chrony.conf: content") ||
		!strings.Contains(out, "node.worker-2") || strings.Contains(out, "node.worker-1") {
		t.Fatalf("plan after drift: exit %d, want 2\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode=config"); code != 0 {
		t.Fatalf("plan -detailed-exitcode=config after drift: exit %d, want 0\n%s%s", code, out, errOut)
	}
	_, out, _ = mcp(t, dir, "plan", "-json")
	var pj struct {
		ResourceDrift []struct{ Address string } `json:"resource_drift"`
	}
	json.Unmarshal([]byte(out), &pj)
	if len(pj.ResourceDrift) != 1 || pj.ResourceDrift[0].Address != "node.worker-2" {
		t.Errorf("resource_drift: %+v", pj.ResourceDrift)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 ||
		!strings.Contains(out, "node.worker-2: restart chronyd.service done") {
		t.Fatalf("apply restoring drift: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(chrony); !strings.Contains(string(b), "time.example.com") {
		t.Errorf("drift not restored: %q", b)
	}
	if code, _, _ := mcp(t, dir, "plan", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after restoring: exit %d, want 0", code)
	}
}

// TestPruneDeletesOnlyUnused: after a second rollout, the first rollout's rendered configs
// are used by nothing; prune -dry-run names them and deletes nothing, prune deletes them
// and keeps what pools and nodes use, and the fleet still plans clean.
func TestPruneDeletesOnlyUnused(t *testing.T) {
	dir := quickstart(t)
	if code, _, errOut := mcp(t, dir, "apply", "-auto-approve"); code != 0 {
		t.Fatal(errOut)
	}
	st := &localstate.Local{Path: filepath.Join(dir, "mcp.state")}
	first, err := st.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	old := slices.Sorted(maps.Values(first.Pointers))
	if code, out, errOut := mcp(t, dir, "prune", "-no-color"); code != 0 || !strings.Contains(out, "Nothing to prune") {
		t.Fatalf("prune right after apply: exit %d\n%s%s", code, out, errOut)
	}
	next := "-var=ntp_server=ntp2.example.com"
	if code, _, errOut := mcp(t, dir, "apply", "-auto-approve", next); code != 0 {
		t.Fatal(errOut)
	}
	// The first rollout's configs are the pools' rollback history: kept, until they
	// fall out of it (state.HistoryLimit moves later), which dropping the history stands for.
	if code, out, _ := mcp(t, dir, "prune", "-dry-run", "-no-color", next); code != 0 || strings.Count(out, "in the rollback history") != len(old) {
		t.Errorf("prune -dry-run does not keep the rollback history: exit %d\n%s", code, out)
	}
	cut, err := st.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cut.History = nil
	if err := st.Write(context.Background(), cut); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mcp(t, dir, "prune", "-dry-run", next)
	if code != 0 || !strings.Contains(out, "Would delete") {
		t.Fatalf("prune -dry-run: exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range old {
		if !strings.Contains(out, "- "+n) {
			t.Errorf("prune -dry-run does not name %s:\n%s", n, out)
		}
		if _, err := os.Stat(st.RenderedPath(n)); err != nil {
			t.Errorf("prune -dry-run deleted %s: %v", n, err)
		}
	}
	if code, out, errOut := mcp(t, dir, "prune", next); code != 0 || !strings.Contains(out, "Pruned "+renderedConfigs(len(old))) {
		t.Fatalf("prune: exit %d\n%s%s", code, out, errOut)
	}
	after, err := st.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range old {
		if after.Rendered[n] != nil {
			t.Errorf("%s survived prune", n)
		}
	}
	for pool, n := range after.Pointers {
		if after.Rendered[n] == nil {
			t.Errorf("prune deleted %s, pool %s's boot config", n, pool)
		}
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color", next); code != 0 {
		t.Errorf("plan after prune: exit %d, want 0\n%s", code, out)
	}
}

// TestHelpExitsZero: asking a command for its flags is not an error, for every command.
func TestHelpExitsZero(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range commands {
		for _, h := range []string{"-h", "-help", "--help"} {
			code, out, errOut := mcp(t, dir, cmd.name, h)
			if code != 0 {
				t.Errorf("mcp %s %s: exit %d, want 0\n%s%s", cmd.name, h, code, out, errOut)
			}
			if !strings.Contains(out+errOut, "Usage") {
				t.Errorf("mcp %s %s prints no usage:\n%s%s", cmd.name, h, out, errOut)
			}
		}
	}
}

// TestForceUnlockOfLiveHolderAsks: the holder of the lock runs (this test's process), so
// force-unlock explains the danger and, with no terminal to ask on, refuses unless -force.
func TestForceUnlockOfLiveHolderAsks(t *testing.T) {
	dir := quickstart(t)
	b := &localstate.Local{Path: filepath.Join(dir, "mcp.state")}
	info := state.NewLockInfo("apply", "test")
	u, err := b.Lock(context.Background(), info)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Unlock(context.Background())
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-chdir=" + dir, "force-unlock", info.ID}, strings.NewReader("yes\n"), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "-force") || !strings.Contains(out.String()+errb.String(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("force-unlock of a live holder without a terminal: exit %d, want 1 naming the holder and -force\n%s%s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); err != nil {
		t.Fatalf("the lock was removed without confirmation: %v", err)
	}
	code, stdout, errOut := mcp(t, dir, "force-unlock", "-force", info.ID)
	if code != 0 || !strings.Contains(stdout, "unlocked") {
		t.Fatalf("force-unlock -force: exit %d\n%s%s", code, stdout, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		t.Errorf("lock after force-unlock -force: %v", err)
	}
}

// TestForceUnlockOfDeadHolder: a lock whose process no longer runs is removed without asking.
func TestForceUnlockOfDeadHolder(t *testing.T) {
	dir := quickstart(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	info := state.NewLockInfo("apply", "test")
	info.PID = dead.Process.Pid
	raw, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, "mcp.state.lock"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mcp(t, dir, "force-unlock", info.ID)
	if code != 0 || strings.Contains(out, "Do you really") {
		t.Fatalf("force-unlock of a dead holder: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		t.Errorf("lock after force-unlock: %v", err)
	}
}

// TestForceUnlockOfKilledUnreapedHolder: a holder SIGKILLed and not yet waited for by its
// parent (a zombie, as when a script kills mcp apply and runs force-unlock next) is dead:
// its lock is removed without asking.
func TestForceUnlockOfKilledUnreapedHolder(t *testing.T) {
	dir := quickstart(t)
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Skip(err)
	}
	defer holder.Wait()
	info := state.NewLockInfo("apply", "test")
	info.Process, _ = liveproc.Of(holder.Process.Pid)
	raw, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, "mcp.state.lock"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	holder.Process.Kill()
	stat := fmt.Sprintf("/proc/%d/stat", info.PID)
	for i := 0; i < 1000; i++ { // the kill lands asynchronously
		if b, _ := os.ReadFile(stat); strings.Contains(string(b), ") Z ") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, out, errOut := mcp(t, dir, "force-unlock", info.ID)
	if code != 0 || strings.Contains(out+errOut, "runs on this machine") {
		t.Fatalf("force-unlock of a killed, unreaped holder: exit %d, want 0 without asking\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		t.Errorf("lock after force-unlock: %v", err)
	}
}

// TestForceUnlockOfHolderElsewhereRefuses: a holder in another PID namespace (or boot, or
// machine) cannot be proved dead from here — its PID means nothing here — so force-unlock
// without -force refuses it, even with "yes" at hand, saying where it runs; -force removes it.
func TestForceUnlockOfHolderElsewhereRefuses(t *testing.T) {
	dir := quickstart(t)
	info := state.NewLockInfo("apply", "test")
	info.PIDNamespace, info.PID = "pid:[4026532999]", 999999 // no such PID here
	raw, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, "mcp.state.lock"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-chdir=" + dir, "force-unlock", info.ID}, strings.NewReader("yes\n"), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "cannot be checked from here") || !strings.Contains(errb.String(), "-force "+info.ID) {
		t.Fatalf("force-unlock of a holder elsewhere: exit %d, want 1 saying why and naming -force\n%s%s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); err != nil {
		t.Fatalf("the lock was removed: %v", err)
	}
	if code, stdout, errOut := mcp(t, dir, "force-unlock", "-force", info.ID); code != 0 {
		t.Fatalf("force-unlock -force: exit %d\n%s%s", code, stdout, errOut)
	}
}
