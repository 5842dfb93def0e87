package localstate

import (
	"testing"
)

// The backend's spec: a path, by default mcp.state (the configuration language makes it
// absolute against the configuration's directory).
func TestSpec(t *testing.T) {
	if err := Spec.Check(); err != nil {
		t.Fatal(err)
	}
	s, err := Spec.With(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Spec.Open(s)
	if l, ok := b.(*Local); err != nil || !ok || l.Path != "mcp.state" {
		t.Errorf("default: %#v, %v", b, err)
	}
	if _, err := Spec.With(map[string]any{"path": ""}); err == nil {
		t.Error("an empty path was taken")
	}
}
