package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Each node keeps an event log, FLEET/nodes/<name>/events.jsonl, from which tests and the
// crash harness judge a rollout's safety without trusting the process that made it.
//
// The rule that orders events and changes: the events of a change of node.json are written
// into node.json with it (one atomic replace), and appended to events.jsonl right
// after; a writer killed in between leaves them in node.json, and the next writer of the
// node, or ReadEvents, appends them (marked Recovered). So no event is lost once its change
// took effect, and none is logged for a change that did not. Times are such that an
// unavailability measured from the log is never shorter than the real one: events that
// begin one (cordon, not-ready, drain) are stamped before the change is written, events
// that end one (uncordon, ready) after it is written — or, when recovered, at the
// recovery; a reboot's ready carries the time the machine came back. A drain changes
// pods.json, not node.json: its event is appended before pods.json is written.

// EventKind names what an Event reports.
type EventKind string

const (
	EventCordon   EventKind = "cordon"
	EventUncordon EventKind = "uncordon"
	EventNotReady EventKind = "not-ready"
	EventReady    EventKind = "ready"
	EventWorking  EventKind = "working"
	EventDone     EventKind = "done"
	EventDegraded EventKind = "degraded"
	EventReboot   EventKind = "reboot"
	EventDrain    EventKind = "drain"
	// EventFirstBoot: the machine was made and first booted (mcp fleet add), from OSImage
	// with the served config of DesiredConfig.
	EventFirstBoot EventKind = "firstboot"
	// EventPivot: OSImage was staged; the machine runs it from its next boot.
	EventPivot EventKind = "pivot"
	// EventClaim: Apply claimed the node (model.Claim), taking it over from TookOver, an
	// apply judged gone, when it held it; EventRelease: Apply was done with it.
	EventClaim   EventKind = "claim"
	EventRelease EventKind = "release"
)

var eventKinds = []EventKind{EventCordon, EventUncordon, EventNotReady, EventReady, EventWorking,
	EventDone, EventDegraded, EventReboot, EventDrain, EventFirstBoot, EventPivot, EventClaim, EventRelease}

// Event is one line of a node's events.jsonl.
type Event struct {
	Time time.Time `json:"time"` // UTC, RFC 3339 with nine fractional digits
	Node string    `json:"node"`
	Kind EventKind `json:"event"`
	// Seq numbers a node's events from 1 in the order they were made.
	Seq int64 `json:"seq"`
	// DesiredConfig: working; reboot (the config it reboots into); pivot (the config the
	// image is for); firstboot (the config whose served Ignition the machine booted with).
	DesiredConfig string `json:"desired_config,omitempty"`
	CurrentConfig string `json:"current_config,omitempty"` // done
	Reason        string `json:"reason,omitempty"`         // degraded
	// BootID, NextBootID, Until: reboot (the boot id before, the one it comes back with,
	// and when; Until is absent when the reboot hangs).
	BootID     string    `json:"boot_id,omitempty"`
	NextBootID string    `json:"next_boot_id,omitempty"`
	Until      time.Time `json:"until,omitzero"`
	// RolledBack: reboot (it began under fault.reboot=rollback: the machine comes back on
	// the deployment it ran before, the update's staged one discarded).
	RolledBack bool     `json:"rolled_back,omitempty"`
	Pods       []string `json:"pods,omitempty"` // drain: namespace/name of the pods evicted
	// OSImage: firstboot (the image booted from); pivot (the image staged).
	OSImage string `json:"os_image,omitempty"`
	// Apply: claim, release (the apply run); TookOver: claim (the apply that held it).
	Apply    string `json:"apply,omitempty"`
	TookOver string `json:"took_over,omitempty"`
	// Recovered: appended by a later writer, the one that made it having been killed
	// after writing node.json. Most events keep the time they were stamped with before the
	// change; an uncordon or ready, stamped only once its change is written, carries the
	// time of the recovery instead, which is later than the change (never earlier), and
	// says so with LateStamp.
	Recovered bool `json:"recovered,omitempty"`
	LateStamp bool `json:"late_stamp,omitempty"`
}

// timeFormat is RFC 3339 with a fixed nine fractional digits, so lines sort by time.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// MarshalJSON writes Time in UTC with nanoseconds; a zero Time (an event in node.json
// that is stamped when it is appended) is left out.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event // without this method
	t := ""
	if !e.Time.IsZero() {
		t = e.Time.UTC().Format(timeFormat)
	}
	return json.Marshal(struct {
		Time string `json:"time,omitempty"`
		plain
	}{t, plain(e)})
}

// derive lists the events of a change of a node from b to a: the one place they are
// derived, so that no path changes a node's availability or state without its event. now
// stamps them, except uncordon and ready, stamped once the change is written; the ready
// of a completed reboot carries back, when the machine came back.
func derive(b, a *model.Node, now, back time.Time) []Event {
	var evs []Event
	add := func(e Event) { evs = append(evs, e) }
	evs = deriveClaim(b.Claim, a.Claim, now)
	if a.Unschedulable && !b.Unschedulable {
		add(Event{Kind: EventCordon, Time: now})
	}
	if !a.Ready && b.Ready {
		add(Event{Kind: EventNotReady, Time: now})
	}
	if a.State != b.State || a.DesiredConfig != b.DesiredConfig || a.CurrentConfig != b.CurrentConfig || a.Reason != b.Reason {
		switch a.State {
		case model.StateWorking:
			add(Event{Kind: EventWorking, Time: now, DesiredConfig: a.DesiredConfig})
		case model.StateDone:
			add(Event{Kind: EventDone, Time: now, CurrentConfig: a.CurrentConfig})
		case model.StateDegraded:
			add(Event{Kind: EventDegraded, Time: now, Reason: a.Reason})
		}
	}
	if !a.Unschedulable && b.Unschedulable {
		add(Event{Kind: EventUncordon})
	}
	if a.Ready && !b.Ready {
		add(Event{Kind: EventReady, Time: back})
	}
	return evs
}

// deriveClaim lists the events of a change of the node's claim from b to a: a claim by
// another apply, or a held claim ended. A renewal (the same apply) is none.
func deriveClaim(b, a *model.Claim, now time.Time) []Event {
	switch {
	case a.Held() && (!b.Held() || b.Apply != a.Apply):
		e := Event{Kind: EventClaim, Time: now, Apply: a.Apply}
		if b.Held() {
			e.TookOver = b.Apply
		}
		return []Event{e}
	case b.Held() && !a.Held():
		return []Event{{Kind: EventRelease, Time: now, Apply: b.Apply}}
	}
	return nil
}

// eventLog is a node's events.jsonl, open for appending under the node's lock.
type eventLog struct {
	f    *os.File
	path string
	seq  int64 // the last event's Seq in the log
}

func openLog(dir, node string) (*eventLog, error) {
	path := eventsFile(dir, node)
	f, st, err := openRegular(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node %s: opening its event log: %w", node, err)
	}
	l := &eventLog{f: f, path: path}
	if err := l.readTail(st.Size()); err != nil {
		f.Close()
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return l, nil
}

func (l *eventLog) close() { l.f.Close() }

// readTail reads the last event's Seq. A torn last line (a write cut short) is cut off,
// so that the next line starts on a line of its own.
func (l *eventLog) readTail(size int64) error {
	last, end, err := lastLine(l.f, size)
	if err != nil {
		return fmt.Errorf("reading %s: %w", l.path, err)
	}
	if end < size {
		if err := l.f.Truncate(end); err != nil {
			return fmt.Errorf("cutting the torn last line of %s: %w", l.path, err)
		}
	}
	if last == nil {
		return nil
	}
	var e Event
	if err := json.Unmarshal(last, &e); err != nil {
		return fmt.Errorf("%s: the last line is not an event: %w", l.path, err)
	}
	l.seq = e.Seq
	return nil
}

// lastLine returns f's last whole line (nil when there is none) and the offset just after
// it, reading backwards from size.
func lastLine(f *os.File, size int64) ([]byte, int64, error) {
	const chunk = 64 << 10
	var buf []byte
	for off := size; off > 0; {
		n := min(chunk, off)
		off -= n
		b := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, 0, err
		}
		buf = append(b, buf...)
		i := bytes.LastIndexByte(buf, '\n')
		if i < 0 {
			if off == 0 {
				return nil, 0, nil // nothing but a torn line
			}
		} else if j := bytes.LastIndexByte(buf[:i], '\n'); j >= 0 || off == 0 {
			return buf[j+1 : i], off + int64(i) + 1, nil
		}
		if size-off > MaxFileSize {
			return nil, 0, fmt.Errorf("no line end in the last %d MiB", MaxFileSize>>20)
		}
	}
	return nil, 0, nil
}

// recover appends the events of node.json that the log lacks: the writer that made them
// was killed before it appended them.
func (l *eventLog) recover(written []Event) error {
	var missing []Event
	for _, e := range written {
		if e.Seq > l.seq {
			e.Recovered, e.LateStamp = true, e.Time.IsZero()
			missing = append(missing, e)
		}
	}
	return l.append(missing)
}

// number gives events their node and Seq, following the log's last.
func (l *eventLog) number(node string, evs []Event) {
	for i := range evs {
		evs[i].Node, evs[i].Seq = node, l.seq+int64(i)+1
	}
}

// append writes each event in one write (O_APPEND), stamping an unstamped one now. No
// fsync: a line written is there for every later reader, whatever becomes of this process.
func (l *eventLog) append(evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if _, err := l.f.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("node %s: appending to %s: %w", e.Node, l.path, err)
		}
		l.seq = e.Seq
	}
	return nil
}

// logEvents appends events that go with no change of node.json (a drain's change is in
// pods.json), under the node's lock, after any events a killed writer left out.
func logEvents(dir, node string, evs ...Event) error {
	unlock, err := lockNode(dir, node)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := readRecord(dir, node)
	if err != nil || len(evs)+len(r.Events) == 0 {
		return err
	}
	l, err := openLog(dir, node)
	if err != nil {
		return err
	}
	defer l.close()
	if err := l.recover(r.Events); err != nil {
		return err
	}
	now := time.Now()
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = now
		}
	}
	l.number(node, evs)
	return l.append(evs)
}

// ReadEvents reads the event logs of the fleet in fleetDir: each node's events in log
// order, keyed by node name (a node without a log has none). It first appends, under each
// node's lock, the events a writer killed between node.json and events.jsonl left out.
// A torn last line (a write cut short) is ignored; any other line that is not an event of
// the node is an error naming the file and the line.
func ReadEvents(fleetDir string) (map[string][]Event, error) {
	if _, err := readFleetFile(fleetDir); err != nil {
		return nil, err
	}
	names, err := nodeNames(fleetDir)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]Event, len(names))
	for _, n := range names {
		if err := logEvents(fleetDir, n); err != nil {
			return nil, err
		}
		path := eventsFile(fleetDir, n)
		b, err := readFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			out[n] = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		if out[n], err = parseEvents(path, n, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseEvents(path, node string, b []byte) ([]Event, error) {
	var evs []Event
	for i := 1; ; i++ {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return evs, nil // the end, or a torn last line
		}
		var e Event
		err := json.Unmarshal(line, &e)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s:%d: %w", path, i, err)
		case e.Time.IsZero() || e.Node != node || !slices.Contains(eventKinds, e.Kind):
			return nil, fmt.Errorf("%s:%d: not an event of node %s (time, node and a known event are required)", path, i, node)
		}
		evs = append(evs, e)
		b = rest
	}
}
