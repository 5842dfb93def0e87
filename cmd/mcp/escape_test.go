package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
	"github.com/mcpfleet/mcp/testkit/printed"
)

// hostile is text a node (or whoever writes its Node object) may report: it sets the
// terminal's title and clears its screen when printed as it is.
const hostile = "\x1b]0;pwned\x07\x1b[2Jboom"

// TestTextFromNodesIsPrintedEscaped: a node's reason, its hold, a claim's failed text and
// the event log's texts reach plan, status -nodes, fleet events and apply escaped — with
// -no-color as without — never as raw control characters.
func TestTextFromNodesIsPrintedEscaped(t *testing.T) {
	dir := quickstart(t)
	for _, set := range [][]string{
		{"fleet", "set", "worker-2", "state=Degraded", "reason=" + hostile},
		{"fleet", "set", "worker-3", "hold=" + hostile},
	} {
		if code, out, errOut := mcp(t, dir, set...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", set, code, out, errOut)
		}
	}
	// A claim released by an apply that failed the node, as apply leaves it.
	nodeFile := filepath.Join(dir, "fleet", "nodes", "worker-1", "node.json")
	var n map[string]any
	b, err := os.ReadFile(nodeFile)
	if err == nil {
		err = json.Unmarshal(b, &n)
	}
	if err != nil {
		t.Fatal(err)
	}
	n["claim"] = map[string]any{"apply": "a1", "since": "2026-01-01T00:00:00Z", "released": "2026-01-01T00:01:00Z", "failed": "drain: " + hostile}
	if b, err = json.Marshal(n); err == nil {
		err = os.WriteFile(nodeFile, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plan", "-no-color"},
		{"plan"},
		{"status", "-nodes", "-no-color"},
		{"status", "-nodes"},
		{"fleet", "events"},
		{"apply", "-auto-approve", "-no-color"},
		{"status", "-nodes", "-no-color"},
	} {
		_, out, errOut := mcp(t, dir, args...)
		all := out + errOut
		for _, raw := range []string{"\x1b]", "\x07", "\x1b[2J"} {
			if strings.Contains(all, raw) {
				t.Errorf("mcp %s prints %q raw:\n%s", strings.Join(args, " "), raw, all)
			}
		}
		if !strings.Contains(all, `\x1b]0;pwned\x07\x1b[2Jboom`) {
			t.Errorf("mcp %s does not show the node's text escaped:\n%s", strings.Join(args, " "), all)
		}
	}
}

// tags are the hostile texts' sources: a rendered config the state holds and the nodes run
// (its file, directory, link and target, unit, drop-in, kernel argument, OS image and
// config name), and what nodes report (their OS image, kernel arguments, agent's reason,
// hold and current config).
const (
	tagFile, tagDir, tagLink, tagTarget = "FILE", "DIR", "LINK", "TARGET"
	tagUnit, tagDropin, tagKarg         = "UNIT", "DROPIN", "KARG"
	tagImage, tagConfig                 = "IMAGE", "CONFIG"
	tagNodeImage, tagNodeKarg           = "NODEIMAGE", "NODEKARG" // the node's kernel arguments: shown by no view yet
	tagReason, tagHold, tagCurrent      = "REASON", "HOLD", "CURRENT"
)

// hostileWorld is the quickstart whose state holds a rendered config of the worker pool
// made of hostile text (printed.Text), which the workers run, and whose nodes report
// hostile text: what validation of a configuration can never keep out (a state or a saved
// plan written by another mcp or by hand; what a node or whoever writes its Node object
// says). worker-1 fails its first write of a hostile path.
func hostileWorld(t *testing.T) string {
	t.Helper()
	dir := quickstart(t)
	ctx := context.Background()
	b := &localstate.Local{Path: filepath.Join(dir, "mcp.state")}
	st, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lineage == "" {
		st = state.New()
	}
	h := printed.Text
	r := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0", OSImage: h(tagImage), KernelArgs: []string{h(tagKarg)},
		Files:       []model.File{{Entry: model.Entry{Path: "/etc/" + h(tagFile)}, Mode: 0o644, Contents: []byte("x\n")}},
		Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/" + h(tagDir)}, Mode: 0o755}},
		Links:       []model.Link{{Entry: model.Entry{Path: "/etc/" + h(tagLink)}, Target: h(tagTarget)}},
		Units: []model.Unit{{Name: h(tagUnit) + ".service", Contents: "[Service]\n",
			Dropins: []model.Dropin{{Name: h(tagDropin) + ".conf", Contents: "[Service]\n"}}}},
		Sources: []string{h(tagConfig)}}
	r.Name = content.Name(r)
	st.Rendered[r.Name] = r
	if err := b.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	for _, set := range [][]string{
		{"worker-0", "current_config=" + r.Name},
		{"worker-1", "current_config=" + r.Name, "fault.write=/etc/" + h(tagFile)},
		{"worker-2", "current_config=" + r.Name, "os_image=" + h(tagNodeImage), "kernel_args=" + h(tagNodeKarg)},
		{"worker-3", "current_config=" + h(tagCurrent)},
		{"infra-0", "state=Degraded", "reason=" + h(tagReason)},
		{"infra-1", "hold=" + h(tagHold)},
	} {
		if code, out, errOut := mcp(t, dir, append([]string{"fleet", "set"}, set...)...); code != 0 {
			t.Fatalf("fleet set %q: exit %d\n%s%s", set, code, out, errOut)
		}
	}
	return dir
}

// TestHostileTextIsEscapedInEveryView: hostile text from each source — a path, a link's
// target, a unit and a drop-in name, kernel arguments, an OS image, a config name (from
// the state), a node's image, kernel arguments, reason, hold and config (from the fleet) —
// reaches every command's human output escaped: no raw control character, no escape
// sequence, no forged line; in show -markdown it also stays in its code span and table
// cell; the JSON outputs keep it exact.
func TestHostileTextIsEscapedInEveryView(t *testing.T) {
	dir := hostileWorld(t)
	plan := filepath.Join(dir, "hostile.plan")
	all := []string{tagFile, tagDir, tagLink, tagTarget, tagUnit, tagDropin, tagKarg, tagImage}
	for _, tc := range []struct {
		args  []string
		shows []string // the sources whose text it shows
	}{
		{[]string{"plan", "-no-color"}, append(all, tagReason, tagHold, tagCurrent)},
		{[]string{"plan", "-no-color", "-out=" + plan}, append(all, tagHold, tagCurrent)},
		{[]string{"show", "-no-color", plan}, append(all, tagHold, tagCurrent)},
		{[]string{"show", "-markdown", plan}, append(all, tagHold, tagCurrent)},
		{[]string{"graph", plan}, []string{tagCurrent}},
		{[]string{"drift", "-no-color"}, []string{tagFile, tagDir, tagLink, tagUnit, tagDropin, tagKarg, tagImage, tagNodeImage, tagCurrent}},
		{[]string{"status", "-nodes", "-o", "wide"}, []string{tagReason, tagHold, tagCurrent}},
		{[]string{"fleet", "list"}, []string{tagCurrent}},
		{[]string{"apply", "-auto-approve", "-no-color"}, append(all, tagHold, tagCurrent)},
		{[]string{"status", "-nodes"}, []string{tagHold}},
		{[]string{"fleet", "events"}, []string{tagFile}},
	} {
		name := strings.Join(tc.args, " ")
		_, out, errOut := mcp(t, dir, tc.args...)
		printed.Check(t, "mcp "+name, out+errOut, printed.Options{}, tc.shows...)
		if tc.args[1] == "-markdown" {
			printed.CheckMarkdown(t, out)
		}
	}
	for _, args := range [][]string{{"show", "-json", plan}, {"drift", "-json"}} {
		_, out, errOut := mcp(t, dir, args...)
		var doc any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("mcp %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		if b, _ := json.Marshal(doc); !strings.Contains(string(b), printed.Text(tagFile)[:4]) || !strings.Contains(out, `\u001b]0;FILE\u0007`) {
			t.Errorf("mcp %s does not keep the hostile path exact:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestLockHolderTextIsEscaped: what a lock file says of its holder — who, the operation,
// the lock's ID — reaches apply's lock error and force-unlock's refusals (of a holder
// elsewhere, of a live holder, of another ID) escaped.
func TestLockHolderTextIsEscaped(t *testing.T) {
	dir := quickstart(t)
	lock := func(info state.LockInfo) {
		info.Who, info.Operation, info.ID = printed.Text("WHO"), printed.Text("OP"), printed.Text("ID")
		raw, _ := json.Marshal(info)
		if err := os.WriteFile(filepath.Join(dir, "mcp.state.lock"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := state.NewLockInfo("apply", "test")
	elsewhere.PIDNamespace, elsewhere.PID = "pid:[4026532999]", 999999 // cannot be checked from here
	lock(elsewhere)
	for _, args := range [][]string{
		{"apply", "-auto-approve", "-no-color"},
		{"plan", "-no-color"},
		{"force-unlock", printed.Text("ID")},
		{"force-unlock", "another-id"},
	} {
		_, out, errOut := mcp(t, dir, args...)
		printed.Check(t, "mcp "+args[0], out+errOut, printed.Options{}, "WHO", "ID")
	}
	lock(state.NewLockInfo("apply", "test")) // this process: a live holder
	_, out, errOut := mcp(t, dir, "force-unlock", printed.Text("ID"))
	printed.Check(t, "mcp force-unlock (live holder)", out+errOut, printed.Options{}, "WHO", "OP", "ID")
}

// TestHostileConfigurationIsEscaped: hostile text in a configuration — a file's,
// directory's and link's path, a link's target, a drop-in's name, kernel arguments, an OS
// image, a config's name, raw control bytes in a file — is printed escaped by validate,
// plan, show -rendered and apply, whether validate accepts it or refuses it (its
// diagnostics quote it, with the source lines); a byte that is not UTF-8 is refused with
// its source line escaped.
func TestHostileConfigurationIsEscaped(t *testing.T) {
	dir := quickstart(t)
	q := func(tag string) string { // printed.Text(tag) as an HCL string
		s := strconv.QuoteToASCII(printed.Text(tag))
		return strings.ReplaceAll(strings.ReplaceAll(s, `\x1b`, `\u001b`), `\a`, `\u0007`)
	}
	hcl := `config ` + q("CONF") + ` {
  pools       = ["worker"]
  kernel_args = [` + q("KARG") + `]
  file "/etc/` + strings.Trim(q("FILE"), `"`) + `" {
    content   = "x\n"
    on_change = ["none"]
  }
  directory "/etc/` + strings.Trim(q("DIR"), `"`) + `" {}
  link "/etc/` + strings.Trim(q("LINK"), `"`) + `" {
    target = ` + q("TARGET") + `
  }
  unit "u.service" {
    contents = "[Service]\nExecStart=/bin/true\n"
    dropin "` + strings.Trim(q("DROPIN"), `"`) + `.conf" {
      contents = "[Service]\n"
    }
  }
}
config "raw" {
  pools       = ["worker"]
  kernel_args = ["RAW` + "\x1b]0;RAW\x07\x1b[2J" + `"]
}
`
	os.WriteFile(filepath.Join(dir, "hostile.hcl"), []byte(hcl), 0o644)
	main := filepath.Join(dir, "main.hcl")
	b, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(b), "max_unavailable = 1", "max_unavailable = 1\n  os_image = "+q("IMAGE"), 1)), 0o644)
	code, out, errOut := mcp(t, dir, "validate", "-no-color")
	accepted := code == 0
	var tags []string // what each command shows: all of it when validate accepts it
	if accepted {
		tags = []string{"CONF", "KARG", "FILE", "DIR", "LINK", "TARGET", "DROPIN", "IMAGE", "RAW"}
	} else {
		printed.Check(t, "mcp validate", out+errOut, printed.Options{})
		if !strings.Contains(out+errOut, "]0;") {
			t.Errorf("validate refuses the configuration without quoting its text:\n%s%s", out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		tags []string
	}{
		{[]string{"plan", "-no-color"}, tags},
		{[]string{"show", "-no-color", "-rendered", "worker"}, tags},
		{[]string{"apply", "-auto-approve", "-no-color"}, tags},
	} {
		_, out, errOut := mcp(t, dir, tc.args...)
		printed.Check(t, "mcp "+strings.Join(tc.args, " "), out+errOut, printed.Options{}, tc.tags...)
	}
	// A byte that is not UTF-8: refused, at its line, which is shown escaped.
	os.WriteFile(filepath.Join(dir, "hostile.hcl"), []byte("config \"bad\" {\n  pools = [\"worker\"]\n  kernel_args = [\"SRC\x1b]0;SRC\x07\xff\"]\n}\n"), 0o644)
	_, out, errOut = mcp(t, dir, "validate", "-no-color")
	printed.Check(t, "mcp validate (not UTF-8)", out+errOut, printed.Options{}, "SRC")
}

// TestFleetListAndEventsEscapeNodeText: a local fleet's node whose directory name and zone
// hold hostile text (a fleet is input: written by hand or by another tool) is listed by
// fleet list and fleet events escaped, as every other view shows it.
func TestFleetListAndEventsEscapeNodeText(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	name := strings.ReplaceAll(printed.Text("NODE"), "/", "-") // one directory name
	nodes := filepath.Join(dir, "fleet", "nodes")
	if err := os.Rename(filepath.Join(nodes, "worker-3"), filepath.Join(nodes, name)); err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(name)
	for file, edit := range map[string]func(string) string{
		"node.json": func(s string) string {
			var n map[string]any
			json.Unmarshal([]byte(s), &n)
			n["name"], n["zone"] = name, printed.Text("ZONE")
			b, _ := json.Marshal(n)
			return string(b)
		},
		"events.jsonl": func(s string) string { return strings.ReplaceAll(s, `"worker-3"`, string(quoted)) },
	} {
		p := filepath.Join(nodes, name, file)
		b, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(p, []byte(edit(string(b))), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"fleet", "list"}, {"fleet", "events"}} {
		code, out, errOut := mcp(t, dir, args...)
		if code != 0 {
			t.Fatalf("mcp %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		tags := []string{"NODE"}
		if args[1] == "list" {
			tags = append(tags, "ZONE")
		}
		printed.Check(t, "mcp "+strings.Join(args, " "), out+errOut, printed.Options{}, tags...)
	}
}
