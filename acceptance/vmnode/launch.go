package vmnode

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// launch is one QEMU process: one boot of a VM.
type launch struct {
	cmd    *exec.Cmd
	serial string
	began  time.Time

	ready  chan struct{} // closed when the guest's command channel said READY
	bootID string        // set before ready is closed
	done   chan struct{} // closed when QEMU has exited and reason is set
	reason string

	mu       sync.Mutex
	agent    net.Conn
	next     int
	waiters  map[string]chan reply
	killedAs string // why the harness killed it, if it did
	shutdown string // the last QMP SHUTDOWN event's reason
}

type reply struct {
	rc  int
	out string
}

// accel is KVM where the CPU can run it (vmx or svm), TCG otherwise: /dev/kvm can exist
// without them (a paravirtual KVM that cannot run a stock kernel).
func accel() []string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, f := range strings.Fields(string(b)) {
		if f == "vmx" || f == "svm" {
			if fd, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
				fd.Close()
				return []string{"-accel", "kvm", "-cpu", "host"}
			}
		}
	}
	return []string{"-accel", "tcg,tb-size=256", "-cpu", "max"}
}

func (v *VM) launch(kernel, initrd, options, serial string) (*launch, error) {
	agentSock, qmpSock := filepath.Join(v.sock, "agent"), filepath.Join(v.sock, "qmp")
	os.Remove(agentSock)
	os.Remove(qmpSock)
	cache := "none"
	args := append(accel(), "-m", strconv.Itoa(v.opts.MemoryMB), "-smp", "1", "-nodefaults", "-display", "none", "-no-reboot",
		"-kernel", kernel, "-initrd", initrd, "-append", options,
		"-drive", "file="+v.Disk+",if=virtio,format=raw,cache="+cache,
		"-serial", "file:"+serial,
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=agent,path="+agentSock+",server=on,wait=off",
		"-device", "virtserialport,chardev=agent,name=agent",
		"-qmp", "unix:"+qmpSock+",server=on,wait=off",
		// The user network: the guest reaches the host's loopback at 10.0.2.2 (the image
		// configures 10.0.2.15/24 and no gateway).
		"-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0",
		"-virtfs", "local,path="+v.Share+",mount_tag=mcp,security_model=none,readonly=on",
		"-virtfs", "local,path="+v.img.Updates+",mount_tag=updates,security_model=none,readonly=on")
	l := &launch{serial: serial, began: time.Now(), ready: make(chan struct{}), done: make(chan struct{}), waiters: map[string]chan reply{}}
	l.cmd = exec.Command("qemu-system-x86_64", args...)
	logf, err := os.Create(serial + ".qemu")
	if err != nil {
		return nil, err
	}
	l.cmd.Stdout, l.cmd.Stderr = logf, logf
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := l.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting QEMU: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- l.cmd.Wait(); logf.Close() }()
	qmpDone := make(chan struct{})
	go func() { defer close(qmpDone); l.watchQMP(qmpSock) }()
	go l.readAgent(agentSock)
	go func() {
		err := <-exited
		select { // the QMP event comes before QEMU exits; let the reader finish
		case <-qmpDone:
		case <-time.After(5 * time.Second):
		}
		l.mu.Lock()
		switch {
		case l.killedAs != "":
			l.reason = l.killedAs
		case l.shutdown != "":
			l.reason = l.shutdown
		default:
			b, _ := os.ReadFile(serial + ".qemu")
			l.reason = fmt.Sprintf("exited (%v): %s", err, strings.TrimSpace(string(b)))
		}
		for id, w := range l.waiters {
			close(w)
			delete(l.waiters, id)
		}
		if l.agent != nil {
			l.agent.Close()
		}
		l.mu.Unlock()
		close(l.done)
	}()
	return l, nil
}

func (l *launch) exited() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *launch) kill(why string) {
	l.mu.Lock()
	if l.killedAs == "" && !l.exited() {
		l.killedAs = why
	}
	l.mu.Unlock()
	l.cmd.Process.Kill()
}

// dial connects to one of QEMU's unix sockets, which QEMU creates just after it starts.
func (l *launch) dial(path string) (net.Conn, error) {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.Dial("unix", path)
		if err == nil || time.Now().After(deadline) || l.exited() {
			return c, err
		}
	}
}

// watchQMP records the reason of QEMU's last SHUTDOWN event: guest-reset for a reboot,
// guest-shutdown for a power-off (QEMU then exits, -no-reboot).
func (l *launch) watchQMP(path string) {
	c, err := l.dial(path)
	if err != nil {
		return
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"execute":"qmp_capabilities"}` + "\n")); err != nil {
		return
	}
	dec := json.NewDecoder(c)
	for {
		var m struct {
			Event string `json:"event"`
			Data  struct {
				Reason string `json:"reason"`
			} `json:"data"`
		}
		if err := dec.Decode(&m); err != nil {
			return
		}
		if m.Event == "SHUTDOWN" {
			l.mu.Lock()
			l.shutdown = m.Data.Reason
			l.mu.Unlock()
		}
	}
}

// readAgent reads the guest's command channel: "READY <boot id>" when the guest's
// vm-agent starts, "<id> <rc> <base64 output>" for each command.
func (l *launch) readAgent(path string) {
	c, err := l.dial(path)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.agent = c
	l.mu.Unlock()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "READY":
			l.mu.Lock()
			if l.bootID == "" {
				l.bootID = f[1]
				close(l.ready)
			}
			l.mu.Unlock()
		case len(f) >= 2:
			rc, err := strconv.Atoi(f[1])
			if err != nil {
				continue
			}
			var out []byte
			if len(f) > 2 {
				out, _ = base64.StdEncoding.DecodeString(f[2])
			}
			l.mu.Lock()
			if w, ok := l.waiters[f[0]]; ok {
				w <- reply{rc: rc, out: string(out)}
				delete(l.waiters, f[0])
			}
			l.mu.Unlock()
		}
	}
}

func (l *launch) run(ctx context.Context, script string) (reply, error) {
	l.mu.Lock()
	if l.agent == nil || l.exited() {
		l.mu.Unlock()
		return reply{}, fmt.Errorf("running %q: the VM is down", script)
	}
	l.next++
	id := "c" + strconv.Itoa(l.next)
	w := make(chan reply, 1)
	l.waiters[id] = w
	_, err := fmt.Fprintf(l.agent, "%s %s\n", id, base64.StdEncoding.EncodeToString([]byte(script)))
	l.mu.Unlock()
	if err != nil {
		return reply{}, fmt.Errorf("running %q: %w", script, err)
	}
	select {
	case r, ok := <-w:
		if !ok {
			return reply{}, fmt.Errorf("running %q: the VM went down (%s)", script, l.reason)
		}
		return r, nil
	case <-ctx.Done():
		return reply{}, fmt.Errorf("running %q: %w", script, ctx.Err())
	}
}
