package model

import (
	"strings"
	"testing"
)

func count(n int) *IntOrPercent   { return &IntOrPercent{Value: n} }
func percent(n int) *IntOrPercent { return &IntOrPercent{Value: n, Percent: true} }

// The disruption controller's arithmetic: desiredHealthy and disruptionsAllowed for a
// budget over expected pods, healthy of them healthy.
func TestDisruptionBudgetStatus(t *testing.T) {
	for _, c := range []struct {
		name              string
		b                 DisruptionBudget
		expected, healthy int
		desired, allowed  int
	}{
		{"minAvailable count, all healthy", DisruptionBudget{MinAvailable: count(2)}, 3, 3, 2, 1},
		{"minAvailable count, one unhealthy", DisruptionBudget{MinAvailable: count(2)}, 3, 2, 2, 0},
		{"minAvailable count, more unhealthy than it spares", DisruptionBudget{MinAvailable: count(2)}, 3, 1, 2, 0},
		{"minAvailable 0", DisruptionBudget{MinAvailable: count(0)}, 2, 1, 0, 1},
		{"minAvailable above the pods", DisruptionBudget{MinAvailable: count(5)}, 3, 3, 5, 0},
		{"minAvailable percent rounds up", DisruptionBudget{MinAvailable: percent(50)}, 3, 3, 2, 1},
		{"minAvailable percent exact", DisruptionBudget{MinAvailable: percent(50)}, 4, 4, 2, 2},
		{"minAvailable percent, unhealthy", DisruptionBudget{MinAvailable: percent(50)}, 4, 2, 2, 0},
		{"minAvailable 100%", DisruptionBudget{MinAvailable: percent(100)}, 3, 3, 3, 0},
		{"maxUnavailable count", DisruptionBudget{MaxUnavailable: count(1)}, 3, 3, 2, 1},
		{"maxUnavailable count, one unhealthy", DisruptionBudget{MaxUnavailable: count(1)}, 3, 2, 2, 0},
		{"maxUnavailable above the scale", DisruptionBudget{MaxUnavailable: count(5)}, 3, 3, 0, 3},
		{"maxUnavailable percent rounds up", DisruptionBudget{MaxUnavailable: percent(30)}, 4, 4, 2, 2},
		{"maxUnavailable percent of 1 rounds up to it", DisruptionBudget{MaxUnavailable: percent(10)}, 1, 1, 0, 1},
		{"maxUnavailable 0%", DisruptionBudget{MaxUnavailable: percent(0)}, 3, 3, 3, 0},
		{"maxUnavailable wins over minAvailable", DisruptionBudget{MinAvailable: count(3), MaxUnavailable: count(1)}, 3, 3, 2, 1},
		{"no pod expected allows nothing", DisruptionBudget{MaxUnavailable: count(1)}, 0, 0, 0, 0},
		{"a pod not yet expected allows nothing", DisruptionBudget{MinAvailable: count(0)}, 0, 1, 0, 0},
		{"neither given", DisruptionBudget{}, 3, 3, 0, 0},
	} {
		desired, allowed := c.b.Status(c.expected, c.healthy)
		if desired != c.desired || allowed != c.allowed {
			t.Errorf("%s: Status(%d expected, %d healthy) = desired %d, allowed %d; want %d, %d",
				c.name, c.expected, c.healthy, desired, allowed, c.desired, c.allowed)
		}
	}
}

func TestPDBSetHealthy(t *testing.T) {
	for _, c := range []struct{ min, healthy, desired, allowed int }{
		{1, 2, 1, 1}, {1, 1, 1, 0}, {1, 0, 1, 0}, {0, 0, 0, 0}, {0, 2, 0, 2}, {3, 2, 3, 0},
	} {
		b := PDB{MinAvailable: c.min}
		b.SetHealthy(c.healthy)
		if b.CurrentHealthy != c.healthy || b.DesiredHealthy != c.desired || b.DisruptionsAllowed != c.allowed {
			t.Errorf("minAvailable %d, %d healthy: %+v; want desired %d, allowed %d", c.min, c.healthy, b, c.desired, c.allowed)
		}
	}
}

// Evict refuses a pod a budget allows no disruption for, naming both, and counts an
// eviction it allows against every budget selecting the pod, so the next is judged after it.
func TestEvict(t *testing.T) {
	web := map[string]string{"app": "web"}
	pdbs := []PDB{
		{Namespace: "demo", Name: "web-pdb", Selector: web, MinAvailable: 1},
		{Namespace: "demo", Name: "all", SelectsAll: true, MinAvailable: 0},
		{Namespace: "other", Name: "web-pdb", Selector: web, MinAvailable: 5},
	}
	pdbs[0].SetHealthy(2)
	pdbs[1].SetHealthy(3)
	pdbs[2].SetHealthy(0)
	pod := func(name string, ready bool) *Pod {
		return &Pod{Namespace: "demo", Name: name, Labels: web, Ready: ready}
	}
	if r := Evict(pod("web-0", true), pdbs); r != "" {
		t.Fatalf("first web pod: refused %q", r)
	}
	if pdbs[0].CurrentHealthy != 1 || pdbs[0].DisruptionsAllowed != 0 || pdbs[1].CurrentHealthy != 2 || pdbs[2].CurrentHealthy != 0 {
		t.Errorf("after one eviction: %+v", pdbs)
	}
	r := Evict(pod("web-1", true), pdbs)
	if want := "eviction of demo/web-1 refused by PodDisruptionBudget demo/web-pdb (needs 1 healthy, has 1)"; r != want {
		t.Errorf("second web pod: %q, want %q", r, want)
	}
	if strings.Contains(r, "other/") || pdbs[1].CurrentHealthy != 2 {
		t.Errorf("a refused eviction changed the budgets: %+v", pdbs)
	}
	other := &Pod{Namespace: "demo", Name: "db-0", Labels: map[string]string{"app": "db"}, Ready: false}
	if r := Evict(other, pdbs); r != "" || pdbs[1].CurrentHealthy != 2 {
		t.Errorf("an unready pod only the empty budget selects: refused %q, budgets %+v", r, pdbs)
	}
}
