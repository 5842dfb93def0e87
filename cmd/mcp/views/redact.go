package views

import (
	"encoding/json"
	"slices"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// SensitiveSource stands for a sensitive file's content where mcp show -rendered prints the
// Ignition config: the config served to a booting node carries the content, a reader of
// the show does not see it.
const SensitiveSource = "(sensitive: not shown)"

// redacted is r in its full form (with its Ignition config) as mcp show -rendered prints
// it: every sensitive file's content left out, of its files (contents null) and of its
// Ignition config (the file's source replaced by SensitiveSource). r is not changed.
func redacted(r *model.Rendered) (content.Full, error) {
	full := content.FullOf(r)
	secret := map[string]bool{}
	for _, f := range r.Files {
		if f.Sensitive {
			secret[f.Path] = true
		}
	}
	if len(secret) == 0 {
		return full, nil
	}
	c := *r
	c.Files = slices.Clone(r.Files)
	for i := range c.Files {
		if c.Files[i].Sensitive {
			c.Files[i].Contents = nil
		}
	}
	var ign map[string]any
	if err := json.Unmarshal(full.Ignition, &ign); err != nil {
		return content.Full{}, err
	}
	storage, _ := ign["storage"].(map[string]any)
	files, _ := storage["files"].([]any)
	for _, f := range files {
		if fm, ok := f.(map[string]any); ok {
			if p, _ := fm["path"].(string); secret[p] {
				fm["contents"] = map[string]any{"source": SensitiveSource}
			}
		}
	}
	b, err := json.Marshal(ign)
	if err != nil {
		return content.Full{}, err
	}
	return content.Full{Rendered: &c, Ignition: b}, nil
}
