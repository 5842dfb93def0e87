// Package bootsrv is `mcp serve`: it serves each pool's Ignition config to booting nodes
// (GET|HEAD /config/<pool>, with spec negotiation from the Accept header, and with the
// first-boot record, content.FirstBoot, added) and the immutable
// rendered configs to agents (/rendered/<name>). Everything served is prepared ahead into an
// immutable Snapshot that is swapped atomically when the state changes: nothing is rendered
// or marshalled on the request path, and no request sees a half-updated config.
package bootsrv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// newest is the highest minor of spec 3 the server serves.
var newest = ignition.Newest().Minor

// body is prepared bytes with their validators and response headers.
type body struct {
	data   []byte
	etag   string
	header []field
}

// Caching: a pool's config is behind a pointer that moves, so caches must revalidate (and
// it varies with the Accept header); rendered configs are named by their content and never
// change.
const (
	poolCaching     = "no-cache"
	renderedCaching = "public, max-age=31536000, immutable"
)

func newBody(data []byte, contentType, cacheControl, vary string) *body {
	sum := sha256.Sum256(data)
	b := &body{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	b.header = []field{{"Content-Type", contentType}, {"ETag", b.etag}, {"Cache-Control", cacheControl}}
	if vary != "" {
		b.header = append(b.header, field{"Vary", vary})
	}
	return b
}

// poolConfig is one pool's boot config in every spec that can express it.
type poolConfig struct {
	name     string
	rendered string
	native   int           // the minor version it was rendered in
	byMinor  map[int]*body // 3.<minor> → bytes
	// why says, for a spec that cannot express the config, what it lacks.
	why map[int]string
	// failed, when set, is why the pool's config cannot be served at all (its answer, a
	// 503): prepared apart, one pool's bad config leaves the others served.
	failed string
	// unread says it failed because its rendered config did not read from the store.
	unread bool
}

// Snapshot is everything the server answers, prepared. It is never changed once built.
type Snapshot struct {
	Serial   int64
	pools    map[string]*poolConfig
	rendered map[string]*body
	// unreadable is each stored rendered config that did not read, with why: its
	// /rendered/<name> answers 503 with that.
	unreadable map[string]string
	// machines are the machine blocks' configs by selector (machines.go); nil: none.
	machines map[string]*machine
}

// loaded says whether the snapshot holds a configuration: a state nothing was applied to
// yet has no pool. Until then the server is not ready and answers 503, which the Ignition
// client retries (a 404 would fail a machine's first boot at once).
func (s *Snapshot) loaded() bool { return s != nil && len(s.pools) > 0 }

// Stored is what a Source read for a snapshot: the state's serial and pools' pointers, the
// stored rendered configs that read, and each that did not, by name, with why (damaged,
// edited, not a regular file).
type Stored struct {
	Serial   int64
	Pointers map[string]string
	// Machines are the state's machine pointers (model.MachinePointer), by machine.
	Machines   map[string]model.MachinePointer
	Rendered   map[string]*model.Rendered
	Unreadable map[string]error
}

// Build prepares a snapshot from the pools' pointers and the rendered configs. Each pool is
// prepared apart: one whose rendered config is missing from the store (a damaged store:
// rendered configs are stored before pointers), or cannot be served (ignition.Serve refuses
// it: one an older mcp stored, say), is prepared as failed — it answers 503 with the reason
// — and every other pool is served.
func Build(serial int64, pointers map[string]string, rendered map[string]*model.Rendered) (*Snapshot, error) {
	return BuildWith(serial, pointers, rendered, ignition.ServeOptions{})
}

// BuildWith is Build with options: what the pools' served configs carry beside the
// rendered config (ignition.Serve).
func BuildWith(serial int64, pointers map[string]string, rendered map[string]*model.Rendered, o ignition.ServeOptions) (*Snapshot, error) {
	return BuildStored(Stored{Serial: serial, Pointers: pointers, Rendered: rendered}, o)
}

// BuildStored is BuildWith from what a Source read: a pool pointing at a rendered config
// that did not read fails with why it did not.
func BuildStored(st Stored, o ignition.ServeOptions) (*Snapshot, error) {
	if o.FirstBootAgent != "" {
		if err := ignition.CheckFirstBootAgent(o.FirstBootAgent); err != nil {
			return nil, err
		}
	}
	s := &Snapshot{Serial: st.Serial, pools: map[string]*poolConfig{}, rendered: map[string]*body{}, unreadable: map[string]string{}}
	for name, err := range st.Unreadable {
		s.unreadable[name] = fmt.Sprintf("rendered config %s cannot be served: %v", name, err)
	}
	for name, r := range st.Rendered {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("preparing rendered config %s: %w", name, err)
		}
		s.rendered[name] = newBody(b, "application/json", renderedCaching, "")
	}
	for pool, name := range st.Pointers {
		s.pools[pool] = preparePointer(pool, name, st, o)
	}
	s.prepareMachines(st, o)
	return s, nil
}

// preparePointer is pool's config, name being its pointer, or its failure.
func preparePointer(pool, name string, st Stored, o ignition.ServeOptions) *poolConfig {
	failed := func(why any) *poolConfig {
		return &poolConfig{name: pool, rendered: name, failed: fmt.Sprintf("pool %s: its config %s cannot be served: %v", pool, name, why)}
	}
	r := st.Rendered[name]
	switch {
	case r == nil && st.Unreadable[name] != nil:
		pc := failed(st.Unreadable[name])
		pc.unread = true
		return pc
	case r == nil:
		return failed("the store lacks it: the state was damaged or edited")
	}
	pc, err := preparePool(pool, r, o)
	if err != nil {
		return failed(err)
	}
	return pc
}

// Keeping is s with, for each pool whose rendered config did not read from the store,
// the config prev serves for it when prev serves that same rendered config: rendered
// configs are named by their content, so the copy in service is that config, and a file
// damaged in the store does not stop the pool's machines booting. kept is those pools,
// each with why the store's copy did not read.
func (s *Snapshot) Keeping(prev *Snapshot) (_ *Snapshot, kept map[string]string) {
	if prev == nil {
		return s, nil
	}
	var out *Snapshot
	for pool, pc := range s.pools {
		old := prev.pools[pool]
		if !pc.unread || old == nil || old.failed != "" || old.rendered != pc.rendered {
			continue
		}
		if out == nil {
			out = &Snapshot{Serial: s.Serial, pools: maps.Clone(s.pools), rendered: maps.Clone(s.rendered), unreadable: maps.Clone(s.unreadable), machines: s.machines}
			kept = map[string]string{}
		}
		out.pools[pool] = old
		if b := prev.rendered[pc.rendered]; b != nil {
			out.rendered[pc.rendered] = b
			delete(out.unreadable, pc.rendered)
		}
		kept[pool] = pc.failed
	}
	if out == nil {
		return s, nil
	}
	return out, kept
}

// Failed is each pool whose config cannot be served (BuildWith keeps it, answering 503),
// with the reason.
func (s *Snapshot) Failed() map[string]string {
	out := map[string]string{}
	for name, pc := range s.pools {
		if pc.failed != "" {
			out[name] = pc.failed
		}
	}
	return out
}

// IgnitionAccept is the Accept header the Ignition client sends that reads the newest spec
// the server knows (Ignition v2.27.0 sends this one): what `mcp fleet add` asks with, as a
// booting node would.
var IgnitionAccept = ignitionType + ";version=" + ignition.Newest().Version + ", */*;q=0.1"

// PoolConfig is the body GET /config/<pool> answers a client sending accept: the same
// prepared bytes. A pool the snapshot lacks, and an Accept no spec of the config suits
// (the 406's reason), are errors.
func (s *Snapshot) PoolConfig(pool, accept string) ([]byte, error) {
	pc := s.pools[pool]
	if pc == nil {
		return nil, fmt.Errorf("no boot config for pool %q: the state has no pointer for it", pool)
	}
	if pc.failed != "" {
		return nil, errors.New(pc.failed)
	}
	b, why := pc.negotiate(accept)
	if b == nil {
		return nil, fmt.Errorf("pool %s: %s", pool, why)
	}
	return b.data, nil
}

// preparePool is pool's config in every spec that can express it (ignition.Serve), each
// with its validators and headers.
func preparePool(pool string, r *model.Rendered, o ignition.ServeOptions) (*poolConfig, error) {
	sv, err := ignition.Serve(r, o)
	if err != nil {
		return nil, err
	}
	pc := &poolConfig{name: pool, rendered: r.Name, native: sv.Native, byMinor: map[int]*body{}, why: sv.Why}
	for minor, b := range sv.ByMinor {
		pc.byMinor[minor] = newBody(b, fmt.Sprintf("%s;version=3.%d.0", ignitionType, minor), poolCaching, "Accept")
	}
	return pc, nil
}
