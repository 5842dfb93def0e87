package localstate

import (
	"bytes"
	"os"
	"sync"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// groupAppend appends lines to a file and fsyncs, for callers in several goroutines at
// once: one caller at a time writes everything waiting — its line and those that came
// meanwhile — in one write and one fsync, and each caller returns once its line is durable
// (a group commit). Lines are whole and in the file in one piece, one writer at a time,
// and a step costs a fraction of an fsync when many nodes finish steps together. The file
// stays open from one group to the next; whoever removes it calls close first.
type groupAppend struct {
	mu      sync.Mutex
	writing bool
	lines   [][]byte
	waiters []chan error

	fmu  sync.Mutex // guards f and path
	f    *os.File
	path string
}

func (g *groupAppend) append(path string, line []byte) error {
	done := make(chan error, 1)
	g.mu.Lock()
	g.lines, g.waiters = append(g.lines, line), append(g.waiters, done)
	if g.writing {
		g.mu.Unlock()
		return <-done
	}
	g.writing = true
	for len(g.lines) > 0 {
		lines, waiters := g.lines, g.waiters
		g.lines, g.waiters = nil, nil
		g.mu.Unlock()
		err := g.appendSync(path, bytes.Join(lines, nil))
		for _, w := range waiters {
			w <- err
		}
		g.mu.Lock()
	}
	g.writing = false
	g.mu.Unlock()
	return <-done
}

// appendSync appends b to the file at path in one write, and fsyncs it. After a failure
// the file is opened again for the next group.
func (g *groupAppend) appendSync(path string, b []byte) error {
	g.fmu.Lock()
	defer g.fmu.Unlock()
	if g.f != nil && (g.path != path || !g.stillAt(path)) {
		g.f.Close()
		g.f = nil
	}
	if g.f == nil {
		// Without blocking (a FIFO there would block the open until someone reads it), and
		// only a regular file: nothing else is a journal.
		f, _, err := boundedfile.Open(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|boundedfile.NoFollow, 0o644)
		if err != nil {
			return err
		}
		g.f, g.path = f, path
	}
	_, err := g.f.Write(b)
	if err == nil {
		err = g.f.Sync()
	}
	if err != nil {
		g.f.Close()
		g.f = nil
	}
	return err
}

// stillAt reports whether the file kept open is still the one at path: a state write of
// another apply (one run with -lock=false) may have folded and removed it, and appends to
// the removed file would be lost.
func (g *groupAppend) stillAt(path string) bool {
	open, err := g.f.Stat()
	if err != nil {
		return false
	}
	there, err := os.Lstat(path)
	return err == nil && os.SameFile(open, there)
}

// close closes the file kept open, so that the next append opens the path again: before
// the file is removed or replaced.
func (g *groupAppend) close() {
	g.fmu.Lock()
	defer g.fmu.Unlock()
	if g.f != nil {
		g.f.Close()
		g.f = nil
	}
}
