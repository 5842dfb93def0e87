package kubestate

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// The backend's spec: its namespace by default DefaultNamespace, a namespace name checked,
// and a cluster that cannot be found refused at the kubeconfig setting.
func TestSpec(t *testing.T) {
	if err := Spec.Check(); err != nil {
		t.Fatal(err)
	}
	s, err := Spec.With(nil)
	if err != nil || s.Str("namespace") != DefaultNamespace {
		t.Errorf("defaults %v, %v", s, err)
	}
	if _, err := Spec.With(map[string]any{"namespace": "Not_A_Name"}); err == nil || !strings.Contains(err.Error(), "not a namespace name") {
		t.Errorf("a bad namespace: %v", err)
	}
	s, _ = Spec.With(map[string]any{"kubeconfig": filepath.Join(t.TempDir(), "missing.yaml")})
	_, err = Spec.Open(s)
	var se *model.SettingError
	if !errors.As(err, &se) || se.Setting != "kubeconfig" || !strings.Contains(err.Error(), "kubernetes state backend") {
		t.Errorf("a missing kubeconfig: %v, want a SettingError of kubeconfig", err)
	}
}
