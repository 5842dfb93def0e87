// Command image builds mcp's container image without a container daemon (`make image`):
// mcp and mcp-agent, compiled statically for each platform, on a minimal base this
// command makes itself, as one OCI image index (go-containerregistry). It writes
//
//	OUT/oci/           the index as an OCI image layout
//	OUT/mcp-oci.tar    the same layout as one tarball (skopeo's oci-archive:, podman load)
//	OUT/digest         the index's digest
//
// and points deploy/kustomization.yaml's `images:` entry at REPO@DIGEST, so the
// manifests name the image by digest. Every timestamp is SOURCE_DATE_EPOCH (by default
// the commit's time): one commit gives one digest. With -push REF it also pushes the
// index to a registry that takes anonymous pushes (a registry that wants credentials: push
// OUT/oci with crane or skopeo).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "build/image", "output directory")
	version := fs.String("version", "0.1.0-dev", "the version stamped into mcp (make's VERSION)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated OS/ARCH[/VARIANT]")
	repo := fs.String("repo", "ghcr.io/mcpfleet/mcp", "the repository the manifests pull the image from")
	kustomization := fs.String("kustomization", "deploy/kustomization.yaml", "the kustomization whose images: entry gets the digest (empty: none)")
	push := fs.String("push", "", "also push the index to this reference (e.g. registry.example/mcp:0.1.0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	module, err := os.Getwd()
	if err != nil {
		return err
	}
	created, err := sourceDateEpoch(module)
	if err != nil {
		return err
	}
	o := Options{Module: module, Version: *version, Revision: gitOut(module, "rev-parse", "HEAD"),
		Created: created, Go: envOr("GO", "go"), Work: filepath.Join(*out, "bin")}
	for _, p := range strings.Split(*platforms, ",") {
		pl, err := v1.ParsePlatform(p)
		if err != nil {
			return err
		}
		o.Platforms = append(o.Platforms, *pl)
	}
	idx, err := buildIndex(o)
	if err != nil {
		return err
	}
	digest, err := write(idx, *out, *version)
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s (SOURCE_DATE_EPOCH=%d)\n", *repo, digest, created.Unix())
	if *kustomization != "" {
		if err := pinImage(*kustomization, *repo, digest.String()); err != nil {
			return err
		}
	}
	if *push != "" {
		ref, err := name.ParseReference(*push)
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(ref, idx); err != nil {
			return fmt.Errorf("pushing to %s: %w", ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref.Context(), digest)
	}
	return nil
}

// sourceDateEpoch is SOURCE_DATE_EPOCH when set, else the time of the commit checked out
// (reproducible-builds.org's convention).
func sourceDateEpoch(module string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		s = gitOut(module, "log", "-1", "--format=%ct")
	}
	if s == "" {
		return time.Time{}, fmt.Errorf("no SOURCE_DATE_EPOCH and no git commit to take it from")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

func gitOut(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
