package content

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_4/types"

	"github.com/mcpfleet/mcp/model"
)

// encodedBefore is how render encoded a config before it marshalled once: Ignition's 3.4
// types marshalled, decoded into maps, empty objects and arrays dropped, marshalled again.
// Rendered configs are named by a hash of these bytes, so the encoding must not change.
func encodedBefore(t *testing.T, r *model.Rendered) []byte {
	t.Helper()
	var c types.Config
	c.Ignition.Version = r.IgnitionVersion
	yes := true
	for _, k := range r.KernelArgs {
		c.KernelArguments.ShouldExist = append(c.KernelArguments.ShouldExist, types.KernelArgument(k))
	}
	for _, f := range r.Files {
		src, mode := DataURL(f.Contents), f.Mode
		file := types.File{Node: types.Node{Path: f.Path, Overwrite: &yes}}
		file.Contents.Source, file.Mode = &src, &mode
		if f.User != "" {
			file.User.Name = &f.User
		}
		if f.Group != "" {
			file.Group.Name = &f.Group
		}
		c.Storage.Files = append(c.Storage.Files, file)
	}
	for _, u := range r.Units {
		unit := types.Unit{Name: u.Name, Enabled: u.Enabled}
		if u.Contents != "" {
			unit.Contents = &u.Contents
		}
		if u.Mask {
			unit.Mask = &yes
		}
		for _, d := range u.Dropins {
			unit.Dropins = append(unit.Dropins, types.Dropin{Name: d.Name, Contents: &d.Contents})
		}
		c.Systemd.Units = append(c.Systemd.Units, unit)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(pruneEmpty(doc))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pruneEmpty(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := pruneEmpty(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
	case []any:
		for i := range t {
			if p := pruneEmpty(t[i]); p != nil {
				t[i] = p
			} else {
				t[i] = map[string]any{}
			}
		}
		if len(t) == 0 {
			return nil
		}
	}
	return v
}

// ignitionCases are configs with and without each section and field, and with strings
// that JSON escapes or that are not UTF-8.
func ignitionCases() []*model.Rendered {
	yes, no := true, false
	odd := []string{"", "plain", "a&b<c>d", "line\nbreak\ttab\x01", "quote\" back\\slash", "\u2028\u2029",
		"ünïcødé ✓ \U0001F600", "bad \xff\xfe utf-8 \xc3", "\xe2\x82", "%#?{}|^`", "\ufffd"}
	cases := []*model.Rendered{
		{IgnitionVersion: "3.4.0"},
		{IgnitionVersion: "3.6.0", KernelArgs: []string{"nosmt", ""}},
		{IgnitionVersion: "3.5.0", Files: []model.File{{Entry: model.Entry{Path: "/etc/empty"}}, {Entry: model.Entry{Path: "/etc/bin", User: "core", Group: "wheel"}, Mode: 0o7777, Contents: []byte{0xff, 0, 1}}}},
		{IgnitionVersion: "3.4.0", Units: []model.Unit{{Name: "a.service"}, {Name: "b.service", Enabled: &no, Mask: true},
			{Name: "c.service", Enabled: &yes, Contents: "[Service]\n", Dropins: []model.Dropin{{Name: "10.conf"}, {Name: "20.conf", Contents: "x"}}}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return odd[rng.IntN(len(odd))] }
	for range 200 {
		r := &model.Rendered{IgnitionVersion: "3.4.0"}
		for range rng.IntN(3) {
			r.KernelArgs = append(r.KernelArgs, pick())
		}
		for range rng.IntN(4) {
			f := model.File{Entry: model.Entry{Path: pick()}, Mode: rng.IntN(0o10000), Contents: []byte(pick())}
			if rng.IntN(2) == 0 {
				f.User, f.Group = pick(), pick()
			}
			r.Files = append(r.Files, f)
		}
		for range rng.IntN(4) {
			u := model.Unit{Name: pick(), Contents: pick(), Mask: rng.IntN(2) == 0}
			if e := rng.IntN(3); e < 2 {
				u.Enabled = []*bool{&yes, &no}[e]
			}
			for range rng.IntN(3) {
				u.Dropins = append(u.Dropins, model.Dropin{Name: pick(), Contents: pick()})
			}
			r.Units = append(r.Units, u)
		}
		cases = append(cases, r)
	}
	return cases
}

// TestIgnitionBytesAsBefore: the one marshal gives the bytes of the old encoding, for
// configs with and without each section and field, and for strings that JSON escapes or
// that are not UTF-8.
func TestIgnitionBytesAsBefore(t *testing.T) {
	for i, r := range ignitionCases() {
		got := encode(r)
		if want := encodedBefore(t, r); !bytes.Equal(got, want) {
			t.Fatalf("case %d: %+v\nencoded %s\nbefore  %s", i, r, got, want)
		}
	}
}

// TestIgnitionFieldsInKeyOrder: every struct render marshals Ignition from lists its fields
// in the order of their JSON keys, so its one marshal writes keys in the order a map's
// marshal (which sorts them) did.
func TestIgnitionFieldsInKeyOrder(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		var keys []string
		for i := range ty.NumField() {
			f := ty.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "" || f.Anonymous {
				t.Errorf("%s.%s: no JSON key of its own", ty.Name(), f.Name)
			}
			keys = append(keys, key)
			walk(f.Type)
		}
		if !slices.IsSorted(keys) {
			t.Errorf("%s: keys %v are not in order", ty.Name(), keys)
		}
	}
	walk(reflect.TypeFor[ignConfig]())
	if len(seen) < 10 {
		t.Errorf("walked %d structs", len(seen))
	}
}
