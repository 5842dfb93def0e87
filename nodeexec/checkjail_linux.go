package nodeexec

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// A command check runs in something it cannot leave, so that what it started is ended with
// it — a daemon it forked off into a session of its own (setsid -f) included, which its
// process group does not hold:
//   - a cgroup v2 of its own, made under this process's cgroup and entered as the command
//     is created (clone3 CLONE_INTO_CGROUP), so that no other process is ever moved; at
//     the end everything in it is killed (cgroup.kill) and it is removed;
//   - where no cgroup v2 is writable (an agent in a container, an old kernel), this process
//     becomes a child subreaper (PR_SET_CHILD_SUBREAPER): what the check leaves behind when
//     its parent exits is re-parented here instead of to init, and each of its processes
//     carries the check run's mark in its environment (CheckRunEnv), by which the ones left
//     are found, killed and reaped.
// cgroup v1 is not used: a process cannot be created inside a v1 cgroup, and one moved in
// after it started may have forked already.

// CheckRunEnv names the environment variable that marks every process of one check run.
const CheckRunEnv = "MCP_CHECK_RUN"

// useCheckCgroups: tests turn it off to exercise the subreaper.
var useCheckCgroups = true

// jail holds one check run.
type jail struct {
	mark   string
	cgroup string // the cgroup's directory ("" when the subreaper holds the run)
	fd     int    // the cgroup directory, open for clone3
}

// newJail prepares cmd to run in a jail: its own cgroup where one can be made, else under
// this process as subreaper. It adds the run's mark to cmd.Env.
func newJail(cmd *exec.Cmd) (*jail, error) {
	j := &jail{mark: rand.Text(), fd: -1}
	cmd.Env = append(cmd.Env, CheckRunEnv+"="+j.mark)
	if useCheckCgroups {
		if dir, err := ownCgroup2(); err == nil {
			j.cgroup = filepath.Join(dir, "mcp-check-"+strings.ToLower(j.mark[:12]))
			if err := os.Mkdir(j.cgroup, 0o755); err == nil {
				// cgroup.kill (Linux 5.14) ends a cgroup at once; a kernel that has it
				// creates processes in a cgroup (clone3, 5.7).
				_, kerr := os.Stat(filepath.Join(j.cgroup, "cgroup.kill"))
				fd, oerr := unix.Open(j.cgroup, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if kerr == nil && oerr == nil {
					j.fd = fd
					cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
					return j, nil
				}
				if oerr == nil {
					unix.Close(fd)
				}
				j.drop()
			}
			j.cgroup = ""
		}
	}
	if err := becomeSubreaper(); err != nil {
		return nil, fmt.Errorf("no cgroup v2 to run the check in, and becoming its subreaper failed: %w", err)
	}
	return j, nil
}

// end kills whatever of the run is left and waits, a bounded time, until it is gone; main
// is the command itself, which its caller reaps.
func (j *jail) end(main int) {
	if j.cgroup != "" {
		j.killCgroup()
		j.drop()
		return
	}
	j.killMarked(main)
}

func (j *jail) killCgroup() {
	os.WriteFile(filepath.Join(j.cgroup, "cgroup.kill"), []byte("1"), 0)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if len(cgroupProcs(j.cgroup)) == 0 {
			return
		}
	}
}

// drop closes and removes the cgroup (empty by now; a process still dying keeps it busy a
// moment).
func (j *jail) drop() {
	if j.fd >= 0 {
		unix.Close(j.fd)
		j.fd = -1
	}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := os.Remove(j.cgroup); err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			break
		}
	}
	j.cgroup = ""
}

// killMarked kills and reaps this process's adopted children that carry the run's mark
// (all but main), until none is left: one killed may leave children of its own,
// re-parented here in turn.
func (j *jail) killMarked(main int) {
	want := []byte(CheckRunEnv + "=" + j.mark)
	// A process with no environment to read is looked at again for a short while only: an
	// exec ends within it, and an adopted zombie (left for whoever reaps it) never does.
	looks := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		left, unsure := false, false
		for _, pid := range adopted() {
			if pid == main {
				continue
			}
			switch m, known := marked(pid, want); {
			case !known:
				// No environment to read: a process in the middle of an exec, or one
				// dead and not yet reaped. Looked at again, not taken for unmarked yet.
				unsure = true
				continue
			case !m:
				continue
			}
			left = true
			unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
		}
		if left {
			continue
		}
		if looks++; !unsure || looks > 20 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// becomeSubreaper makes this process the subreaper of its descendants, once.
func becomeSubreaper() error {
	subreaperOnce.Do(func() { subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
	return subreaperErr
}

// ownCgroup2 is the directory of this process's cgroup v2 ("0::/path" in /proc/self/cgroup)
// under the cgroup2 mount that shows it.
func ownCgroup2() (string, error) {
	b, err := boundedfile.Read("/proc/self/cgroup", 64<<10, 0)
	if err != nil {
		return "", err
	}
	own := ""
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return "", errors.New("no cgroup v2 in /proc/self/cgroup")
	}
	mi, err := boundedfile.Read("/proc/self/mountinfo", 4<<20, 0)
	if err != nil {
		return "", err
	}
	// mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPEROPTS
	for line := range strings.Lines(string(mi)) {
		f := strings.Fields(line)
		sep := slicesIndex(f, "-")
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		rel, ok := strings.CutPrefix(own, root)
		if !ok {
			continue
		}
		dir := filepath.Join(mnt, rel)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("no cgroup2 mount shows this process's cgroup")
}

func slicesIndex(f []string, s string) int {
	for i, x := range f {
		if x == s {
			return i
		}
	}
	return -1
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// adopted are the PIDs whose parent is this process (/proc/self/task/*/children).
func adopted() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// marked says whether process pid's environment holds want (a whole NUL-separated entry);
// known is false when there was no environment to read (the process is gone, dying, or
// between the two halves of an exec).
func marked(pid int, want []byte) (m, known bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 4096), 1<<20)
	s.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	any := false
	for s.Scan() {
		any = true
		if bytes.Equal(s.Bytes(), want) {
			return true, true
		}
	}
	return false, any
}
