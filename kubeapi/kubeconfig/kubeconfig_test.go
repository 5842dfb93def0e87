package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A kubeconfig that is a FIFO, or that names one as its CA, is refused at once, naming
// it, instead of blocking in client-go's open until something writes to it.
func TestFIFOKubeconfigRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	named := filepath.Join(dir, "config")
	os.WriteFile(named, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", certificate-authority: pipe}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	for _, path := range []string{fifo, named} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(path, "")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO), not a regular file") {
				t.Errorf("%s: %v", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Load still blocked after 10 s", path)
		}
	}
}
