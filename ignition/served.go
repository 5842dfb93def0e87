package ignition

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/vcontext/report"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// ServeOptions change what a pool's served config carries beside its rendered config.
type ServeOptions struct {
	// FirstBootAgent, when set, is the path of mcp-agent on the pools' boot images: each
	// served config then also has the unit FirstBootUnit, which runs that agent's first
	// boot before kubelet starts, and its first-boot record embeds the rendered config (the
	// agent then needs no boot server, CA or token). Off, a new node's first boot is run
	// by the agent once it runs (the DaemonSet's, after the node joined).
	FirstBootAgent string
}

// FirstBootUnit is the unit ServeOptions.FirstBootAgent adds to the served configs.
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
// condition skips it, and a skipped unit does not stop kubelet. It waits for
// network-online.target, unlike the node agent after a reboot (docs/agent.md, "Up with
// the machine"): it fetches the rendered config from the boot server and pulls the pool's
// OS image, which need the network up, and kubelet waits for it anyway.
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

// Served is a pool's config for first boot, as the boot server serves it.
type Served struct {
	// Native is the minor of the spec 3.<minor> the rendered config was written in, -1
	// when it names none.
	Native int
	// ByMinor is the config in spec 3.<minor>, for each spec that can express it.
	ByMinor map[int][]byte
	// Why says, for each spec that cannot, what it lacks.
	Why map[int]string
}

// Serve prepares r's config as the boot server serves it to a new node of r's pool: r's
// Ignition config with the first-boot record (and, asked, the first-boot unit) added, in
// every 3.x spec whose parser takes it without dropping anything (an "unused key" means
// the spec cannot express a field). The config is decoded and encoded once; each spec's
// parser then checks that encoding with its version.
func Serve(r *model.Rendered, o ServeOptions) (*Served, error) {
	encode, native, err := served(r, o)
	if err != nil {
		return nil, err
	}
	sv := &Served{Native: native, ByMinor: map[int][]byte{}, Why: map[int]string{}}
	for _, sp := range specs {
		b, err := encode(sp.Version)
		if err != nil {
			return nil, err
		}
		rpt, err := sp.Parse(b)
		if reason := inexpressible(rpt, err); reason != "" {
			sv.Why[sp.Minor] = reason
			continue
		}
		sv.ByMinor[sp.Minor] = b
	}
	if len(sv.ByMinor) == 0 {
		return nil, fmt.Errorf("rendered config %s cannot be written in any Ignition spec 3.%d–3.%d: %s",
			r.Name, specs[len(specs)-1].Minor, specs[0].Minor, sv.Why[specs[0].Minor])
	}
	return sv, nil
}

// CheckServable refuses a rendered config r (named) that the boot server could not serve
// to a new node (Serve): with the first-boot record added, Ignition refuses a config one
// of whose links the record's path goes through ("file path includes link in config"),
// and with ServeOptions.FirstBootAgent, one that has a unit of the name Serve adds. Render
// checks it, so that what validate and plan take, mcp serve serves. Of r, only what the
// record can clash with is served and parsed (its links, and its first-boot parts, which
// may have links of their own): a whole config's parse again would double render's time,
// and each of its other items passed Ignition's check, and mcp's of its path, without the
// record.
func CheckServable(r *model.Rendered) error {
	if r.Unit(FirstBootUnit) != nil {
		return fmt.Errorf("unit %s is the boot server's own (mcp serve -first-boot-agent adds it to every served config)", FirstBootUnit)
	}
	links := &model.Rendered{Name: r.Name, IgnitionVersion: r.IgnitionVersion, OSImage: r.OSImage, Links: r.Links, FirstBoot: r.FirstBoot}
	encode, _, err := served(links, ServeOptions{})
	if err != nil {
		return err
	}
	spec, _ := Lookup(r.IgnitionVersion)
	b, err := encode(spec.Version)
	if err != nil {
		return err
	}
	if reason := inexpressible(spec.Parse(b)); reason != "" {
		return fmt.Errorf("the boot server could not serve it to a new node: with the first-boot record (%s) it adds, Ignition refuses it: %s",
			content.FirstBootPath, reason)
	}
	return nil
}

// served decodes r's Ignition config and adds what o asks the served config to carry
// (addFirstBoot): it returns what encodes that in a spec version, and the minor of the spec
// r names (-1 when none).
func served(r *model.Rendered, o ServeOptions) (func(version string) ([]byte, error), int, error) {
	// A config carrying its content alone is served in the spec it names; one stored with an
	// Ignition config of its own (an older mcp's) is served from those bytes, as it was.
	if _, ok := Lookup(r.IgnitionVersion); !ok && r.LegacyIgnition == nil {
		return nil, 0, fmt.Errorf("rendered config %s names Ignition spec %q, which mcp does not know", r.Name, r.IgnitionVersion)
	}
	var doc map[string]any
	if err := json.Unmarshal(content.Ignition(r), &doc); err != nil {
		return nil, 0, fmt.Errorf("rendered config %s has no valid Ignition config: %w", r.Name, err)
	}
	ign, _ := doc["ignition"].(map[string]any)
	if ign == nil {
		return nil, 0, fmt.Errorf("rendered config %s: Ignition config without an ignition section", r.Name)
	}
	native := -1
	if v, _ := ign["version"].(string); strings.HasPrefix(v, "3.") {
		fmt.Sscanf(v, "3.%d.0", &native)
	}
	if err := addFirstBoot(doc, r, o); err != nil {
		return nil, 0, err
	}
	encode, err := versioned(doc, ign)
	return encode, native, err
}

// addFirstBoot adds the first-boot record (content.FirstBoot) to the Ignition config doc of
// r: a file at content.FirstBootPath that tells the node's agent which rendered config it
// boots and the pool's OS image. It goes into what is served, not into r, whose name is a
// hash of its content. A file in storage.files is in every 3.x spec, so the record changes
// no spec's verdict; each spec's parser still checks the bytes with it.
func addFirstBoot(doc map[string]any, r *model.Rendered, o ServeOptions) error {
	storage, files, err := listIn(doc, r, "storage", "files")
	if err != nil {
		return err
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
	systemd, units, err := listIn(doc, r, "systemd", "units")
	if err != nil {
		return err
	}
	for _, u := range units {
		if m, _ := u.(map[string]any); m != nil && m["name"] == FirstBootUnit {
			return fmt.Errorf("rendered config %s has a unit %s, which the boot server adds (-first-boot-agent)", r.Name, FirstBootUnit)
		}
	}
	systemd["units"] = append(units, map[string]any{"name": FirstBootUnit, "enabled": true, "contents": firstBootUnit(o.FirstBootAgent)})
	return nil
}

// listIn is the list doc[section][key] of r's Ignition config and its section, which it
// makes when doc has none; a section that is not an object, or a key that is not a list,
// is an error naming it.
func listIn(doc map[string]any, r *model.Rendered, section, key string) (map[string]any, []any, error) {
	sec, ok := doc[section].(map[string]any)
	if doc[section] != nil && !ok {
		return nil, nil, fmt.Errorf("rendered config %s: its Ignition %s section is not an object", r.Name, section)
	}
	if sec == nil {
		sec = map[string]any{}
		doc[section] = sec
	}
	list, ok := sec[key].([]any)
	if sec[key] != nil && !ok {
		return nil, nil, fmt.Errorf("rendered config %s: its Ignition %s.%s is not a list", r.Name, section, key)
	}
	return sec, list, nil
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
