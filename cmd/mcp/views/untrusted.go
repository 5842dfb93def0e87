package views

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Untrusted is text that came from a node or the API server — a node's reason or hold, a
// claim's failed text, an event's, an agent's error — as a terminal may show it: every
// control character (C0, DEL, C1) and every byte that is not UTF-8 is written escaped
// (\x1b, \n, \u009b, \xff), so what a node reports cannot set the terminal's title, clear
// its screen or forge lines of mcp's output. Everything else is left as it is. Human views
// pass such text through it wherever they print it; JSON views need not (encoding/json
// escapes control characters itself).
func Untrusted(s string) string { return escape(s, false) }

// UntrustedLines is Untrusted for a text mcp has made of lines (an apply's errors, each
// perhaps quoting a node): its line breaks are kept, everything else is escaped.
func UntrustedLines(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	if clean(s, keepNewlines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s needs no escaping: the common case, which costs no copy.
func clean(s string, keepNewlines bool) bool {
	for _, r := range s {
		if r < 0x20 && !(r == '\n' && keepNewlines) || r >= 0x7f && r < 0xa0 || r == utf8.RuneError {
			return false
		}
	}
	return true
}
