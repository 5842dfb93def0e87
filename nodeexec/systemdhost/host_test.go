package systemdhost

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestBootedImageOfTheTools: the booted image read from each OS tool's real status output
// (testdata: rpm-ostree's of a Fedora CoreOS node with an update staged; bootc's of a
// CentOS bootc host switching streams), through the command -os-tool chooses.
func TestBootedImageOfTheTools(t *testing.T) {
	for tool, tc := range map[string]struct {
		file string
		argv []string
		want string
	}{
		"rpm-ostree": {"rpm-ostree-status.json", []string{"chroot", "/host", "rpm-ostree", "status", "--json"}, "quay.io/fedora/fedora-coreos:stable"},
		"bootc":      {"bootc-status.json", []string{"chroot", "/host", "bootc", "status", "--format=json"}, "quay.io/centos-bootc/centos-bootc:stream9"},
	} {
		status, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := CommandsFor(tool)
		if err != nil {
			t.Fatal(err)
		}
		var ran []string
		h := &Host{Commands: cmds, Chroot: "/host", Output: func(_ context.Context, argv []string) ([]byte, error) {
			ran = argv
			return status, nil
		}}
		if got, err := h.BootedImage(context.Background()); err != nil || got != tc.want {
			t.Errorf("%s: booted image %q, %v; want %q (the booted deployment's, not the staged one's)", tool, got, err, tc.want)
		}
		if !slices.Equal(ran, tc.argv) {
			t.Errorf("%s: ran %q, want %q", tool, ran, tc.argv)
		}
	}
	if _, err := CommandsFor("dnf"); err == nil {
		t.Error("an unknown OS tool was taken")
	}
}

func TestBootcBootedImageOf(t *testing.T) {
	for status, want := range map[string]string{
		`{"kind":"BootcHost","status":{"booted":{"image":{"image":{"image":"quay.io/os:1","transport":"registry"},"imageDigest":"sha256:1"}}}}`:               "quay.io/os:1",
		`{"kind":"BootcHost","status":{"booted":{"image":{"image":{"image":"localhost/os:dev","transport":"containers-storage"},"imageDigest":"sha256:1"}}}}`: "containers-storage:localhost/os:dev",
		`{"kind":"BootcHost","status":{"booted":{"image":null,"ostree":{"checksum":"ab"}}}}`:                                                                  "",
	} {
		if got, err := BootcBootedImageOf([]byte(status)); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", status, got, err, want)
		}
	}
	for bad, says := range map[string]string{
		`{"apiVersion":"org.containers.bootc/v1","kind":"BootcHost","status":{"booted":null}}`: "-os-tool=rpm-ostree",
		`{"kind":"Something"}`: "not a BootcHost",
		`deployments: []`:      "bootc status",
	} {
		if _, err := BootcBootedImageOf([]byte(bad)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %q", bad, err, says)
		}
	}
}

// TestKernelArgs: the running kernel's arguments from a real Fedora CoreOS /proc/cmdline:
// the boot loader's BOOT_IMAGE= left out, a quoted value whole.
func TestKernelArgs(t *testing.T) {
	h := &Host{Cmdline: filepath.Join("testdata", "cmdline")}
	got, err := h.KernelArgs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rw", "mitigations=auto,nosmt",
		"ostree=/ostree/boot.1/fedora-coreos/126b00a51488ea02ebc861dd33d413eb58f3287fd75646e8d215e46d88f81197/0",
		"ignition.platform.id=qemu", "console=tty0", "console=ttyS0,115200n8", "root=UUID=34bfd606-f2cd-43f9-9b54-9e62aec79722",
		"rootflags=prjquota", "boot=UUID=a0bed1a7-d1b0-4674-8117-713b2f1bff75", "nosmt", "dyndbg=file drivers/usb/* +p"}
	if !slices.Equal(got, want) {
		t.Errorf("kernel args\n%q\nwant\n%q", got, want)
	}
	if _, err := (&Host{Cmdline: filepath.Join(t.TempDir(), "none")}).KernelArgs(context.Background()); err == nil {
		t.Error("an unreadable command line gave no error")
	}
}

// TestBootedImageOfUpstreamSamples reads the tools' status as their projects publish it
// (testdata/upstream/SOURCES.md): the fields read are where the real tools put them.
func TestBootedImageOfUpstreamSamples(t *testing.T) {
	for file, tc := range map[string]struct {
		read func([]byte) (string, error)
		want string
	}{
		"rpm-ostree-status-rhcos-4.12.json": {BootedImageOf, "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:90780b08939d913d9cfc5565eecdd12055dd57301b2109985e149830a92ed6b1"},
		"bootc-status-staged-booted.json":   {BootcBootedImageOf, "quay.io/example/someimage:latest"},
		"bootc-status-local-oci.json":       {BootcBootedImageOf, "oci:/var/mnt/osupdate"},
	} {
		b, err := os.ReadFile(filepath.Join("testdata/upstream", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tc.read(b); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", file, got, err, tc.want)
		}
	}
}
