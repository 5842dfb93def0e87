package state

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
)

// ErrConflict is wrapped by a backend's Write when the state was changed by another writer
// since this one read it.
var ErrConflict = errors.New("the state was changed by another writer")

// Merge is theirs — the state as another writer left it — with the changes ours made to
// base, the state ours started from: each pool pointer, boot image, node journal entry and record of
// where a config ran (Ran) ours changed (or removed) is ours, every other theirs; the rendered configs of both
// (immutable, named by their content). The serial is theirs. States of other lineages do
// not merge, unless base had none (there was no state yet: the first writer named it). An apply that does not hold the state lock writes this (docs/decisions.md).
func Merge(base, ours, theirs *State) (*State, error) {
	lineage := ours.Lineage
	switch {
	case theirs.Lineage == "" || theirs.Lineage == ours.Lineage:
	case base.Lineage == "":
		// There was no state when ours started: the writer that made the first one named it.
		lineage = theirs.Lineage
	default:
		return nil, fmt.Errorf("the state now has lineage %s, not %s: another state was put in its place", theirs.Lineage, ours.Lineage)
	}
	out := theirs.Clone()
	out.Lineage, out.Version = lineage, ours.Version
	for name, r := range ours.Rendered {
		out.Rendered[name] = r
	}
	out.Pointers = mergeMap(base.Pointers, ours.Pointers, out.Pointers)
	out.Machines = mergeMap(base.Machines, ours.Machines, out.Machines)
	out.Variants = mergeMap(base.Variants, ours.Variants, out.Variants)
	out.BootImages = mergeMap(base.BootImages, ours.BootImages, out.BootImages)
	out.Journal = mergeMap(base.Journal, ours.Journal, out.Journal)
	out.Ran = mergeMap(base.Ran, ours.Ran, out.Ran)
	out.PausedSince = mergeMap(base.PausedSince, ours.PausedSince, out.PausedSince)
	out.StepTimes = mergeMap(base.StepTimes, ours.StepTimes, out.StepTimes)
	out.History = mergeMap(base.History, ours.History, out.History)
	out.RolledBack = mergeMap(base.RolledBack, ours.RolledBack, out.RolledBack)
	return out, nil
}

// mergeMap sets in theirs (a copy the caller owns) every key ours changed from base.
func mergeMap[V any](base, ours, theirs map[string]V) map[string]V {
	keys := maps.Clone(ours)
	if keys == nil {
		keys = map[string]V{}
	}
	maps.Copy(keys, base)
	for k := range keys {
		b, inBase := base[k]
		o, inOurs := ours[k]
		if inBase == inOurs && reflect.DeepEqual(b, o) {
			continue // unchanged by us: theirs stands
		}
		if theirs == nil {
			theirs = map[string]V{}
		}
		if inOurs {
			theirs[k] = o
		} else {
			delete(theirs, k)
		}
	}
	return theirs
}
