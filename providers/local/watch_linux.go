package local

import (
	"encoding/binary"
	"errors"
	"sync"
	"syscall"
)

// watcher is inotify(7), read without blocking when a reader asks for changes.
type watcher struct {
	mu    sync.Mutex
	fd    int
	wds   map[int32]watched // by watch descriptor
	paths map[string]int32  // the watched directories
	log   changeLog
	buf   []byte
}

type watched struct {
	paths []string // one inode may be watched under several paths
	kind  watchKind
}

// watchMask: every way a file in the directory, or the directory itself, changes (a
// rename over node.json, an edit in place, a removal, the directory moved or removed).
const watchMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_FROM |
	syscall.IN_MOVED_TO | syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW

func newWatcher() (*watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &watcher{fd: fd, wds: map[int32]watched{}, paths: map[string]int32{}, buf: make([]byte, 64<<10)}, nil
}

// watch makes sure dir is watched; false when it cannot be (it does not exist, or the
// kernel's limit on watches is reached): then nothing read from it may be kept.
func (w *watcher) watch(dir string, kind watchKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.paths[dir]; ok {
		return true
	}
	wd, err := syscall.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		return false
	}
	wt := w.wds[int32(wd)]
	wt.paths, wt.kind = append(wt.paths, dir), kind
	w.wds[int32(wd)] = wt
	w.paths[dir] = int32(wd)
	return true
}

// latest is the number of the last change.
func (w *watcher) latest() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.seq
}

// changes reads what the kernel queued and returns the directories changed after number
// since (all: assume everything changed), and the number to ask from next time.
func (w *watcher) changes(since uint64) (dirs []string, all bool, now uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.read()
	return w.log.since(since)
}

// read moves the queued events into the log.
func (w *watcher) read() {
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			return
		}
		if err != nil || n <= 0 {
			w.log.forgetAll() // what was queued is unknown
			return
		}
		w.parse(w.buf[:n])
	}
}

// parse reads inotify events: struct inotify_event (wd, mask, cookie, len) and len bytes
// of NUL-padded name.
func (w *watcher) parse(b []byte) {
	const header = syscall.SizeofInotifyEvent
	for len(b) >= header {
		wd := int32(binary.NativeEndian.Uint32(b[0:]))
		mask := binary.NativeEndian.Uint32(b[4:])
		n := int(binary.NativeEndian.Uint32(b[12:]))
		if header+n > len(b) {
			w.log.forgetAll()
			return
		}
		name := b[header : header+n]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		b = b[header+n:]
		w.event(wd, mask, string(name))
	}
}

func (w *watcher) event(wd int32, mask uint32, name string) {
	if mask&syscall.IN_Q_OVERFLOW != 0 {
		w.log.forgetAll()
		return
	}
	wt, ok := w.wds[wd]
	if !ok || !wt.kind.relevant(name) {
		return
	}
	for _, p := range wt.paths {
		w.log.add(p)
	}
	if mask&(syscall.IN_IGNORED|syscall.IN_MOVE_SELF|syscall.IN_DELETE_SELF|syscall.IN_UNMOUNT) != 0 {
		// The paths no longer name this directory: the next look watches what they name now.
		for _, p := range wt.paths {
			delete(w.paths, p)
		}
		if mask&syscall.IN_IGNORED != 0 {
			delete(w.wds, wd)
		} else {
			syscall.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
}
