package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kernel argument with a quoted value (`dyndbg="file x +p"`, as the kernel documents
// them) is kept as written in the config and reaches the boot loader so, but the kernel
// drops the quotes: a node reports `dyndbg=file x +p`. Comparing the two as strings made
// it drift for ever and every plan re-apply it. Judged from the node's recorded arguments.
func TestQuotedKernelArgumentIsNotDrift(t *testing.T) {
	dir := quickstart(t)
	conf := "config \"80-dyndbg\" {\n  pools       = [\"worker\"]\n  kernel_args = [\"dyndbg=\\\"file x +p\\\"\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "dyndbg.hcl"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	node, err := os.ReadFile(filepath.Join(dir, "fleet/nodes/worker-0/node.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(node), `"dyndbg=file x +p"`) {
		t.Fatalf("worker-0 does not report the argument as the kernel reads it:\n%s", node)
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("drift after applying a quoted argument: exit %d, want 0\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after applying a quoted argument: exit %d, want 0\n%s%s", code, out, errOut)
	}
}
