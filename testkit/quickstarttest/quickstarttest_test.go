package quickstarttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Both durations are set, whatever the spacing that aligns them.
func TestCopySetsBothDurations(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(Copy(t, "../../examples/quickstart", "7s", "9s"), "main.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if !strings.Contains(s, `drain_duration = "7s"`) || !strings.Contains(s, `reboot_duration = "9s"`) {
		t.Errorf("durations not set:\n%s", b)
	}
}
