// Package liveproc says whether a process another mcp run recorded (in a lock file, in a
// node's claim) still runs: its PID exists and is not a zombie, and — when its start time
// was recorded — it is the same process, not another that was given the PID since. A PID
// means that process only on the same running kernel and in the same PID namespace
// (Machine).
package liveproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// Process is a process as another run records it.
type Process struct {
	// Machine is the boot id of the running kernel and the PID namespace ("" when they
	// cannot be read: then no PID can be checked from elsewhere).
	Machine string
	PID     int
	// Start is the process's start time in clock ticks after boot (0: unknown).
	Start uint64
}

// Self is this process.
func Self() Process {
	p := Process{Machine: Machine(), PID: os.Getpid()}
	p.Start, _ = startTime(p.PID)
	return p
}

// Of is process pid of this machine, as another run would record it.
func Of(pid int) (Process, error) {
	start, err := startTime(pid)
	return Process{Machine: Machine(), PID: pid, Start: start}, err
}

// Machine names this running kernel and PID namespace: its boot id and the PID
// namespace's inode, or "" when /proc does not say.
func Machine() string {
	boot, err := boundedfile.Read("/proc/sys/kernel/random/boot_id", 4<<10, 0)
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// Runs says whether process pid runs on this machine: it exists — kill(pid, 0) succeeds or
// is refused with EPERM — and is not a zombie (a process killed and not yet waited for by
// its parent still has its PID, but is dead: /proc/PID/stat gives its state Z or X); and,
// when start is not 0, it started at start (else the PID was reused).
func Runs(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := readStat(pid)
	if err != nil {
		return true // no /proc: kill(pid, 0) is all there is to go by
	}
	if st.state == 'Z' || st.state == 'X' {
		return false
	}
	return start == 0 || st.start == 0 || st.start == start
}

type stat struct {
	state byte
	start uint64
}

// readStat reads the state and start time of /proc/PID/stat: "PID (COMM) STATE …"; COMM
// may hold spaces and parentheses, so the fields are counted from the last ')'. The start
// time is field 22 (0 when it does not read).
func readStat(pid int) (stat, error) {
	b, err := boundedfile.Read(fmt.Sprintf("/proc/%d/stat", pid), 4<<10, 0)
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, fmt.Errorf("/proc/%d/stat does not read", pid)
	}
	st := stat{state: b[i+2]}
	if f := strings.Fields(string(b[i+2:])); len(f) > 19 {
		st.start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return st, nil
}

func startTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}
