package model

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValueOf(t *testing.T) {
	for _, c := range []struct {
		kind SettingKind
		x    any
		want string // GoString of the value, or the error
	}{
		{SettingString, "a b", `"a b"`},
		{SettingPath, "/x", `"/x"`},
		{SettingBool, true, "true"},
		{SettingNumber, 3, "3"},
		{SettingNumber, 2.5, "2.5"},
		{SettingDuration, 90 * time.Second, `"1m30s"`},
		{SettingDuration, "10m", `"10m0s"`},
		{SettingList, []string{"a", `"b"`}, `["a", "\"b\""]`},
		{SettingList, []string{}, `[]`},
		{SettingString, 3, `3 is not a string`},
		{SettingBool, "true", `"true" is not a bool`},
		{SettingNumber, "3", `"3" is not a number`},
		{SettingDuration, "soon", `"soon" is not a duration`},
		{SettingDuration, -time.Second, `-1000000000 is not a duration`},
		{SettingList, "a", `"a" is not a list of strings`},
		{0, "a", `unknown kind 0`},
		{SettingList + 1, "a", `unknown kind 7`},
	} {
		v, err := ValueOf(c.kind, c.x)
		got := v.GoString()
		if err != nil {
			got = err.Error()
		} else if v.Kind != c.kind {
			t.Errorf("ValueOf(%s, %#v) has kind %s", c.kind, c.x, v.Kind)
		}
		if got != c.want {
			t.Errorf("ValueOf(%s, %#v) = %s, want %s", c.kind, c.x, got, c.want)
		}
	}
}

// A list value is the spec's copy: changing the default later changes no value made of it.
func TestValueOfCopiesLists(t *testing.T) {
	l := []string{"a"}
	v, _ := ValueOf(SettingList, l)
	l[0] = "b"
	if v.List[0] != "a" {
		t.Errorf("the value follows the list it was made of: %v", v.List)
	}
}

var testSpec = BlockSpec{Name: "t", Settings: []SettingSpec{
	{Name: "dir", Kind: SettingPath, Required: true, Check: NonEmpty},
	{Name: "wait", Kind: SettingDuration, Default: time.Minute, Check: PositiveDuration},
	{Name: "on", Kind: SettingBool, Default: true},
	{Name: "zones", Kind: SettingList},
}}

func TestBlockSpecCheck(t *testing.T) {
	if err := testSpec.Check(); err != nil {
		t.Errorf("a sound spec: %v", err)
	}
	bad := BlockSpec{Settings: []SettingSpec{
		{Name: "a", Kind: SettingString},
		{Name: "a", Kind: SettingString},
		{Kind: SettingBool},
		{Name: "k", Kind: 9},
		{Name: "d", Kind: SettingDuration, Default: "1m", Required: true},
		{Name: "n", Kind: SettingNumber, Default: "1"},
		{Name: "p", Kind: SettingDuration, Default: time.Duration(0), Check: PositiveDuration},
	}}
	err := bad.Check()
	for _, want := range []string{"the block has no name", "setting a declared twice", "a setting has no name",
		".k: unknown kind 9", ".d: required, yet it has a default", `.n: default: "1" is not a number`,
		".p: default: want a positive duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check of a bad spec: %v; want %q", err, want)
		}
	}
}

func TestBlockSpecWith(t *testing.T) {
	s, err := testSpec.With(map[string]any{"dir": "/d", "zones": []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{"dir": {Kind: SettingPath, String: "/d"}, "zones": {Kind: SettingList, List: []string{"a"}},
		"wait": {Kind: SettingDuration, Duration: time.Minute}, "on": {Kind: SettingBool, Bool: true}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if s.Str("dir") != "/d" || s.Duration("wait") != time.Minute || !s.Bool("on") || s.List("zones")[0] != "a" ||
		!s.Has("wait") || s.Has("nope") || s.Number("nope") != 0 || s.Str("nope") != "" {
		t.Errorf("accessors of %v", s)
	}
	_, err = testSpec.With(map[string]any{"wait": "0s", "on": "yes", "extra": 1})
	for _, want := range []string{`t has no setting "extra"`, `on: "yes" is not a bool`,
		`wait = "0s": want a positive duration`, "t needs dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("With of bad values: %v; want %q", err, want)
		}
	}
}

func TestSettingErrorIsItsReason(t *testing.T) {
	reason := errors.New("no such fleet")
	var err error = &SettingError{Setting: "fleet", Err: reason}
	var se *SettingError
	if err.Error() != "no such fleet" || !errors.Is(err, reason) || !errors.As(err, &se) || se.Setting != "fleet" {
		t.Errorf("SettingError %v", err)
	}
}
