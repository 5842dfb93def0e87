package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// pdbInput: four workers, each with a web pod selected by demo/web-pdb, which allows
// `allowed` disruptions; max_unavailable 2; the change needs a drain when reboot.
func pdbInput(allowed int, reboot bool) Input {
	var nodes []model.Node
	var pods []model.Pod
	for i := range 4 {
		name := fmt.Sprintf("w-%d", i)
		nodes = append(nodes, node(name, "worker", "a", i))
		pods = append(pods, model.Pod{Namespace: "demo", Name: "web-" + name, Node: name, Labels: map[string]string{"app": "web"}, Ready: true},
			model.Pod{Namespace: "demo", Name: "ds-" + name, Node: name, Labels: map[string]string{"app": "web"}, Ready: true, DaemonSet: true})
	}
	tg := target("worker", file("/etc/a", "x"))
	if !reboot {
		tg = target("worker", file("/etc/a", "x", "none"))
	}
	return Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 2}}),
		Rendered: map[string]*model.Rendered{"worker": tg},
		Fleet: &model.Fleet{Nodes: nodes, Pods: pods, PDBs: []model.PDB{{Namespace: "demo", Name: "web-pdb",
			Selector: map[string]string{"app": "web"}, MinAvailable: 4 - allowed, DesiredHealthy: 4 - allowed, CurrentHealthy: 4, DisruptionsAllowed: allowed}}}}
}

func waves(p *Rollout) map[string]string {
	out := map[string]string{}
	for _, n := range p.Nodes {
		s := fmt.Sprint(n.Wave)
		for _, b := range n.Blockers {
			s += fmt.Sprintf(" %s %s after %v", b.Kind, b.PDB, b.After)
		}
		out[n.Name] = s
	}
	return out
}

// Two nodes of a wave drain pods of a PDB that allows one disruption: the second waits,
// cordoned in its slot, for the first to come back, and the rest follow one by one — as
// apply does it (drains retried until the PDB allows them).
func TestMakePlanPDBSerialisesAWave(t *testing.T) {
	p, err := MakePlan(pdbInput(1, true))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"w-0": "1",
		"w-1": "1 pdb-wait demo/web-pdb after [w-0]",
		"w-2": "2 pdb-wait demo/web-pdb after [w-1]",
		"w-3": "3 pdb-wait demo/web-pdb after [w-2]",
	}
	if d := cmp.Diff(want, waves(p)); d != "" {
		t.Errorf("PDB allowing 1 (-want +got):\n%s", d)
	}
	if p.Pools[0].Waves != 3 {
		t.Errorf("pool waves %d, want 3", p.Pools[0].Waves)
	}
	// The wait names the PDB and the pod it holds back, as a blocked drain does.
	b := p.Nodes[1].Blockers[0]
	if want := "drain waits for PodDisruptionBudget demo/web-pdb (allows 1 disruption) to evict pod demo/web-w-1 until w-0 is uncordoned with its pods back"; !strings.HasPrefix(b.Message, want) || b.Pod != "demo/web-w-1" {
		t.Errorf("message %q, pod %q", b.Message, b.Pod)
	}
}

// Without the serialisation: a PDB that allows both drains of a wave, or a change that
// drains nothing, leaves the budget's waves as they are.
func TestMakePlanPDBThatAllowsTheWave(t *testing.T) {
	want := map[string]string{"w-0": "1", "w-1": "1", "w-2": "2", "w-3": "2"}
	for _, in := range []Input{pdbInput(2, true), pdbInput(1, false)} {
		p, err := MakePlan(in)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, waves(p)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	}
}
