package acceptance

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/testkit/anybytes"
)

// bytesFile is one file of TestAnyBytesRoundTrip's config: where it goes, its bytes and mode.
type bytesFile struct {
	path string
	data []byte
	mode fs.FileMode
}

// coreosLinks gives root the links Fedora CoreOS and RHCOS have (relative, as rpm-ostree
// makes them) and their targets in /var, as systemd-tmpfiles makes them at boot.
func coreosLinks(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"usr", "var/usrlocal", "var/opt"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"usr/local": "../var/usrlocal", "opt": "var/opt"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// onDisk is where a file of path is on a root with the CoreOS links (linked) or without.
func onDisk(root, path string, linked bool) string {
	if rest, ok := strings.CutPrefix(path, "/usr/local/"); ok && linked {
		path = "/var/usrlocal/" + rest
	} else if rest, ok := strings.CutPrefix(path, "/opt/"); ok && linked {
		path = "/var/opt/" + rest
	}
	return filepath.Join(root, path)
}

// checkBytes: every file is on the root where the OS puts it, byte for byte, of its mode;
// with linked, /usr/local and /opt are still the OS's links.
func checkBytes(t *testing.T, what, root string, files []bytesFile, linked bool) {
	t.Helper()
	for _, f := range files {
		p := onDisk(root, f.path, linked)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("%s: %s: %d bytes (%v), want %d", what, f.path, len(got), err, len(f.data))
			continue
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != f.mode {
			t.Errorf("%s: %s: mode %o, want %o", what, f.path, st.Mode().Perm(), f.mode)
		}
	}
	for _, l := range []string{"usr/local", "opt"} {
		st, err := os.Lstat(filepath.Join(root, l))
		if linked && (err != nil || st.Mode()&fs.ModeSymlink == 0) {
			t.Errorf("%s: /%s is no longer the OS's link: %v %v", what, l, st, err)
		}
		if !linked && (err != nil || !st.IsDir()) {
			t.Errorf("%s: /%s is not a directory: %v %v", what, l, st, err)
		}
	}
}

// hclQuote is s as an HCL quoted string: HCL's escapes (no \\x), templates left as text.
func hclQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString("\\" + string(r))
		case r == '\n':
			b.WriteString("\\n")
		case (r == '{') && i > 0 && (s[i-1] == '$' || s[i-1] == '%'):
			b.WriteString(string(s[i-1]) + "{") // $${ and %%{ are a literal ${ and %{
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String() + "\""
}

// TestAnyBytesRoundTrip is the property end to end, through the real binaries: files of
// every class of bytes (anybytes) and random ones, given as content_base64 =
// filebase64(…) under /usr/local, /opt, /etc and /var, and INI text given as content, are
// planned to a saved plan and applied from it to the local fleet — workers with the CoreOS links into /var, infra nodes with
// plain directories — and are there byte for byte, with no drift (drift -detailed-exitcode
// 0); one byte changed on a node is drift, summarised (never printed raw). A node `mcp
// fleet add` boots from the served config has them too. Then the real Ignition client
// boots from `mcp serve` into a scratch root with the CoreOS links, and writes the same
// bytes through them (/usr/local/bin/mcp-hello among them).
func TestAnyBytesRoundTrip(t *testing.T) {
	exclusive(t)
	ign := ignitionClient(t)
	dir := localQuickstart(t, "0s", "0s")
	os.MkdirAll(filepath.Join(dir, "bytes"), 0o755)
	var files []bytesFile
	add := func(path, name string, data []byte, mode fs.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, "bytes", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, bytesFile{path, data, mode})
	}
	for name, b := range anybytes.Classes() {
		add("/usr/local/share/mcp-bytes/"+strings.ReplaceAll(name, " ", "-"), strings.ReplaceAll(name, " ", "-"), b, 0o644)
	}
	rng := rand.New(rand.NewPCG(30, 3))
	for i := range 12 {
		tree := []string{"/opt/mcp-bytes/", "/etc/mcp-bytes/", "/var/lib/mcp-bytes/"}[i%3]
		add(fmt.Sprintf("%srand-%d", tree, i), fmt.Sprintf("rand-%d", i), anybytes.Random(rng, 4096), 0o640)
	}
	var hcl strings.Builder
	hcl.WriteString("config \"85-bytes\" {\n  pools = [\"worker\", \"infra\"]\n")
	for _, f := range files {
		fmt.Fprintf(&hcl, "  file %q {\n    content_base64 = filebase64(\"bytes/%s\")\n    mode = \"%04o\"\n    on_change = [\"none\"]\n  }\n",
			f.path, filepath.Base(f.path), f.mode)
	}
	text := []bytesFile{{"/usr/local/bin/mcp-hello", []byte("#!/bin/sh\necho \"[hello]\" # {x} | ^ ` \\ \x7f\n"), 0o755},
		{"/etc/NetworkManager/conf.d/90-mcp.conf", []byte("[main]\ndns=none\n\n[connection]\nipv6.method=ignore\n"), 0o644}}
	for _, f := range text {
		fmt.Fprintf(&hcl, "  file %q {\n    content = %s\n    mode = \"%04o\"\n    on_change = [\"none\"]\n  }\n", f.path, hclQuote(string(f.data)), f.mode)
	}
	hcl.WriteString("}\n")
	files = append(files, text...)
	if err := os.WriteFile(filepath.Join(dir, "bytes.hcl"), []byte(hcl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes, _ := filepath.Glob(filepath.Join(dir, "fleet/nodes/*"))
	sort.Strings(nodes)
	for _, n := range nodes {
		if strings.HasPrefix(filepath.Base(n), "worker-") {
			coreosLinks(t, filepath.Join(n, "root"))
		}
	}

	// Through a saved plan, which holds the rendered configs with their bytes.
	if code, out := mcpIn(t, dir, "plan", "-no-color", "-out=bytes.plan"); code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, tail([]byte(out)))
	} else if strings.ContainsAny(out, "\x00\x7f\x1b\xff") {
		t.Errorf("the plan printed raw control or binary bytes:\n%q", tail([]byte(out)))
	}
	if code, out := mcpIn(t, dir, "apply", "-no-color", "bytes.plan"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, tail([]byte(out)))
	}
	for _, n := range nodes {
		checkBytes(t, filepath.Base(n), filepath.Join(n, "root"), files, strings.HasPrefix(filepath.Base(n), "worker-"))
	}
	if code, out := mcpIn(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after apply: exit %d, want 0 (nothing to do)\n%s", code, tail([]byte(out)))
	}
	if code, out := mcpIn(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("drift after apply: exit %d, want 0 (clean)\n%s", code, tail([]byte(out)))
	}
	every := onDisk(filepath.Join(dir, "fleet/nodes/worker-0/root"), "/usr/local/share/mcp-bytes/every-byte", true)
	b, _ := os.ReadFile(every)
	b[0x5d] = 'x'
	os.WriteFile(every, b, 0o644)
	code, out := mcpIn(t, dir, "drift", "-detailed-exitcode", "-no-color")
	if code != 2 || !strings.Contains(out, "/usr/local/share/mcp-bytes/every-byte") || !strings.Contains(out, "binary content: 256 B") {
		t.Errorf("drift with one byte changed on worker-0: exit %d, want 2 naming the file, summarised\n%s", code, tail([]byte(out)))
	}
	if strings.ContainsAny(out, "\x00\x7f\x1b\xff") {
		t.Errorf("drift printed raw control or binary bytes:\n%q", tail([]byte(out)))
	}

	// A node the local fleet adds boots from the served config into a root with the
	// CoreOS links, as every new node of a local fleet has them.
	if code, out := mcpIn(t, dir, "fleet", "add", "new-0", "-pool", "worker"); code != 0 {
		t.Fatalf("fleet add: exit %d\n%s", code, tail([]byte(out)))
	}
	checkBytes(t, "new-0", filepath.Join(dir, "fleet/nodes/new-0/root"), files, true)

	url := startServe(t, dir)
	R, S := bootScratch(t)
	coreosLinks(t, S)
	runIgnition(t, ign, R, S, "metal", "ignition.config.url="+url+"/config/worker", nil)
	checkBytes(t, "first boot", S, files, true)
}
