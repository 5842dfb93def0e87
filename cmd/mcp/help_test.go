package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/providers/local"
)

// runIn runs mcp with args as given (no -chdir added).
func runIn(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// mcp -h and mcp help print mcp's commands on stdout and exit 0, as terraform -help.
func TestGlobalHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"help"}, {"--help"}} {
		code, out, errOut := runIn(args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: mcp [global options] <command> [args]\n") ||
			!strings.Contains(out, "\nMain commands:\n  validate ") || !strings.Contains(out, "  -chdir=DIR ") {
			t.Errorf("mcp %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// mcp rollback is a main command, beside plan and apply.
	if _, out, _ := runIn("help"); !regexp.MustCompile(`(?s)Main commands:.*\n  rollback +Roll pools back.*\nAll other commands:`).MatchString(out) {
		t.Errorf("mcp help does not list rollback among the main commands:\n%s", out)
	}
	code, out, errOut := runIn("pln")
	if code != 1 || out != "" || !strings.Contains(errOut, `Error: mcp has no command "pln". Did you mean "plan"?`) {
		t.Errorf("mcp pln: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runIn("help", "aply")
	if code != 1 || !strings.Contains(errOut, `Did you mean "apply"?`) {
		t.Errorf("mcp help aply: exit %d\n%s", code, errOut)
	}
}

// Every command's help, as mcp help CMD and mcp CMD -h print it: a usage line with its
// arguments, what it does, every one of its options under a heading, its exit codes.
func TestEveryCommandHasHelp(t *testing.T) {
	dir := t.TempDir()
	names := []string{"fleet init", "fleet add", "fleet set", "fleet list", "fleet events"}
	for _, cmd := range commands {
		names = append(names, cmd.name)
	}
	for _, name := range names {
		words := strings.Fields(name)
		code, viaHelp, errOut := mcp(t, dir, append([]string{"help"}, words...)...)
		if code != 0 || errOut != "" {
			t.Errorf("mcp help %s: exit %d\n%s", name, code, errOut)
		}
		code, viaFlag, _ := mcp(t, dir, append(words, "-h")...)
		if code != 0 || viaFlag != viaHelp {
			t.Errorf("mcp %s -h: exit %d, and not what mcp help %s prints:\n%s\n----\n%s", name, code, name, viaFlag, viaHelp)
		}
		if !strings.HasPrefix(viaHelp, "Usage: mcp ") || !strings.Contains(viaHelp, "\nExit codes:\n\n  0 ") ||
			strings.Contains(viaHelp, "Usage of") {
			t.Errorf("mcp help %s:\n%s", name, viaHelp)
		}
		for _, l := range strings.Split(viaHelp, "\n") {
			if len([]rune(l)) > 100 {
				t.Errorf("mcp help %s: a line of %d columns: %q", name, len([]rune(l)), l)
			}
		}
		// Every option is under a heading of its own: the help's groups name them all.
		if strings.Contains(viaHelp, "\nOther options:\n") {
			t.Errorf("mcp help %s has options in no group:\n%s", name, viaHelp)
		}
	}
}

// mcp fleet set -h lists every key the local fleet takes.
func TestFleetSetHelpListsEveryKey(t *testing.T) {
	_, out, _ := mcp(t, t.TempDir(), "fleet", "set", "-h")
	for _, k := range append(local.SetKeys(), "label.K", "fault.write", "fault.restart", "fault.reboot", "fault.drain") {
		if !regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(k) + `[=,-]`).MatchString(out) {
			t.Errorf("fleet set -h does not list %s:\n%s", k, out)
		}
	}
}

// A flag a command does not know is an error that points at its help; arguments a command
// does not take are refused as Terraform refuses them, with -chdir named.
func TestArgumentsRefused(t *testing.T) {
	dir := quickstart(t)
	code, out, errOut := mcp(t, dir, "plan", "-nope")
	if code != 1 || out != "" || errOut != "╷\n│ Error: Unknown option -nope\n│\n│ mcp plan has no option -nope.\n│\n│ For more help on using this command, run:\n│   mcp plan -h\n╵\n" {
		t.Errorf("plan -nope: exit %d\n%s%s", code, out, errOut)
	}
	// A mistyped option gets the nearest one; a count below 1 is refused, not taken as 10.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "-tagret=node.worker-1"}, `mcp plan has no option -tagret. Did you mean "-target"?`},
		{[]string{"status", "--no-header"}, `mcp status has no option -no-header. Did you mean "-no-headers"?`},
		{[]string{"apply", "-parallelism=0", "-auto-approve"}, `Error: Invalid value "0" for flag -parallelism: want 1 or more`},
		{[]string{"apply", "-parallelism=-3", "-auto-approve"}, `Error: Invalid value "-3" for flag -parallelism: want 1 or more`},
		{[]string{"plan", "-target=node.wroker-1"}, `"wroker-1" in the fleet. Did you mean "node.worker-1"?`},
		{[]string{"status", "-o", "jsn"}, `-o jsn: want one of wide, json, yaml, name, jsonpath. Did you mean "json"?`},
		{[]string{"show"}, "│ Error: No plan file given"},
	} {
		code, out, errOut := mcp(t, dir, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || !strings.HasPrefix(errOut, "╷\n│ Error: ") {
			t.Errorf("mcp %s: exit %d, want 1 and %q in a box\n%s%s", strings.Join(c.args, " "), code, c.want, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state")); err == nil {
		t.Error("an apply with -parallelism below 1 ran")
	}
	for _, args := range [][]string{{"plan", "somedir"}, {"prune", "somedir"}, {"serve", "somedir"}, {"drift", "x"},
		{"status", "x"}, {"version", "x"}, {"fleet", "list", "x"}, {"graph", "a.plan", "b.plan"}, {"apply", "a.plan", "b.plan"},
		{"show", "a.plan", "b.plan"}, {"validate", ".", "x"}, {"force-unlock", "id", "x"}, {"pointer", "worker", "x", "-url", "http://b"},
		{"help", "plan", "x"}} {
		code, out, errOut := mcp(t, dir, args...)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, "╷\n│ Error: Too many command line arguments\n│\n│ mcp "+args[0]) ||
			!strings.Contains(errOut, "mcp -chdir=DIR ") {
			t.Errorf("mcp %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if code, _, errOut := mcp(t, dir, "agent", "x"); code != 1 || !strings.Contains(errOut, "Too many command line arguments: mcp agent takes none") {
		t.Errorf("agent x: exit %d\n%s", code, errOut)
	}
	// A pointer for a pool that does not exist would make a machine that never boots.
	if code, out, errOut := mcp(t, dir, "pointer", "workr", "-url", "http://boot:8080"); code != 1 || out != "" ||
		!strings.Contains(errOut, `The configuration has no pool "workr" (pools: infra, worker). Did you mean "worker"?`) {
		t.Errorf("pointer workr: exit %d\n%s%s", code, out, errOut)
	}
	// show -rendered refuses it in the same words.
	if code, out, errOut := mcp(t, dir, "show", "-rendered", "workr"); code != 1 || out != "" ||
		!strings.Contains(errOut, `The configuration has no pool "workr" (pools: infra, worker). Did you mean "worker"?`) {
		t.Errorf("show -rendered workr: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := mcp(t, dir, "pointer", "worker", "-url", "http://boot:8080"); code != 0 || !strings.Contains(out, "/config/worker") {
		t.Errorf("pointer worker: exit %d\n%s", code, out)
	}
	// A directory that does not exist is named as such.
	if code, _, errOut := mcp(t, dir, "validate", "nonexistent"); code != 1 || errOut != "╷\n│ Error: Nonexistent: no such directory\n╵\n" {
		t.Errorf("validate nonexistent: exit %d %q", code, errOut)
	}
	if code, _, errOut := runIn("-chdir="+filepath.Join(dir, "nope"), "plan"); code != 1 || !strings.Contains(errOut, "nope: no such directory") {
		t.Errorf("-chdir=nope plan: exit %d %q", code, errOut)
	}
	// show -rendered takes its pool after other flags.
	if code, out, errOut := mcp(t, dir, "show", "-rendered", "-json", "worker"); code != 0 || !strings.Contains(out, `"pool": "worker"`) {
		t.Errorf("show -rendered -json worker: exit %d\n%s", code, errOut)
	}
	if code, out, _ := mcp(t, dir, "show", "-rendered=infra"); code != 0 || !strings.HasPrefix(out, "rendered-infra-") {
		t.Errorf("show -rendered=infra: exit %d\n%s", code, out)
	}
}

// fmt -check, as terraform fmt -check: 3 for any unformatted file it was given, file or
// directory; 1 for a path that does not exist or is not *.hcl; 0 when all are formatted.
func TestFmtCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	ugly := write("sub/ugly.hcl", "pool \"x\" {\nmax_unavailable=1\n}\n")
	tidy := write("tidy.hcl", "pool \"x\" {\n  max_unavailable = 1\n}\n")
	write("notes.txt", "x")
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"fmt", "-check", ugly}, 3, filepath.Join(dir, ugly) + "\n"},
		{[]string{"fmt", "-check", "sub"}, 3, filepath.Join(dir, ugly) + "\n"},
		{[]string{"fmt", "-check", tidy}, 0, ""},
		{[]string{"fmt", "-check"}, 0, ""},
		{[]string{"fmt", "-check", tidy, ugly}, 3, filepath.Join(dir, ugly) + "\n"},
		{[]string{"fmt", "-check", "nonexistent"}, 1, ""},
		{[]string{"fmt", "-check", "notes.txt"}, 1, ""},
	} {
		code, out, errOut := mcp(t, dir, c.args...)
		if code != c.code || out != c.out || (code == 1) != (errOut != "") {
			t.Errorf("mcp %s: exit %d, out %q, err %q; want exit %d, out %q", strings.Join(c.args, " "), code, out, errOut, c.code, c.out)
		}
	}
	if code, out, _ := mcp(t, dir, "fmt", ugly); code != 0 || out == "" {
		t.Errorf("fmt FILE: exit %d %q", code, out)
	}
	if code, _, _ := mcp(t, dir, "fmt", "-check", ugly); code != 0 {
		t.Errorf("fmt FILE did not format it: -check exits %d", code)
	}
}

// mcp agent -once with nothing to do says so.
func TestAgentOnceSaysWhatItDid(t *testing.T) {
	root := t.TempDir()
	code, out, errOut := mcp(t, t.TempDir(), "agent", "-once", "-root", root, "-host", "record")
	if code != 0 || !strings.HasPrefix(out, "Nothing to do: no rendered config is desired (give -desired NAME, or write its name to "+root) {
		t.Errorf("agent -once: exit %d\n%s%s", code, out, errOut)
	}
}
