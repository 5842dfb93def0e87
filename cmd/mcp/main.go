// Command mcp plans and applies the operating-system configuration of Kubernetes node
// pools. This package only parses flags, picks a view and calls the engine; everything a
// test needs is reachable through run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	// Maintenance windows name IANA time zones: a copy of the zone database comes with mcp
	// for machines (and containers) without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/internal/suggest"
	"github.com/mcpfleet/mcp/model"
)

func main() {
	ctx, intr, stop := interruptContext()
	processInterrupts = intr
	// MCP_CPUPROFILE=FILE writes a CPU profile, for performance work.
	if p := os.Getenv("MCP_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.StartCPUProfile(f)
		}
	}
	// MCP_MEMPROFILE=FILE writes a heap profile at the live heap's highest.
	stopHeap := func() {}
	if p := os.Getenv("MCP_MEMPROFILE"); p != "" {
		stopHeap = heapProfiler(p, time.Second)
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	stopHeap()
	intr.waitNotice(time.Second)
	stop()
	os.Exit(code)
}

// cli carries the streams and the working directory of one invocation.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	dir    string // the configuration directory (-chdir)
	helped bool   // the command only printed its usage, as -h asked
	// intr says what an interrupt does (signals.go); nil when run is called by a test.
	intr *interrupts
	// parts are the providers and state backends (each with its boot source) the commands
	// build (parts.go's).
	parts buildParts
}

type command struct {
	name    string
	summary string
	run     func(c *cli, args []string) int
	main    bool // listed under "Main commands", as Terraform lists its own
}

var commands []command

func init() {
	commands = []command{
		{"validate", "Check the configuration and print its problems with their places", (*cli).validate, true},
		{"plan", "Show what apply would do, node by node, with diffs of what changes", (*cli).plan, true},
		{"apply", "Carry out a plan (a saved one, or a fresh one after approval)", (*cli).apply, true},
		{"rollback", "Roll pools back to the rendered config they ran before (a plan, applied as apply's)", (*cli).rollback, true},
		{"show", "Show a saved plan, or a pool's rendered config", (*cli).show, true},
		{"status", "Show each pool's machine counts, or each node's; -watch follows a rollout", (*cli).status, true},
		{"drift", "Report how each node differs from the config it runs (no lock, no changes)", (*cli).drift, false},
		{"fmt", "Rewrite configuration files in the canonical format", (*cli).fmt, false},
		{"import", "Write other tools' configuration as mcp configuration (MCO MachineConfig YAML)", (*cli).import_, false},
		{"graph", "Print a plan's action graph in Graphviz DOT", (*cli).graph, false},
		{"fleet", "Create or change a local fleet (init, add, set, list, events)", (*cli).fleet, false},
		{"serve", "Serve Ignition configs to booting nodes and agents", (*cli).serve, false},
		{"pointer", "Print the Ignition pointer config that makes a node boot from mcp serve", (*cli).pointer, false},
		{"agent", "Run the node executor on this node", (*cli).agent, false},
		{"prune", "Delete the stored rendered configs nothing uses any more", (*cli).prune, false},
		{"force-unlock", "Release a state lock whose holder is gone", (*cli).forceUnlock, false},
		{"unclaim", "Clear a node's claim whose apply is gone", (*cli).unclaim, false},
		{"version", "Print mcp's version", (*cli).version, false},
		{"help", "Print a command's help", (*cli).help, false},
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(ctx, parts, args, stdin, stdout, stderr)
}

// runWith is run with the parts given (a test's, with a provider of its own).
func runWith(ctx context.Context, parts buildParts, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, dir: ".", intr: processInterrupts, parts: parts}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case strings.HasPrefix(args[0], "-chdir="):
			c.dir = strings.TrimPrefix(args[0], "-chdir=")
			if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
				return c.errorf("-chdir=%s: %s", c.dir, notADir(err))
			}
		case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
			c.usage(c.stdout)
			return 0
		case args[0] == "-version" || args[0] == "--version":
			return c.version(nil)
		default:
			name, _, _ := strings.Cut(args[0], "=")
			return c.fail("Unknown global option "+name, "mcp's global options are -chdir=DIR, -help and -version; a command's options go after the command."+
				didYouMean(name, []string{"-chdir", "-help", "-version"})+"\n\nTo see all of mcp's commands and options, run:\n  mcp -help")
		}
		args = args[1:]
	}
	if len(args) == 0 {
		c.usage(stderr)
		return 1
	}
	if cmd := lookup(args[0]); cmd != nil {
		code := cmd.run(c, args[1:])
		if c.helped {
			return 0
		}
		return code
	}
	return c.fail(fmt.Sprintf("mcp has no command %q.%s", args[0], didYouMean(args[0], commandNames())),
		"To see all of mcp's commands, run:\n  mcp -help")
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, cmd := range commands {
		names[i] = cmd.name
	}
	return names
}

// usage is mcp's own help: its commands and global options, as terraform -help prints them.
func (c *cli) usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: mcp [global options] <command> [args]\n\n" +
		"mcp plans and applies the operating-system configuration of Kubernetes node pools.\n" +
		"The configuration is every *.hcl file of the working directory.\n")
	for _, main := range []bool{true, false} {
		if main {
			b.WriteString("\nMain commands:\n")
		} else {
			b.WriteString("\nAll other commands:\n")
		}
		for _, cmd := range commands {
			if cmd.main == main {
				fmt.Fprintf(&b, "  %-14s%s\n", cmd.name, cmd.summary)
			}
		}
	}
	b.WriteString("\nGlobal options (use these before the command):\n" +
		"  -chdir=DIR    Switch to a different working directory before running the command.\n" +
		"  -help         Show this help output, or the help for a command (mcp help plan).\n" +
		"  -version      An alias for the version command.\n")
	io.WriteString(w, b.String())
}

// help is mcp help [COMMAND]: mcp's help, or a command's, on stdout.
func (c *cli) help(args []string) int {
	switch {
	case len(args) == 0:
		c.usage(c.stdout)
		return 0
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		return c.printHelp("help", nil)
	case args[0] == "fleet" && len(args) == 2:
		return c.fleet([]string{args[1], "-h"})
	case len(args) > 1:
		return c.tooMany("help", args[1:])
	}
	cmd := lookup(args[0])
	if cmd == nil {
		return c.errorf("mcp has no command %q.%s", args[0], didYouMean(args[0], commandNames()))
	}
	if cmd.name == "help" {
		return c.printHelp("help", nil)
	}
	return cmd.run(c, []string{"-h"})
}

// parse parses flags and positional arguments in any order (mcp fleet init DIR -nodes …).
// -h and -help print the command's help on stdout and make it fail with flag.ErrHelp; it
// notes that, so that the command's exit code is 0 rather than an error's. A flag the
// command does not know is an error that points at its help.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			name := strings.TrimPrefix(fs.Name(), "mcp ")
			if c.helped = errors.Is(err, flag.ErrHelp); c.helped {
				c.printHelp(name, fs)
				return nil, err
			}
			c.flagError(fs, name, err)
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagError prints why the flags of the command name did not parse: an option it does
// not have with the nearest one it has, or the flag package's word on a value.
func (c *cli) flagError(fs *flag.FlagSet, name string, err error) {
	more := "For more help on using this command, run:\n  mcp " + name + " -h"
	if opt, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
		c.fail("Unknown option "+opt, fmt.Sprintf("mcp %s has no option %s.%s\n\n%s", name, views.Untrusted(opt), didYouMean(opt, names), more))
		return
	}
	c.fail(views.Untrusted(err.Error()), more)
}

// printHelp prints the help of the command name, with its options fs (nil: none), on stdout.
func (c *cli) printHelp(name string, fs *flag.FlagSet) int {
	if err := helps[name].Write(c.stdout, fs); err != nil {
		return 1
	}
	return 0
}

// tooMany refuses positional arguments a command does not take, as Terraform does, with
// the way to name another configuration directory.
func (c *cli) tooMany(cmd string, extra []string) int {
	return c.fail("Too many command line arguments", fmt.Sprintf("mcp %s does not take %q.\n\n"+
		"To use the configuration in another directory, give the global option -chdir before the command:\n"+
		"  mcp -chdir=DIR %s\n\nFor more help on using this command, run:\n  mcp %s -h", cmd, strings.Join(extra, " "), cmd, cmd))
}

// notADir says why a directory cannot be used: it does not exist, or is a file.
func notADir(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such directory"
	case err != nil:
		return err.Error()
	}
	return "not a directory"
}

// didYouMean suggests the name of names nearest to name, as Terraform does: " Did you mean
// "plan"?", or "" when none is near.
func didYouMean(name string, names []string) string { return suggest.DidYouMean(name, names) }

// multiFlag collects a repeated string flag (-var a=1 -var b=2).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// newFlags is a command's flag set: its help and errors are printed by parse.
func (c *cli) newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcp "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// path resolves a path given on the command line against -chdir, as Terraform does.
func (c *cli) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// noPool is the one refusal of a pool name the configuration lacks (pointer, show
// -rendered): the pools it has, and the nearest one.
func (c *cli) noPool(name string, d *model.Desired) int {
	var names []string
	for _, p := range d.Pools {
		names = append(names, p.Name)
	}
	return c.errorf("the configuration has no pool %q (pools: %s).%s", name, strings.Join(names, ", "), didYouMean(name, names))
}
