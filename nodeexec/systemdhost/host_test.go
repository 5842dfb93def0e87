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
