package model

import "testing"

func TestPDBMatchesAsKubernetesSelectors(t *testing.T) {
	web := &Pod{Namespace: "demo", Name: "web-0", Labels: map[string]string{"app": "web", "tier": "front"}}
	db := &Pod{Namespace: "demo", Name: "db-0", Labels: map[string]string{"app": "db"}}
	other := &Pod{Namespace: "prod", Name: "web-1", Labels: map[string]string{"app": "web"}}
	for _, c := range []struct {
		name        string
		pdb         PDB
		web, db, ot bool
	}{
		{"matchLabels", PDB{Selector: map[string]string{"app": "web"}}, true, false, false},
		{"In", PDB{MatchExpressions: []SelectorRequirement{{Key: "app", Operator: "In", Values: []string{"web", "db"}}}}, true, true, false},
		{"NotIn", PDB{MatchExpressions: []SelectorRequirement{{Key: "app", Operator: "NotIn", Values: []string{"web"}}}}, false, true, false},
		{"Exists", PDB{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "Exists"}}}, true, false, false},
		{"DoesNotExist", PDB{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "DoesNotExist"}}}, false, true, false},
		{"labels and expressions", PDB{Selector: map[string]string{"app": "web"},
			MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"back"}}}}, false, false, false},
		{"empty selector: the whole namespace", PDB{SelectsAll: true}, true, true, false},
		{"no selector: nothing", PDB{}, false, false, false},
		{"unknown operator: nothing", PDB{MatchExpressions: []SelectorRequirement{{Key: "app", Operator: "Like"}}}, false, false, false},
	} {
		c.pdb.Namespace = "demo"
		if got := [3]bool{c.pdb.Matches(web), c.pdb.Matches(db), c.pdb.Matches(other)}; got != [3]bool{c.web, c.db, c.ot} {
			t.Errorf("%s: matches web, db, other-namespace = %v, want %v", c.name, got, [3]bool{c.web, c.db, c.ot})
		}
	}
}
