package views

import "testing"

func TestUntrusted(t *testing.T) {
	for _, tt := range []struct{ in, want, lines string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"\x1b]0;title\x07\x1b[2J", `\x1b]0;title\x07\x1b[2J`, `\x1b]0;title\x07\x1b[2J`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\\tc\\rd"},
		{"csi \u009b2J del \x7f", `csi \u009b2J del \x7f`, `csi \u009b2J del \x7f`},
		{"bad \xff\xfe utf-8 \ufffd", `bad \xff\xfe utf-8 ` + "\ufffd", `bad \xff\xfe utf-8 ` + "\ufffd"},
	} {
		if got := Untrusted(tt.in); got != tt.want {
			t.Errorf("Untrusted(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := UntrustedLines(tt.in); got != tt.lines {
			t.Errorf("UntrustedLines(%q) = %q, want %q", tt.in, got, tt.lines)
		}
	}
}
