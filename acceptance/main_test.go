package acceptance

import (
	"os"
	"testing"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
)

// TestMain stops what the package's tests share once they are all done: the control plane
// (k8senv.Shared) and the mcp binaries (mcpBinary).
func TestMain(m *testing.M) {
	code := m.Run()
	k8senv.StopShared(code != 0)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
