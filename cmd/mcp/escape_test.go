package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
