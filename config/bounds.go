package config

import (
	"fmt"
	"unicode/utf8"

	"github.com/mcpfleet/mcp/internal/boundedfile"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The bounds on what mcp hands to HCL. HCL's parser and evaluator recurse once per level
// of nesting and per operator of a chain; tens of thousands of levels exhaust the goroutine
// stack, which is a fatal error, not a panic anything could recover from. Real
// configurations stay far below both bounds.
const (
	maxFileSize = 8 << 20 // bytes, for configuration, variables and template files alike
	maxNesting  = 100
)

// readBounded reads a file named by the configuration or the command line.
func readBounded(path string) ([]byte, error) { return boundedfile.Read(path, maxFileSize, 0) }

// frame kinds of the nesting scan.
const (
	kRoot     = 'E' // the top of a configuration file or expression
	kTmplFile = 'T' // the top of a template file
	kQuoted   = '"' // a quoted template
	kHeredoc  = '<'
	kInterp   = '$' // ${ … } or %{ … }
)

type frame struct {
	kind byte // a kind above, or the opening bracket { [ (
	// depth with this frame open
	depth int
	// In expression frames, operators since the last separator: HCL nests a chain of
	// operators (and a chain of conditionals) one level per operator. In template frames,
	// the %{ if } and %{ for } directives still open.
	ops    int
	marker string // a heredoc's closing line
}

// checkNesting scans src as HCL native syntax (template says: as a template file) and
// refuses it where its nesting crosses maxNesting. Brackets, template interpolations and
// directives, quoted strings, heredocs and the operators of one expression each count a
// level. It only needs to be conservative: it does not validate, and what it misreads
// the parser reports after it.
func checkNesting(src []byte, filename string, template bool) *hcl.Diagnostic {
	root := frame{kind: kRoot}
	if template {
		root.kind = kTmplFile
	}
	s := &nestScan{src: src, stack: []frame{root}}
	for s.i < len(src) {
		var ok bool
		switch s.top().kind {
		case kQuoted, kHeredoc, kTmplFile:
			ok = s.template()
		default:
			ok = s.expression()
		}
		if !ok {
			pos := posAt(src, filename, s.i, template)
			return &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("nesting deeper than %d levels; mcp refuses it", maxNesting),
				Detail: fmt.Sprintf("Brackets, strings, template interpolations and directives, and the operators of one expression "+
					"each count a level; more than %d would risk exhausting the parser's stack.", maxNesting),
				Subject: &hcl.Range{Filename: filename, Start: pos,
					End: hcl.Pos{Line: pos.Line, Column: pos.Column + 1, Byte: pos.Byte + 1}}}
		}
	}
	return nil
}

type nestScan struct {
	src   []byte
	i     int
	stack []frame
}

func (s *nestScan) top() *frame { return &s.stack[len(s.stack)-1] }

func (s *nestScan) at(off int, prefix string) bool {
	return len(s.src)-s.i-off >= len(prefix) && string(s.src[s.i+off:s.i+off+len(prefix)]) == prefix
}

// push opens a frame at s.i; false when that is one level too many.
func (s *nestScan) push(kind byte, marker string) bool {
	t := s.top()
	d := t.depth + t.ops + 1
	if d > maxNesting {
		return false
	}
	s.stack = append(s.stack, frame{kind: kind, depth: d, marker: marker})
	return true
}

func (s *nestScan) pop() {
	if len(s.stack) > 1 {
		s.stack = s.stack[:len(s.stack)-1]
	}
}

// op counts an operator (or an open directive) in the top frame.
func (s *nestScan) op() bool {
	t := s.top()
	t.ops++
	return t.depth+t.ops <= maxNesting
}

// template scans one step of template text: a quoted string, a heredoc or a template file.
func (s *nestScan) template() bool {
	t, c := s.top(), s.src[s.i]
	if t.kind == kHeredoc && (s.i == 0 || s.src[s.i-1] == '\n') {
		j := s.i
		for j < len(s.src) && (s.src[j] == ' ' || s.src[j] == '\t') {
			j++
		}
		if rest := s.src[j:]; len(rest) >= len(t.marker) && string(rest[:len(t.marker)]) == t.marker {
			if e := rest[len(t.marker):]; len(e) == 0 || e[0] == '\n' || (e[0] == '\r' && len(e) > 1 && e[1] == '\n') {
				s.i = j + len(t.marker)
				s.pop()
				return true
			}
		}
	}
	switch {
	case t.kind == kQuoted && c == '\\':
		s.i += 2
	case t.kind == kQuoted && (c == '"' || c == '\n'):
		// A newline ends an unterminated string for the parser too.
		s.pop()
		s.i++
	case s.at(0, "$${") || s.at(0, "%%{"):
		s.i += 3
	case s.at(0, "${"):
		if !s.push(kInterp, "") {
			return false
		}
		s.i += 2
	case s.at(0, "%{"):
		switch directive(s.src[s.i+2:]) {
		case "if", "for":
			if !s.op() {
				return false
			}
		case "endif", "endfor":
			if t.ops > 0 {
				t.ops--
			}
		}
		if !s.push(kInterp, "") {
			return false
		}
		s.i += 2
	default:
		s.i++
	}
	return true
}

// directive is the keyword at the start of a %{ … } directive's body.
func directive(b []byte) string {
	i := 0
	if i < len(b) && b[i] == '~' {
		i++
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	j := i
	for j < len(b) && b[j] >= 'a' && b[j] <= 'z' {
		j++
	}
	return string(b[i:j])
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '-' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// expression scans one token of expression or body syntax.
func (s *nestScan) expression() bool {
	t, c := s.top(), s.src[s.i]
	switch {
	case c == '#' || s.at(0, "//"):
		for s.i < len(s.src) && s.src[s.i] != '\n' {
			s.i++
		}
	case s.at(0, "/*"):
		s.i += 2
		for s.i < len(s.src) && !s.at(0, "*/") {
			s.i++
		}
		s.i += 2
	case c == '"':
		if !s.push(kQuoted, "") {
			return false
		}
		s.i++
	case s.at(0, "<<"):
		if marker, next := heredocStart(s.src[s.i+2:]); marker != "" {
			if !s.push(kHeredoc, marker) {
				return false
			}
			s.i += 2 + next
			return true
		}
		if !s.op() {
			return false
		}
		s.i += 2
	case c == '_' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		// An identifier, which may hold dashes: a-b is a name, not a subtraction.
		for s.i < len(s.src) && isIdentByte(s.src[s.i]) {
			s.i++
		}
	case c >= '0' && c <= '9':
		for s.i < len(s.src) {
			d := s.src[s.i]
			if (d >= '0' && d <= '9') || d == '.' || d == 'e' || d == 'E' ||
				((d == '+' || d == '-') && (s.src[s.i-1] == 'e' || s.src[s.i-1] == 'E')) {
				s.i++
				continue
			}
			break
		}
	case c == '[' && splat(s.src[s.i+1:]) > 0:
		// [*] nests the rest of the traversal inside it.
		if !s.op() {
			return false
		}
		s.i += 1 + splat(s.src[s.i+1:])
	case c == '{' || c == '[' || c == '(':
		if !s.push(c, "") {
			return false
		}
		s.i++
	case c == '}' || c == ']' || c == ')':
		s.pop()
		s.i++
	case c == ',':
		t.ops = 0
		s.i++
	case c == '\n':
		// Newlines separate attributes and object items, but not inside ( ) and [ ].
		if t.kind == kRoot || t.kind == '{' {
			t.ops = 0
		}
		s.i++
	case s.at(0, "==") || s.at(0, "!=") || s.at(0, "<=") || s.at(0, ">=") || s.at(0, "&&") || s.at(0, "||"):
		if !s.op() {
			return false
		}
		s.i += 2
	case c == '+' || c == '-' || c == '*' || c == '/' || c == '%' || c == '!' || c == '?' || c == '<' || c == '>':
		if !s.op() {
			return false
		}
		s.i++
	default:
		s.i++
	}
	return true
}

// heredocStart reads the rest of a heredoc's opening line after "<<": its marker and the
// length up to the start of the next line, or "" when this is not a heredoc.
func heredocStart(b []byte) (string, int) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	j := i
	for j < len(b) && isIdentByte(b[j]) {
		j++
	}
	if j == i {
		return "", 0
	}
	k := j
	if k < len(b) && b[k] == '\r' {
		k++
	}
	if k >= len(b) || b[k] != '\n' {
		return "", 0
	}
	return string(b[i:j]), k + 1
}

// splat is the length of "*]" (with spaces) at the start of b, or 0.
func splat(b []byte) int {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i >= len(b) || b[i] != '*' {
		return 0
	}
	i++
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i >= len(b) || b[i] != ']' {
		return 0
	}
	return i + 1
}

// posAt is the position of byte off as HCL reports positions. HCL counts columns in
// grapheme clusters; its lexer, which does not recurse, finds the token that starts at off.
// Should that fail, columns count runes, which differ only after combining characters.
func posAt(src []byte, filename string, off int, template bool) hcl.Pos {
	start := hcl.Pos{Line: 1, Column: 1}
	var toks hclsyntax.Tokens
	if template {
		toks, _ = hclsyntax.LexTemplate(src[:off+1], filename, start)
	} else {
		toks, _ = hclsyntax.LexConfig(src[:off+1], filename, start)
	}
	for k := len(toks) - 1; k >= 0; k-- {
		if r := toks[k].Range; r.Start.Byte == off {
			return r.Start
		} else if r.Start.Byte < off {
			break
		}
	}
	line, lineStart := 1, 0
	for k := 0; k < off; k++ {
		if src[k] == '\n' {
			line, lineStart = line+1, k+1
		}
	}
	return hcl.Pos{Line: line, Column: utf8.RuneCount(src[lineStart:off]) + 1, Byte: off}
}
