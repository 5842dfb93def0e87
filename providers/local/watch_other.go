//go:build !linux

package local

import "errors"

// watcher is not available here: every look reads the fleet's files again.
type watcher struct{}

func newWatcher() (*watcher, error) { return nil, errors.New("no file watching on this system") }

func (w *watcher) watch(string, watchKind) bool { return false }

func (w *watcher) changes(uint64) ([]string, bool, uint64) { return nil, true, 0 }

func (w *watcher) latest() uint64 { return 0 }
