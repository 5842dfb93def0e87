package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestButaneBootsFromServe: a config written in Butane (a file and an enabled unit) is
// applied to the quickstart, and the real Ignition client, fetching the worker pool's
// config from `mcp serve`, writes the file with its content and mode and the unit,
// enabled, into a scratch root.
func TestButaneBootsFromServe(t *testing.T) {
	exclusive(t)
	ign := ignitionClient(t)
	const unit = "[Unit]\nDescription=Hello from Butane\n\n[Service]\nType=oneshot\nExecStart=/usr/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
	dir := applyQuickstart(t, map[string]string{
		"butane.hcl": `config "80-butane" {
  pools  = ["worker"]
  butane = file("worker.bu")
}
`,
		"worker.bu": `variant: fcos
version: 1.6.0
storage:
  files:
    - path: /etc/butane/hello.conf
      mode: 0640
      contents:
        inline: |
          greeting = hello from butane
systemd:
  units:
    - name: hello-butane.service
      enabled: true
      contents: |
` + indent(unit, "        "),
	})
	url := startServe(t, dir)
	S := firstBoot(t, ign, url+"/config/worker")

	p := filepath.Join(S, "etc/butane/hello.conf")
	if got, err := os.ReadFile(p); err != nil || string(got) != "greeting = hello from butane\n" {
		t.Errorf("/etc/butane/hello.conf: %v, content %q", err, got)
	} else if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Errorf("/etc/butane/hello.conf: mode %o, want 640", st.Mode().Perm())
	}
	if got, err := os.ReadFile(filepath.Join(S, "etc/systemd/system/hello-butane.service")); err != nil || string(got) != unit {
		t.Errorf("unit hello-butane.service: %v, contents %q", err, got)
	}
	if preset, _ := os.ReadFile(filepath.Join(S, "etc/systemd/system-preset/20-ignition.preset")); !strings.Contains(string(preset), "enable hello-butane.service") {
		t.Errorf("hello-butane.service is not enabled: the preset says %q", preset)
	}
	// The quickstart's own blocks are there beside it.
	if _, err := os.Stat(filepath.Join(S, "etc/chrony.conf")); err != nil {
		t.Errorf("the quickstart's /etc/chrony.conf: %v", err)
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}
