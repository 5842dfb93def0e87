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
	t      *testing.T
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
	f := &fakeOSTree{t: t, root: t.TempDir(), status: status, revs: map[string]string{"vm:mcp/v2": csumV2}}
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
			t := f.t
			for _, a := range argv {
				if p, ok := strings.CutPrefix(a, "--origin-file="); ok {
					b, _ := os.ReadFile(filepath.Join(f.root, p))
					f.origin = string(b)
				}
			}
			f.ran = append(f.ran, argv)
			if slices.Equal(argv, []string{"ostree", "admin", "finalize-staged"}) {
				// As libostree: nothing while the lock is there.
				if _, err := os.Stat(filepath.Join(f.root, finalizationLock)); err == nil {
					return nil
				}
				f.status = strings.Replace(f.status, "(staged)", "(pending)", 1)
				f.finalized(t)
			}
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

// finalized writes the boot entry a finalization writes: the staged deployment's, with
// the kernel arguments its mark records.
func (f *fakeOSTree) finalized(t *testing.T) {
	for p, origin := range f.origins {
		if _, v, ok := strings.Cut(origin, stagedKey+"="); ok && strings.Contains(f.status, filepath.Base(strings.TrimSuffix(p, ".origin"))+" (pending)") {
			entry := "title Debian staged (ostree:0)\nversion 2\noptions " + nodeexec.FormatCmdline(unmark(strings.TrimSpace(v))) +
				" ostree=/ostree/boot.0/debian/def/0\nlinux /ostree/debian-def/vmlinuz\n"
			if err := os.WriteFile(filepath.Join(f.root, "boot/loader/entries/ostree-2-debian.conf"), []byte(entry), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
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

// TestOSTreeStatusStaged reads a deployment staged behind the finalization lock, as
// captured on a VM node (ostree 2022.7): listed first, staged and pending.
func TestOSTreeStatusStaged(t *testing.T) {
	b, err := os.ReadFile("testdata/ostree-admin-status-staged.txt")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ParseOSTreeStatus(b)
	want := []OSTreeDeployment{
		{Stateroot: "debian", Checksum: "563cc9fcc41887e9c98f6a8d5cbe7dcd61b1508079520656937af96dca3327c6", Staged: true, Pending: true, Version: "v2", Refspec: "vm:mcp/v2"},
		{Stateroot: "debian", Checksum: "5751af0f762590326783381fe21c70218735d7722716728afabc87a6c952b486", Booted: true, Version: "v1", Refspec: "vm:mcp/v1"},
	}
	if err != nil || !slices.Equal(ds, want) {
		t.Errorf("%+v, %v\nwant %+v", ds, err, want)
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

// stagedV2 is how ostree 2022.7 lists a deployment staged (--stage) for vm:mcp/v2:
// first, before the booted one.
const stagedV2 = "  debian " + csumV2 + ".0 (staged)\n    origin refspec: vm:mcp/v2\n"

// TestOSTreeStageThenSwitch: the stage pulls and deploys the image staged, behind the
// finalization lock, marked in its origin; run again it deploys nothing; the pivot in the
// slot then pulls and checks out nothing: it unlocks and finalizes the staged deployment.
func TestOSTreeStageThenSwitch(t *testing.T) {
	f := newFakeOSTree(t, bootedV1, entriesV1)
	h := f.host()
	ctx := context.Background()
	lock := filepath.Join(f.root, finalizationLock)
	h.Run = func(run func(context.Context, []string) error) func(context.Context, []string) error {
		return func(ctx context.Context, argv []string) error {
			if argv[2] == "ostree" && argv[4] == "deploy" {
				if _, err := os.Stat(lock); err != nil {
					t.Errorf("%q ran without the finalization lock", argv[2:])
				}
			}
			return run(ctx, argv)
		}
	}(h.Run)
	if err := h.Stage(ctx, "vm:mcp/v2", []string{"nosmt"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 2 || !slices.Equal(f.ran[0], []string{"ostree", "pull", "vm", "mcp/v2"}) {
		t.Fatalf("stage ran %q, want a pull then a deploy", f.ran)
	}
	want := []string{"ostree", "admin", "deploy", "--os=debian", "--stage", "--karg-none",
		"--karg-append=root=/dev/vda", "--karg-append=rw", "--karg-append=console=ttyS0", "--karg-append=nosmt"}
	if got := f.ran[1]; !slices.Equal(got[:len(want)], want) || got[len(got)-1] != csumV2 {
		t.Errorf("stage deployed with %q, want %q … %s", got, want, csumV2)
	}
	mark := "[origin]\nrefspec=vm:mcp/v2\n\n[mcp]\nstaged-kargs=root=/dev/vda rw console=ttyS0 nosmt\n"
	if f.origin != mark {
		t.Errorf("origin %q, want %q", f.origin, mark)
	}
	f.status = stagedV2 + bootedV1
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
	if err := h.SetKernelArgsBefore(ctx, []string{"nosmt"}, nil, "vm:mcp/v2"); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 0 {
		t.Errorf("the slot's kargs step ran %q, want nothing: the pivot finalizes the staged deployment with them", f.ran)
	}
	if err := h.Pivot(ctx, "vm:mcp/v2"); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"ostree", "admin", "finalize-staged"}}; !slices.EqualFunc(f.ran, want, slices.Equal) {
		t.Errorf("the switch ran %q, want %q (no pull, no deploy)", f.ran, want)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("the finalization lock is left after the switch")
	}
	// The pivot resumed (an agent restarted after it): the next boot is as asked already.
	f.ran = nil
	if err := h.Pivot(ctx, "vm:mcp/v2"); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) > 1 || len(f.ran) == 1 && f.ran[0][1] != "pull" {
		t.Errorf("a resumed switch ran %q, want at most a pull", f.ran)
	}
}

// TestOSTreeKargsAloneReplacesAStaleStage: a deployment a stopped apply staged for an
// image the plan no longer wants, with the very arguments a later kargs-only update asks:
// the kargs step deploys the booted image with them (which drops the staged deployment
// and its lock), since no pivot follows to finalize it — left alone, the reboot would
// boot without the arguments. Told the pivot that follows, it is left to it.
func TestOSTreeKargsAloneReplacesAStaleStage(t *testing.T) {
	mark := "[origin]\nrefspec=vm:mcp/v2\n\n[mcp]\nstaged-kargs=root=/dev/vda rw console=ttyS0 nosmt\n"
	for _, tc := range []struct {
		pivot  string
		deploy bool
	}{{"", true}, {"vm:mcp/v3", true}, {"vm:mcp/v2", false}} {
		f := newFakeOSTree(t, stagedV2+bootedV1, entriesV1)
		f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": mark}
		if err := f.host().SetKernelArgsBefore(context.Background(), []string{"nosmt"}, nil, tc.pivot); err != nil {
			t.Fatal(err)
		}
		deployed := slices.ContainsFunc(f.ran, func(argv []string) bool {
			return len(argv) > 2 && argv[2] == "deploy" && !slices.Contains(argv, "--stage") && argv[len(argv)-1] == csumV1
		})
		if deployed != tc.deploy {
			t.Errorf("pivot %q: ran %q; want the booted commit deployed with the arguments: %v", tc.pivot, f.ran, tc.deploy)
		}
	}
}

// TestOSTreeStageDropsTheRollbackFirst: what the finalization would delete in the slot —
// the rollback deployment — is undeployed before the stage, in service; the booted one
// stays.
func TestOSTreeStageDropsTheRollbackFirst(t *testing.T) {
	f := newFakeOSTree(t, bootedV1+"  debian "+csumV2+".3 (rollback)\n    origin refspec: vm:mcp/v2\n", entriesV1)
	if err := f.host().Stage(context.Background(), "vm:mcp/v2", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 3 || !slices.Equal(f.ran[1], []string{"ostree", "admin", "undeploy", "1"}) || !slices.Contains(f.ran[2], "--stage") {
		t.Errorf("ran %q, want a pull, the rollback undeployed, then the stage", f.ran)
	}
}

// TestOSTreeSwitchRefusesAnUnfinalized: a finalization that leaves the staged deployment
// staged (the lock came back, libostree refused) fails the switch instead of rebooting
// into the running deployment.
func TestOSTreeSwitchRefusesAnUnfinalized(t *testing.T) {
	f := newFakeOSTree(t, stagedV2+bootedV1, entriesV1)
	f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": "[origin]\nrefspec=vm:mcp/v2\n[mcp]\nstaged-kargs=-\n"}
	h := f.host()
	run := h.Run
	h.Run = func(ctx context.Context, argv []string) error {
		if err := run(ctx, argv); err != nil {
			return err
		}
		f.status = stagedV2 + bootedV1
		return nil
	}
	if err := h.Pivot(context.Background(), "vm:mcp/v2"); err == nil || !strings.Contains(err.Error(), "finalize-staged") {
		t.Errorf("pivot: %v, want the finalization's failure", err)
	}
}

// TestOSTreeStageReplacesAndLost: a deployment staged for an image the plan no longer
// wants is replaced by the new stage (ostree keeps one); a pivot that finds no staged
// deployment (lost: a power cut, another tool) pulls and deploys as without staging.
func TestOSTreeStageReplacesAndLost(t *testing.T) {
	const csumV3 = "3333333333333333333333333333333333333333333333333333333333333333"
	f := newFakeOSTree(t, stagedV2+bootedV1, entriesV1)
	f.revs["vm:mcp/v3"] = csumV3
	f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": "[origin]\nrefspec=vm:mcp/v2\n[mcp]\nstaged-kargs=-\n"}
	h := f.host()
	if err := h.Stage(context.Background(), "vm:mcp/v3", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 2 || !slices.Contains(f.ran[1], "--stage") || f.ran[1][len(f.ran[1])-1] != csumV3 {
		t.Errorf("ran %q, want a pull and v3 staged", f.ran)
	}
	f.status, f.ran = bootedV1, nil // the staged deployment is gone
	if err := h.Pivot(context.Background(), "vm:mcp/v3"); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 2 || f.ran[0][1] != "pull" || f.ran[1][len(f.ran[1])-1] != csumV3 || slices.Contains(f.ran[1], "--stage") {
		t.Errorf("ran %q, want a pull and a deploy of v3 as the default", f.ran)
	}
}

// TestOSTreeUnstageStaged: a rollback undeploys a staged deployment, never the rollback
// deployment after the booted one, though its origin carries a stage's mark (the mark
// stays in the origin of a deployment once finalized).
func TestOSTreeUnstageStaged(t *testing.T) {
	marked := "[origin]\nrefspec=vm:mcp/v2\n[mcp]\nstaged-kargs=-\n"
	f := newFakeOSTree(t, stagedV2+bootedV1+"  debian "+csumV2+".1 (rollback)\n    origin refspec: vm:mcp/v2\n", entriesV1)
	f.origins = map[string]string{"/ostree/deploy/debian/deploy/" + csumV2 + ".0.origin": marked,
		"/ostree/deploy/debian/deploy/" + csumV2 + ".1.origin": marked}
	h := f.host()
	run := h.Run
	h.Run = func(ctx context.Context, argv []string) error {
		f.status = bootedV1 + "  debian " + csumV2 + ".1 (rollback)\n    origin refspec: vm:mcp/v2\n"
		return run(ctx, argv)
	}
	if err := h.Unstage(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"ostree", "admin", "undeploy", "0"}}; !slices.EqualFunc(f.ran, want, slices.Equal) {
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
