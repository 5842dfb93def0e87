package content

import (
	"bytes"
	"encoding/json"
)

// withFirstBoot is the Ignition config ign with the first-boot-only part fb (an Ignition
// config's JSON without its version) merged in: objects key by key, lists one after the
// other (the managed entries first). Render keeps the two apart — no path, unit or user is
// in both — so this is Ignition's own merge of the two; a value ign has is never replaced.
// A part that is not a JSON object is left out here; Render refuses it before a config is
// named. Keys encode sorted, as every map of encoding/json.
func withFirstBoot(ign, fb []byte) []byte {
	base, ok := decodeObject(ign)
	part, ok2 := decodeObject(fb)
	if !ok || !ok2 {
		return ign
	}
	mergeInto(base, part)
	b, err := json.Marshal(base)
	if err != nil {
		panic("encoding an Ignition config: " + err.Error()) // decoded JSON encodes
	}
	return b
}

func decodeObject(b []byte) (map[string]any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // numbers encode again as they were written
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		switch old := dst[k].(type) {
		case nil:
			dst[k] = v
		case map[string]any:
			if sub, ok := v.(map[string]any); ok {
				mergeInto(old, sub)
			}
		case []any:
			if list, ok := v.([]any); ok {
				dst[k] = append(old, list...)
			}
		}
	}
}
