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

// eachBlock reads blocks of one kind, each declared once by its label: a repeated label
// is a "Duplicate <kind>" error and its block is skipped; every other block's body is read
// against schema and handed to read with its content. It returns the labels declared, for
// references between the blocks (a stage's after).
func eachBlock(kind string, blocks hcl.Blocks, schema *hcl.BodySchema, read func(*hcl.Block, *hcl.BodyContent) hcl.Diagnostics) (labels, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	names := newLabels(kind)
	for _, b := range blocks {
		if d := names.declare(b); d != nil {
			diags = append(diags, d)
			continue
		}
		content, d := b.Body.Content(schema)
		diags = append(diags, d...)
		diags = append(diags, read(b, content)...)
	}
	return names, diags
}
