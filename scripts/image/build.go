package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's user: a non-root uid with a passwd entry, as distroless's "nonroot".
// The agent's DaemonSet overrides it with runAsUser: 0 (it writes the host's root).
const (
	UserID   = 65532
	UserName = "nonroot"
	// BinDir is where the binaries are, on the image's PATH.
	BinDir = "/usr/local/bin"
)

// Binaries are the commands the image holds: the engine and boot server, and the lean
// node agent. Entrypoint is the first.
var Binaries = []string{"mcp", "mcp-agent"}

// Options say what to build.
type Options struct {
	Module    string    // the module's root directory (where go.mod is)
	Version   string    // stamped into mcp as engine.Version, as `make build` does
	Revision  string    // the commit, for the org.opencontainers.image.revision label
	Created   time.Time // SOURCE_DATE_EPOCH: every timestamp in the image
	Platforms []v1.Platform
	Go        string // the go command
	Work      string // where the binaries are compiled to
}

// buildIndex compiles the binaries for every platform and assembles one image per platform
// under one OCI image index.
func buildIndex(o Options) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		img, err := buildImage(o, p)
		if err != nil {
			return nil, fmt.Errorf("image for %s/%s: %w", p.OS, p.Architecture, err)
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	return idx, nil
}

func buildImage(o Options, p v1.Platform) (v1.Image, error) {
	dir := filepath.Join(o.Work, p.OS+"-"+p.Architecture)
	files := map[string][]byte{}
	for _, b := range Binaries {
		out := filepath.Join(dir, b)
		if err := compile(o, p, b, out); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(BinDir, "/")+"/"+b] = data
	}
	base, err := layer(baseFiles(), o.Created)
	if err != nil {
		return nil, err
	}
	bins, err := layer(files, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: o.Created}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "mcp scripts/image: /etc/passwd, /etc/group, /tmp, /home/" + UserName}},
		mutate.Addendum{Layer: bins, MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "mcp scripts/image: " + strings.Join(Binaries, ", ") + " in " + BinDir}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UserID, UserID),
		Entrypoint: []string{BinDir + "/" + Binaries[0]},
		Env:        []string{"PATH=" + BinDir + ":/usr/bin:/bin"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "mcp",
			"org.opencontainers.image.version":  o.Version,
			"org.opencontainers.image.revision": o.Revision,
			"org.opencontainers.image.source":   "https://github.com/mcpfleet/mcp",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// compile builds one command as `make build` does (the same -X version stamp), statically
// (CGO_ENABLED=0), without paths or VCS state in the binary (-trimpath, -buildvcs=false:
// an uncommitted file such as the kustomization `make image` writes must not change it).
func compile(o Options, p v1.Platform, name, out string) error {
	ldflags := "-s -w"
	if name == "mcp" {
		ldflags += " -X github.com/mcpfleet/mcp/engine.Version=" + o.Version
	}
	cmd := exec.Command(o.Go, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/"+name)
	cmd.Dir = o.Module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=")
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/%s for %s/%s: %w\n%s", name, p.OS, p.Architecture, err, stderr.Bytes())
	}
	return nil
}

// baseFiles is the minimal base: the users a container runtime resolves (root, and the
// non-root user the image runs as), a sticky /tmp and the user's home. No shell, no
// package manager, no CA bundle: mcp talks to the API server (its CA comes with the
// service account or the kubeconfig) and agents to the boot server (its CA is given).
func baseFiles() map[string][]byte {
	u := fmt.Sprint(UserID)
	return map[string][]byte{
		"etc/passwd":             []byte("root:x:0:0:root:/root:/sbin/nologin\n" + UserName + ":x:" + u + ":" + u + ":" + UserName + ":/home/" + UserName + ":/sbin/nologin\n"),
		"etc/group":              []byte("root:x:0:\n" + UserName + ":x:" + u + ":\n"),
		"tmp/":                   nil,
		"home/" + UserName + "/": nil,
	}
}

// layer makes a gzipped OCI layer of files (a name ending in / is a directory) with every
// timestamp at created, owners root (the user's home its own), entries sorted and parent
// directories listed: the same files give the same bytes.
func layer(files map[string][]byte, created time.Time) (v1.Layer, error) {
	data, err := tarOf(files, created)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

func tarOf(files map[string][]byte, created time.Time) ([]byte, error) {
	entries := map[string]bool{} // name → is a directory
	for name := range files {
		isDir := strings.HasSuffix(name, "/")
		entries[strings.TrimSuffix(name, "/")] = isDir
		for d := filepath.Dir(strings.TrimSuffix(name, "/")); d != "."; d = filepath.Dir(d) {
			entries[d] = true
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range entries {
			if !yield(n) {
				return
			}
		}
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := &tar.Header{Name: n, ModTime: created, Format: tar.FormatPAX}
		switch {
		case entries[n]:
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, n+"/", 0o755
			if n == "tmp" {
				h.Mode = 0o1777
			}
			if n == "home/"+UserName {
				h.Mode, h.Uid, h.Gid = 0o700, UserID, UserID
			}
		default:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(files[n]))
			if strings.HasPrefix(n, strings.TrimPrefix(BinDir, "/")+"/") {
				h.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(files[n]); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
