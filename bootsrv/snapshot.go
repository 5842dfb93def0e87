// Package bootsrv is `mcp serve`: it serves each pool's Ignition config to booting nodes
// (GET|HEAD /config/<pool>, with spec negotiation from the Accept header, and with the
// first-boot record, model.FirstBoot, added) and the immutable
// rendered configs to agents (/rendered/<name>). Everything served is prepared ahead into an
// immutable Snapshot that is swapped atomically when the state changes: nothing is rendered
// or marshalled on the request path, and no request sees a half-updated config.
package bootsrv

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/vcontext/report"

	"github.com/mcpfleet/mcp/internal/ignspec"
	"github.com/mcpfleet/mcp/model"
)

// specs are the Ignition specs the server can serve, newest first.
var specs = ignspec.All()

// newest is the highest minor of spec 3 the server serves.
var newest = specs[0].Minor

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
}

// Snapshot is everything the server answers, prepared. It is never changed once built.
type Snapshot struct {
	Serial   int64
	pools    map[string]*poolConfig
	rendered map[string]*body
}

// Build prepares a snapshot from the pools' pointers and the rendered configs. A pointer
// to a rendered config that is missing is an error: the store writes rendered configs
// before pointers, so this means a damaged store, and the old snapshot stays in service.
func Build(serial int64, pointers map[string]string, rendered map[string]*model.Rendered) (*Snapshot, error) {
	s := &Snapshot{Serial: serial, pools: map[string]*poolConfig{}, rendered: map[string]*body{}}
	for name, r := range rendered {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("preparing rendered config %s: %w", name, err)
		}
		s.rendered[name] = newBody(b, "application/json", renderedCaching, "")
	}
	for pool, name := range pointers {
		r := rendered[name]
		if r == nil {
			return nil, fmt.Errorf("pool %s points at rendered config %s, which the store lacks", pool, name)
		}
		pc, err := preparePool(pool, r)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", pool, err)
		}
		s.pools[pool] = pc
	}
	return s, nil
}

// IgnitionAccept is the Accept header the Ignition client sends that reads the newest spec
// the server knows (Ignition v2.27.0 sends this one): what `mcp fleet add` asks with, as a
// booting node would.
var IgnitionAccept = ignitionType + ";version=" + ignspec.Newest().Version + ", */*;q=0.1"

// PoolConfig is the body GET /config/<pool> answers a client sending accept: the same
// prepared bytes. A pool the snapshot lacks, and an Accept no spec of the config suits
// (the 406's reason), are errors.
func (s *Snapshot) PoolConfig(pool, accept string) ([]byte, error) {
	pc := s.pools[pool]
	if pc == nil {
		return nil, fmt.Errorf("no boot config for pool %q: the state has no pointer for it", pool)
	}
	b, why := pc.negotiate(accept)
	if b == nil {
		return nil, fmt.Errorf("pool %s: %s", pool, why)
	}
	return b.data, nil
}

// preparePool writes r's Ignition config in every 3.x spec whose parser takes it without
// dropping anything (an "unused key" means the spec cannot express a field). The config is
// decoded and encoded once; each spec's parser then checks that encoding with its version.
func preparePool(pool string, r *model.Rendered) (*poolConfig, error) {
	var doc map[string]any
	if err := json.Unmarshal(r.Ignition, &doc); err != nil {
		return nil, fmt.Errorf("rendered config %s has no valid Ignition config: %w", r.Name, err)
	}
	ign, _ := doc["ignition"].(map[string]any)
	if ign == nil {
		return nil, fmt.Errorf("rendered config %s: Ignition config without an ignition section", r.Name)
	}
	pc := &poolConfig{name: pool, rendered: r.Name, native: -1, byMinor: map[int]*body{}, why: map[int]string{}}
	if v, _ := ign["version"].(string); strings.HasPrefix(v, "3.") {
		fmt.Sscanf(v, "3.%d.0", &pc.native)
	}
	if err := addFirstBoot(doc, r); err != nil {
		return nil, err
	}
	encode, err := versioned(doc, ign)
	if err != nil {
		return nil, err
	}
	for _, sp := range specs {
		b, err := encode(sp.Version)
		if err != nil {
			return nil, err
		}
		rpt, err := sp.Parse(b)
		if reason := inexpressible(rpt, err); reason != "" {
			pc.why[sp.Minor] = reason
			continue
		}
		pc.byMinor[sp.Minor] = newBody(b, "application/vnd.coreos.ignition+json;version="+sp.Version, poolCaching, "Accept")
	}
	if len(pc.byMinor) == 0 {
		return nil, fmt.Errorf("rendered config %s cannot be written in any Ignition spec 3.%d–3.%d: %s",
			r.Name, specs[len(specs)-1].Minor, newest, pc.why[newest])
	}
	return pc, nil
}

// addFirstBoot adds the first-boot record (model.FirstBoot) to the Ignition config doc of
// r: a file at model.FirstBootPath that tells the node's agent which rendered config it
// boots and the pool's OS image. It goes into what is served, not into r, whose name is a
// hash of its content. A file in storage.files is in every 3.x spec, so the record changes
// no spec's verdict; each spec's parser still checks the bytes with it.
func addFirstBoot(doc map[string]any, r *model.Rendered) error {
	storage, ok := doc["storage"].(map[string]any)
	if doc["storage"] != nil && !ok {
		return fmt.Errorf("rendered config %s: its Ignition storage section is not an object", r.Name)
	}
	if storage == nil {
		storage = map[string]any{}
		doc["storage"] = storage
	}
	files, ok := storage["files"].([]any)
	if storage["files"] != nil && !ok {
		return fmt.Errorf("rendered config %s: its Ignition storage.files is not a list", r.Name)
	}
	for _, f := range files {
		if m, _ := f.(map[string]any); m != nil && m["path"] == model.FirstBootPath {
			return fmt.Errorf("rendered config %s writes %s, where the boot server puts the first-boot record", r.Name, model.FirstBootPath)
		}
	}
	storage["files"] = append(files, map[string]any{
		"path":      model.FirstBootPath,
		"mode":      model.FirstBootMode,
		"overwrite": true,
		"contents":  map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString(model.FirstBootOf(r).Encode())},
	})
	return nil
}

// versioned encodes doc, whose ignition section is ign, once, and returns what gives that
// encoding with ignition.version set to a version. encoding/json writes the field as
// `"version":"<v>"`: when those bytes occur once they are the field, and as a value moves
// no key, the version put in their place is what encoding doc again would give. When
// another key looks the same, it encodes doc per version.
func versioned(doc, ign map[string]any) (func(version string) ([]byte, error), error) {
	first := specs[0].Version
	ign["version"] = first
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	field := []byte(`"version":"` + first + `"`)
	if bytes.Count(b, field) != 1 {
		return func(version string) ([]byte, error) {
			ign["version"] = version
			return json.Marshal(doc)
		}, nil
	}
	at := bytes.Index(b, field) + len(`"version":"`)
	return func(version string) ([]byte, error) {
		if version == first {
			return b, nil
		}
		return slices.Concat(b[:at], []byte(version), b[at+len(first):]), nil
	}, nil
}

func inexpressible(rpt report.Report, err error) string {
	var why []string
	for _, e := range rpt.Entries {
		if e.Kind == report.Error || strings.Contains(e.Message, "unused key") {
			why = append(why, fmt.Sprintf("%s: %s", e.Context.String(), e.Message))
		}
	}
	if len(why) == 0 && err != nil {
		why = append(why, err.Error())
	}
	slices.Sort(why)
	return strings.Join(why, "; ")
}
