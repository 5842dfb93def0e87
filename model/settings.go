package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A BlockSpec is what a provider or state backend declares about its block in the
// configuration (provider "NAME" { … }, state { backend = "NAME" … }): its name and its
// settings. The configuration language reads a block against its spec, so it knows no
// provider or backend by name: the parts a build has are handed to it.
type BlockSpec struct {
	Name     string
	Settings []SettingSpec
	// Example is a body for messages that show the block ("fleet = \"./fleet\""); empty
	// for a block that needs no setting.
	Example string
}

// SettingSpec is one setting (an attribute) of a block.
type SettingSpec struct {
	Name     string
	Kind     SettingKind
	Required bool
	// Default is the value of a setting the block does not give, of Kind's Go type
	// (string, bool, float64, time.Duration, []string); nil: none, the setting is absent.
	// A Path default is resolved against the configuration's directory as a given one is.
	Default any
	// Check, when set, refuses a value of the right kind that the part cannot take; its
	// error is shown at the value's place in the configuration.
	Check func(SettingValue) error
}

// SettingKind is the type of a setting's value.
type SettingKind uint8

const (
	SettingString   SettingKind = iota + 1 // a string
	SettingPath                            // a string, a path made absolute against the configuration's directory ("~/" is home)
	SettingBool                            // true or false
	SettingNumber                          // a number
	SettingDuration                        // a Go duration such as "30s", not negative
	SettingList                            // a list of strings
)

var settingKinds = [...]string{
	SettingString:   "string",
	SettingPath:     "path",
	SettingBool:     "bool",
	SettingNumber:   "number",
	SettingDuration: "duration",
	SettingList:     "list of strings",
}

// Valid reports whether k is one of the kinds above.
func (k SettingKind) Valid() bool { return int(k) < len(settingKinds) && settingKinds[k] != "" }

func (k SettingKind) String() string {
	if k.Valid() {
		return settingKinds[k]
	}
	return fmt.Sprintf("SettingKind(%d)", k)
}

// SettingValue is a setting's value as the configuration gave it (or its default): the
// field of its Kind holds it.
type SettingValue struct {
	Kind     SettingKind
	String   string // SettingString, SettingPath
	Bool     bool
	Number   float64
	Duration time.Duration
	List     []string
	// Range is where the configuration gave the value; the zero Range for a default.
	Range Range
}

// GoString shows the value as the configuration would write it: "30s", true, ["a", "b"].
func (v SettingValue) GoString() string {
	switch v.Kind {
	case SettingBool:
		return strconv.FormatBool(v.Bool)
	case SettingNumber:
		return strconv.FormatFloat(v.Number, 'f', -1, 64)
	case SettingDuration:
		return strconv.Quote(v.Duration.String())
	case SettingList:
		q := make([]string, len(v.List))
		for i, s := range v.List {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return strconv.Quote(v.String)
}

// ValueOf is the SettingValue of kind holding x, a value of the kind's Go type (an int is
// taken for a number, a string for a duration); an error says what x should have been.
func ValueOf(kind SettingKind, x any) (SettingValue, error) {
	v := SettingValue{Kind: kind}
	ok := false
	switch kind {
	case SettingString, SettingPath:
		v.String, ok = x.(string)
	case SettingBool:
		v.Bool, ok = x.(bool)
	case SettingNumber:
		switch n := x.(type) {
		case float64:
			v.Number, ok = n, !math.IsNaN(n) && !math.IsInf(n, 0)
		case int:
			v.Number, ok = float64(n), true
		}
	case SettingDuration:
		switch d := x.(type) {
		case time.Duration:
			v.Duration, ok = d, d >= 0
		case string:
			var err error
			v.Duration, err = time.ParseDuration(d)
			ok = err == nil && v.Duration >= 0
		}
	case SettingList:
		var l []string
		if l, ok = x.([]string); ok {
			v.List = slices.Clone(l)
		}
	default:
		return v, fmt.Errorf("unknown kind %d", kind)
	}
	if !ok {
		return v, fmt.Errorf("%#v is not a %s", x, kind)
	}
	return v, nil
}

// Settings are a block's settings by name: those the configuration gave, and the
// defaults of the others. A setting absent from both is absent here; its accessors give
// the zero value.
type Settings map[string]SettingValue

// Str is the string (or path) setting name; "" when absent.
func (s Settings) Str(name string) string { return s[name].String }

// Bool is the bool setting name; false when absent.
func (s Settings) Bool(name string) bool { return s[name].Bool }

// Number is the number setting name; 0 when absent.
func (s Settings) Number(name string) float64 { return s[name].Number }

// Duration is the duration setting name; 0 when absent.
func (s Settings) Duration(name string) time.Duration { return s[name].Duration }

// List is the list setting name; nil when absent.
func (s Settings) List(name string) []string { return s[name].List }

// Has reports whether the setting name has a value, given or by default.
func (s Settings) Has(name string) bool { _, ok := s[name]; return ok }

// Check reports what is wrong with spec itself: a setting without a name or named twice,
// an unknown kind, a default of another type or that its own Check refuses. Each part's
// tests call it; the configuration language trusts the specs it is handed.
func (spec BlockSpec) Check() error {
	var errs []error
	if spec.Name == "" {
		errs = append(errs, errors.New("the block has no name"))
	}
	seen := map[string]bool{}
	for _, s := range spec.Settings {
		switch {
		case s.Name == "":
			errs = append(errs, fmt.Errorf("%s: a setting has no name", spec.Name))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("%s: setting %s declared twice", spec.Name, s.Name))
		}
		seen[s.Name] = true
		if !s.Kind.Valid() {
			errs = append(errs, fmt.Errorf("%s.%s: unknown kind %d", spec.Name, s.Name, s.Kind))
			continue
		}
		if s.Default == nil {
			continue
		}
		if s.Required {
			errs = append(errs, fmt.Errorf("%s.%s: required, yet it has a default", spec.Name, s.Name))
		}
		v, err := ValueOf(s.Kind, s.Default)
		if err == nil && s.Check != nil {
			err = s.Check(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: default: %w", spec.Name, s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Defaults are the defaults of spec's settings.
func (spec BlockSpec) Defaults() Settings {
	out := Settings{}
	for _, s := range spec.Settings {
		if s.Default == nil {
			continue
		}
		// Check, in each part's tests, holds defaults to their kinds.
		if v, err := ValueOf(s.Kind, s.Default); err == nil {
			out[s.Name] = v
		}
	}
	return out
}

// With builds a block's settings from Go values (as ValueOf takes them), checked as the
// configuration language checks a block — no unknown setting, every required one, each
// Check — with the defaults of the others. Paths are taken as they are. It is for tests,
// and for programs that build a part without a configuration.
func (spec BlockSpec) With(given map[string]any) (Settings, error) {
	out := spec.Defaults()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(given)) {
		i := slices.IndexFunc(spec.Settings, func(s SettingSpec) bool { return s.Name == name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s has no setting %q", spec.Name, name))
			continue
		}
		s := spec.Settings[i]
		v, err := ValueOf(s.Kind, given[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if s.Check != nil {
			if err := s.Check(v); err != nil {
				errs = append(errs, fmt.Errorf("%s = %#v: %w", name, v, err))
				continue
			}
		}
		out[name] = v
	}
	for _, s := range spec.Settings {
		if _, ok := given[s.Name]; s.Required && !ok {
			errs = append(errs, fmt.Errorf("%s needs %s", spec.Name, s.Name))
		}
	}
	return out, errors.Join(errs...)
}

// SettingError is a part's refusal of one of its settings, returned by its constructor
// so that the message is shown at the setting's place in the configuration. Its message
// is Err's: the place names the setting.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// PositiveDuration is a SettingSpec.Check for a duration that must be above zero.
func PositiveDuration(v SettingValue) error {
	if v.Duration <= 0 {
		return errors.New(`want a positive duration such as "30s" or "10m"`)
	}
	return nil
}

// NonEmpty is a SettingSpec.Check for a string or path that must not be "".
func NonEmpty(v SettingValue) error {
	if v.String == "" {
		return errors.New("must not be empty")
	}
	return nil
}
