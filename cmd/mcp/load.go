package main

import (
	"flag"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/term"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/config"
)

// loadFlags are the flags of every command that loads the configuration.
type loadFlags struct {
	vars        multiFlag
	varFiles    multiFlag
	noColor     bool
	input       bool // -input=false: never ask (approval, confirmation), as Terraform's
	lock        bool
	lockTimeout time.Duration
	// values, when set, are a saved plan's variables (they replace every other source).
	values map[string]cty.Value
}

func (lf *loadFlags) register(fs *flag.FlagSet, locking bool) {
	fs.Var(&lf.vars, "var", "set a variable: -var 'name=value' (repeatable)")
	fs.Var(&lf.varFiles, "var-file", "read variables from an HCL file (repeatable)")
	fs.BoolVar(&lf.noColor, "no-color", false, "print no colour codes")
	fs.BoolVar(&lf.input, "input", true, "ask on a terminal when a command needs an answer (apply's approval, force-unlock's confirmation); -input=false never asks, and the command fails where it would have asked, as Terraform's")
	if locking {
		fs.BoolVar(&lf.lock, "lock", true, "do not take the state lock (for when it cannot be taken: see docs/decisions.md)")
		fs.DurationVar(&lf.lockTimeout, "lock-timeout", 0, "how long to wait for a state lock held by another run")
	}
}

// load reads and renders the configuration; on errors it prints the diagnostics with their
// places and returns nil.
func (c *cli) load(lf *loadFlags) *engine.Workspace {
	ws, res, diags := engine.Load(c.dir, c.configOptions(lf), c.parts)
	if len(diags) > 0 {
		var files = filesOf(res)
		views.Diagnostics(c.stderr, files, diags, !lf.noColor && isTerminal(c.stderr))
	}
	if diags.HasErrors() {
		return nil
	}
	return ws
}

func filesOf(res *config.Result) map[string]*hcl.File {
	if res == nil {
		return nil
	}
	return res.Files
}

// isTerminal reports whether w is a terminal (not merely a character device: /dev/null is
// one, and nobody answers a prompt there).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (c *cli) configOptions(lf *loadFlags) config.Options {
	files := make([]string, len(lf.varFiles))
	for i, f := range lf.varFiles {
		files[i] = c.path(f)
	}
	return config.Options{Vars: lf.vars, VarFiles: files, Environ: os.Environ(), Values: lf.values, Schemas: c.parts.Schemas()}
}
