package content

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// AgentStateDir is the node agent's own directory (nodeexec.StateDir, from the root): its
// pending update, the config the node runs, its report, the first-boot record. Nothing a
// config declares may be written there (config refuses it at validate).
const AgentStateDir = "/var/lib/mcp"

// FirstBootPath is where the boot server's served config puts the first-boot record in a
// new node's root (docs/boot-server.md): the agent's first-boot path reads it.
const FirstBootPath = AgentStateDir + "/firstboot.json"

// FirstBootMode is the record's file mode: like the agent's own records beside it
// (current.json, pending.json), for root only.
const FirstBootMode = 0o600

// FirstBoot is the first-boot record: which rendered config the node's Ignition config came
// from, and the OS image the pool runs. It is added to the served config, not to the
// rendered config (whose name is a hash of its content), so the config it names does not
// contain it.
type FirstBoot struct {
	// Rendered names the rendered config the node was booted with.
	Rendered string `json:"rendered"`
	// OSImage is that config's OS image ("": the pool has none, and nothing is pivoted).
	OSImage string `json:"os_image,omitempty"`
	// Config is the rendered config itself, when the boot server embeds it (mcp serve
	// -first-boot-agent): the first-boot unit's agent then needs no boot server, its URL,
	// CA or token (what the MCO's encapsulated machine config is for).
	Config *model.Rendered `json:"config,omitempty"`
}

// FirstBootOf is the record of a node booted with r.
func FirstBootOf(r *model.Rendered) FirstBoot { return FirstBoot{Rendered: r.Name, OSImage: r.OSImage} }

// Encode is the record's file content: its JSON and a newline. An embedded config is in
// its full form (FullOf), with its Ignition config beside its content: the agent on a
// machine's boot image may be older than the boot server, and an older agent checks the
// config's name against that form.
func (f FirstBoot) Encode() []byte {
	rec := struct {
		Rendered string `json:"rendered"`
		OSImage  string `json:"os_image,omitempty"`
		Config   *Full  `json:"config,omitempty"`
	}{Rendered: f.Rendered, OSImage: f.OSImage}
	if f.Config != nil {
		full := FullOf(f.Config)
		rec.Config = &full
	}
	b, err := json.Marshal(rec)
	if err != nil {
		panic("encoding a first-boot record: " + err.Error()) // strings, and a config as Name encodes it
	}
	return append(b, '\n')
}

// ParseFirstBoot reads a record, refusing one that names no rendered config.
func ParseFirstBoot(b []byte) (FirstBoot, error) {
	var f FirstBoot
	if err := json.Unmarshal(b, &f); err != nil {
		return FirstBoot{}, fmt.Errorf("%s is not a first-boot record: %w", FirstBootPath, err)
	}
	if !strings.HasPrefix(f.Rendered, "rendered-") || strings.ContainsAny(f.Rendered, "/ ") {
		return FirstBoot{}, fmt.Errorf("%s names %q, not a rendered config", FirstBootPath, f.Rendered)
	}
	if c := f.Config; c != nil {
		if c.Name != f.Rendered || c.OSImage != f.OSImage {
			return FirstBoot{}, fmt.Errorf("%s names %s (OS image %q) and holds %s (OS image %q)", FirstBootPath, f.Rendered, f.OSImage, c.Name, c.OSImage)
		}
		if err := Check(c); err != nil {
			return FirstBoot{}, fmt.Errorf("%s: %w", FirstBootPath, err)
		}
		Settle(c)
	}
	return f, nil
}
