package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// mcp status before and after the quickstart's first apply: the pools table counts
// nothing updated (no config yet), then every machine updated and ready at the pool's
// config; -nodes lists each node at its config; -watch off a terminal prints a table per
// refresh, separated by a blank line (with -json a document per line).
func TestStatusTablesAndWatch(t *testing.T) {
	dir := quickstart(t)
	code, out, errOut := mcp(t, dir, "status")
	if code != 0 || !regexpLine(out, `^NAME +CONFIG +UPDATED +UPDATING +DEGRADED +MACHINECOUNT +READYMACHINECOUNT +UPDATEDMACHINECOUNT +DEGRADEDMACHINECOUNT +AGE$`) ||
		!regexpLine(out, `^worker +<none> +False +False +False +4 +0 +0 +0 +\d+d$`) {
		t.Fatalf("status before apply: %d %s\n%s", code, errOut, out)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "status", "-json")
	var s struct {
		FormatVersion string `json:"format_version"`
		Pools         []struct {
			Name                               string
			Config                             string
			Machines, Updated, Ready, Updating int
		}
	}
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || s.FormatVersion != "1.5" || len(s.Pools) != 2 {
		t.Fatalf("status -json: %d %v %s\n%s", code, err, errOut, out)
	}
	for _, p := range s.Pools {
		if !strings.HasPrefix(p.Config, "rendered-"+p.Name+"-") || p.Updated != p.Machines || p.Ready != p.Machines || p.Updating != 0 {
			t.Errorf("after apply: %+v", p)
		}
	}
	code, out, errOut = mcp(t, dir, "status", "-nodes")
	if code != 0 || !regexpLine(out, `^worker-0 +worker +`+s.Pools[1].Config+` +Done +<none> +False +\d+d$`) {
		t.Errorf("status -nodes: %d %s\n%s", code, errOut, out)
	}

	statusInterval = 100 * time.Millisecond
	defer func() { statusInterval = 2 * time.Second }()
	// Each watch ends when it has printed three views (or after a minute).
	watch := func(marker string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out := &cancelAfter{marker: marker, n: 3, cancel: cancel}
		var errb bytes.Buffer
		if code := run(ctx, append([]string{"-chdir=" + dir, "status", "-w"}, args...), strings.NewReader(""), out, &errb); code != 0 {
			t.Fatalf("status -watch %v: exit %d %s", args, code, errb.String())
		}
		return out.String()
	}
	tables := strings.Split(strings.TrimSuffix(watch("MACHINECOUNT"), "\n"), "\n\n")
	if len(tables) != 3 {
		t.Errorf("status -watch off a terminal printed %d tables, want one per refresh:\n%s", len(tables), strings.Join(tables, "\n\n"))
	}
	for _, tb := range tables {
		if !strings.Contains(tb, "MACHINECOUNT") || strings.Contains(tb, "\x1b[") {
			t.Errorf("a table of status -watch off a terminal:\n%q", tb)
		}
	}
	// -w is -watch, as kubectl's; -o json documents follow each other, indented.
	docs := json.NewDecoder(strings.NewReader(watch("format_version", "-json")))
	n := 0
	for ; docs.More(); n++ {
		var doc map[string]any
		if err := docs.Decode(&doc); err != nil || doc["format_version"] != "1.5" {
			t.Fatalf("status -watch -json: document %d: %v %v", n, err, doc)
		}
	}
	if n != 3 {
		t.Errorf("status -watch -json printed %d documents, want one per refresh", n)
	}
	if out := watch("\n    \"format_version\": \"1.5\",\n", "-o", "json"); strings.Count(out, "\n    \"pools\": [\n") != 3 {
		t.Errorf("status -watch -o json is not indented as kubectl's -o json:\n%s", out)
	}
	if code, _, errOut := mcp(t, dir, "status", "extra"); code != 1 || !strings.Contains(errOut, "Too many command line arguments") {
		t.Errorf("status with an argument: %d %q", code, errOut)
	}
}

// regexpLine reports whether the table s has a line matching re.
func regexpLine(s, re string) bool { return regexp.MustCompile(`(?m)` + re).MatchString(s) }

// cancelAfter collects a watch's output and ends the watch (cancels its context) once n
// writes have carried marker: a view is written in one write.
type cancelAfter struct {
	bytes.Buffer
	marker string
	n      int
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.marker)) {
		if c.n--; c.n == 0 {
			c.cancel()
		}
	}
	return c.Buffer.Write(p)
}

// mcp status prints plain columns as kubectl get does — the pools' conditions True/False
// beside their counts, an AGE — that awk reads; -o wide, json, yaml and name; -nodes names
// the failure a node's last apply left on it, and a Degraded node's reason.
func TestStatusTheKubectlWay(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errOut)
	}
	// A drain refused on infra-0 (the kernel arguments reboot it), a failed write on worker-1.
	for _, set := range [][]string{{"infra-0", "fault.drain=pdb"}, {"worker-1", "fault.write=/etc/chrony.conf"}} {
		if code, _, errOut := mcp(t, dir, append([]string{"fleet", "set"}, set...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
	cfg := filepath.Join(dir, "configs.hcl")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(b, []byte(`kernel_args = [`), []byte(`kernel_args = ["quiet", `), 1), 0o644)
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color", "-var", "ntp_server=ntp.internal", "-drain-timeout=200ms", "-drain-retry-delay=10ms")
	if code != 1 {
		t.Fatalf("apply with faults: exit %d, want 1\n%s%s", code, out, errOut)
	}
	// The node's error names it and its step once.
	if !strings.Contains(out, "  node worker-1: write /etc/chrony.conf: injected fault") || strings.Count(out, "node worker-1: write /etc/chrony.conf:") != 1 ||
		!strings.Contains(out, "node.worker-1: write /etc/chrony.conf failed: injected fault") ||
		!strings.Contains(out, "  drain node infra-0: evictions refused") || strings.Contains(out, "drain: drain") {
		t.Errorf("the failure's words:\n%s", out)
	}

	_, out, _ = mcp(t, dir, "status")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	fields := strings.Fields(lines[0])
	for _, l := range lines {
		if strings.ContainsAny(l, "│┌─") || strings.HasSuffix(l, " ") || len(strings.Fields(l)) != len(fields) {
			t.Errorf("not a plain row of %d fields: %q", len(fields), l)
		}
	}
	if !regexpLine(out, `^infra +rendered-infra-\w+ +False +False +False +2 +0 +0 +0 +\d+d$`) ||
		// worker-1 fails while a second worker runs beside it (max_unavailable 50%): whether a
		// third had started by then is timing, so 2 or 3 are updated, and as many ready.
		!regexpLine(out, `^worker +rendered-worker-\w+ +False +False +True +4 +(2 +2|3 +3) +1 +\d+d$`) {
		t.Errorf("status:\n%s", out)
	}
	_, wide, _ := mcp(t, dir, "status", "-o", "wide")
	if !regexpLine(wide, `^NAME .* AGE +UPDATINGMACHINECOUNT +DRIFTEDMACHINECOUNT +HELDMACHINECOUNT +PAUSED$`) ||
		!regexpLine(wide, `^worker .* +0 +0 +0 +False$`) {
		t.Errorf("status -o wide:\n%s", wide)
	}
	_, nodes, _ := mcp(t, dir, "status", "-nodes")
	if !regexpLine(nodes, `^infra-0 +infra +rendered-infra-\w+ +Done +<none> +False +\d+d +last apply failed: drain node infra-0: evictions refused as by a PodDisruptionBudget`) ||
		!regexpLine(nodes, `^worker-1 +worker +rendered-worker-\w+ +Degraded +Degraded +False +\d+d +write /etc/chrony.conf: injected fault`) {
		t.Errorf("status -nodes:\n%s", nodes)
	}
	if _, wideNodes, _ := mcp(t, dir, "status", "-nodes", "-o", "wide"); !regexpLine(wideNodes, `^NAME +POOL +CONFIG +STATE +CONDITION +HELD +AGE +DESIRED +DRIFTED +REASON$`) {
		t.Errorf("status -nodes -o wide:\n%s", wideNodes)
	}
	if _, names, _ := mcp(t, dir, "status", "--output=name"); names != "pool/infra\npool/worker\n" {
		t.Errorf("-o name: %q", names)
	}
	if _, names, _ := mcp(t, dir, "status", "-nodes", "-o", "name"); !strings.HasPrefix(names, "node/infra-0\nnode/infra-1\nnode/worker-0\n") {
		t.Errorf("-nodes -o name: %q", names)
	}
	_, js, _ := mcp(t, dir, "status", "-o", "json")
	_, y, _ := mcp(t, dir, "status", "-o", "yaml")
	var fromJSON, fromYAML map[string]any
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(y), &fromYAML); err != nil {
		t.Fatal(err)
	}
	delete(fromJSON, "observed_at")
	delete(fromYAML, "observed_at")
	if d := cmp.Diff(fromJSON, fromYAML); d != "" {
		t.Errorf("-o yaml is not -o json's document (-json +yaml):\n%s", d)
	}
	pools := fromJSON["pools"].([]any)
	if c := pools[1].(map[string]any)["conditions"]; !cmp.Equal(c, map[string]any{"updated": false, "updating": false, "degraded": true}) {
		t.Errorf("worker's conditions: %v", c)
	}
	if code, _, errOut := mcp(t, dir, "status", "-o", "table"); code != 1 || !strings.Contains(errOut, "-o table: want one of wide, json, yaml, name") {
		t.Errorf("-o table: exit %d %q", code, errOut)
	}
	if code, _, _ := mcp(t, dir, "status", "-json", "-o", "json"); code != 0 {
		t.Errorf("-json -o json: exit %d", code)
	}
	// kubectl's habits: --no-headers, -o jsonpath=TEMPLATE (braces optional, as kubectl's).
	if _, rows, _ := mcp(t, dir, "status", "--no-headers"); strings.Contains(rows, "NAME") || !regexpLine(rows, `^infra +rendered-infra-\w+ +False +`) {
		t.Errorf("--no-headers:\n%s", rows)
	}
	if _, rows, _ := mcp(t, dir, "status", "-nodes", "-o", "wide", "--no-headers"); strings.Contains(rows, "NAME") || strings.Count(rows, "\n") != 6 {
		t.Errorf("-nodes -o wide --no-headers:\n%s", rows)
	}
	for _, tmpl := range []string{"{.pools[*].name}", ".pools[*].name"} {
		if code, out, errOut := mcp(t, dir, "status", "-o", "jsonpath="+tmpl); code != 0 || out != "infra worker" {
			t.Errorf("-o jsonpath=%s: exit %d %q %s", tmpl, code, out, errOut)
		}
	}
	if code, out, _ := mcp(t, dir, "status", `-o=jsonpath={range .nodes[?(@.state=="Degraded")]}{.name}{"\n"}{end}`); code != 0 || out != "worker-1\n" {
		t.Errorf("-o jsonpath with a filter: exit %d %q", code, out)
	}
	if code, _, errOut := mcp(t, dir, "status", "-o", "jsonpath={.pools[*.name}"); code != 1 || !strings.Contains(errOut, "Invalid output format") {
		t.Errorf("a broken jsonpath: exit %d %q", code, errOut)
	}
}

// mcp help status names exactly the columns mcp status prints, with and without -nodes
// and -o wide.
func TestStatusHelpNamesItsColumns(t *testing.T) {
	dir := quickstart(t)
	_, help, _ := mcp(t, dir, "help", "status")
	text, _, ok := strings.Cut(help, "\nOptions:")
	if !ok {
		t.Fatalf("mcp help status has no options:\n%s", help)
	}
	named := map[string]bool{}
	for _, w := range regexp.MustCompile(`\b[A-Z]{3,}\b`).FindAllString(text, -1) {
		named[w] = true
	}
	printed := map[string]bool{}
	for _, args := range [][]string{{"status"}, {"status", "-o", "wide"}, {"status", "-nodes"}, {"status", "-nodes", "-o", "wide"}} {
		_, out, _ := mcp(t, dir, args...)
		header, _, _ := strings.Cut(out, "\n")
		for _, col := range strings.Fields(header) {
			printed[col] = true
		}
	}
	if d := cmp.Diff(printed, named); d != "" {
		t.Errorf("the columns mcp help status names are not those mcp status prints (-printed +named):\n%s", d)
	}
}
