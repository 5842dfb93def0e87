// Command chaos runs mcp's crash harness (testkit/chaos): `make chaos` disrupts `mcp apply`
// 50 times at seeded random moments (SIGKILL, SIGTERM, SIGHUP, timeout's double signal, a
// closed stdout, special files, nodes changed from outside, two applies without the lock)
// on a local fleet of 100 nodes in 3 pools, re-runs it until the plan is empty, and prints
// what the fleet's own records show. Exit 1 when a promise was broken.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/testkit/chaos"
)

func main() {
	o := chaos.Options{MCP: os.Getenv("MCP")}
	seed := flag.Uint64("seed", 1, "seed of the kill moments")
	flag.IntVar(&o.Kills, "kills", 50, "how many times apply is killed")
	flag.DurationVar(&o.MaxDelay, "max-delay", 1500*time.Millisecond, "longest time from an apply's start to its kill")
	flag.DurationVar(&o.DrainDuration, "drain", 40*time.Millisecond, "simulated drain duration")
	flag.DurationVar(&o.RebootDuration, "reboot", 150*time.Millisecond, "simulated reboot duration")
	faults := flag.String("faults", "", "comma-separated faults to draw from (default all: "+allFaults()+")")
	dir := flag.String("dir", "", "work directory (default: a new temporary one)")
	verbose := flag.Bool("v", false, "print each action")
	flag.Parse()
	o.Seed = *seed
	for _, f := range strings.Split(*faults, ",") {
		if f != "" {
			o.Faults = append(o.Faults, chaos.Fault(f))
		}
	}
	if o.MCP == "" {
		fmt.Fprintln(os.Stderr, "chaos: set MCP to the mcp binary (make chaos does)")
		os.Exit(2)
	}
	if o.Dir = *dir; o.Dir == "" {
		var err error
		if o.Dir, err = os.MkdirTemp("", "mcp-chaos-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer os.RemoveAll(o.Dir)
	}
	if *verbose {
		o.Log = func(f string, a ...any) { fmt.Printf(f+"\n", a...) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Printf("chaos: seed %d, %d disrupted applies, fleet of %d nodes in %d pools, in %s\n", o.Seed, o.Kills, 100, len(chaos.DefaultPools), o.Dir)
	rep, err := chaos.Run(ctx, o)
	if rep != nil {
		fmt.Print(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func allFaults() string {
	var s []string
	for _, f := range chaos.AllFaults {
		s = append(s, string(f))
	}
	return strings.Join(s, ",")
}
