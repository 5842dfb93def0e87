package machineconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// problemAt is a problem found at a JSON path of the config.
type problemAt struct {
	path, msg string
}

// from22 translates an Ignition spec 2.2 config into spec 3.0, as the MCO does before it
// merges (its ParseAndConvertConfig): duplicates are dropped first — the last file of a
// path and the last unit of a name win, and the earlier units' drop-ins of other names
// are added to the last — and then each section becomes its spec 3 form. What spec 3 has
// no form for (networkd units, 2.x filesystems, disks and RAID, created users) is named,
// since the MCO's converter refuses it too. remap turns a JSON path of the translated
// config back into the path of the same entry in doc. doc is nil on a problem.
func from22(in map[string]any) (doc map[string]any, remap func(string) string, problems []problemAt) {
	remap = func(p string) string { return p }
	if v, _ := dig(in, "ignition", "version").(string); v != "2.2.0" {
		return nil, remap, []problemAt{{"ignition.version", fmt.Sprintf(
			"Ignition spec %s: mcp reads spec 2.2.0 (the spec 2 the MCO reads) and specs 3.0.0 to 3.6.0", v)}}
	}
	doc = clone(in)
	ign, _ := doc["ignition"].(map[string]any)
	ign["version"] = "3.0.0"
	if cfg, ok := ign["config"].(map[string]any); ok {
		if app, ok := cfg["append"]; ok {
			cfg["merge"] = app
			delete(cfg, "append")
		}
	}
	bad := func(path, format string, args ...any) {
		problems = append(problems, problemAt{path, fmt.Sprintf(format, args...)})
	}
	storage, _ := doc["storage"].(map[string]any)
	for _, s := range []string{"disks", "raid", "filesystems"} {
		if l, _ := storage[s].([]any); len(l) > 0 {
			bad("storage."+s, "storage.%s in spec 2.2 has no translation mcp makes; write the MachineConfig in spec 3", s)
		}
	}
	if l, _ := dig(doc, "networkd", "units").([]any); len(l) > 0 {
		bad("networkd.units", "networkd units exist only in spec 2: write them as files under /etc/systemd/network")
	}
	delete(doc, "networkd")
	for i, u := range list(dig(doc, "passwd", "users")) {
		if _, ok := u["create"]; ok {
			bad(fmt.Sprintf("passwd.users.%d.create", i), "passwd.users.create exists only in spec 2: write the user's fields on the user")
		}
	}
	var fileIdx, unitIdx []int
	if storage != nil {
		var files []any
		files, fileIdx = lastByKey(storage["files"], "path", nil)
		for i, fe := range files {
			f, ok := fe.(map[string]any)
			if !ok {
				continue
			}
			rootOnly(f, fmt.Sprintf("storage.files.%d", fileIdx[i]), bad)
			if app, _ := f["append"].(bool); app {
				f["append"] = []any{f["contents"]}
				delete(f, "contents")
			} else {
				delete(f, "append")
			}
		}
		storage["files"] = files
		for _, s := range []string{"directories", "links"} {
			for i, e := range list(storage[s]) {
				rootOnly(e, fmt.Sprintf("storage.%s.%d", s, i), bad)
			}
		}
	}
	if sd, ok := doc["systemd"].(map[string]any); ok {
		var units []any
		units, unitIdx = lastByKey(sd["units"], "name", mergeDropins)
		for _, u := range list(units) {
			if e, ok := u["enable"]; ok {
				if _, set := u["enabled"]; !set {
					u["enabled"] = e
				}
				delete(u, "enable")
			}
		}
		sd["units"] = units
	}
	if len(problems) > 0 {
		return nil, remap, problems
	}
	remap = func(p string) string {
		for prefix, idx := range map[string][]int{"storage.files.": fileIdx, "systemd.units.": unitIdx} {
			if rest, ok := strings.CutPrefix(p, prefix); ok {
				n, tail, _ := strings.Cut(rest, ".")
				if i, err := strconv.Atoi(n); err == nil && i < len(idx) {
					return strings.TrimSuffix(prefix+strconv.Itoa(idx[i])+"."+tail, ".")
				}
			}
		}
		return p
	}
	return doc, remap, nil
}

// rootOnly drops a spec 2 entry's filesystem, which must be the root one: spec 3 writes
// every path into the root file system.
func rootOnly(e map[string]any, path string, bad func(string, string, ...any)) {
	if fs, ok := e["filesystem"]; ok && fs != "root" {
		bad(path+".filesystem", "filesystem %v: mcp writes to the root file system only (spec 3 has no other)", fs)
	}
	delete(e, "filesystem")
}

// lastByKey keeps the last entry of each key value of l, in l's order, with merge folding
// a dropped earlier entry into the kept one; idx gives each kept entry's index in l.
func lastByKey(l any, key string, merge func(kept, earlier map[string]any)) (out []any, idx []int) {
	entries, _ := l.([]any)
	kept := map[string]map[string]any{}
	for i := len(entries) - 1; i >= 0; i-- {
		e, ok := entries[i].(map[string]any)
		if !ok {
			out, idx = append(out, entries[i]), append(idx, i)
			continue
		}
		k := fmt.Sprint(e[key])
		if first, dup := kept[k]; dup {
			if merge != nil {
				merge(first, e)
			}
			continue
		}
		kept[k] = e
		out, idx = append(out, e), append(idx, i)
	}
	slices.Reverse(out)
	slices.Reverse(idx)
	return out, idx
}

// mergeDropins adds the drop-ins of an earlier declaration of a unit whose names the
// kept declaration lacks, as the MCO does for spec 2 configs.
func mergeDropins(kept, earlier map[string]any) {
	have := map[any]bool{}
	for _, d := range list(kept["dropins"]) {
		have[d["name"]] = true
	}
	for _, d := range list(earlier["dropins"]) {
		if !have[d["name"]] {
			l, _ := kept["dropins"].([]any)
			kept["dropins"] = append(l, d)
		}
	}
}

// list is the mapping entries of a JSON list (others are left to Ignition's parser).
func list(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// clone deep-copies a decoded JSON value.
func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return clone(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = cloneValue(e)
		}
		return l
	}
	return v
}
