package local

import (
	"slices"
	"sync"
)

// The watcher tells the provider which fleet directories changed, so that what it read
// of a node (cache.go) is used again until a write — by this process or by another one,
// such as mcp fleet set during an apply — changes it, instead of being read again for
// every look. On Linux it is inotify(7): the kernel queues an event before the system call
// that made the change returns, so a change made before a look is always seen by that
// look. Elsewhere there is no watcher and every look reads the files again.
//
// One watcher serves the whole process (inotify instances are few per user); its watches
// last as long as their directories. Changes are numbered; each reader keeps the number
// it has seen and asks for the directories changed since (changes).

// watchKind says which names in a watched directory matter.
type watchKind uint8

const (
	watchNode  watchKind = iota // nodes/<name>: node.json, pods.json, the directory itself
	watchNodes                  // nodes/: any entry (a node added, removed or replaced)
	watchFleet                  // the fleet: nodes/ replaced, the directory itself
)

// relevant says whether a change of name (empty: the directory itself) in a directory of
// kind k may change what the provider reads.
func (k watchKind) relevant(name string) bool {
	switch k {
	case watchNode:
		return name == "" || name == "node.json" || name == "pods.json"
	case watchFleet:
		return name == "" || name == "nodes"
	}
	return true
}

// change is one directory's change, numbered.
type change struct {
	seq uint64
	dir string
}

// changeLog is the watcher's record of recent changes. A reader that has seen up to
// number since gets the directories changed after it, or, when since is older than what
// the log keeps (lost), "everything".
type changeLog struct {
	seq  uint64
	lost uint64   // changes up to this number are forgotten
	log  []change // oldest first, all after lost
}

// maxChangeLog bounds the log; a reader further behind re-reads everything.
const maxChangeLog = 1 << 16

func (l *changeLog) add(dir string) {
	l.seq++
	if n := len(l.log); n > 0 && l.log[n-1].dir == dir {
		l.log[n-1].seq = l.seq // the same directory again: one entry, newest number
		return
	}
	l.log = append(l.log, change{l.seq, dir})
	if len(l.log) > maxChangeLog {
		half := len(l.log) / 2
		l.lost = l.log[half-1].seq
		l.log = slices.Clone(l.log[half:])
	}
}

// forgetAll makes every reader re-read everything (the kernel's queue overflowed, or a
// read of it failed).
func (l *changeLog) forgetAll() {
	l.seq++
	l.lost = l.seq
	l.log = nil
}

// since returns the directories changed after number since (all: assume everything
// changed) and the number to ask from next time.
func (l *changeLog) since(since uint64) (dirs []string, all bool, now uint64) {
	if since < l.lost {
		return nil, true, l.seq
	}
	i, _ := slices.BinarySearchFunc(l.log, since+1, func(c change, s uint64) int {
		switch {
		case c.seq < s:
			return -1
		case c.seq > s:
			return 1
		}
		return 0
	})
	for _, c := range l.log[i:] {
		dirs = append(dirs, c.dir)
	}
	return dirs, false, l.seq
}

// theWatcher is the process's watcher, made on first use; nil where there is none.
var theWatcher = sync.OnceValue(func() *watcher {
	w, err := newWatcher()
	if err != nil {
		return nil
	}
	return w
})
