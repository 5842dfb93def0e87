package machineconfig

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpfleet/mcp/config/butane"
)

// pathInMessage finds the JSON path an Ignition or Butane-reader message names
// ("storage.files.0.contents.source", "file /etc/x (storage.files.2): …"). A path starts
// at a message's start, after a space or after "(", so that a file's own path
// ("/etc/systemd/…") is not taken for one.
var pathInMessage = regexp.MustCompile(`(?:^|[\s(])((?:ignition|storage|systemd|passwd|kernelArguments)(?:\.[A-Za-z0-9_]+)*)`)

// jsonPath is the first JSON path msg names, or "".
func jsonPath(msg string) string {
	m := pathInMessage.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	return m[1]
}

// locate is the place of the deepest node of path ("storage.files.0.path") that exists
// under n; n's own place when none does.
func locate(n *yaml.Node, path string) Pos {
	best := at(n)
	if path == "" {
		return best
	}
	cur := n
	for _, part := range strings.Split(path, ".") {
		var next *yaml.Node
		switch cur.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(cur.Content); i += 2 {
				if cur.Content[i].Value == part {
					// The key's place: the value of a scalar field is on its line, and a
					// list or mapping starts below the key that names it.
					best, next = at(cur.Content[i]), cur.Content[i+1]
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(cur.Content) {
				next = cur.Content[i]
				best = at(next)
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	return best
}

// placeItems gives each item of res (what spec.config, node n, declares) its place in the
// MachineConfig: its JSON path under spec.config and the line and column of its node
// (remap takes a path of the Ignition config read to the one written, for spec 2.2).
func (p *parser) placeItems(res *butane.Result, n *yaml.Node, remap func(string) string) {
	for _, t := range res.Texts() {
		pos := p.place(locate(n, remap(t.Path)))
		t.Path, t.Line, t.Column = "spec.config."+t.Path, pos.Line, pos.Column
	}
}
