package views

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// The live view's lines fit the terminal without a word cut: what does not fit beside a
// pool's bar, or on a node's line, goes on lines below it (mpb's bar extenders, one line
// each, a line with no text taking no row), up to a few, the rest left out after a whole
// word with "…". Text printed above the lines is wrapped the same way.

// cols is the terminal's width (0: not known, nothing is wrapped).
func (l *LiveProgress) cols() int {
	if l.size == nil {
		return 0
	}
	w, _, err := l.size()
	if err != nil {
		return 0
	}
	return w
}

// above prints msg (lines, each ending in a newline) above the lines redrawn, each wrapped
// to the terminal's width with its next lines indented.
func (l *LiveProgress) above(msg string) {
	cols := l.cols()
	var b strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimSuffix(msg, "\n"), "\n") {
		indent := ""
		for _, part := range wrapWords(strings.TrimSuffix(line, "\n"), cols-len("    ")) {
			fmt.Fprintf(&b, "%s%s\n", indent, part)
			indent = "    "
		}
	}
	io.WriteString(l.p, b.String())
}

// poolBelow are the fillers of the lines under a pool's bar: the first wraps the text
// poolStatus left for them, set by the same frame's bar line just before.
func (l *LiveProgress) poolBelow(lp *livePool) []mpb.BarFiller {
	const indent = "  "
	fillers := make([]mpb.BarFiller, poolLinesBelow)
	for i := range fillers {
		fillers[i] = mpb.BarFillerFunc(func(w io.Writer, s decor.Statistics) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if i == 0 {
				lp.lines = wrapAbbrev(lp.below, s.AvailableWidth-len(indent), poolLinesBelow)
			}
			if i < len(lp.lines) && lp.lines[i] != "" {
				_, err := fmt.Fprintf(w, "%s%s\n", indent, lp.lines[i])
				return err
			}
			return nil
		})
	}
	return fillers
}

// nodeFirst is a node's first line, fitting cols; its text wraps onto the lines below.
func (l *LiveProgress) nodeFirst(n *liveNode, cols int) string {
	text := l.nodeStatus(n)
	l.mu.Lock()
	defer l.mu.Unlock()
	const indent = "  " // nodeStatus's, and the next lines' indent beyond it
	lines := wrapAbbrev(strings.TrimPrefix(text, indent), cols-len(indent), 1+nodeLinesBelow)
	if len(lines) == 0 {
		n.lines = nil
		return ""
	}
	n.lines = lines[1:]
	return indent + lines[0]
}

// nodeBelow are the fillers of the lines under a node's line (nodeFirst sets them).
func (l *LiveProgress) nodeBelow(n *liveNode) []mpb.BarFiller {
	const indent = "    "
	fillers := make([]mpb.BarFiller, nodeLinesBelow)
	for i := range fillers {
		fillers[i] = mpb.BarFillerFunc(func(w io.Writer, _ decor.Statistics) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if i < len(n.lines) {
				_, err := fmt.Fprintf(w, "%s%s\n", indent, n.lines[i])
				return err
			}
			return nil
		})
	}
	return fillers
}

// fitParts puts on one line of room columns the first parts that fit whole, joined by
// ", "; the rest are returned.
func fitParts(parts []string, room int) (string, []string) {
	line, w := "", 0
	for i, p := range parts {
		pw := width(p)
		if i > 0 {
			pw += len(", ")
		}
		if w+pw > room {
			return line, parts[i:]
		}
		if i > 0 {
			line += ", "
		}
		line, w = line+p, w+pw
	}
	return line, nil
}

// wrapAbbrev wraps s to cols columns (wrapWords) in at most max lines: the last one kept
// ends after a whole word with " …" when there was more. A word wider than cols is cut
// (with "…"), the one case where no line could hold it.
func wrapAbbrev(s string, cols, max int) []string {
	if s == "" {
		return nil
	}
	lines := wrapWords(s, cols)
	if cols > 0 {
		for i, l := range lines {
			if width(l) > cols { // one word, alone on its line
				lines[i] = truncate(l, cols)
			}
		}
	}
	if len(lines) <= max {
		return lines
	}
	lines = lines[:max]
	words := strings.Fields(lines[max-1])
	for len(words) > 0 && width(strings.Join(words, " ")+" …") > cols {
		words = words[:len(words)-1]
	}
	lines[max-1] = strings.TrimSpace(strings.Join(words, " ") + " …")
	return lines
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// truncate keeps the first columns of s that fit in cols, with "…" for the rest, colours
// left out.
func truncate(s string, cols int) string {
	s = ansi.ReplaceAllString(s, "")
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := width(string(r))
		if w+rw > cols-1 {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	return b.String() + "…"
}
