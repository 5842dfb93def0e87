package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/olekukonko/tablewriter"

	"github.com/mcpfleet/mcp/engine/config"
	"github.com/mcpfleet/mcp/providers/local"
)

const fleetUsage = "mcp fleet init DIR -nodes worker=4,infra=2 [-zones a,b,c] [-workloads]\n" +
	"       mcp fleet set [-fleet DIR] NODE key=value…\n       mcp fleet list [-fleet DIR]"

func (c *cli) fleet(args []string) int {
	if len(args) == 0 {
		return c.errorf("usage: " + fleetUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintln(c.stderr, "Usage: "+fleetUsage+"\n\nRun mcp fleet <init|set|list> -h for their flags.")
		return 0
	case "init":
		return c.fleetInit(args[1:])
	case "set":
		return c.fleetSet(args[1:])
	case "list":
		return c.fleetList(args[1:])
	}
	return c.errorf("unknown fleet command %q: want init, set or list", args[0])
}

func (c *cli) fleetInit(args []string) int {
	fs := c.newFlags("fleet init")
	nodes := fs.String("nodes", "worker=3", "nodes per pool: pool=count,…")
	zones := fs.String("zones", "a", "zones, assigned round-robin: a,b,c")
	image := fs.String("os-image", "", "OS image the nodes run (default: fedora-coreos stable)")
	workloads := fs.Bool("workloads", false, "add a demo app (pods and a PodDisruptionBudget) on the first pool")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) != 1 {
		return c.errorf("usage: mcp fleet init DIR -nodes worker=4,infra=2 [-zones a,b,c]")
	}
	pools, err := local.ParsePoolSizes(*nodes)
	if err != nil {
		return c.errorf("-nodes: %v", err)
	}
	spec := local.InitSpec{Pools: pools, Zones: strings.Split(*zones, ","), OSImage: *image, Workloads: *workloads}
	if err := local.Init(pos[0], spec); err != nil {
		return c.errorf("%v", err)
	}
	n := 0
	for _, p := range pools {
		n += p.Count
	}
	fmt.Fprintf(c.stdout, "Created a local fleet of %d nodes in %s.\n", n, pos[0])
	return 0
}

// fleetDir is -fleet, or the local provider's fleet of the configuration in c.dir.
func (c *cli) fleetDir(flagVal string) (string, error) {
	if flagVal != "" {
		return flagVal, nil
	}
	res, diags := config.Load(c.dir, config.Options{Environ: os.Environ()})
	if diags.HasErrors() || res == nil || res.Desired == nil {
		return "", fmt.Errorf("no -fleet given and the configuration in %s does not load (run mcp validate)", c.dir)
	}
	p := res.Desired.Provider
	if p.Type != "local" || p.Attrs["fleet"] == "" {
		return "", fmt.Errorf("no -fleet given and the configuration in %s has no local provider", c.dir)
	}
	return p.Attrs["fleet"], nil
}

func (c *cli) fleetSet(args []string) int {
	fs := c.newFlags("fleet set")
	dir := fs.String("fleet", "", "the fleet directory (default: the local provider's fleet)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) < 2 {
		return c.errorf("usage: mcp fleet set [-fleet DIR] NODE key=value… (ready=false, unschedulable=true, zone=b, label.K=V, …)")
	}
	d, err := c.fleetDir(*dir)
	if err != nil {
		return c.errorf("%v", err)
	}
	if err := local.Set(d, pos[0], pos[1:]); err != nil {
		return c.errorf("%v", err)
	}
	return 0
}

func (c *cli) fleetList(args []string) int {
	fs := c.newFlags("fleet list")
	dir := fs.String("fleet", "", "the fleet directory (default: the local provider's fleet)")
	if _, err := c.parse(fs, args); err != nil {
		return 1
	}
	d, err := c.fleetDir(*dir)
	if err != nil {
		return c.errorf("%v", err)
	}
	p, err := local.New(local.Options{Dir: d})
	if err != nil {
		return c.errorf("%v", err)
	}
	f, err := p.Refresh(c.ctx)
	if err != nil {
		return c.errorf("%v", err)
	}
	t := tablewriter.NewWriter(c.stdout)
	t.Header("NODE", "ZONE", "READY", "SCHEDULABLE", "CURRENT CONFIG", "STATE")
	for _, n := range f.Nodes {
		cur := n.CurrentConfig
		if cur == "" {
			cur = "-"
		}
		t.Append(n.Name, n.Zone, fmt.Sprint(n.Ready), fmt.Sprint(!n.Unschedulable), cur, n.State)
	}
	t.Render()
	return 0
}
