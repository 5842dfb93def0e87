package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// encodeFleet writes the bytes json's encoder writes, for fleets with and without pods and
// PDBs; and it knows every field of Fleet (a new one must be added to it).
func TestEncodeFleet(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[model.Fleet]().Fields() {
		fields = append(fields, f.Name+" "+string(f.Tag))
	}
	if want := []string{`Nodes json:"nodes"`, `Pods json:"pods,omitempty"`, `PDBs json:"pdbs,omitempty"`, `Templates json:"templates,omitempty"`, `UserData json:"user_data,omitempty"`}; !reflect.DeepEqual(fields, want) {
		t.Fatalf("model.Fleet's fields are %q; encodeFleet writes %q: teach it the new ones", fields, want)
	}
	full := &model.Fleet{
		Nodes: []model.Node{
			{Name: "w-0", Labels: map[string]string{"b": "<&>", "a": "x"}, Zone: "a", Created: time.Unix(1, 2).UTC(), Ready: true,
				KernelArgs: []string{"x=1"}, Drift: []model.Drift{{Path: "/etc/x", Kind: model.DriftContent}}},
			{Name: "w-1", Unschedulable: true, State: model.StateDegraded, Reason: "boom \u2028"},
		},
		Pods: []model.Pod{{Namespace: "demo", Name: "web-0", Node: "w-0", Labels: map[string]string{"app": "web"}, Ready: true}},
		PDBs: []model.PDB{{Namespace: "demo", Name: "web-pdb", Selector: map[string]string{"app": "web"}, MinAvailable: 1}},
		Templates: []model.MachineTemplate{{Kind: "MachineSet", Namespace: "m", Name: "w-a", Platform: "gcp", Image: "projects/x/images/<a>",
			NodeLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}},
		UserData: []model.UserDataObject{{Pool: "worker", Namespace: "m", Name: "worker-user-data", Key: "userData", Digest: "sha256:00"}},
	}
	for name, f := range map[string]*model.Fleet{
		"full": full, "no pods or PDBs": {Nodes: full.Nodes}, "empty pods": {Nodes: full.Nodes, Pods: []model.Pod{}},
		"no nodes": {}, "empty nodes": {Nodes: []model.Node{}},
	} {
		var want, got bytes.Buffer
		json.NewEncoder(&want).Encode(f)
		if err := encodeFleet(&got, f); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", name, got.String(), want.String())
		}
	}
}
