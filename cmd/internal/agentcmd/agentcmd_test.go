package agentcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: mcp-agent -h prints the flags and exits 0, as mcp agent -h does.
func TestHelpExitsZero(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		var errb bytes.Buffer
		if code := Run(context.Background(), "mcp-agent", []string{h}, &errb); code != 0 || !strings.Contains(errb.String(), "Usage of mcp-agent") {
			t.Errorf("mcp-agent %s: exit %d, want 0 and the usage\n%s", h, code, errb.String())
		}
	}
	var errb bytes.Buffer
	if code := Run(context.Background(), "mcp-agent", []string{"-no-such-flag"}, &errb); code != 1 {
		t.Errorf("an unknown flag: exit %d, want 1", code)
	}
}
