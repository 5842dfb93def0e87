// Package textdiff shows how one file's content became another's, for people reviewing a
// plan or a drift report: a unified diff of text (go-difflib's, as `diff -u` prints it),
// or — for binary or large content, which no reviewer reads line by line — a summary of
// sizes and SHA-256 digests. Everything it returns is bounded, so a plan of a thousand
// large files stays a plan a person can read.
package textdiff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

// Bounds.
const (
	// MaxText is the largest content shown or diffed as text; larger content is summarised.
	MaxText = 64 << 10
	// MaxLines is the most lines a diff keeps; the rest are cut, with a line that says how
	// many.
	MaxLines = 200
	// Context is the lines of unchanged context around each change, as diff -u's default.
	Context = 3
)

// Summary describes content that is not shown: its size and digest.
type Summary struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// Summarize gives b's size and SHA-256 digest (hex).
func Summarize(b []byte) Summary {
	sum := sha256.Sum256(b)
	return Summary{Size: len(b), SHA256: hex.EncodeToString(sum[:])}
}

// String is "1.2 KiB, sha256 0a1b2c3d4e5f…", for people.
func (s Summary) String() string {
	d := s.SHA256
	if len(d) > 12 {
		d = d[:12] + "…"
	}
	return Size(s.Size) + ", sha256 " + d
}

// Size is n bytes for people: "512 B", "1.2 KiB", "3.0 MiB".
func Size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Why says why content cannot be shown as text ("" when it can): "binary", "large".
// Content is binary when it is not UTF-8 or holds a control character other than tab,
// newline and the carriage return of a CRLF: printed, such bytes would act on the
// reader's terminal (an escape sequence, a lone carriage return) instead of showing.
func Why(b []byte) string {
	switch {
	case len(b) > MaxText:
		return "large"
	case !utf8.Valid(b) || hasControl(b):
		return "binary"
	}
	return ""
}

func hasControl(b []byte) bool {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == '\t' || r == '\n':
		case r == '\r':
			if i+1 == len(b) || b[i+1] != '\n' {
				return true
			}
		case unicode.IsControl(r):
			return true
		}
		i += size
	}
	return false
}

// Diff is the change from a to b for people: a unified diff headed by the labels, or —
// when either side is binary or large — a line with both summaries. "" when a and b are
// equal. A diff longer than MaxLines lines is cut, with a last line that says so.
func Diff(a, b []byte, fromLabel, toLabel string) string {
	if bytes.Equal(a, b) {
		return ""
	}
	if Why(a) != "" || Why(b) != "" {
		return fmt.Sprintf("%s content: %s → %s\n", whyBoth(a, b), Summarize(a), Summarize(b))
	}
	d := difflib.UnifiedDiff{A: Lines(string(a)), B: Lines(string(b)), FromFile: fromLabel, ToFile: toLabel, Context: Context}
	s, err := difflib.GetUnifiedDiffString(d)
	if err != nil { // it writes to a buffer: no error can come
		return fmt.Sprintf("content: %s → %s\n", Summarize(a), Summarize(b))
	}
	return Cut(s, MaxLines)
}

// whyBoth says what kind of content a and b are, when one cannot be shown: "binary",
// "large", or "large binary".
func whyBoth(a, b []byte) string {
	wa, wb := Why(a), Why(b)
	switch {
	case wa == wb || wb == "":
		return wa
	case wa == "":
		return wb
	}
	return "large binary"
}

// Lines splits s into lines that keep their "\n", as a unified diff needs them; a last
// line without one is marked as diff marks it ("\ No newline at end of file"), so that
// "a" and "a\n" differ in the diff as they do on disk.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if last := lines[len(lines)-1]; last == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] = last + "\n\\ No newline at end of file\n"
	}
	return lines
}

// Cut keeps the first max lines of s, and says how many it left out.
func Cut(s string, max int) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' {
			continue
		}
		if n++; n == max && i+1 < len(s) {
			rest := strings.Count(s[i+1:], "\n")
			if !strings.HasSuffix(s, "\n") {
				rest++
			}
			return s[:i+1] + fmt.Sprintf("… %d more lines not shown\n", rest)
		}
	}
	return s
}
