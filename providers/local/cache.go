package local

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"time"
)

// cache keeps what the provider read of each node — node.json as on disk, and pods.json —
// until the watcher (watch.go) reports a change of the node's directory, by whoever made
// it; and, from those, each PodDisruptionBudget's healthy pods (pdbIndex). So apply's looks
// at a node (the budget's count before each start, a step's faults, the boot id, a drain's
// PDBs) read only what changed since the last look, and cost the same per node whatever
// the size of the fleet. A look sees every change made before it, as reading the files
// would. Without a watcher nothing is kept and every look reads the files.
//
// Records handed out are shared: callers must not change them.
type cache struct {
	dir string // the fleet

	mu      sync.Mutex
	started bool
	w       *watcher // nil: nothing is kept
	since   uint64   // the watcher's changes taken in so far
	nodes   map[string]*entry
	pdb     pdbIndex
}

// entry is what was read of one node whose directory is watched.
type entry struct {
	rec    *record // nil: not read since its last change
	pods   []podFile
	podsOK bool
}

func newCache(dir string) *cache { return &cache{dir: dir, nodes: map[string]*entry{}} }

// look runs f under the cache's lock, after taking in the changes made since the last look.
func (c *cache) look(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sync()
	return f()
}

// sync forgets what changed since the last look. The fleet directory and nodes/ are
// watched first: without them a node added or replaced would go unseen, and nothing is
// kept.
func (c *cache) sync() {
	if !c.started {
		c.started = true
		if w := theWatcher(); w != nil {
			c.since = w.latest()
			if w.watch(c.dir, watchFleet) && w.watch(c.nodesDir(), watchNodes) {
				c.w = w
			}
		}
	}
	if c.w == nil {
		c.forgetAll()
		return
	}
	dirs, all, now := c.w.changes(c.since)
	c.since = now
	if all {
		c.forgetAll()
		return
	}
	for _, d := range dirs {
		switch {
		case d == c.dir || d == c.nodesDir():
			c.forgetAll()
			return
		case filepath.Dir(d) == c.nodesDir():
			c.forget(filepath.Base(d))
		}
	}
}

func (c *cache) nodesDir() string { return filepath.Join(c.dir, "nodes") }

func (c *cache) forgetAll() {
	if len(c.nodes) > 0 {
		c.nodes = map[string]*entry{}
	}
	c.pdb.built = false
}

// forget drops what was read of node, and its watch's good standing: the next look watches
// its directory again (it may be another directory now).
func (c *cache) forget(node string) {
	delete(c.nodes, node)
	c.pdb.changed(node)
}

// entry returns node's entry, watching its directory first; an entry whose directory
// cannot be watched is not kept (kept reports which).
func (c *cache) entry(node string) (e *entry, kept bool) {
	if e := c.nodes[node]; e != nil {
		return e, true
	}
	e = new(entry)
	if c.w != nil && c.w.watch(nodeDir(c.dir, node), watchNode) {
		c.nodes[node] = e
		return e, true
	}
	return e, false
}

// record returns node.json as on disk (a reboot that is over is not completed: see
// Provider.observeNode).
func (c *cache) record(node string) (*record, error) {
	if err := checkName(node); err != nil {
		return nil, err
	}
	e, _ := c.entry(node)
	if e.rec == nil {
		r, err := readRecord(c.dir, node)
		if err != nil {
			return nil, err
		}
		e.rec = r
	}
	return e.rec, nil
}

// keep puts node.json as this process just wrote it (under the node's lock) into the
// cache: the change it made is taken in first, so it does not make the node read again.
// It is decoded from the bytes written, so it is what a reader of the file would get.
func (c *cache) keep(node string, written []byte) {
	r := new(record)
	if json.Unmarshal(written, r) != nil {
		return
	}
	c.look(func() error {
		if e, kept := c.entry(node); kept && c.w != nil {
			e.rec = r
		}
		return nil
	})
}

// pods returns pods.json.
func (c *cache) pods(node string) ([]podFile, error) {
	if err := checkName(node); err != nil {
		return nil, err
	}
	e, _ := c.entry(node)
	if !e.podsOK {
		pods, err := readPods(c.dir, node)
		if err != nil {
			return nil, err
		}
		e.pods, e.podsOK = pods, true
	}
	return e.pods, nil
}

// readNode is node.json as on disk, through the cache.
func (p *Provider) readNode(node string) (r *record, err error) {
	err = p.cache.look(func() error { r, err = p.cache.record(node); return err })
	return r, err
}

// observeNode reads a node as a reader sees it now (a reboot whose time has come is over,
// and is recorded), through the cache.
func (p *Provider) observeNode(node string) (*record, error) {
	r, err := p.readNode(node)
	if err != nil || !r.rebootOver(time.Now()) {
		return r, err
	}
	return p.updateNode(node, nil)
}

// observeNodes is ObserveNodes' reading: the named nodes as on disk, through the cache,
// with those whose reboot is over recorded as back.
func (p *Provider) observeNodes(names []string) ([]*record, error) {
	out := make([]*record, len(names))
	err := p.cache.look(func() error {
		for i, n := range names {
			r, err := p.cache.record(n)
			if err != nil {
				return err
			}
			out[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for i, r := range out {
		if r.rebootOver(now) {
			if out[i], err = p.updateNode(names[i], nil); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
