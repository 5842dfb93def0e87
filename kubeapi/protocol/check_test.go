package protocol

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the protocol writes")

const runID = "NDKXA6YSVKM3FMNV4QK2G5EJ2Q"

var kubeletCheck = CommandCheck{Name: "kubelet", Command: []string{"/usr/bin/systemctl", "is-active", "kubelet"}, Timeout: "2m0s"}

// TestCheckWireFormat pins what engine and agent write (testdata/check-messages.golden):
// agents and engines of different versions read each other's messages.
func TestCheckWireFormat(t *testing.T) {
	req, err := CheckRun{Pool: "worker", Check: "kubelet", RunID: runID}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := CheckReport{RunID: runID, Check: "kubelet",
		CheckResult: model.CheckResult{ExitCode: 3, Output: "inactive\n"}}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	notRun, err := CheckReport{RunID: runID, Check: "kubelet",
		CheckResult: model.CheckResult{ExitCode: -1, Error: `pool "worker" has no command check "kubelet" in Secret mcp-health-checks: nothing run`}}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := PoolChecks{"worker": {kubeletCheck}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, m := range []map[string]string{req, rep, notRun} {
		for k, v := range m {
			got.WriteString(k + ": " + v + "\n")
		}
	}
	got.WriteString(HealthSecret + " " + HealthKey + ": " + string(secret) + "\n")
	golden := filepath.Join("testdata", "check-messages.golden")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got.String()); d != "" {
		t.Errorf("wire format (-%s +now):\n%s", golden, d)
	}
}

func TestCheckRoundTrip(t *testing.T) {
	r := CheckRun{Pool: "worker", Check: "kubelet is active", RunID: runID}
	ann, err := r.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	back, ok, err := ReadCheckRun(ann)
	if !ok || err != nil || back != r {
		t.Errorf("ReadCheckRun = %+v, %v, %v; want %+v", back, ok, err, r)
	}
	if _, ok, err := ReadCheckRun(map[string]string{}); ok || err != nil {
		t.Errorf("no request: ok %v, err %v", ok, err)
	}
	rep := CheckReport{RunID: runID, Check: "kubelet is active", CheckResult: model.CheckResult{ExitCode: 1, Output: strings.Repeat("x", 2000), Error: ""}}
	ann, err = rep.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	gotRep, ok := ReadCheckReport(ann)
	if !ok || gotRep.RunID != runID || gotRep.ExitCode != 1 || len(gotRep.Output) != model.CheckOutputLimit {
		t.Errorf("ReadCheckReport = %+v (%d bytes of output), %v", gotRep, len(gotRep.Output), ok)
	}
	if _, ok := ReadCheckReport(map[string]string{CheckResult: "{"}); ok {
		t.Error("an unreadable report was read")
	}
}

// TestReadCheckRunRefuses: the agent answers only requests the engine would write, and
// keeps the run id of a refused one when it is sound, to answer it with the refusal.
func TestReadCheckRunRefuses(t *testing.T) {
	tests := []struct {
		name, ann, want string
		keepsID         bool
	}{
		{"not JSON", `kubelet`, "invalid character", false},
		{"no pool", `{"check":"kubelet","run_id":"` + runID + `"}`, "pool name", true},
		{"no check", `{"pool":"worker","run_id":"` + runID + `"}`, "check name", true},
		{"a newline in the check", `{"pool":"worker","check":"a\nb","run_id":"` + runID + `"}`, "check name", true},
		{"no run id", `{"pool":"worker","check":"kubelet"}`, "run id", false},
		{"run id with a slash", `{"pool":"worker","check":"kubelet","run_id":"a/b"}`, "run id", false},
		{"check name too long", `{"pool":"worker","check":"` + strings.Repeat("k", 2000) + `","run_id":"` + runID + `"}`, "check name", true},
		{"too long", `{"pool":"worker","check":"` + strings.Repeat("k", 20000) + `","run_id":"` + runID + `"}`, "more than", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok, err := ReadCheckRun(map[string]string{CheckRequest: tt.ann})
			if !ok || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadCheckRun: ok %v, err %v; want refused with %q", ok, err, tt.want)
			}
			if (r.RunID == runID) != tt.keepsID {
				t.Errorf("run id %q kept: %v, want %v", r.RunID, r.RunID == runID, tt.keepsID)
			}
		})
	}
	// The longest names the engine writes, escaped by JSON, are read back.
	long := CheckRun{Pool: strings.Repeat("<", maxCheckName), Check: strings.Repeat("&", maxCheckName), RunID: runID}
	if ann, err := long.Annotations(); err != nil {
		t.Error(err)
	} else if back, _, err := ReadCheckRun(ann); err != nil || back != long {
		t.Errorf("the longest request read back as %v", err)
	}
	if _, err := (CheckRun{Pool: "worker", Check: "kubelet"}).Annotations(); err == nil {
		t.Error("the engine side encoded a request without a run id")
	}
}

func TestPoolChecks(t *testing.T) {
	checks := []model.HealthCheck{
		{Name: "app", HTTPGet: "http://${node.address}/", Timeout: time.Minute},
		{Name: "kubelet", Command: kubeletCheck.Command, Timeout: 2 * time.Minute},
	}
	pc := PoolChecks{"worker": CommandChecks(checks)}
	if d := cmp.Diff(PoolChecks{"worker": {kubeletCheck}}, pc); d != "" {
		t.Errorf("CommandChecks (-want +got):\n%s", d)
	}
	b, err := pc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeChecks(b)
	if err != nil || !cmp.Equal(pc, back) {
		t.Fatalf("DecodeChecks = %v, %v", back, err)
	}
	c, err := back.Find(CheckRun{Pool: "worker", Check: "kubelet", RunID: runID})
	if err != nil || c.TimeoutDuration() != 2*time.Minute {
		t.Errorf("Find = %+v, %v", c, err)
	}
	// The security property's first half: a name the Secret does not hold for that pool
	// finds nothing, whatever other pools hold.
	pc["infra"] = []CommandCheck{{Name: "wipe", Command: []string{"/bin/true"}, Timeout: "1s"}}
	for _, r := range []CheckRun{{Pool: "worker", Check: "app"}, {Pool: "worker", Check: "wipe"}, {Pool: "db", Check: "kubelet"}} {
		if c, err := pc.Find(r); err == nil || !strings.Contains(err.Error(), "nothing run") {
			t.Errorf("Find(%+v) = %+v, %v; want nothing found", r, c, err)
		}
	}
}

func TestDecodeChecksRefuses(t *testing.T) {
	tests := map[string]string{
		"not JSON":          `[`,
		"relative command":  `{"w":[{"name":"a","command":["systemctl","is-active"],"timeout":"1m"}]}`,
		"empty command":     `{"w":[{"name":"a","command":[],"timeout":"1m"}]}`,
		"NUL in argument":   `{"w":[{"name":"a","command":["/bin/x","a\u0000b"],"timeout":"1m"}]}`,
		"no timeout":        `{"w":[{"name":"a","command":["/bin/x"]}]}`,
		"negative timeout":  `{"w":[{"name":"a","command":["/bin/x"],"timeout":"-1s"}]}`,
		"a week":            `{"w":[{"name":"a","command":["/bin/x"],"timeout":"168h"}]}`,
		"no name":           `{"w":[{"command":["/bin/x"],"timeout":"1m"}]}`,
		"twice":             `{"w":[{"name":"a","command":["/bin/x"],"timeout":"1m"},{"name":"a","command":["/bin/y"],"timeout":"1m"}]}`,
		"empty pool name":   `{"":[{"name":"a","command":["/bin/x"],"timeout":"1m"}]}`,
		"too many args":     `{"w":[{"name":"a","command":["/bin/x"` + strings.Repeat(`,"a"`, maxArgs) + `],"timeout":"1m"}]}`,
		"too many bytes":    `{"w":[{"name":"a","command":["/bin/x","` + strings.Repeat("a", maxArgBytes) + `"],"timeout":"1m"}]}`,
		"list, not a map":   `[{"name":"a","command":["/bin/x"],"timeout":"1m"}]`,
		"check not objects": `{"w":["/bin/x"]}`,
	}
	for name, data := range tests {
		if pc, err := DecodeChecks([]byte(data)); err == nil {
			t.Errorf("%s: DecodeChecks accepted %v", name, pc)
		}
	}
	if _, err := (PoolChecks{"w": {{Name: "a", Command: []string{"x"}, Timeout: "1m"}}}).Encode(); err == nil {
		t.Error("the engine side encoded a relative command")
	}
}

// FuzzReadCheckRun: any annotation reads without a panic; an accepted request encodes back
// to itself.
func FuzzReadCheckRun(f *testing.F) {
	f.Add(`{"pool":"worker","check":"kubelet","run_id":"` + runID + `"}`)
	f.Add(`{"pool":"","check":"","run_id":""}`)
	f.Add(`{"pool":"w","check":"a\u0000","run_id":"u1"}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		r, ok, err := ReadCheckRun(map[string]string{CheckRequest: s})
		if !ok && s != "" {
			t.Fatalf("a request %q was not seen", s)
		}
		if err != nil || !ok {
			return
		}
		ann, err := r.Annotations()
		if err != nil {
			t.Fatalf("accepted request %+v does not encode: %v", r, err)
		}
		back, _, err := ReadCheckRun(ann)
		if err != nil || back != r {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, r)
		}
	})
}

// FuzzDecodeChecks: any data decodes without a panic; accepted checks all have an
// absolute command and a bounded timeout, and encode back.
func FuzzDecodeChecks(f *testing.F) {
	f.Add(`{"worker":[{"name":"kubelet","command":["/usr/bin/systemctl","is-active","kubelet"],"timeout":"2m0s"}]}`)
	f.Add(`{"w":[{"name":"a","command":["rm","-rf","/"],"timeout":"1s"}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, s string) {
		pc, err := DecodeChecks([]byte(s))
		if err != nil {
			return
		}
		for _, checks := range pc {
			for _, c := range checks {
				if len(c.Command) == 0 || !strings.HasPrefix(c.Command[0], "/") || c.TimeoutDuration() <= 0 || c.TimeoutDuration() > model.MaxCommandCheckTimeout ||
					slices.ContainsFunc(c.Command, func(a string) bool { return strings.ContainsRune(a, 0) }) {
					t.Fatalf("accepted %+v", c)
				}
			}
		}
		if _, err := pc.Encode(); err != nil {
			t.Fatalf("accepted checks do not encode: %v", err)
		}
	})
}

// FuzzReadCheckReport: any annotation reads without a panic, its output bounded and valid.
func FuzzReadCheckReport(f *testing.F) {
	f.Add(`{"run_id":"` + runID + `","check":"kubelet","exit_code":3,"output":"inactive\n"}`)
	f.Add(`{"run_id":"x","exit_code":-1,"error":"\xff"}`)
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := ReadCheckReport(map[string]string{CheckResult: s})
		if !ok {
			return
		}
		if len(r.Output) > model.CheckOutputLimit+2 || !utf8.ValidString(r.Output) || !utf8.ValidString(r.Error) {
			t.Fatalf("report output %d bytes, valid %v", len(r.Output), utf8.ValidString(r.Output))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
