package systemdhost

import (
	"context"
	"slices"
	"testing"
)

func TestCommandsRunInTheHostRoot(t *testing.T) {
	var ran [][]string
	h := &Host{Commands: DefaultCommands, Chroot: "/host", Run: func(_ context.Context, argv []string) error {
		ran = append(ran, argv)
		return nil
	}}
	if err := h.SetKernelArgs(context.Background(), []string{"nosmt"}, []string{"quiet"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Pivot(context.Background(), "quay.io/os@sha256:1"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"chroot", "/host", "rpm-ostree", "kargs", "--append-if-missing=nosmt", "--delete-if-present=quiet"},
		{"chroot", "/host", "rpm-ostree", "rebase", "ostree-unverified-registry:quay.io/os@sha256:1"},
	}
	if !slices.EqualFunc(ran, want, slices.Equal) {
		t.Errorf("ran %q, want %q", ran, want)
	}
}

// TestBootedImage: the booted deployment's container image reference, read from
// `rpm-ostree status --json` in the host's root, as a pool names images.
func TestBootedImage(t *testing.T) {
	status := `{"deployments":[
	  {"booted":false,"container-image-reference":"ostree-unverified-registry:quay.io/os:new","staged":true},
	  {"booted":true,"container-image-reference":"ostree-remote-registry:fedora:quay.io/fedora/fedora-coreos:stable","checksum":"ab"}]}`
	var ran []string
	h := &Host{Commands: DefaultCommands, Chroot: "/host", Output: func(_ context.Context, argv []string) ([]byte, error) {
		ran = argv
		return []byte(status), nil
	}}
	got, err := h.BootedImage(context.Background())
	if err != nil || got != "quay.io/fedora/fedora-coreos:stable" {
		t.Errorf("booted image %q, %v", got, err)
	}
	if want := []string{"chroot", "/host", "rpm-ostree", "status", "--json"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
	for status, want := range map[string]string{
		`{"deployments":[{"booted":true,"origin":"fedora:fedora/x86_64/coreos/stable"}]}`:                                "",
		`{"deployments":[{"booted":true,"container-image-reference":"ostree-unverified-registry:quay.io/os@sha256:1"}]}`: "quay.io/os@sha256:1",
	} {
		if got, err := BootedImageOf([]byte(status)); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", status, got, err, want)
		}
	}
	for _, bad := range []string{`{"deployments":[{"booted":false}]}`, `not json`} {
		if _, err := BootedImageOf([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestImageOfReference(t *testing.T) {
	for ref, want := range map[string]string{
		"ostree-unverified-registry:quay.io/os:1":                 "quay.io/os:1",
		"ostree-remote-registry:fedora:quay.io/os:1":              "quay.io/os:1",
		"ostree-unverified-image:docker://quay.io/os:1":           "quay.io/os:1",
		"ostree-unverified-image:registry:quay.io/os:1":           "quay.io/os:1",
		"ostree-remote-image:fedora:docker://quay.io/os@sha256:1": "quay.io/os@sha256:1",
		"ostree-image-signed:docker://quay.io/os:1":               "quay.io/os:1",
		"ostree-unverified-image:oci:/var/tmp/os":                 "oci:/var/tmp/os",
		"":             "",
		"quay.io/os:1": "quay.io/os:1",
	} {
		if got := ImageOfReference(ref); got != want {
			t.Errorf("ImageOfReference(%q) = %q, want %q", ref, got, want)
		}
	}
}
