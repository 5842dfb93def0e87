package views

import (
	"encoding/json"
	"slices"

	"github.com/mcpfleet/mcp/model"
)

// SensitiveSource stands for a sensitive file's content where mcp show -rendered prints the
// Ignition config: the config served to a booting node carries the content, a reader of
// the show does not see it.
const SensitiveSource = "(sensitive: not shown)"

// redacted is r as mcp show -rendered prints it: every sensitive file's content left out,
// of its files (contents null) and of its Ignition config (the file's source replaced by
// SensitiveSource). r is not changed; without sensitive files it is returned as it is.
func redacted(r *model.Rendered) (*model.Rendered, error) {
	secret := map[string]bool{}
	for _, f := range r.Files {
		if f.Sensitive {
			secret[f.Path] = true
		}
	}
	if len(secret) == 0 {
		return r, nil
	}
	c := *r
	c.Files = slices.Clone(r.Files)
	for i := range c.Files {
		if c.Files[i].Sensitive {
			c.Files[i].Contents = nil
		}
	}
	var ign map[string]any
	if err := json.Unmarshal(r.Ignition, &ign); err != nil {
		return nil, err
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
		return nil, err
	}
	c.Ignition = b
	return &c, nil
}
