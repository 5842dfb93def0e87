// Package hclpos converts source ranges between the language (hcl.Range) and the neutral
// model (model.Range), so that only the packages that read HCL depend on it.
package hclpos

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/model"
)

// From gives the model's form of r.
func From(r hcl.Range) model.Range {
	return model.Range{Filename: r.Filename,
		Start: model.Pos{Line: r.Start.Line, Column: r.Start.Column, Byte: r.Start.Byte},
		End:   model.Pos{Line: r.End.Line, Column: r.End.Column, Byte: r.End.Byte}}
}

// Subject gives r as a diagnostic's subject: nil when r names no file.
func Subject(r model.Range) *hcl.Range {
	if r.Filename == "" {
		return nil
	}
	return &hcl.Range{Filename: r.Filename,
		Start: hcl.Pos{Line: r.Start.Line, Column: r.Start.Column, Byte: r.Start.Byte},
		End:   hcl.Pos{Line: r.End.Line, Column: r.End.Column, Byte: r.End.Byte}}
}
