package views

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// reflowConsole is the terminal the live view draws on (mpb's ConsoleWriter): as mpb's
// own, it moves the cursor up over the last frame and clears below before each new one —
// but it counts the rows that frame takes at the terminal's width now, not the lines it
// had. A terminal that shrinks rewraps the lines already on it (tmux, VTE, kitty, iTerm2
// and Windows Terminal do), so that a frame of 2 lines drawn at 160 columns takes 4 rows
// at 80; moving up 2 would leave half of it on the screen for good.
type reflowConsole struct {
	bytes.Buffer
	out  io.Writer
	size func() (width, height int, err error)
	// frame is the last frame's lines (its bars: what the next one replaces).
	frame []string
	drawn bool
}

func (c *reflowConsole) IsTerminal() bool                            { return true }
func (c *reflowConsole) GetTermSize() (width, height int, err error) { return c.size() }

// Flush writes what was buffered — text to print above the bars, then the frame — over the
// last frame; the frame is its last lines lines.
func (c *reflowConsole) Flush(lines int) error {
	var b bytes.Buffer
	if c.drawn {
		width, _, err := c.size()
		if rows := rowsAt(c.frame, width); err == nil && rows > 0 {
			fmt.Fprintf(&b, "\x1b[%dA\x1b[J", rows)
		} else if err != nil && len(c.frame) > 0 {
			fmt.Fprintf(&b, "\x1b[%dA\x1b[J", len(c.frame))
		}
	}
	all := strings.Split(strings.TrimSuffix(c.String(), "\n"), "\n")
	if c.Len() == 0 {
		all = nil
	}
	c.frame = all[max(0, len(all)-lines):]
	c.drawn = true
	b.Write(c.Bytes())
	c.Reset()
	_, err := c.out.Write(b.Bytes())
	return err
}

// rowsAt is how many rows lines take on a terminal width columns wide, each line wrapped
// (0 or less: not known, one row a line).
func rowsAt(lines []string, cols int) int {
	rows := 0
	for _, l := range lines {
		w := width(l)
		if cols <= 0 || w <= cols {
			rows++
			continue
		}
		rows += (w + cols - 1) / cols
	}
	return rows
}
