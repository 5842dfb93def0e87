package untrusted

import "testing"

func TestLineAndLines(t *testing.T) {
	for _, tt := range []struct{ in, line, lines string }{
		{"plain text, ünïcode ✓ \\x2d", "plain text, ünïcode ✓ \\x2d", "plain text, ünïcode ✓ \\x2d"},
		{"\x1b]0;title\x07\x1b[2J", `\x1b]0;title\x07\x1b[2J`, `\x1b]0;title\x07\x1b[2J`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"csi \u009b2J del \x7f", `csi \u009b2J del \x7f`, `csi \u009b2J del \x7f`},
		{"bad \xff\xfe utf-8 \ufffd", `bad \xff\xfe utf-8 ` + "\ufffd", `bad \xff\xfe utf-8 ` + "\ufffd"},
		{"evil\u202egnp.exe line\u2028sep", `evil\u202egnp.exe line\u2028sep`, `evil\u202egnp.exe line\u2028sep`},
	} {
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := Lines(tt.in); got != tt.lines {
			t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.lines)
		}
	}
}

func TestCleanTextIsNotCopied(t *testing.T) {
	s := "/etc/chrony.conf"
	if n := testing.AllocsPerRun(100, func() { _ = Line(s) }); n != 0 {
		t.Errorf("Line of clean text allocates %v times", n)
	}
}
