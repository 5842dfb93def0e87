package views

import (
	"reflect"
	"sync"

	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// What a view for people shows came, in large part, from a configuration (paths, link
// targets, kernel arguments, OS images, unit and drop-in names), from nodes (reasons,
// holds, events, images, drift) or from files (the state, a saved plan, a lock): text mcp
// did not write. It enters each view through Shown, which passes every string of the
// view's input through mcp's one rule for such text (package untrusted): so no view, and
// no line of one, prints it raw, whatever a later change adds to the plan or the status.
// Views for tools (JSON) take their input as it is: encoding/json escapes it.
//
// Errors are not values Shown walks into: a view prints one through ErrorLines.

// Shown is v with every string it holds — in fields, elements, map keys and values,
// through pointers — escaped by untrusted.Line, or by untrusted.Lines for the texts that
// are lines by nature (textFields). Only what changes is copied: v itself is never
// modified (apply carries out the plan it shows), and text with nothing to escape, the
// common case, costs a walk and no copy. Interface values (errors) are left as they are.
// Commands that print what they read themselves (mcp fleet add, prune) pass it through
// Shown too.
func Shown[T any](v T) T {
	if out, ok := escapeValue(reflect.ValueOf(&v).Elem(), false); ok {
		return out.Interface().(T)
	}
	return v
}

// textFields are the fields whose strings are lines by nature: a content's text, a diff, a
// diagnostic's detail (its line breaks mcp's own), a unit's contents.
var textFields = map[reflect.Type]map[string]bool{
	reflect.TypeFor[planner.Content]():  {"Text": true},
	reflect.TypeFor[model.Drift]():      {"Diff": true},
	reflect.TypeFor[model.Diagnostic](): {"Detail": true},
	reflect.TypeFor[model.Unit]():       {"Contents": true},
	reflect.TypeFor[model.Dropin]():     {"Contents": true},
}

// escapeValue is v escaped, and whether that changed anything (v is returned as it is
// when not).
func escapeValue(v reflect.Value, lines bool) (reflect.Value, bool) {
	if v.Kind() == reflect.String { // most of what a plan holds: no more reflection than this
		s := v.String()
		e := untrusted.Line(s)
		if lines {
			e = untrusted.Lines(s)
		}
		if len(e) == len(s) { // escaping only ever lengthens
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(e)
		return out, true
	}
	t := v.Type()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || !holdsText(t.Elem()) {
			return v, false
		}
		e, ok := escapeValue(v.Elem(), lines)
		if !ok {
			return v, false
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		return p, true
	case reflect.Struct:
		return escapeStruct(v, fieldsOf(t))
	case reflect.Slice, reflect.Array:
		return escapeList(v, lines)
	case reflect.Map:
		return escapeMap(v, lines)
	}
	return v, false
}

func escapeStruct(v reflect.Value, fields []field) (reflect.Value, bool) {
	var out reflect.Value
	for _, f := range fields {
		e, ok := escapeValue(v.Field(f.index), f.lines)
		if !ok {
			continue
		}
		if !out.IsValid() {
			out = reflect.New(v.Type()).Elem()
			out.Set(v)
		}
		out.Field(f.index).Set(e)
	}
	if !out.IsValid() {
		return v, false
	}
	return out, true
}

func escapeList(v reflect.Value, lines bool) (reflect.Value, bool) {
	t := v.Type()
	if !holdsText(t.Elem()) || v.Kind() == reflect.Slice && v.IsNil() {
		return v, false
	}
	escape := func(e reflect.Value) (reflect.Value, bool) { return escapeValue(e, lines) }
	if t.Elem().Kind() == reflect.Struct { // a plan's nodes, their steps: their fields looked up once
		fields := fieldsOf(t.Elem())
		escape = func(e reflect.Value) (reflect.Value, bool) { return escapeStruct(e, fields) }
	}
	var out reflect.Value
	for i := range v.Len() {
		e, ok := escape(v.Index(i))
		if !ok {
			continue
		}
		if !out.IsValid() {
			if v.Kind() == reflect.Slice {
				out = reflect.MakeSlice(t, v.Len(), v.Len())
				reflect.Copy(out, v)
			} else {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
		}
		out.Index(i).Set(e)
	}
	if !out.IsValid() {
		return v, false
	}
	return out, true
}

func escapeMap(v reflect.Value, lines bool) (reflect.Value, bool) {
	t := v.Type()
	if v.IsNil() || !holdsText(t.Key()) && !holdsText(t.Elem()) {
		return v, false
	}
	changed := false
	keys, vals := make([]reflect.Value, 0, v.Len()), make([]reflect.Value, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		k, kc := escapeValue(it.Key(), lines)
		e, ec := escapeValue(it.Value(), lines)
		changed = changed || kc || ec
		keys, vals = append(keys, k), append(vals, e)
	}
	if !changed {
		return v, false
	}
	out := reflect.MakeMapWithSize(t, len(keys))
	for i := range keys {
		out.SetMapIndex(keys[i], vals[i])
	}
	return out, true
}

// field is a struct field that may hold text: exported (a view reads no other), and of a
// type that holds strings.
type field struct {
	index int
	lines bool
}

var fieldCache sync.Map // reflect.Type → []field

func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && holdsText(f.Type) {
			fs = append(fs, field{i, textFields[t][f.Name]})
		}
	}
	fieldCache.Store(t, fs)
	return fs
}

var textCache sync.Map // reflect.Type → bool

// holdsText reports whether a value of t may hold a string Shown walks to. A type that
// refers to itself is taken to hold text while its answer is being worked out.
func holdsText(t reflect.Type) bool {
	if h, ok := textCache.Load(t); ok {
		return h.(bool)
	}
	textCache.Store(t, true)
	h := false
	switch t.Kind() {
	case reflect.String:
		h = true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		h = holdsText(t.Elem())
	case reflect.Map:
		h = holdsText(t.Key()) || holdsText(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsText(f.Type) {
				h = true
				break
			}
		}
	}
	textCache.Store(t, h)
	return h
}
