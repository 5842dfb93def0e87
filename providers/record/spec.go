package record

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Spec declares the record provider, for a build that adds it (cmd/mcp's tests do):
//
//	provider "record" {
//	  nodes     = 3               # how many nodes: ROLE-0, ROLE-1, …
//	  role      = "worker"        # their node-role.kubernetes.io label
//	  zones     = ["a", "b"]      # their zones, in turn
//	  ready     = true            # whether they are Ready
//	  step_time = "0s"            # how long each node step takes
//	  log       = "./calls.log"   # where each call is appended, a line each
//	}
var Spec = providers.Spec{
	BlockSpec: model.BlockSpec{Name: "record", Example: "nodes = 3", Settings: []model.SettingSpec{
		{Name: "nodes", Kind: model.SettingNumber, Default: 3, Check: wholeNodes},
		{Name: "role", Kind: model.SettingString, Default: "worker", Check: model.NonEmpty},
		{Name: "zones", Kind: model.SettingList, Default: []string{"a"}, Check: someZone},
		{Name: "ready", Kind: model.SettingBool, Default: true},
		{Name: "step_time", Kind: model.SettingDuration, Default: time.Duration(0)},
		{Name: "log", Kind: model.SettingPath},
	}},
	New: func(s model.Settings) (providers.Provider, error) {
		return New(Options{Fleet: Fleet(int(s.Number("nodes")), s.Str("role"), s.List("zones"), s.Bool("ready")),
			StepTime: s.Duration("step_time"), Log: s.Str("log")}), nil
	},
}

// maxNodes bounds the nodes setting: the fleet is in memory.
const maxNodes = 100_000

func wholeNodes(v model.SettingValue) error {
	if v.Number != float64(int(v.Number)) || v.Number < 0 || v.Number > maxNodes {
		return fmt.Errorf("want a whole number from 0 to %d", maxNodes)
	}
	return nil
}

func someZone(v model.SettingValue) error {
	if len(v.List) == 0 {
		return errors.New("want at least one zone")
	}
	return nil
}

// Fleet is n nodes of role, ROLE-0 to ROLE-(n-1), in zones in turn, created a second apart
// in that order: the fleet Spec's settings describe.
func Fleet(n int, role string, zones []string, ready bool) model.Fleet {
	var f model.Fleet
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		name, zone := fmt.Sprintf("%s-%d", role, i), zones[i%len(zones)]
		f.Nodes = append(f.Nodes, model.Node{Name: name, Zone: zone, Ready: ready, Created: created.Add(time.Duration(i) * time.Second),
			BootID: name + "-boot-0", KernelArgs: []string{}, State: model.StateDone,
			Labels: map[string]string{"node-role.kubernetes.io/" + role: "", "topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}})
	}
	return f
}
