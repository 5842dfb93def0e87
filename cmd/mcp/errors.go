package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// Every error a command prints goes through fail, in the box configuration errors have
// (views.Error): one style whichever part of mcp refused.

// fail prints the error summary, explained by detail ("" for none), and returns exit code 1.
func (c *cli) fail(summary, detail string) int {
	views.Error(c.stderr, summary, detail, isTerminal(c.stderr))
	return 1
}

// errorf prints an error built as fmt.Sprintf does: its first line is the summary, the
// lines after it the detail; "usage: …" is a usage under one summary for every command.
// The line breaks are format's: a string or error argument (a path, a flag's value) is
// written escaped, as untrusted.Line writes it, so that it cannot start a line.
func (c *cli) errorf(format string, a ...any) int {
	for i, v := range a {
		switch x := v.(type) {
		case string:
			a[i] = oneLine(x)
		case error:
			a[i] = oneLine(x.Error())
		}
	}
	msg := fmt.Sprintf(format, a...)
	if usage, ok := strings.CutPrefix(msg, "usage: "); ok {
		return c.fail("Invalid command line arguments", "Usage: "+usage)
	}
	summary, detail, _ := strings.Cut(msg, "\n")
	return c.fail(summary, strings.TrimLeft(detail, "\n"))
}

// failErr prints err: the errors people meet most (the lock, a stale plan, an address
// that names nothing) with a summary of their own and the error as the detail.
func (c *cli) failErr(err error) int {
	var le *state.LockError
	var se *planner.ScopeError
	switch {
	case errors.As(err, &le):
		return c.fail("Error acquiring the state lock", views.Capitalize(err.Error())+
			".\n\nmcp takes the state lock so that one run at a time writes the state and starts nodes; "+
			"another apply may run, or one ended without releasing it.")
	case errors.Is(err, planfile.ErrStale):
		return c.fail("Saved plan is stale", views.Capitalize(strings.TrimPrefix(err.Error(), "saved plan is stale: "))+".")
	case errors.As(err, &se):
		problems := make([]string, len(se.Problems))
		for i, p := range se.Problems {
			problems[i] = views.Untrusted(p)
		}
		return c.fail("Invalid -target or -exclude", strings.Join(problems, "\n"))
	}
	// One line per joined error, each escaped: a path or a node's text in an error
	// cannot start a line of its own, nor reach the terminal raw.
	lines := views.ErrorLines(err)
	return c.fail(lines[0], strings.Join(lines[1:], "\n"))
}

// oneLine is an argument of errorf: %q quotes it as ever; %s and %v write it escaped.
type oneLine string

func (s oneLine) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", string(s))
		return
	}
	io.WriteString(f, views.Untrusted(string(s)))
}
