package config

import "github.com/hashicorp/hcl/v2"

// labels notes where each label of one kind of block was first declared: a label is
// declared once per file set (pools, configs, variables) or per enclosing block (a
// config's files and units, a unit's drop-ins).
type labels struct {
	kind  string
	first map[string]hcl.Range
}

func newLabels(kind string) labels { return labels{kind: kind, first: map[string]hcl.Range{}} }

// declare notes b's label. A label declared before gives a "Duplicate <kind>" error at b's
// label naming the first declaration; the caller then skips b.
func (s labels) declare(b *hcl.Block) *hcl.Diagnostic {
	name := b.Labels[0]
	if prev, ok := s.first[name]; ok {
		return duplicate(s.kind, name, b.LabelRanges[0], prev)
	}
	s.first[name] = b.LabelRanges[0]
	return nil
}
