package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// columns prints what the plan's tablewriter table printed, colours, wide characters and
// line breaks included — but no blanks at the end of a line: tablewriter padded every line
// to the widest row's width, so that a plan wrapped on a terminal narrower than its
// longest line, every line of it.
func TestColumnsMatchesTablewriter(t *testing.T) {
	c := painter(true)
	rows := [][]string{
		{c.red(symReboot), "node.w-0", "a", "1", "cordon, drain, reboot"},
		{"", "", "", "", c.red("blocked: ") + "eviction refused"},
		{c.yellow(symDrain), "node.wörker-10", "eu-west-1c", "deferred", "write 1 file"},
		{"", "", "", "", "line one\nline two, longer than the rest of the column"},
		{c.yellow(symInPlace), "node.日本", "", "12", "restart chronyd.service"},
	}
	var want bytes.Buffer
	tbl := tablewriter.NewTable(&want,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off, ShowHeader: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off, ShowTop: tw.Off, ShowBottom: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithTrimSpace(tw.Off),
	)
	tbl.Header("", "NODE", "ZONE", "WAVE", "STEPS")
	var got bytes.Buffer
	var cols columns
	cols.add("", "NODE", "ZONE", "WAVE", "STEPS")
	for _, r := range rows {
		tbl.Append(r)
		cols.add(r...)
	}
	tbl.Render()
	cols.write(&got)
	var trimmed strings.Builder
	for _, l := range strings.SplitAfter(want.String(), "\n") {
		trimmed.WriteString(strings.TrimRight(strings.TrimSuffix(l, "\n"), " "))
		if strings.HasSuffix(l, "\n") {
			trimmed.WriteString("\n")
		}
	}
	if got.String() != trimmed.String() {
		t.Errorf("columns:\n%q\ntablewriter, lines trimmed:\n%q", got.String(), trimmed.String())
	}
}
