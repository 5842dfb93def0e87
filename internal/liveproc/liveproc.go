// Package liveproc says whether a process another mcp run recorded (in a lock file, in a
// node's claim) still runs: its PID exists and is not a zombie, and — when its start time
// was recorded — it is the same process, not another that was given the PID since. A PID
// means that process only on the same machine, in the same boot and the same PID namespace
// (model.Process): from anywhere else it is not judged at all (Judge).
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
	"github.com/mcpfleet/mcp/model"
)

// Self is this process, as another run would record it.
func Self() model.Process {
	p := Here()
	p.PID = os.Getpid()
	p.Start, _ = startTime(p.PID)
	return p
}

// Of is process pid of this machine, boot and PID namespace.
func Of(pid int) (model.Process, error) {
	p := Here()
	start, err := startTime(pid)
	p.PID, p.Start = pid, start
	return p, err
}

// Here is where this process runs: the machine id (/etc/machine-id), the boot id and the
// PID namespace; a part /proc or /etc does not say is "" (and then matches nothing).
func Here() model.Process {
	var p model.Process
	if b, err := boundedfile.Read("/etc/machine-id", 4<<10, 0); err == nil {
		p.MachineID = strings.TrimSpace(string(b))
	}
	if b, err := boundedfile.Read("/proc/sys/kernel/random/boot_id", 4<<10, 0); err == nil {
		p.BootID = strings.TrimSpace(string(b))
	}
	p.PIDNamespace, _ = os.Readlink("/proc/self/ns/pid")
	return p
}

// Judge says whether p runs, and whether that could be known: only from the same machine,
// boot and PID namespace (Runs); from anywhere else, or for a record that names no process,
// known is false and live true — it cannot be proved dead. why says how, for people.
func Judge(p model.Process) (live, known bool, why string) {
	here := Here()
	switch {
	case p.PID <= 0:
		return true, false, "it names no process, so whether it runs cannot be checked"
	case !p.SamePlace(here):
		return true, false, fmt.Sprintf("process %d runs elsewhere (%s; this run: %s): whether it still runs cannot be checked from here",
			p.PID, p.Place(), here.Place())
	case Runs(p.PID, p.Start):
		return true, true, fmt.Sprintf("process %d runs on this machine", p.PID)
	}
	return false, true, fmt.Sprintf("process %d no longer runs on this machine", p.PID)
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
