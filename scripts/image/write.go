package main

import (
	"archive/tar"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// write puts idx as an OCI layout in out/oci (replacing what was there), tars the layout
// into out/mcp-oci.tar and writes out/digest. It returns the index's digest.
func write(idx v1.ImageIndex, out, version string) (v1.Hash, error) {
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return digest, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return digest, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	})); err != nil {
		return digest, fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	if err := tarDir(dir, filepath.Join(out, "mcp-oci.tar")); err != nil {
		return digest, err
	}
	return digest, os.WriteFile(filepath.Join(out, "digest"), []byte(digest.String()+"\n"), 0o644)
}

// tarDir writes the files of dir into a tarball, sorted, with no timestamps or owners of
// this machine in it.
func tarDir(dir, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Mode: 0o644, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

var (
	newNameLine = regexp.MustCompile(`(?m)^(\s+newName:\s*).*$`)
	digestLine  = regexp.MustCompile(`(?m)^(\s+digest:\s*).*$`)
)

// pinImage sets the newName and digest of the kustomization's images: entry (it has one,
// for the image name `mcp` the manifests use), leaving the rest of the file as it is.
func pinImage(path, repo, digest string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !newNameLine.Match(b) || !digestLine.Match(b) {
		return fmt.Errorf("%s: no images: entry with newName and digest to set", path)
	}
	b = newNameLine.ReplaceAll(b, []byte("${1}"+repo))
	b = digestLine.ReplaceAll(b, []byte("${1}"+digest))
	return os.WriteFile(path, b, 0o644)
}
