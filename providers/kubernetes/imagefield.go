package kubernetes

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A machine template's image field is written for people as a JSON path,
// "spec.template.spec.providerSpec.value.disks[0].image" (model.MachineTemplate.Field):
// keys separated by dots, an array index in brackets. Its last element may name several
// string fields, "image.{publisher,offer,sku,version}": the image reference is then their
// values joined with ":" — an Azure marketplace image's URN, as `az vm create --image`
// takes it. Nothing else of the object is read or written through a field.

// fieldPath is one string field: object keys (string) and array indices (int).
type fieldPath []any

// parseField reads a field into the paths of its string fields (one, or one per name of a
// trailing {a,b,…}).
func parseField(field string) ([]fieldPath, error) {
	bad := func(why string) ([]fieldPath, error) { return nil, fmt.Errorf("image field %q: %s", field, why) }
	head, last := field, ""
	if i := strings.LastIndex(field, ".{"); i >= 0 && strings.HasSuffix(field, "}") {
		head, last = field[:i], field[i+2:len(field)-1]
	}
	var base fieldPath
	for _, seg := range strings.Split(head, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key == "" {
			return bad("an empty key")
		}
		base = append(base, key)
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil || i < 0 || (after != "" && after[0] != '[') {
				return bad(fmt.Sprintf("a bad index in %q", seg))
			}
			base = append(base, i)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	if last == "" {
		return []fieldPath{base}, nil
	}
	var out []fieldPath
	for _, k := range strings.Split(last, ",") {
		if k == "" {
			return bad("an empty name in {…}")
		}
		out = append(out, append(base[:len(base):len(base)], k))
	}
	return out, nil
}

// pointer is the path as a JSON pointer (RFC 6901): /spec/template/…/disks/0/image.
func (f fieldPath) pointer() string {
	var b strings.Builder
	for _, e := range f {
		b.WriteByte('/')
		switch e := e.(type) {
		case int:
			b.WriteString(strconv.Itoa(e))
		case string:
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(e))
		}
	}
	return b.String()
}

// lookup is the value at f in obj (a decoded JSON object), and whether it is there.
func (f fieldPath) lookup(obj any) (any, bool) {
	for _, e := range f {
		switch e := e.(type) {
		case string:
			m, ok := obj.(map[string]any)
			if !ok {
				return nil, false
			}
			if obj, ok = m[e]; !ok {
				return nil, false
			}
		case int:
			s, ok := obj.([]any)
			if !ok || e >= len(s) {
				return nil, false
			}
			obj = s[e]
		}
	}
	return obj, true
}

// readImage is the image reference field holds in obj. An absent field or one that is not
// a string is an error naming it.
func readImage(obj map[string]any, field string) (string, error) {
	paths, err := parseField(field)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(paths))
	for i, p := range paths {
		v, ok := p.lookup(obj)
		if !ok {
			return "", fmt.Errorf("%s is not set", p.pointer())
		}
		if parts[i], ok = v.(string); !ok {
			return "", fmt.Errorf("%s is not a string (%T)", p.pointer(), v)
		}
	}
	return strings.Join(parts, ":"), nil
}

// splitImage splits an image reference into the values of a field's paths: the whole
// reference for one path; for several, its ":"-separated parts, one per path.
func splitImage(paths []fieldPath, ref string) ([]string, error) {
	if len(paths) == 1 {
		return []string{ref}, nil
	}
	parts := strings.Split(ref, ":")
	if len(parts) != len(paths) {
		return nil, fmt.Errorf("image %q is not %d values separated by \":\" (%s)", ref, len(paths), pathNames(paths))
	}
	return parts, nil
}

func pathNames(paths []fieldPath) string {
	var s []string
	for _, p := range paths {
		s = append(s, fmt.Sprint(p[len(p)-1]))
	}
	return strings.Join(s, ":")
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// imagePatch is the JSON patch that sets field from from to to: a test of each of its
// string fields' current value, then a replace of each. The API server applies it whole
// or not at all, so a template whose field no longer holds from is left unchanged, and
// nothing but the field is written.
func imagePatch(field, from, to string) ([]byte, error) {
	paths, err := parseField(field)
	if err != nil {
		return nil, err
	}
	fromParts, err := splitImage(paths, from)
	if err != nil {
		return nil, err
	}
	toParts, err := splitImage(paths, to)
	if err != nil {
		return nil, err
	}
	var ops []jsonPatchOp
	for i, p := range paths {
		ops = append(ops, jsonPatchOp{Op: "test", Path: p.pointer(), Value: fromParts[i]})
	}
	for i, p := range paths {
		ops = append(ops, jsonPatchOp{Op: "replace", Path: p.pointer(), Value: toParts[i]})
	}
	return json.Marshal(ops)
}
