package agentcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: mcp-agent -h prints its help on stdout and exits 0, as mcp agent -h
// does; an unknown flag is an error that points at it.
func TestHelpExitsZero(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), "mcp-agent", []string{h}, &out, &errb); code != 0 ||
			!strings.HasPrefix(out.String(), "Usage: mcp-agent [options]\n") || !strings.Contains(out.String(), "  -once ") {
			t.Errorf("mcp-agent %s: exit %d, want 0 and the help\n%s%s", h, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), "mcp-agent", []string{"-no-such-flag"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "For more help on using this command, run:\n  mcp-agent -h") {
		t.Errorf("an unknown flag: exit %d, want 1\n%s", code, errb.String())
	}
}
