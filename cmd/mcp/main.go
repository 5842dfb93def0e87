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
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	// Maintenance windows name IANA time zones: a copy of the zone database comes with mcp
	// for machines (and containers) without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/mcpfleet/mcp/engine"
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
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
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
	// parts are the providers and state backends the commands build (parts.go's).
	parts engine.Parts
}

type command struct {
	name    string
	summary string
	run     func(c *cli, args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"validate", "Check the configuration and print its problems with their places", (*cli).validate},
		{"fmt", "Rewrite configuration files in the canonical format", (*cli).fmt},
		{"plan", "Show what apply would do, node by node", (*cli).plan},
		{"apply", "Carry out a plan (a saved one, or a fresh one after approval)", (*cli).apply},
		{"show", "Show a saved plan, or a pool's rendered config", (*cli).show},
		{"drift", "Report how each node differs from the config it runs (no lock, no changes); -every for periodic runs", (*cli).drift},
		{"status", "Show each pool's machine counts, or each node's (-nodes); -watch follows a rollout", (*cli).status},
		{"graph", "Print a plan's action graph in Graphviz DOT (pools, waves, steps, blockers)", (*cli).graph},
		{"fleet", "Create or change a local fleet (init, add, set, list, events)", (*cli).fleet},
		{"serve", "Serve Ignition configs to booting nodes and agents (see docs/boot-server.md)", (*cli).serve},
		{"pointer", "Print the Ignition pointer config that makes a node boot from mcp serve", (*cli).pointer},
		{"agent", "Run the node executor on this node (see docs/agent.md)", (*cli).agent},
		{"prune", "Delete the stored rendered configs nothing uses any more", (*cli).prune},
		{"force-unlock", "Release a state lock whose holder is gone", (*cli).forceUnlock},
		{"version", "Print mcp's version", (*cli).version},
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(ctx, parts, args, stdin, stdout, stderr)
}

// runWith is run with the parts given (a test's, with a provider of its own).
func runWith(ctx context.Context, parts engine.Parts, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, dir: ".", intr: processInterrupts, parts: parts}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case strings.HasPrefix(args[0], "-chdir="):
			c.dir = strings.TrimPrefix(args[0], "-chdir=")
		case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
			c.usage()
			return 0
		case args[0] == "-version" || args[0] == "--version":
			return c.version(nil)
		default:
			fmt.Fprintf(stderr, "mcp: unknown global flag %s\n", args[0])
			c.usage()
			return 1
		}
		args = args[1:]
	}
	if len(args) == 0 {
		c.usage()
		return 1
	}
	for _, cmd := range commands {
		if cmd.name == args[0] {
			code := cmd.run(c, args[1:])
			if c.helped {
				return 0
			}
			return code
		}
	}
	fmt.Fprintf(stderr, "mcp: unknown command %q\n\n", args[0])
	c.usage()
	return 1
}

func (c *cli) usage() {
	fmt.Fprintln(c.stderr, "Usage: mcp [-chdir=DIR] <command> [flags] [args]\n\nCommands:")
	for _, cmd := range commands {
		fmt.Fprintf(c.stderr, "  %-13s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(c.stderr, "\nRun mcp <command> -h for a command's flags.")
}

// parse parses flags and positional arguments in any order (mcp fleet init DIR -nodes …).
// -h and -help make it fail with flag.ErrHelp once the flag package has printed the usage;
// it notes that, so that the command's exit code is 0 rather than an error's.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			c.helped = errors.Is(err, flag.ErrHelp)
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

// multiFlag collects a repeated string flag (-var a=1 -var b=2).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (c *cli) newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcp "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	return fs
}

func (c *cli) errorf(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "Error: "+format+"\n", a...)
	return 1
}

// path resolves a path given on the command line against -chdir, as Terraform does.
func (c *cli) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}
