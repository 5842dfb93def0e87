package machineconfig

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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
