// Package vmnode runs real machines for acceptance tests: QEMU VMs booting a Debian root
// made an OSTree system (real kernel, systemd, D-Bus, ostree deployments), built by
// `make bin/vm` (scripts/build-vm-image.sh) into bin/vm.
//
// The harness is the machines' boot loader: QEMU runs with -no-reboot, so a reboot inside
// a VM ends QEMU; the harness reads the Boot Loader Specification entries ostree wrote from
// the stopped disk (debugfs), and boots the default one (the highest version) again, with
// its kernel, initramfs and options. Whether QEMU ended for a reboot or a power-off is told
// by QMP's SHUTDOWN event (guest-reset or guest-shutdown); Kill is a power loss (SIGKILL of
// QEMU), after which the VM stays off until PowerOn. With BootCounter, an entry that does
// not come up (the VM resets or stops before its command channel answers, or does not
// answer within BootTimeout) is remembered as bad and the next entry is booted, as a boot
// loader's boot counting falls back to the previous deployment.
//
// Commands run inside a VM over a virtio-serial channel (Run); the VM's network is QEMU's
// user network, where the guest sees the host's loopback at 10.0.2.2 and nothing else
// (no gateway). Each VM shares two read-only directories over 9p: Share (mounted at
// /run/mcp: the mcp-agent binary and its configuration, which the image's mcp-agent.service
// runs) and the image's OSTree archive repository (/run/updates/repo: the node repository's
// remote "vm").
//
// KVM is used only where the CPU offers vmx or svm; otherwise QEMU emulates (TCG), slow
// but real. At most MaxVMs run at once on the machine, across test processes. When the image, QEMU or debugfs is
// missing a test is skipped with the reason, unless MCP_REQUIRE_VM=1 (make test-vm sets it):
// then it fails.
package vmnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Image is a built VM image (bin/vm).
type Image struct {
	Dir     string            // bin/vm-<hash>
	Disk    string            // the node disk template (raw ext4, OSTree sysroot, mcp/v1 deployed)
	Updates string            // the directory holding the archive repository "repo"
	Commits map[string]string // "v1", "v2", "v3", "broken" → commit checksum
	Kernel  string            // the kernel version in the image
}

// Find returns the built image, or skips or fails the test (see the package comment).
func Find(t testing.TB) *Image {
	t.Helper()
	img, err := find()
	if err != nil {
		msg := fmt.Sprintf("the VM nodes cannot run here: %v (run `make bin/vm`, as make test does; it needs root)", err)
		if os.Getenv("MCP_REQUIRE_VM") == "1" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING the real-machine test: " + msg + "; set MCP_REQUIRE_VM=1 to make this a failure")
	}
	return img
}

func find() (*Image, error) {
	for _, p := range []string{"qemu-system-x86_64", "debugfs"} {
		if _, err := exec.LookPath(p); err != nil {
			return nil, fmt.Errorf("%s is not installed: %w", p, err)
		}
	}
	dir := os.Getenv("MCP_VM_IMAGE")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(root, "bin", "vm")
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("no VM image: %w", err)
	}
	f, err := os.Open(filepath.Join(dir, "image.env"))
	if err != nil {
		return nil, fmt.Errorf("no VM image: %w", err)
	}
	defer f.Close()
	img := &Image{Dir: dir, Disk: filepath.Join(dir, "node.img"), Updates: filepath.Join(dir, "updates"), Commits: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		if c, ok := strings.CutPrefix(k, "COMMIT_"); ok {
			img.Commits[strings.ToLower(c)] = v
		} else if k == "KERNEL" {
			img.Kernel = v
		}
	}
	for _, p := range []string{img.Disk, filepath.Join(img.Updates, "repo", "config")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("incomplete VM image: %w", err)
		}
	}
	return img, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Options tune New.
type Options struct {
	MemoryMB int // default 512
	// BootCounter: an entry that does not come up is remembered as bad, and the next one
	// is booted (see the package comment).
	BootCounter bool
	// BootTimeout bounds a boot, from QEMU's start to the command channel's first answer
	// (default 10 minutes: TCG on a loaded machine, beside two other machines and the rest
	// of the acceptance tests, took up to 3.5 minutes a boot on 2 cores).
	BootTimeout time.Duration
	// FirstBootArgs are kernel arguments added to the machine's first boot only, as
	// Fedora CoreOS's GRUB adds ignition.firstboot (and the platform's arguments) while
	// /boot/ignition.firstboot exists.
	FirstBootArgs string
}

// Boot is one QEMU run of a VM.
type Boot struct {
	Entry  Entry
	Args   string // the kernel command line it was given: the entry's options (+ FirstBootArgs)
	BootID string // from the VM's command channel; "" when it never came up
	Ended  string // guest-reset, guest-shutdown, killed, boot-timeout, stopped ("" while running)
	Began  time.Time
	Up     time.Duration // QEMU start → command channel ready (0 when it never came up)
}

// VM is one machine. Its methods are safe for concurrent use.
type VM struct {
	Name  string
	Dir   string // the disk, serial logs, kernels
	Share string // shared read-only at /run/mcp in the guest
	Disk  string
	img   *Image
	opts  Options
	sock  string // the directory of the unix sockets (short paths)
	t     testing.TB

	mu      sync.Mutex
	cur     *launch
	boots   []Boot
	bad     map[string]bool // entries that did not boot (BootCounter)
	on      bool            // the supervisor keeps it running
	stopped chan struct{}   // closed when the supervisor returns
}

// New makes a VM from the image: its own copy of the disk and an empty Share. It does not
// start it (Start). The VM is stopped and its files removed on cleanup; when the test
// failed, the tail of its last serial log is printed.
func New(t testing.TB, img *Image, name string, opts Options) *VM {
	t.Helper()
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 512
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = 10 * time.Minute
	}
	release, err := acquireSlot(t.Logf, name)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(scratchParent(), "vmnode-"+name+"-")
	if err != nil {
		release()
		t.Fatal(err)
	}
	sock, err := os.MkdirTemp("", "vm")
	if err != nil {
		release()
		t.Fatal(err)
	}
	v := &VM{Name: name, Dir: dir, Share: filepath.Join(dir, "share"), Disk: filepath.Join(dir, "disk.img"),
		img: img, opts: opts, sock: sock, t: t, bad: map[string]bool{}}
	t.Cleanup(func() {
		v.Stop()
		if t.Failed() {
			t.Logf("vmnode %s: boots %s; last serial lines:\n%s", name, v.bootsString(), v.SerialTail(40))
		}
		os.RemoveAll(dir)
		os.RemoveAll(sock)
		release()
	})
	if err := os.MkdirAll(v.Share, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "--sparse=always", img.Disk, v.Disk).CombinedOutput(); err != nil {
		t.Fatalf("vmnode %s: copying the disk: %v: %s", name, err, out)
	}
	return v
}

// scratchParent is where VM directories go: the temporary directory, unless it is tmpfs,
// where QEMU's cache=none (O_DIRECT) does not work and 800 MB disks would take memory.
func scratchParent() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err == nil && st.Type == 0x01021994 {
		return "/var/tmp"
	}
	return os.TempDir()
}

// Start boots the VM (PowerOn) and waits until its command channel answers; it returns the
// boot id.
func (v *VM) Start(ctx context.Context) (string, error) {
	v.PowerOn()
	return v.WaitReady(ctx)
}

// PowerOn starts the VM's boot loader loop if the VM is off: boot the default entry (or,
// with BootCounter, the first one not known bad); on a reboot boot again; on a power-off,
// a power loss (Kill) or Stop stay off.
func (v *VM) PowerOn() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.on {
		return
	}
	v.on = true
	v.stopped = make(chan struct{})
	go v.supervise(v.stopped)
}

func (v *VM) supervise(stopped chan struct{}) {
	defer close(stopped)
	for {
		l, err := v.boot()
		if err != nil {
			v.t.Logf("vmnode %s: boot loader: %v", v.Name, err)
			v.off()
			return
		}
		<-l.done
		v.mu.Lock()
		b := &v.boots[len(v.boots)-1]
		b.Ended = l.reason
		again := v.on && (l.reason == "guest-reset" ||
			v.opts.BootCounter && b.BootID == "" && (l.reason == "boot-timeout" || l.reason == "guest-shutdown"))
		if v.opts.BootCounter && b.BootID == "" && l.reason != "killed" && l.reason != "stopped" {
			v.bad[b.Entry.Text] = true // never came up: the boot counter ran out
		}
		v.mu.Unlock()
		if !again {
			v.off()
			return
		}
	}
}

func (v *VM) off() {
	v.mu.Lock()
	v.on = false
	v.mu.Unlock()
}

// boot picks the entry, extracts its kernel and starts QEMU.
func (v *VM) boot() (*launch, error) {
	es, err := Entries(v.Disk)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	e := es[0]
	if v.opts.BootCounter {
		i := 0
		for i < len(es)-1 && v.bad[es[i].Text] {
			i++
		}
		e = es[i]
	}
	n := len(v.boots) + 1
	v.mu.Unlock()
	kernel, initrd, err := extract(v.Disk, v.Dir, e)
	if err != nil {
		return nil, err
	}
	args := e.Options
	if n == 1 && v.opts.FirstBootArgs != "" {
		args += " " + v.opts.FirstBootArgs
	}
	l, err := v.launch(kernel, initrd, args, filepath.Join(v.Dir, fmt.Sprintf("serial-%d.log", n)))
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.cur = l
	v.boots = append(v.boots, Boot{Entry: e, Args: args, Began: l.began})
	v.mu.Unlock()
	go v.watchReady(l, len(v.boots)-1)
	return l, nil
}

// watchReady records the boot id when the channel comes up, and ends a boot that does not
// come up within BootTimeout.
func (v *VM) watchReady(l *launch, i int) {
	select {
	case <-l.ready:
		v.mu.Lock()
		v.boots[i].BootID, v.boots[i].Up = l.bootID, time.Since(l.began)
		v.mu.Unlock()
	case <-l.done:
	case <-time.After(v.opts.BootTimeout):
		l.kill("boot-timeout")
	}
}

// Kill is a power loss: SIGKILL to QEMU. The VM stays off until PowerOn.
func (v *VM) Kill() {
	v.mu.Lock()
	l, stopped := v.cur, v.stopped
	v.on = false
	v.mu.Unlock()
	if l != nil {
		l.kill("killed")
		<-l.done
	}
	if stopped != nil {
		<-stopped
	}
}

// Stop ends the VM for good (SIGKILL: its disk is a scratch copy).
func (v *VM) Stop() {
	v.mu.Lock()
	l, stopped := v.cur, v.stopped
	v.on = false
	v.mu.Unlock()
	if l != nil {
		l.kill("stopped")
		<-l.done
	}
	if stopped != nil {
		<-stopped
	}
}

// Boots is the VM's boot history, oldest first.
func (v *VM) Boots() []Boot {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]Boot(nil), v.boots...)
}

func (v *VM) bootsString() string {
	var parts []string
	for _, b := range v.Boots() {
		parts = append(parts, fmt.Sprintf("[%s boot=%.8s ended=%s]", b.Entry.Title, b.BootID, b.Ended))
	}
	return strings.Join(parts, " ")
}

// SerialTail is the last n lines of the current (or last) boot's serial console.
func (v *VM) SerialTail(n int) string {
	v.mu.Lock()
	l := v.cur
	v.mu.Unlock()
	if l == nil {
		return ""
	}
	b, _ := os.ReadFile(l.serial)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitReady waits until the VM's current boot answers on its command channel, across
// reboots the boot loader makes, and returns its boot id. It fails when the VM is off.
func (v *VM) WaitReady(ctx context.Context) (string, error) {
	for {
		v.mu.Lock()
		l, on := v.cur, v.on
		v.mu.Unlock()
		if l != nil && !l.exited() {
			select {
			case <-l.ready:
				return l.bootID, nil
			default:
			}
		}
		if !on && (l == nil || l.exited()) {
			return "", fmt.Errorf("vmnode %s is off (%s)", v.Name, v.bootsString())
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("vmnode %s: waiting for its command channel: %w (%s)", v.Name, ctx.Err(), v.bootsString())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WaitNewBoot waits until the VM is up in a boot whose id is not old (after a reboot the
// guest asked for, or a PowerOn), and returns its id.
func (v *VM) WaitNewBoot(ctx context.Context, old string) (string, error) {
	for {
		id, err := v.WaitReady(ctx)
		if err != nil || id != old {
			return id, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("vmnode %s: waiting for a boot other than %s: %w (%s)", v.Name, old, ctx.Err(), v.bootsString())
		case <-time.After(time.Second):
		}
	}
}

// Run runs a bash script in the VM's current boot once it is up and returns its combined
// output; an exit code other than 0 is an error with the output in it. A VM that goes
// down before it answers is an error too.
func (v *VM) Run(ctx context.Context, script string) (string, error) {
	if _, err := v.WaitReady(ctx); err != nil {
		return "", err
	}
	v.mu.Lock()
	l := v.cur
	v.mu.Unlock()
	r, err := l.run(ctx, script)
	if err != nil {
		return "", fmt.Errorf("vmnode %s: %w", v.Name, err)
	}
	if r.rc != 0 {
		return r.out, fmt.Errorf("vmnode %s: %q exited %d: %s", v.Name, script, r.rc, strings.TrimSpace(r.out))
	}
	return r.out, nil
}
