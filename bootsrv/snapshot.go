// Package bootsrv is `mcp serve`: it serves each pool's Ignition config to booting nodes
// (GET|HEAD /config/<pool>, with spec negotiation from the Accept header, and with the
// first-boot record, content.FirstBoot, added) and the immutable
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

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// specs are the Ignition specs the server can serve, newest first.
var specs = ignition.All()

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
	return BuildWith(serial, pointers, rendered, BuildOptions{})
}

// BuildOptions change what the pools' served configs carry beside the rendered config.
type BuildOptions struct {
	// FirstBootAgent, when set, is the path of mcp-agent on the pools' boot images: each
	// served config then also has the unit FirstBootUnit, which runs that agent's first
	// boot before kubelet starts, and its first-boot record embeds the rendered config (the
	// agent then needs no boot server, CA or token). Off, a new node's first boot is run
	// by the agent once it runs (the DaemonSet's, after the node joined).
	FirstBootAgent string
}

// FirstBootUnit is the unit BuildOptions.FirstBootAgent adds to the served configs.
const FirstBootUnit = "mcp-firstboot.service"

// CheckFirstBootAgent refuses a path the unit's ExecStart could not hold as it is.
func CheckFirstBootAgent(path string) error {
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\n\\\"'%$;") {
		return fmt.Errorf("first-boot agent %q: want an absolute path without spaces, quotes, %%, $ or backslashes", path)
	}
	return nil
}

// firstBootUnit is the first-boot unit's contents: the agent's standalone first boot
// (pivot and reboot when the machine booted another OS image than its pool's), before
// kubelet — which Requires it, so a node whose first boot failed does not join, as the
// MCO's machine-config-daemon-firstboot.service. Once the record is gone (Done), its
// condition skips it, and a skipped unit does not stop kubelet.
func firstBootUnit(agent string) string {
	return "[Unit]\n" +
		"Description=mcp first boot: the pool's OS image and config before the node joins\n" +
		"ConditionPathExists=" + content.FirstBootPath + "\n" +
		"Wants=network-online.target\n" +
		"After=network-online.target\n" +
		"Before=kubelet.service\n\n" +
		"[Service]\n" +
		"Type=oneshot\n" +
		"RemainAfterExit=yes\n" +
		"ExecStart=" + agent + " -root / -once\n\n" +
		"[Install]\n" +
		"WantedBy=multi-user.target\n" +
		"RequiredBy=kubelet.service\n"
}

// BuildWith is Build with options.
func BuildWith(serial int64, pointers map[string]string, rendered map[string]*model.Rendered, o BuildOptions) (*Snapshot, error) {
	if o.FirstBootAgent != "" {
		if err := CheckFirstBootAgent(o.FirstBootAgent); err != nil {
			return nil, err
		}
	}
	s := &Snapshot{Serial: serial, pools: map[string]*poolConfig{}, rendered: map[string]*body{}}
	for name, r := range rendered {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("preparing rendered config %s: %w", name, err)
		}
		s.rendered[name] = newBody(b, "application/json", renderedCaching, "")
	}
	if err := model.CheckPointers(pointers, rendered); err != nil {
		return nil, err
	}
	for pool, name := range pointers {
		pc, err := preparePool(pool, rendered[name], o)
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
var IgnitionAccept = ignitionType + ";version=" + ignition.Newest().Version + ", */*;q=0.1"

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
func preparePool(pool string, r *model.Rendered, o BuildOptions) (*poolConfig, error) {
	// A config carrying its content alone is served in the spec it names; one stored with an
	// Ignition config of its own (an older mcp's) is served from those bytes, as it was.
	if _, ok := ignition.Lookup(r.IgnitionVersion); !ok && r.LegacyIgnition == nil {
		return nil, fmt.Errorf("rendered config %s names Ignition spec %q, which mcp does not know", r.Name, r.IgnitionVersion)
	}
	var doc map[string]any
	if err := json.Unmarshal(content.Ignition(r), &doc); err != nil {
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
	if err := addFirstBoot(doc, r, o); err != nil {
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

// addFirstBoot adds the first-boot record (content.FirstBoot) to the Ignition config doc of
// r: a file at content.FirstBootPath that tells the node's agent which rendered config it
// boots and the pool's OS image. It goes into what is served, not into r, whose name is a
// hash of its content. A file in storage.files is in every 3.x spec, so the record changes
// no spec's verdict; each spec's parser still checks the bytes with it.
func addFirstBoot(doc map[string]any, r *model.Rendered, o BuildOptions) error {
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
		if m, _ := f.(map[string]any); m != nil && m["path"] == content.FirstBootPath {
			return fmt.Errorf("rendered config %s writes %s, where the boot server puts the first-boot record", r.Name, content.FirstBootPath)
		}
	}
	rec := content.FirstBootOf(r)
	if o.FirstBootAgent != "" {
		rec.Config = r
	}
	storage["files"] = append(files, map[string]any{
		"path":      content.FirstBootPath,
		"mode":      content.FirstBootMode,
		"overwrite": true,
		"contents":  map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString(rec.Encode())},
	})
	if o.FirstBootAgent == "" {
		return nil
	}
	systemd, ok := doc["systemd"].(map[string]any)
	if doc["systemd"] != nil && !ok {
		return fmt.Errorf("rendered config %s: its Ignition systemd section is not an object", r.Name)
	}
	if systemd == nil {
		systemd = map[string]any{}
		doc["systemd"] = systemd
	}
	units, ok := systemd["units"].([]any)
	if systemd["units"] != nil && !ok {
		return fmt.Errorf("rendered config %s: its Ignition systemd.units is not a list", r.Name)
	}
	for _, u := range units {
		if m, _ := u.(map[string]any); m != nil && m["name"] == FirstBootUnit {
			return fmt.Errorf("rendered config %s has a unit %s, which the boot server adds (-first-boot-agent)", r.Name, FirstBootUnit)
		}
	}
	systemd["units"] = append(units, map[string]any{"name": FirstBootUnit, "enabled": true, "contents": firstBootUnit(o.FirstBootAgent)})
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
