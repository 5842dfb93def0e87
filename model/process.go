package model

import "fmt"

// Process names a running mcp process as another run can check it — the holder of the
// state lock, the apply of a node's claim. A PID means that process only on one machine
// (MachineID, /etc/machine-id), in one boot of its kernel (BootID) and in one PID namespace
// (PIDNamespace, as /proc/self/ns/pid reads: "pid:[4026531836]"); Start (clock ticks after
// boot, /proc/PID/stat) tells it from a process given its PID since. A run that is not in
// the same place cannot judge the PID at all: whatever the process holds stays live there
// until its lease runs out (internal/liveproc).
type Process struct {
	MachineID    string `json:"machine_id,omitempty"`
	BootID       string `json:"boot_id,omitempty"`
	PIDNamespace string `json:"pid_ns,omitempty"`
	PID          int    `json:"pid,omitempty"`
	Start        uint64 `json:"start,omitempty"`
}

// SamePlace reports whether p's PID can be judged from q: both name one machine, one boot
// and one PID namespace (a part neither knows is not a match).
func (p Process) SamePlace(q Process) bool {
	return p.BootID != "" && p.PIDNamespace != "" && p.MachineID == q.MachineID &&
		p.BootID == q.BootID && p.PIDNamespace == q.PIDNamespace
}

// Place says where p runs, for people: "machine 6f1c…, boot 21dc…, pid:[4026532291]".
func (p Process) Place() string {
	return fmt.Sprintf("machine %s, boot %s, PID namespace %s", orUnknown(abbrev(p.MachineID)), orUnknown(abbrev(p.BootID)), orUnknown(p.PIDNamespace))
}

func abbrev(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
