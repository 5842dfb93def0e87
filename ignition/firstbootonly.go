package ignition

import (
	"encoding/json"
	"fmt"
	"slices"

	v36 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// The first-boot part of a config: what its Butane or Ignition text declares beyond what
// mcp manages (model.Config.FirstBoot), kept as the JSON of an Ignition config (the newest
// spec's types) without its version and without what is not set.

// EncodeFirstBoot is cfg as a first-boot part; nil when it sets nothing.
func EncodeFirstBoot(cfg *types.Config) ([]byte, error) {
	c := *cfg
	c.Ignition.Version = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encoding the first-boot part: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encoding the first-boot part: %w", err)
	}
	if prune(m) {
		return nil, nil
	}
	return json.Marshal(m)
}

// prune drops from v what is null, an empty string, an empty object or an empty list, and
// reports whether v is then empty itself. A false or a 0 a field holds was set (Ignition's
// types leave what is not set nil).
func prune(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		for k, sub := range x {
			if prune(sub) {
				delete(x, k)
			}
		}
		return len(x) == 0
	case []any: // every element pruned (not only up to the first that is not empty)
		empty := true
		for _, e := range x {
			empty = prune(e) && empty
		}
		return empty
	}
	return false
}

// MergeFirstBoot merges first-boot parts in order as Ignition merges a config into the one
// it extends (a later part's user, disk, filesystem… replaces an earlier one's of the same
// key; lists of values are joined): a pool's configs' parts, as the MCO merges its
// MachineConfigs' Ignition. nil when there are none.
//
// kernelArgs are the pool's kernel arguments, which the rendered config adds
// (kernelArguments.shouldExist, one argument each): a part's shouldNotExist entry that is
// one of them is dropped, as Ignition's merge drops an argument a later config adds, since
// Ignition takes an argument in one of the lists only. (A Butane's should_exist entry
// "console=tty0 console=ttyS0,115200n8" beside should_not_exist "console=tty0", as Fedora
// CoreOS's documentation writes it, is two arguments mcp adds: the removal went against
// them, and Ignition refused the config.)
func MergeFirstBoot(parts [][]byte, kernelArgs []string) ([]byte, error) {
	var merged *types.Config
	for i, p := range parts {
		if len(p) == 0 {
			continue
		}
		var c types.Config
		if err := json.Unmarshal(p, &c); err != nil {
			return nil, fmt.Errorf("first-boot part %d: %w", i, err)
		}
		if merged == nil {
			merged = &c
			continue
		}
		m := v36.Merge(*merged, c)
		merged = &m
	}
	if merged == nil {
		return nil, nil
	}
	kept := merged.KernelArguments.ShouldNotExist[:0:0]
	for _, k := range merged.KernelArguments.ShouldNotExist {
		if !slices.Contains(kernelArgs, string(k)) {
			kept = append(kept, k)
		}
	}
	merged.KernelArguments.ShouldNotExist = kept
	return EncodeFirstBoot(merged)
}
