package views

import (
	"errors"
	"strings"

	"github.com/mcpfleet/mcp/internal/untrusted"
)

// Untrusted is untrusted.Line, for the commands that print a node's text themselves
// (mcp fleet list, fleet events, force-unlock).
func Untrusted(s string) string { return untrusted.Line(s) }

// ErrorLines is an error as lines for people: one per error of an errors.Join (mcp's
// errors hold no line break of their own otherwise), each escaped by untrusted.Line, so
// that a path or a node's text in one cannot start a line.
func ErrorLines(err error) []string {
	var out []string
	for _, e := range joined(err) {
		out = append(out, untrusted.Line(e.Error()))
	}
	return out
}

// errorText is ErrorLines as one text.
func errorText(err error) string { return strings.Join(ErrorLines(err), "\n") }

// joined is the errors err joins (errors.Join, nested ones flattened), or err alone.
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || !isJoin(err, j.Unwrap()) {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, joined(e)...)
	}
	return out
}

// isJoin reports whether err's text is its errors' texts a line each, as errors.Join
// writes them (fmt.Errorf with several %w writes its own).
func isJoin(err error, errs []error) bool {
	return err.Error() == errors.Join(errs...).Error()
}
