package k8senv

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// process is one control-plane binary running in its own process group, its output in a
// log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when the process has exited
	err     error         // the Wait result, valid after exited is closed
}

// startProcess runs bin with args in dir, stdout and stderr to logDir/name.log. Env.Stop
// stops it (SIGTERM to its group, SIGKILL after stopGrace); it also gets SIGKILL if the
// test binary dies first.
func startProcess(name, bin, dir, logDir string, env []string, args ...string) (*process, error) {
	p := &process{name: name, logPath: filepath.Join(logDir, name+".log"), exited: make(chan struct{})}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "# %s %s\n", bin, strings.Join(args, " "))
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace.
func (p *process) stop() {
	pgid := p.cmd.Process.Pid
	select {
	case <-p.exited:
		syscall.Kill(-pgid, syscall.SIGKILL) // stray children, if any
		return
	default:
	}
	syscall.Kill(-pgid, syscall.SIGCONT) // a paused process (Env.Pause) cannot act on SIGTERM
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// dead returns an error naming the process and its exit status if it has exited.
func (p *process) dead() error {
	select {
	case <-p.exited:
		err := p.err
		if err == nil {
			err = errors.New("exit status 0")
		}
		return fmt.Errorf("%s exited early (%v); log %s:\n%s", p.name, err, p.logPath, tailFile(p.logPath, 30))
	default:
		return nil
	}
}

// rss returns the resident set size of the process in bytes (Linux /proc).
func (p *process) rss() (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %s", p.name)
}

// tailFile returns the last n lines of a file, or a note saying why it cannot.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners are closed before
// returning, so a port can in principle be taken by someone else before it is used.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// signal sends sig to the process (not its group: the control-plane binaries run alone).
func (p *process) signal(sig syscall.Signal) error {
	if err := p.dead(); err != nil {
		return err
	}
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s (pid %d): %v: %w", p.name, p.cmd.Process.Pid, sig, err)
	}
	return nil
}
