// Package printed checks what mcp prints for people against hostile text — text from a
// configuration, a node or a file that would act on the reader's terminal, forge a line of
// mcp's output or break out of a markdown code span or table cell if printed raw.
package printed

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Text is hostile text marked with tag: an OSC that sets the terminal's title to tag, a CSI
// and a C1 CSI that clear the screen, a carriage return, a bidi override, markdown that
// would end a code span or a table cell or open an HTML tag, and a line break that starts
// a forged line. It holds no slash (it fits in a path's last element) and no comma (in a
// list of kernel arguments).
func Text(tag string) string {
	return tag + "\x1b]0;" + tag + "\x07\x1b[2J\u009b2J\rX\u202e`` ` | <x-hostile> *e* [l]" + beforeBreak + "\n    - " + forgedText
}

// beforeBreak is what comes before the line break of Text, forgedText the line it forges.
const (
	beforeBreak = "(u)"
	forgedText  = "FORGED LINE (file /etc/shadow)"
)

// Options say what a view may print of its own.
type Options struct {
	// Color: the view colours (SGR sequences are its own).
	Color bool
	// Cursor: the view moves the cursor itself (the live view): only what mcp never writes
	// (OSC, BEL, C1, CR…) is looked for.
	Cursor bool
}

// sgr is the only escape sequence a view for people writes itself, when it colours.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Check fails t when out, what view printed, holds any of hostile text's effects: a
// control character other than its own line breaks and tabs, an escape sequence other than
// its own colours, a C1 control, a byte that is not UTF-8, a bidi override, or a line
// forged by a line break. It also fails when out does not show each tag's text escaped
// (the check would pass for want of reaching the view).
func Check(t testing.TB, view, out string, o Options, tags ...string) {
	t.Helper()
	for _, tag := range tags {
		if !strings.Contains(out, "]0;"+tag+`\`) {
			t.Errorf("%s does not show %s's text escaped (the test reaches nothing):\n%s", view, tag, out)
		}
	}
	for _, raw := range []string{"\x1b]", "\x07", "\u009b", "\r", "\u202e"} {
		if strings.Contains(out, raw) {
			t.Errorf("%s prints %q raw:\n%s", view, raw, out)
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("%s prints bytes that are not UTF-8:\n%s", view, out)
	}
	rest := out
	if o.Color {
		rest = sgr.ReplaceAllString(out, "")
	}
	if bad := Unsafe(rest, true); bad != "" && !o.Cursor {
		t.Errorf("%s prints %s raw:\n%s", view, bad, out)
	}
	// Every forged line's text follows the escape of its line break (escaped again by
	// markdown or DOT, or wrapped at a space after it): printed raw, the line break is no
	// escape, and the text starts a line of its own.
	if forged, escaped := strings.Count(out, forgedText), strings.Count(out, beforeBreak+`\`); forged > escaped {
		t.Errorf("%s prints %d forged lines:\n%s", view, forged-escaped, out)
	}
}

// Unsafe names what s holds that no view may print raw ("" when nothing): a control
// character (line breaks and tabs allowed when lines), a C1 control, a byte that is not
// UTF-8, a bidi override.
func Unsafe(s string, lines bool) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			return fmt.Sprintf("byte %#x", s[i])
		case lines && (r == '\n' || r == '\t'):
		case r < 0x20 || r >= 0x7f && r < 0xa0 || r == '\u202e':
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}

// CheckMarkdown fails t when hostile text in md (mcp show -markdown) left its place: an
// HTML tag of it outside a code span, a table row with more cells than its header, a fence
// left open.
func CheckMarkdown(t testing.TB, md string) {
	t.Helper()
	fence, cells := "", 0
	for _, l := range strings.Split(md, "\n") {
		// A fence: three backticks or more, and no backtick after them (CommonMark).
		if f := strings.TrimLeft(l, " "); strings.HasPrefix(f, "```") && !strings.Contains(strings.TrimLeft(f, "`"), "`") {
			switch {
			case fence == "":
				fence = strings.TrimRight(f, "abcdefghijklmnopqrstuvwxyz")
			case strings.TrimSpace(f) == fence:
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue // a fenced diff: its lines are code
		}
		if strings.Contains(outsideCodeSpans(l), "<x-hostile") {
			t.Errorf("hostile HTML outside a code span: %q", l)
		}
		if !strings.HasPrefix(l, "|") {
			cells = 0
			continue
		}
		n := len(cellBorder.FindAllString(l, -1))
		if cells == 0 {
			cells = n // the header
		} else if n != cells {
			t.Errorf("a table row with %d cell borders, its header %d: %q", n, cells, l)
		}
	}
	if fence != "" {
		t.Errorf("a fence %s is left open", fence)
	}
}

// cellBorder is a pipe a table cell ends at: one not escaped.
var cellBorder = regexp.MustCompile(`(^|[^\\])\|`)

// outsideCodeSpans is line l without its code spans (CommonMark: a run of backticks opens
// one, the next run of the same length closes it; a backslash-escaped backtick opens none).
func outsideCodeSpans(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); {
		switch {
		case l[i] == '\\' && i+1 < len(l):
			b.WriteString(l[i : i+2])
			i += 2
			continue
		case l[i] != '`':
			b.WriteByte(l[i])
			i++
			continue
		}
		n := run(l[i:])
		if end := closingRun(l[i+n:], n); end >= 0 {
			i += n + end + n
			continue
		}
		b.WriteString(l[i : i+n])
		i += n
	}
	return b.String()
}

// run is how many backticks s starts with.
func run(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}

// closingRun is where in s a run of exactly n backticks starts, or -1.
func closingRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		if m := run(s[i:]); m != n {
			i += m
			continue
		}
		return i
	}
	return -1
}
