package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
)

// kubectlBinary is the real kubectl of the control plane's release (make bin/kubectl builds
// it beside the apiserver). The tests that run it prove what users type: a missing kubectl
// fails them, naming the make target, rather than skipping what the docs promise.
func kubectlBinary(t *testing.T, env *k8senv.Env) string {
	t.Helper()
	k := filepath.Join(env.BinDir, "kubectl")
	if _, err := os.Stat(k); err != nil {
		t.Fatalf("kubectl is not built (%v): run make bin/kubectl", err)
	}
	return k
}

// kubectl runs kubectl as the plane's admin in dir and returns its standard output,
// failing the test when it fails.
func kubectl(t *testing.T, env *k8senv.Env, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(kubectlBinary(t, env), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, stderr)
	}
	return out
}
