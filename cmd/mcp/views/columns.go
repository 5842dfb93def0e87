package views

import (
	"bufio"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// columns lays rows out as the plan's borderless tablewriter table did — each cell padded
// to its column's display width, a space either side — at a fraction of its cost per row:
// a plan of 100,000 nodes is a table of 100,000 rows, which tablewriter took 1.5 s to
// print (docs/benchmarks.md). Widths are tablewriter's own measure (twwidth: display
// columns, ANSI colour codes excluded).
type columns struct {
	rows   [][]string
	widths []int
}

// add appends a row. A cell with line breaks takes as many lines, the row's other cells
// blank below their first line, as tablewriter prints it.
func (c *columns) add(cells ...string) {
	for len(c.widths) < len(cells) {
		c.widths = append(c.widths, 0)
	}
	lines := 1
	for _, s := range cells {
		lines = max(lines, strings.Count(s, "\n")+1)
	}
	if lines == 1 {
		for i, s := range cells {
			c.widths[i] = max(c.widths[i], width(s))
		}
		c.rows = append(c.rows, cells)
		return
	}
	for l := 0; l < lines; l++ {
		row := make([]string, len(cells))
		for i, s := range cells {
			if parts := strings.Split(s, "\n"); l < len(parts) {
				row[i] = parts[l]
			}
		}
		c.add(row...)
	}
}

// width is s's display width; plain ASCII, the common case, is its length.
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == 0x1b {
			return twwidth.Width(s)
		}
	}
	return len(s)
}

func (c *columns) write(w io.Writer) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	for _, row := range c.rows {
		// Padding stops at the row's last cell with text: trailing blanks would make every
		// line as wide as the widest row, and wrap on a narrower terminal.
		last := len(row) - 1
		for last >= 0 && row[last] == "" {
			last--
		}
		for i, s := range row[:last+1] {
			bw.WriteByte(' ')
			bw.WriteString(s)
			if i < last {
				bw.WriteString(spaces(c.widths[i] - width(s) + 1))
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func spaces(n int) string {
	const blank = "                                                                "
	if n <= len(blank) {
		return blank[:n]
	}
	return strings.Repeat(" ", n)
}
