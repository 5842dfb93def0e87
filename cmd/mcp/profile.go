package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// heapProfiler writes a heap profile to path whenever the live heap reaches a new high
// (looked at every interval), and once more at stop: a profile written only at exit would
// show the heap after apply let go of its watches, not at its peak. For performance work
// (MCP_MEMPROFILE); the looks cost a ReadMemStats each.
func heapProfiler(path string, interval time.Duration) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	var high uint64
	write := func() {
		tmp := path + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			return
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if f.Close() == nil && err == nil {
			os.Rename(tmp, path)
		}
	}
	look := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > high {
			high = ms.HeapAlloc
			write()
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				look()
				return
			case <-t.C:
				look()
			}
		}
	}()
	return func() { close(done); <-finished }
}
