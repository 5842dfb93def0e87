package textdiff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffIsUnified(t *testing.T) {
	a := "server a iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n"
	b := "server b iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n"
	want := `--- /etc/chrony.conf (old)
+++ /etc/chrony.conf (new)
@@ -1,3 +1,3 @@
-server a iburst
+server b iburst
 driftfile /var/lib/chrony/drift
 makestep 1.0 3
`
	if d := cmp.Diff(want, Diff([]byte(a), []byte(b), "/etc/chrony.conf (old)", "/etc/chrony.conf (new)")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := Diff([]byte(a), []byte(a), "x", "y"); got != "" {
		t.Errorf("equal content: %q", got)
	}
}

// "a" and "a\n" differ on disk: the diff says how, as diff -u does.
func TestDiffMarksAMissingLastNewline(t *testing.T) {
	got := Diff([]byte("a\n"), []byte("a"), "x", "y")
	want := "--- x\n+++ y\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestCreatedFileIsAllAdded(t *testing.T) {
	got := Diff(nil, []byte("x\ny\n"), "/dev/null", "/etc/x")
	want := "--- /dev/null\n+++ /etc/x\n@@ -0,0 +1,2 @@\n+x\n+y\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Binary and large content are summarised by size and digest, never printed.
func TestBinaryAndLargeAreSummarised(t *testing.T) {
	bin := []byte{0x7f, 'E', 'L', 'F', 0, 1, 2}
	got := Diff([]byte("text\n"), bin, "x", "y")
	if !strings.HasPrefix(got, "binary content: 5 B, sha256 ") || !strings.Contains(got, "→ 7 B, sha256 ") || strings.Contains(got, "ELF") {
		t.Errorf("binary: %q", got)
	}
	large := []byte(strings.Repeat("line\n", MaxText/5+1))
	got = Diff([]byte("small\n"), large, "x", "y")
	if !strings.HasPrefix(got, "large content: 6 B, sha256 ") || !strings.Contains(got, "64.0 KiB") || strings.Count(got, "\n") != 1 {
		t.Errorf("large: %q", got)
	}
}

// A long diff is cut at MaxLines, with a line that says how much is left out.
func TestLongDiffIsCut(t *testing.T) {
	var a, b strings.Builder
	for i := range 500 {
		a.WriteString("a\n")
		b.WriteString("b\n")
		_ = i
	}
	got := Diff([]byte(a.String()), []byte(b.String()), "x", "y")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != MaxLines+1 || lines[len(lines)-1] != "… 803 more lines not shown" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// Text is what a terminal shows as it is: UTF-8 with no control character but tab,
// newline and CRLF's carriage return. Anything else would act on the terminal, so it is
// summarised as binary.
func TestWhyControlCharactersAreBinary(t *testing.T) {
	for s, want := range map[string]string{
		"":                       "",
		"[main]\r\ndns=none\r\n": "",
		"a\tb\n":                 "",
		"héllo ✓\n":              "",
		"\x1b[31mred\x1b[0m\n":   "binary",
		"over\rwrite\n":          "binary",
		"ends in CR\r":           "binary",
		"del\x7f":                "binary",
		"nul\x00":                "binary",
		"c1 \u009b31m":           "binary",
		"bell\a":                 "binary",
		"\xff":                   "binary",
	} {
		if got := Why([]byte(s)); got != want {
			t.Errorf("Why(%q) = %q, want %q", s, got, want)
		}
	}
}
