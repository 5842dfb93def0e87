package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestImage builds the image index twice, as `make image` does, into two directories and
// checks: one digest; go-containerregistry's validate passes on the OCI layout written;
// each platform's config runs mcp as the non-root user; the binaries inside are static
// and mcp prints the version `make build` stamps. (The go build cache is shared by the two
// builds: that the compiler gives the same bytes for the same inputs is Go's promise;
// what this checks is that nothing of the build's time or place gets into the image.)
//
// make test builds for linux/amd64 alone: a cold build cache cross-compiles client-go for
// arm64 in many minutes on a small CI machine, and what is checked is the same code per
// platform. MCP_IMAGE_TEST_PLATFORMS=all checks the index of both, as make image builds it.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles mcp")
	}
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}}
	if os.Getenv("MCP_IMAGE_TEST_PLATFORMS") == "all" {
		platforms = append(platforms, v1.Platform{OS: "linux", Architecture: "arm64"})
	}
	module, _ := filepath.Abs("../..")
	version := makeVersion(t, module)
	build := func() (v1.Hash, string) {
		out := t.TempDir()
		o := Options{Module: module, Version: version, Revision: "test", Created: time.Unix(1700000000, 0).UTC(),
			Go: "go", Work: filepath.Join(out, "bin"),
			Platforms: platforms}
		idx, err := buildIndex(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := write(idx, out, version)
		if err != nil {
			t.Fatal(err)
		}
		return d, out
	}
	d1, out := build()
	d2, _ := build()
	if d1 != d2 {
		t.Fatalf("two builds of one tree: digests %s and %s", d1, d2)
	}
	t.Logf("index %s", d1)

	p, err := layout.FromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, _ := top.IndexManifest()
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != d1 {
		t.Fatalf("layout index.json %+v: want the one index %s", im.Manifests, d1)
	}
	idx, err := top.ImageIndex(d1)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("validate.Index: %v", err)
	}
	m, _ := idx.IndexManifest()
	var archs []string
	for _, desc := range m.Manifests {
		archs = append(archs, desc.Platform.OS+"/"+desc.Platform.Architecture)
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.Architecture != desc.Platform.Architecture || cf.OS != "linux" {
			t.Errorf("%s: config says %s/%s", desc.Platform, cf.OS, cf.Architecture)
		}
		if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/local/bin/mcp" || cf.Config.User != "65532:65532" {
			t.Errorf("%s: entrypoint %q user %q", desc.Platform, got, cf.Config.User)
		}
		sz, _ := img.Size()
		layers, _ := img.Layers()
		var total int64
		for _, l := range layers {
			n, _ := l.Size()
			total += n
		}
		t.Logf("%s: manifest %s, %d layers, %.1f MiB compressed", desc.Platform.Architecture, desc.Digest, len(layers), float64(total+sz)/(1<<20))
		if desc.Platform.Architecture != runtime.GOARCH {
			continue
		}
		files := extract(t, img)
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("/etc/passwd: %q", files["etc/passwd"])
		}
		dir := t.TempDir()
		for _, b := range Binaries {
			os.WriteFile(filepath.Join(dir, b), files["usr/local/bin/"+b], 0o755)
			info, err := exec.Command("go", "version", "-m", filepath.Join(dir, b)).Output()
			if err != nil || !strings.Contains(string(info), "CGO_ENABLED=0") || !strings.Contains(string(info), "-trimpath=true") {
				t.Errorf("%s: build info %s (%v): want CGO_ENABLED=0 and -trimpath", b, info, err)
			}
		}
		got, err := exec.Command(filepath.Join(dir, "mcp"), "version").Output()
		if err != nil || strings.TrimSpace(string(got)) != "mcp "+version {
			t.Errorf("mcp version in the image: %q (%v), want make build's %q", got, err, "mcp "+version)
		}
	}
	var want []string
	for _, p := range platforms {
		want = append(want, p.OS+"/"+p.Architecture)
	}
	if strings.Join(archs, ",") != strings.Join(want, ",") {
		t.Errorf("platforms %v", archs)
	}
	if _, err := os.Stat(filepath.Join(out, "mcp-oci.tar")); err != nil {
		t.Error(err)
	}
}

// makeVersion is the Makefile's VERSION default, what `make build` stamps.
func makeVersion(t *testing.T, module string) string {
	b, err := os.ReadFile(filepath.Join(module, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION\s*\?=\s*(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no VERSION in the Makefile")
	}
	return string(m[1])
}

func extract(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, _ := img.Layers()
	files := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.ModTime.Unix() != 1700000000 {
				t.Errorf("%s: mtime %v, want SOURCE_DATE_EPOCH", h.Name, h.ModTime)
			}
			b, _ := io.ReadAll(tr)
			files[h.Name] = b
		}
		rc.Close()
	}
	return files
}
