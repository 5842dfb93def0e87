package atomicfile

import (
	"path"
	"testing"
)

// TestIsTempNamesWhatWriteLeaves: the temporary file a write makes is what IsTemp
// recognises, and names that merely look alike are not.
func TestIsTempNamesWhatWriteLeaves(t *testing.T) {
	for _, rel := range []string{"x.json", "d/rendered-w-0123.json", "mcp.state"} {
		if n := path.Base(tempName(rel)); !IsTemp(n) {
			t.Errorf("IsTemp(%q) = false", n)
		}
	}
	// What links were made under before (nodeexec): swept too.
	if !IsTemp(".motd-hard.mcp-0123456789ab") {
		t.Error("IsTemp of a link's temporary twin of an earlier release = false")
	}
	for _, n := range []string{"x.json", ".x.json", "x.json.tmp-0123456789ab", ".x.tmp-0123", ".x.tmp-0123456789abcd", ".x.tmp-0123456789ag",
		".tmp-0123456789ab", ".x.tmp-0123456789AB", ".x.mcp-0123", "x.mcp-0123456789ab", ".mcp-0123456789ab"} {
		if IsTemp(n) {
			t.Errorf("IsTemp(%q) = true", n)
		}
	}
}
