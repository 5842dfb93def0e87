package vmnode

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// MaxVMs is how many VMs may run at once on the machine, whichever test process starts
// them: make test runs the acceptance package and this one side by side, and where QEMU
// emulates each VM burns a core while it boots (three beside the rest on 2 cores took
// over 10 minutes a boot).
const MaxVMs = 2

// slotDir holds one lock file per slot; a VM holds an flock on one while it exists, and
// the kernel drops it when the process ends, however it ends.
var slotDir = filepath.Join(os.TempDir(), "mcp-vmnode-slots")

// acquireSlot waits for a free slot and returns its release. It says once, through logf,
// that it waits.
func acquireSlot(logf func(string, ...any), name string) (release func(), err error) {
	if err := os.MkdirAll(slotDir, 0o777); err != nil {
		return nil, err
	}
	began := time.Now()
	for said := false; ; said = true {
		for i := range MaxVMs {
			f, err := os.OpenFile(filepath.Join(slotDir, fmt.Sprint(i)), os.O_CREATE|os.O_RDWR, 0o666)
			if err != nil {
				return nil, err
			}
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				if said {
					logf("vmnode %s: waited %v for one of the machine's %d VM slots", name, time.Since(began).Round(time.Second), MaxVMs)
				}
				return func() { f.Close() }, nil
			}
			f.Close()
		}
		if !said {
			logf("vmnode %s: the machine's %d VM slots are taken (%s); waiting", name, MaxVMs, slotDir)
		}
		time.Sleep(time.Second)
	}
}
