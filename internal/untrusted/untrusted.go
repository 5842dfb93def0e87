// Package untrusted is mcp's one rule for printing text it did not write — a path, a link
// target, a kernel argument, an OS image, a unit or drop-in name from a configuration; a
// reason, an event, an image or an error a node reports; the holder of a lock file or Lease
// — where a person reads it: every character that could act on the reader's terminal or
// change the shape of mcp's output is written as an escape instead, so that such text can
// neither set the terminal's title, clear or hide what is shown, nor forge a line of a plan.
//
// Escaped: C0 controls (\n, \t, \r, \x1b…), DEL, C1 controls (\u009b, a terminal's CSI),
// bytes that are not UTF-8 (\xff), and the Unicode controls that reorder or break a line
// without a C0 byte — bidirectional overrides, isolates and marks, and the line and
// paragraph separators (\u202e, \u2028). Everything else, other scripts included, is left
// as it is, and text with nothing to escape is returned without a copy. A backslash is not
// escaped: systemd's own unit names hold \x2d.
package untrusted

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line is s for one line of output: its line breaks are escaped too.
func Line(s string) string { return escape(s, false) }

// Lines is s for text that is lines by nature — a file's content in a diff, an error mcp
// made of several: its line breaks and tabs are kept, everything else is escaped as Line
// escapes it.
func Lines(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	i := firstUnsafe(s, lines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafe(r, lines):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first byte of s that must be escaped, or -1.
func firstUnsafe(s string, lines bool) int {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f { // printable ASCII: the common case
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafe(r, lines) {
			return i
		}
		i += size
	}
	return -1
}

// unsafe reports whether r is escaped (in lines, line breaks and tabs are kept).
func unsafe(r rune, lines bool) bool {
	switch {
	case lines && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	}
	switch r {
	case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x2066, 0x2067, 0x2068, 0x2069:
		return true
	}
	return false
}
