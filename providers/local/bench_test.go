package local

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// cpuPerOp reports the process's CPU time (user + system) per op besides the wall time:
// on a shared machine, and with fsyncs that wait, the wall time says little.
func cpuPerOp(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}

// One write through the one write path (node.json replaced and fsync'd, its event
// appended and fsync'd), as apply makes six per node.
func BenchmarkUpdateNode(b *testing.B) {
	dir := b.TempDir() + "/fleet"
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 1}}}); err != nil {
		b.Fatal(err)
	}
	p, err := New(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	defer cpuPerOp(b)()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			err = p.Cordon(ctx, "worker-0")
		} else {
			err = p.Uncordon(ctx, "worker-0")
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// A look at a pool of 500 nodes, one of which changed since the last look (apply's look
// before each node start).
func BenchmarkObserveNodes(b *testing.B) {
	dir := b.TempDir() + "/fleet"
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 500}}}); err != nil {
		b.Fatal(err)
	}
	p, err := New(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	names, _ := nodeNames(dir)
	ctx := context.Background()
	defer cpuPerOp(b)()
	for i := 0; b.Loop(); i++ {
		if err := p.update(names[i%len(names)], func(r *record) { r.Unschedulable = !r.Unschedulable }); err != nil {
			b.Fatal(err)
		}
		if _, err := p.ObserveNodes(ctx, names); err != nil {
			b.Fatal(err)
		}
	}
}
