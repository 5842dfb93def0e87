package main

import (
	"flag"
	"os"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/term"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
)

// loadFlags are the flags of every command that loads the configuration.
type loadFlags struct {
	vars        multiFlag
	varFiles    multiFlag
	noColor     bool
	input       bool // -input=false: never ask (approval, confirmation), as Terraform's
	lock        bool
	lockTimeout time.Duration
	ignoreSoak  bool // -ignore-soak (plan, apply): the soak gate lets an unsoaked change through
	// approveStages are apply's -approve-stage: stages with approval this run goes into.
	approveStages multiFlag
	// values, when set, are a saved plan's variables (they replace every other source).
	values map[string]cty.Value
	// clusters are -cluster's names: the clusters of a configuration of clusters the
	// command works on (docs/fleets.md); op is the command's name, for messages.
	clusters multiFlag
	op       string
}

func (lf *loadFlags) register(fs *flag.FlagSet, locking bool) {
	fs.Var(&lf.vars, "var", "set a variable: -var 'name=value' (repeatable)")
	fs.Var(&lf.varFiles, "var-file", "read variables from an HCL file (repeatable)")
	fs.BoolVar(&lf.noColor, "no-color", false, "print no colour codes")
	fs.Var(&lf.clusters, "cluster", "in a configuration of clusters, work on the cluster NAME (repeatable for plan and validate: docs/fleets.md)")
	lf.op = strings.TrimPrefix(fs.Name(), "mcp ")
	fs.BoolVar(&lf.input, "input", true, "ask on a terminal when a command needs an answer (apply's approval, force-unlock's confirmation); -input=false never asks, and the command fails where it would have asked, as Terraform's")
	if locking {
		fs.BoolVar(&lf.lock, "lock", true, "do not take the state lock (for when it cannot be taken: see docs/decisions.md)")
		fs.DurationVar(&lf.lockTimeout, "lock-timeout", 0, "how long to wait for a state lock held by another run")
	}
}

// load reads and renders the configuration — of one cluster: a configuration of
// clusters needs exactly one -cluster here —; on errors it prints the diagnostics with
// their places and returns nil.
func (c *cli) load(lf *loadFlags) *engine.Workspace {
	ws, _, _ := c.loadAny(lf, false)
	return ws
}

// whileReading runs read — reading the configuration, which changes nothing — and says
// whether it finished. An interrupt ends the command at once instead: read is abandoned
// (its goroutine ends with the process), so that no file that never answers — a FIFO, a
// stalled network mount — can hold mcp past a signal (docs/decisions.md, "Interrupts").
func (c *cli) whileReading(read func()) bool {
	notice, atOnce := c.intr.swapNotice("stopping: the configuration was still being read, and nothing was changed", true)
	defer c.intr.swapNotice(notice, atOnce)
	done := make(chan struct{})
	go func() {
		defer close(done)
		read()
	}()
	select {
	case <-done:
		return true
	case <-c.ctx.Done():
		select {
		case <-done: // finished as the interrupt came: its result stands
			return true
		default:
		}
		c.fail("Interrupted", "The command was interrupted while it read the configuration; nothing was changed.")
		return false
	}
}

// diagnostics prints diags, if any, with their places' source lines and the blocks they are
// in, which the configuration res (nil when none was read) names: the engine's and the
// planner's diagnostics have places in it too.
func (c *cli) diagnostics(res *config.Result, diags model.Diagnostics, lf *loadFlags) {
	if len(diags) == 0 {
		return
	}
	var sources map[string][]byte
	if res != nil {
		sources, diags = res.Sources, res.Locate(diags)
	}
	views.Diagnostics(c.stderr, sources, diags, !lf.noColor && isTerminal(c.stderr))
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
	o := config.Options{Vars: lf.vars, VarFiles: files, Environ: os.Environ(), Values: lf.values, Schemas: c.parts.Schemas()}
	if len(lf.clusters) == 1 {
		o.Cluster = lf.clusters[0]
	}
	return o
}
