package systemdhost

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/nodeexec"
)

// fakeOSTree is a host root with boot entries and a status to print; it records what ran.
type fakeOSTree struct {
	root   string
	status string
	revs   map[string]string
	ran    [][]string
	origin string // the content of the --origin-file given, when one was
	// origins: the origin files of deployments, by path, as `cat` prints them
	origins map[string]string
}

const (
	csumV1 = "1111111111111111111111111111111111111111111111111111111111111111"
	csumV2 = "2222222222222222222222222222222222222222222222222222222222222222"
)

func newFakeOSTree(t *testing.T, status string, entries map[string]string) *fakeOSTree {
	t.Helper()
	f := &fakeOSTree{root: t.TempDir(), status: status, revs: map[string]string{"vm:mcp/v2": csumV2}}
	dir := filepath.Join(f.root, "boot/loader/entries")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(f.root, "tmp"), 0o755)
	for name, text := range entries {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fakeOSTree) host() *Host {
	strip := func(argv []string) []string { return argv[2:] } // chroot ROOT
	return &Host{Commands: OSTreeCommands, Chroot: f.root,
		Run: func(_ context.Context, argv []string) error {
			argv = strip(argv)
			for _, a := range argv {
				if p, ok := strings.CutPrefix(a, "--origin-file="); ok {
					b, _ := os.ReadFile(filepath.Join(f.root, p))
					f.origin = string(b)
				}
			}
			f.ran = append(f.ran, argv)
			return nil
		},
		Output: func(_ context.Context, argv []string) ([]byte, error) {
			argv = strip(argv)
			if argv[0] == "cat" {
				return []byte(f.origins[argv[1]]), nil
			}
			if argv[1] == "rev-parse" {
				return []byte(f.revs[argv[2]] + "\n"), nil
			}
			return []byte(f.status), nil
		}}
}

// TestOSTreeStatusOfOstree2022 reads `ostree admin status` as captured on the acceptance
// tests' VM nodes (Debian 12, ostree 2022.7): testdata/ostree-admin-status-*.txt, each
// named for what it shows.
func TestOSTreeStatusOfOstree2022(t *testing.T) {
	const v2 = "f3595dd93698b4ffbb218739007729e08118190f3ffdd733b898abda8bf169c9"
	v1 := func(booted, rollback bool) OSTreeDeployment {
		return OSTreeDeployment{Stateroot: "debian", Checksum: "d577e2df27663af1193c210f13e59660d4520d62913d77bc4729a6fb48f1bc80",
			Booted: booted, Rollback: rollback, Version: "v1", Refspec: "vm:mcp/v1"}
	}
	want := map[string][]OSTreeDeployment{
		"booted": {v1(true, false)},
		// after a pivot to v2 and its reboot
		"rollback": {{Stateroot: "debian", Checksum: v2, Booted: true, Version: "v2", Refspec: "vm:mcp/v2"}, v1(false, true)},
		// a commit deployed that did not boot: the machine fell back to v2
		"pending": {{Stateroot: "debian", Checksum: "055cf4b6213d4892539debc77fa242bf652998167a4f1f451ed90a66233adc09", Pending: true, Version: "broken", Refspec: "vm:mcp/broken"},
			{Stateroot: "debian", Checksum: v2, Booted: true, Version: "v2", Refspec: "vm:mcp/v2"}},
	}
	for name, want := range want {
		b, err := os.ReadFile("testdata/ostree-admin-status-" + name + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		ds, err := ParseOSTreeStatus(b)
		if err != nil || !slices.Equal(ds, want) {
			t.Errorf("%s: %+v, %v\nwant %+v", name, ds, err, want)
		}
	}
}

func TestOSTreeBootedImage(t *testing.T) {
	status := "  debian " + csumV2 + ".0 (pending)\n    Version: v2\n    origin refspec: vm:mcp/v2\n" +
		"* debian " + csumV1 + ".0\n    Version: v1\n    origin refspec: vm:mcp/v1\n"
	for st, want := range map[string]string{
		status: "vm:mcp/v1",
		"* debian " + csumV1 + ".1\n    origin: <unknown origin type>\n": csumV1,
	} {
		if got, err := OSTreeBootedImageOf([]byte(st)); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", st, got, err, want)
		}
	}
	ds, _ := ParseOSTreeStatus([]byte(status))
	if !ds[0].Pending || ds[0].Booted || !ds[1].Booted || ds[1].Serial != 0 {
		t.Errorf("parsed %+v", ds)
	}
	for _, bad := range []string{"  debian " + csumV1 + ".0\n", "garbage\n", "* debian xyz.0\n"} {
		if _, err := OSTreeBootedImageOf([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseOSTreeImage(t *testing.T) {
	for in, want := range map[string]OSTreeImage{
		"vm:mcp/v2": {Remote: "vm", Rev: "mcp/v2"}, "mcp/v2": {Rev: "mcp/v2"},
		csumV1: {Rev: csumV1}, "vm:" + csumV1: {Remote: "vm", Rev: csumV1},
	} {
		if got, err := ParseOSTreeImage(in); err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ":ref", "vm:", "vm:a b", "-x"} {
		if _, err := ParseOSTreeImage(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

const bootedV1 = "* debian " + csumV1 + ".0\n    Version: v1\n    origin refspec: vm:mcp/v1\n"

var entriesV1 = map[string]string{
	"ostree-1-debian.conf": "title Debian v1 (ostree:0)\nversion 1\noptions root=/dev/vda rw console=ttyS0 ostree=/ostree/boot.1/debian/abc/0\nlinux /ostree/debian-abc/vmlinuz\n",
}

// TestOSTreeKargsThenPivot: a kargs step deploys the booted commit again with the
// arguments changed and its origin kept; the pivot that follows deploys the new image
// with the arguments of the entry that boots next plus this update's changes, in full.
func TestOSTreeKargsThenPivot(t *testing.T) {
	f := newFakeOSTree(t, bootedV1, entriesV1)
	h := f.host()
	if err := h.SetKernelArgs(context.Background(), []string{"nosmt", "rw"}, []string{"console=ttyS0"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ostree", "admin", "deploy", "--os=debian", "--karg-none", "--karg-append=root=/dev/vda", "--karg-append=rw", "--karg-append=nosmt"}
	if got := f.ran[0]; !slices.Equal(got[:len(want)], want) || got[len(got)-1] != csumV1 {
		t.Errorf("kargs ran %q, want %q … %s", got, want, csumV1)
	}
	if f.origin != "[origin]\nrefspec=vm:mcp/v1\n" {
		t.Errorf("origin %q, want the booted refspec kept", f.origin)
	}
	// The kargs step's entry is now the next boot's (without the booted's console=).
	os.WriteFile(filepath.Join(f.root, "boot/loader/entries/ostree-2-debian.conf"),
		[]byte("version 2\noptions root=/dev/vda rw nosmt ostree=/ostree/boot.0/debian/abc/0\nlinux /x\n"), 0o644)
	f.status = "  debian " + csumV1 + ".1 (pending)\n    origin refspec: vm:mcp/v1\n" + bootedV1
	if err := h.Pivot(context.Background(), "vm:mcp/v2"); err != nil {
		t.Fatal(err)
	}
	if got := f.ran[1]; !slices.Equal(got, []string{"ostree", "pull", "vm", "mcp/v2"}) {
		t.Errorf("pivot pulled with %q", got)
	}
	want = []string{"ostree", "admin", "deploy", "--os=debian", "--karg-none", "--karg-append=root=/dev/vda", "--karg-append=rw", "--karg-append=nosmt"}
	if got := f.ran[2]; !slices.Equal(got[:len(want)], want) || got[len(got)-1] != csumV2 {
		t.Errorf("pivot ran %q, want %q … %s", got, want, csumV2)
	}
	if f.origin != "[origin]\nrefspec=vm:mcp/v2\n" {
		t.Errorf("origin %q, want vm:mcp/v2", f.origin)
	}
}

// TestOSTreeNothingToDeploy: asked again for what the next boot already has (a resumed
// step), nothing is deployed.
func TestOSTreeNothingToDeploy(t *testing.T) {
	f := newFakeOSTree(t, bootedV1, entriesV1)
	if err := f.host().SetKernelArgs(context.Background(), []string{"rw"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 0 {
		t.Errorf("ran %q, want nothing", f.ran)
	}
}

// TestOSTreeUnstage undeploys what would boot before the booted deployment, and nothing
// else.
func TestOSTreeUnstage(t *testing.T) {
	f := newFakeOSTree(t, "  debian "+csumV2+".0 (pending)\n"+bootedV1, entriesV1)
	h := f.host()
	h.Run = func(_ context.Context, argv []string) error {
		f.ran = append(f.ran, argv[2:])
		f.status = bootedV1 // the pending deployment is gone
		return nil
	}
	if err := h.Unstage(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"ostree", "admin", "undeploy", "0"}}; !slices.EqualFunc(f.ran, want, slices.Equal) {
		t.Errorf("ran %q, want %q", f.ran, want)
	}
}

func TestChangeKernelArgs(t *testing.T) {
	got := nodeexec.WithArgs([]string{"root=/dev/vda", "quiet", "rw"}, []string{"nosmt", "rw"}, []string{"quiet"})
	if want := []string{"root=/dev/vda", "rw", "nosmt"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// The boot entry's arguments are read as the kernel reads them, a config's may be quoted:
	// one argument either way, added once and removed by either form.
	entry := []string{"root=/dev/vda", "dyndbg=file x +p"}
	if got := nodeexec.WithArgs(entry, []string{`dyndbg="file x +p"`}, nil); !slices.Equal(got, entry) {
		t.Errorf("a quoted argument the entry has: got %q, want %q", got, entry)
	}
	if got, want := nodeexec.WithArgs(entry, nil, []string{`dyndbg="file x +p"`}), []string{"root=/dev/vda"}; !slices.Equal(got, want) {
		t.Errorf("removing a quoted argument: got %q, want %q", got, want)
	}
}

// TestOSTreeStageThenSwitch: the stage pulls and deploys the image not as the default,
// marked in its origin; run again it deploys nothing; the pivot in the slot then pulls
// nothing and deploys the staged commit as the default.
func TestOSTreeStageThenSwitch(t *testing.T) {
	f := newFakeOSTree(t, bootedV1, entriesV1)
	h := f.host()
	ctx := context.Background()
	if err := h.Stage(ctx, "vm:mcp/v2", []string{"nosmt"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 2 || !slices.Equal(f.ran[0], []string{"ostree", "pull", "vm", "mcp/v2"}) {
		t.Fatalf("stage ran %q, want a pull then a deploy", f.ran)
	}
	want := []string{"ostree", "admin", "deploy", "--os=debian", "--not-as-default", "--retain", "--karg-none",
		"--karg-append=root=/dev/vda", "--karg-append=rw", "--karg-append=console=ttyS0", "--karg-append=nosmt"}
	if got := f.ran[1]; !slices.Equal(got[:len(want)], want) || got[len(got)-1] != csumV2 {
		t.Errorf("stage deployed with %q, want %q … %s", got, want, csumV2)
	}
	mark := "[origin]\nrefspec=vm:mcp/v2\n\n[mcp]\nstaged-kargs=root=/dev/vda rw console=ttyS0 nosmt\n"
	if f.origin != mark {
		t.Errorf("origin %q, want %q", f.origin, mark)
	}
	// As ostree 2022.7 lists it: the staged deployment after the booted one.
	f.status = bootedV1 + "  debian " + csumV2 + ".0\n    origin refspec: vm:mcp/v2\n"
	f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": mark}
	f.ran = nil
	if err := h.Stage(ctx, "vm:mcp/v2", []string{"nosmt"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 1 || f.ran[0][1] != "pull" {
		t.Errorf("a stage run again ran %q, want its pull only", f.ran)
	}
	f.ran = nil
	// The slot: kargs, then pivot. The kargs step leaves the staged deployment to the
	// pivot (a deploy of the booted image would remove it).
	if err := h.SetKernelArgs(ctx, []string{"nosmt"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 0 {
		t.Errorf("the slot's kargs step ran %q, want nothing: the pivot deploys the staged commit with them", f.ran)
	}
	if err := h.Pivot(ctx, "vm:mcp/v2"); err != nil {
		t.Fatal(err)
	}
	want = []string{"ostree", "admin", "deploy", "--os=debian", "--karg-none", "--karg-append=root=/dev/vda",
		"--karg-append=rw", "--karg-append=console=ttyS0", "--karg-append=nosmt"}
	if len(f.ran) != 1 || !slices.Equal(f.ran[0][:len(want)], want) || f.ran[0][len(f.ran[0])-1] != csumV2 {
		t.Errorf("the switch ran %q, want one deploy of %s as the default (no pull)", f.ran, csumV2)
	}
	if f.origin != "[origin]\nrefspec=vm:mcp/v2\n" {
		t.Errorf("the switch's origin %q: want it unmarked", f.origin)
	}
}

// TestOSTreeStageReplacesAndLost: a deployment staged for an image the plan no longer
// wants is undeployed before the new one is staged; a pivot that finds no staged
// deployment (lost: a power cut, another tool) pulls and deploys as without staging.
func TestOSTreeStageReplacesAndLost(t *testing.T) {
	const csumV3 = "3333333333333333333333333333333333333333333333333333333333333333"
	f := newFakeOSTree(t, bootedV1+"  debian "+csumV2+".0\n    origin refspec: vm:mcp/v2\n", entriesV1)
	f.revs["vm:mcp/v3"] = csumV3
	f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": "[origin]\nrefspec=vm:mcp/v2\n[mcp]\nstaged-kargs=-\n"}
	h := f.host()
	if err := h.Stage(context.Background(), "vm:mcp/v3", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 3 || !slices.Equal(f.ran[1], []string{"ostree", "admin", "undeploy", "1"}) || f.ran[2][len(f.ran[2])-1] != csumV3 {
		t.Errorf("ran %q, want a pull, the v2 one undeployed, v3 deployed", f.ran)
	}
	f.status, f.ran = bootedV1, nil // the staged deployment is gone
	if err := h.Pivot(context.Background(), "vm:mcp/v3"); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 2 || f.ran[0][1] != "pull" || f.ran[1][len(f.ran[1])-1] != csumV3 || slices.Contains(f.ran[1], "--not-as-default") {
		t.Errorf("ran %q, want a pull and a deploy of v3 as the default", f.ran)
	}
}

// TestOSTreeUnstageStaged: a rollback undeploys what a stage wrote, never the rollback
// deployment that is not mcp's.
func TestOSTreeUnstageStaged(t *testing.T) {
	f := newFakeOSTree(t, bootedV1+"  debian "+csumV2+".0\n    origin refspec: vm:mcp/v2\n"+
		"  debian "+csumV2+".1 (rollback)\n    origin refspec: vm:mcp/v2\n", entriesV1)
	f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": "[mcp]\nstaged-kargs=-\n"}
	if err := f.host().Unstage(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"ostree", "admin", "undeploy", "1"}}; !slices.EqualFunc(f.ran, want, slices.Equal) {
		t.Errorf("ran %q, want %q", f.ran, want)
	}
}

// TestStagedMarkRoundTrip: the kernel arguments a staged deployment's mark records read
// back as the kernel reads them (a quoted value without its quotes: the same argument to
// --karg-append), an argument with a blank or a backslash included; none is "-".
func TestStagedMarkRoundTrip(t *testing.T) {
	for _, kargs := range [][]string{{}, {"root=/dev/vda", "rw"}, {`dyndbg="file x.c +p"`, `a=b\c`}} {
		if got := unmark(stagedMark(kargs)); nodeexec.FormatCmdline(got) != nodeexec.FormatCmdline(kargs) || len(got) != len(kargs) {
			t.Errorf("%q: marked %q, read back %q", kargs, stagedMark(kargs), got)
		}
	}
}
