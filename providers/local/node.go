package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// record is node.json: the node as a cluster would report it (model.Node), and the local
// provider's own fields, which only the simulation reads.
type record struct {
	model.Node
	// RebootingUntil and NextBootID are set while the simulated machine is down for a
	// reboot: it comes back at RebootingUntil (never, when that is zero: a hung reboot)
	// with boot id NextBootID. The machine does not need the process that rebooted it: the
	// first reader after RebootingUntil sees it back, and records it.
	RebootingUntil time.Time `json:"rebooting_until,omitzero"`
	NextBootID     string    `json:"next_boot_id,omitempty"`
	// RollingBack is set with them when the reboot began under fault.reboot=rollback: the
	// machine comes back on the deployment it ran before.
	RollingBack bool `json:"rolling_back,omitempty"`
	// StagedOSImage is the OS image a pivot staged: the machine runs it (os_image) from
	// its next boot on, as rpm-ostree's staged deployment is booted at the next reboot.
	StagedOSImage string `json:"staged_os_image,omitempty"`
	// StagedKernelArgs are the kernel arguments a kargs step staged (nil: none staged; an
	// empty list: none at all): the machine boots with them from its next boot on.
	StagedKernelArgs *[]string `json:"staged_kernel_args,omitempty"`
	// Address is where apply reaches the node for health checks' ${node.address}
	// (DefaultAddress when empty: the simulated machines live on this one).
	Address string `json:"address,omitempty"`
	// Faults are the failures injected into the node (faults.go).
	Faults faults `json:"faults,omitzero"`
	// Events are the events of the write that made this version of node.json: appended
	// to events.jsonl right after it, or by the next writer when this one was killed in
	// between (events.go).
	Events []Event `json:"events,omitempty"`
}

// rebooting says whether the machine is down for a reboot.
func (r *record) rebooting() bool { return r.NextBootID != "" }

// rebootOver says whether the reboot is over at now (a hung one never is).
func (r *record) rebootOver(now time.Time) bool {
	return r.rebooting() && !r.RebootingUntil.IsZero() && !now.Before(r.RebootingUntil)
}

// completeReboot brings the machine back if its reboot is over at now, and returns when
// it came back (zero when it did not).
func (r *record) completeReboot(now time.Time) time.Time {
	if !r.rebootOver(now) {
		return time.Time{}
	}
	back := r.RebootingUntil
	r.endReboot()
	return back
}

// endReboot brings the machine up with its new boot id, on the OS image and kernel
// arguments a pivot and a kargs step staged — or, for a reboot that began under
// fault.reboot=rollback, on those it ran before: the staged deployment failed and was
// rolled back, and is gone.
func (r *record) endReboot() {
	r.Ready, r.BootID = true, r.NextBootID
	rollback := r.RollingBack
	r.RebootingUntil, r.NextBootID, r.RollingBack = time.Time{}, "", false
	if !rollback {
		if r.StagedOSImage != "" {
			r.OSImage = r.StagedOSImage
		}
		if r.StagedKernelArgs != nil {
			// The boot loader holds them as written; the kernel reports them as it reads
			// them (quotes dropped), and so does the node.
			r.KernelArgs = make([]string, len(*r.StagedKernelArgs))
			for i, a := range *r.StagedKernelArgs {
				r.KernelArgs[i] = model.KernelReads(a)
			}
		}
	}
	r.StagedOSImage, r.StagedKernelArgs = "", nil
}

// checkName refuses a node name that is not one directory name: names come from the
// command line and the engine, and must not reach outside nodes/.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%q is not a node name", name)
	}
	return nil
}

// readRecord reads node.json as it is on disk (a reboot that is over is not completed:
// see Provider.observeNode). A node.json that is null, {}, or names another node is refused: it would
// drop the node from the plan without a word.
func readRecord(dir, name string) (*record, error) {
	r := new(record)
	if _, err := readRecordInto(dir, name, r, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// readRecordInto is readRecord into r, reading through buf (which it returns, grown, for
// the next call): Refresh reads a fleet without a record or a buffer per node.
func readRecordInto(dir, name string, r *record, buf []byte) ([]byte, error) {
	if err := checkName(name); err != nil {
		return buf, err
	}
	path := nodeFile(dir, name)
	b, err := boundedfile.ReadBuf(path, MaxFileSize, boundedfile.NoFollow, buf)
	if errors.Is(err, fs.ErrNotExist) {
		return buf, fmt.Errorf("no node %q in fleet %s", name, dir)
	}
	if err != nil {
		return buf, fmt.Errorf("reading node %s: %w", name, err)
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return b, fmt.Errorf("reading node %s: %s holds null, not a node", name, path)
	}
	*r = record{}
	if err := json.Unmarshal(b, r); err != nil {
		return b, fmt.Errorf("reading node %s: %s: %w", name, path, err)
	}
	switch {
	case r.Name == "":
		return b, fmt.Errorf("reading node %s: %s has no node name", name, path)
	case r.Name != name:
		return b, fmt.Errorf("reading node %s: %s names node %q, not its directory's %q", name, path, r.Name, name)
	}
	return b, nil
}

// nodeNames lists the fleet's node directories.
func nodeNames(dir string) ([]string, error) {
	ents, err := boundedfile.ReadDir(filepath.Join(dir, "nodes"))
	if err != nil {
		return nil, fmt.Errorf("reading fleet %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// lockNode takes the node's lock, flock(2) on its directory: each call opens its own
// descriptor, so it serialises writers in this process and in others alike (mcp fleet
// set during an apply). Closing the descriptor releases it.
func lockNode(dir, name string) (unlock func(), err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path := nodeDir(dir, name)
	d, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no node %q in fleet %s", name, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("node %s: locking %s: %w", name, path, err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, fmt.Errorf("node %s: locking %s: %w", name, path, err)
	}
	return func() { d.Close() }, nil
}

// updateNode is the one place node.json is written, so that no change of a node's
// availability or state misses its event. Under the node's lock it reads the node,
// appends what a killed writer left out of the event log, completes a reboot that is over,
// lets change edit the node (change may be nil; it returns events of its own, such as
// reboot), derives the events from the difference, writes node.json with them, and then
// appends them to events.jsonl. A change that changes nothing writes nothing. It returns
// the node as written.
func updateNode(dir, name string, change func(r *record) ([]Event, error)) (*record, error) {
	return updateNodeCached(nil, dir, name, change)
}

// updateNode is the package's updateNode through the provider's cache: the node is read
// from it, and what is written goes into it, so a writer does not read its own writes back.
func (p *Provider) updateNode(name string, change func(r *record) ([]Event, error)) (*record, error) {
	return updateNodeCached(p.cache, p.o.Dir, name, change)
}

// updateNodeCached is updateNode reading and keeping the node through c (nil: none). Under
// the node's lock the cache is as fresh as the file: every writer of node.json takes the
// lock, and a change is queued by the watcher before the write that made it returns.
func updateNodeCached(c *cache, dir, name string, change func(r *record) ([]Event, error)) (*record, error) {
	unlock, err := lockNode(dir, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var before *record // shared when it comes from the cache: read only
	if c != nil {
		err = c.look(func() error { before, err = c.record(name); return err })
	} else {
		before, err = readRecord(dir, name)
	}
	if err != nil {
		return nil, err
	}
	orig, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	after := new(record) // a deep copy: change may edit maps
	if err := json.Unmarshal(orig, after); err != nil {
		return nil, err
	}
	log, err := openLog(dir, name)
	if err != nil {
		return nil, err
	}
	defer log.close()
	if err := log.recover(before.Events); err != nil {
		return nil, err
	}
	now := time.Now()
	back := after.completeReboot(now)
	var evs []Event
	if change != nil {
		if evs, err = change(after); err != nil {
			return nil, err
		}
	}
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = now
		}
	}
	evs = append(evs, derive(&before.Node, &after.Node, now, back)...)
	if b, err := json.Marshal(after); err == nil && bytes.Equal(b, orig) && len(evs) == 0 {
		return after, nil
	}
	log.number(name, evs)
	after.Events = evs
	// Swapped in rather than renamed over: the six writes per node of a rollout allocate
	// no inode (atomicfile.Swap). The node's lock serialises writers, as Swap requires.
	written, err := encodeJSON(after)
	if err == nil {
		err = atomicfile.Swap(nodeFile(dir, name), written, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("node %s: writing %s: %w", name, relNodeFile(name, "node.json"), err)
	}
	if c != nil {
		c.keep(name, written)
	}
	return after, log.append(evs)
}

// bootPoll bounds a wait for a rebooting node between two looks: mcp fleet set may bring a
// hung one back.
const bootPoll = time.Second

// waitBoot waits until the node is not down for a reboot, or until start + NodeTimeout.
func (p *Provider) waitBoot(ctx context.Context, node string, start time.Time) error {
	deadline := start.Add(p.o.NodeTimeout)
	for {
		r, err := p.observeNode(node)
		if err != nil {
			return err
		}
		if !r.rebooting() {
			return nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("the node did not come back within %s (%s)", p.o.NodeTimeout, r.rebootNote())
		}
		wait := min(deadline.Sub(now), bootPoll)
		if !r.RebootingUntil.IsZero() {
			wait = min(wait, r.RebootingUntil.Sub(now))
		}
		if err := sleep(ctx, max(wait, time.Millisecond)); err != nil {
			return fmt.Errorf("waiting for the node to come back from its reboot: %w", err)
		}
	}
}

// rebootNote says why a rebooting node is not back.
func (r *record) rebootNote() string {
	if r.RebootingUntil.IsZero() {
		return fmt.Sprintf("its reboot hangs: fault.reboot=hang in %s; mcp fleet set %s ready=true brings it back",
			relNodeFile(r.Name, "node.json"), r.Name)
	}
	return "it comes back at " + r.RebootingUntil.Format(time.RFC3339Nano)
}
