package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/providers/local"
)

const fleetUsage = "mcp fleet init DIR -nodes worker=4,infra=2 [-zones a,b,c] [-workloads]\n" +
	"       " + fleetAddUsage + "\n" +
	"       mcp fleet set [-fleet DIR] NODE key=value…\n       mcp fleet list [-fleet DIR]\n" +
	"       mcp fleet events [-fleet DIR] [NODE]"

func (c *cli) fleet(args []string) int {
	if len(args) == 0 {
		return c.errorf("usage: " + fleetUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		c.helped = true
		return c.printHelp("fleet", nil)
	case "init":
		return c.fleetInit(args[1:])
	case "add":
		return c.fleetAdd(args[1:])
	case "set":
		return c.fleetSet(args[1:])
	case "list":
		return c.fleetList(args[1:])
	case "events":
		return c.fleetEvents(args[1:])
	}
	return c.errorf("unknown fleet command %q: want init, add, set, list or events.%s", args[0],
		didYouMean(args[0], []string{"init", "add", "set", "list", "events"}))
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
	if err := local.Init(c.path(pos[0]), spec); err != nil {
		return c.failErr(err)
	}
	n := 0
	for _, p := range pools {
		n += p.Count
	}
	fmt.Fprintf(c.stdout, "Created a local fleet of %s in %s.\n", nodeCount(n), pos[0])
	return 0
}

// fleetDir is -fleet, or the local provider's fleet of the configuration in c.dir.
func (c *cli) fleetDir(flagVal string) (string, error) {
	if flagVal != "" {
		return c.path(flagVal), nil
	}
	res, diags := config.Load(c.dir, config.Options{Environ: os.Environ(), Schemas: c.parts.Schemas()})
	if !diags.HasErrors() && res != nil && len(res.Clusters) > 0 {
		return "", fmt.Errorf("no -fleet given and the configuration in %s declares clusters, each with its own fleet: give -fleet DIR", c.dir)
	}
	if diags.HasErrors() || res == nil || res.Desired == nil {
		return "", fmt.Errorf("no -fleet given and the configuration in %s does not load (run mcp validate)", c.dir)
	}
	dir, ok := local.FleetOf(res.Desired.Provider)
	if !ok {
		return "", fmt.Errorf("no -fleet given and the configuration in %s has no local provider", c.dir)
	}
	return dir, nil
}

func (c *cli) fleetSet(args []string) int {
	fs := c.newFlags("fleet set")
	dir := fs.String("fleet", "", "the fleet directory (default: the local provider's fleet)")
	force := fs.Bool("force", false, "claim-: clear the claim even when its apply may still work on the node")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) < 2 {
		return c.errorf("usage: mcp fleet set [-fleet DIR] [-force] NODE key=value… (ready=false, unschedulable=true, zone=b, label.K=V, fault.write=PATH, claim-, …)")
	}
	d, err := c.fleetDir(*dir)
	if err != nil {
		return c.failErr(err)
	}
	node, sets := pos[0], slices.DeleteFunc(slices.Clone(pos[1:]), func(a string) bool { return a == "claim-" })
	if len(sets) < len(pos)-1 {
		// Everything is checked before the claim is cleared, the claim before the rest is set.
		if err := local.CheckSet(sets); err != nil {
			return c.failErr(fmt.Errorf("node %s not changed: %w", node, err))
		}
		if code := c.clearLocalClaim(d, node, *force); code != 0 || len(sets) == 0 {
			return code
		}
	}
	if err := local.Set(d, node, sets); err != nil {
		return c.failErr(err)
	}
	return 0
}

// clearLocalClaim clears node's claim (claim-) as mcp unclaim does, judged without the
// state (a claim's state lock is not looked at: only its process, here, and its expiry).
func (c *cli) clearLocalClaim(dir, node string, force bool) int {
	p, err := local.New(local.Options{Dir: dir})
	if err != nil {
		return c.failErr(err)
	}
	done, err := (&engine.Workspace{Provider: p}).Unclaim(c.ctx, "", []string{node}, force)
	return c.unclaimed(done, err)
}

func (c *cli) fleetList(args []string) int {
	fs := c.newFlags("fleet list")
	dir := fs.String("fleet", "", "the fleet directory (default: the local provider's fleet)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 0 {
		return c.tooMany("fleet list", pos)
	}
	d, err := c.fleetDir(*dir)
	if err != nil {
		return c.failErr(err)
	}
	p, err := local.New(local.Options{Dir: d})
	if err != nil {
		return c.failErr(err)
	}
	f, err := p.Refresh(c.ctx)
	if err != nil {
		return c.failErr(err)
	}
	// Plain aligned columns, as mcp status and kubectl print them: awk and cut read them.
	t := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	fmt.Fprintln(t, "NODE\tZONE\tREADY\tSCHEDULABLE\tCURRENT CONFIG\tSTATE")
	for _, n := range f.Nodes {
		cur := n.CurrentConfig
		if cur == "" {
			cur = "-"
		}
		fmt.Fprintf(t, "%s\t%s\t%t\t%t\t%s\t%s\n", views.Untrusted(n.Name), views.Untrusted(orDash(n.Zone)), n.Ready, !n.Unschedulable,
			views.Untrusted(cur), views.Untrusted(orDash(n.State)))
	}
	if err := t.Flush(); err != nil {
		return c.failErr(err)
	}
	return 0
}

// orDash keeps an empty cell a column: awk splits on blanks.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fleetEvents prints the nodes' event logs (docs/fleet-format.md), oldest first.
func (c *cli) fleetEvents(args []string) int {
	fs := c.newFlags("fleet events")
	dir := fs.String("fleet", "", "the fleet directory (default: the local provider's fleet)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 1 {
		return c.errorf("usage: mcp fleet events [-fleet DIR] [NODE]")
	}
	d, err := c.fleetDir(*dir)
	if err != nil {
		return c.failErr(err)
	}
	all, err := local.ReadEvents(d)
	if err != nil {
		return c.failErr(err)
	}
	node := "" // all
	if len(pos) == 1 {
		node = pos[0]
		if _, ok := all[node]; !ok {
			return c.errorf("no node %q in fleet %s", node, d)
		}
	}
	var evs []local.Event
	for name, e := range all {
		if node == "" || node == name {
			evs = append(evs, e...)
		}
	}
	slices.SortStableFunc(evs, func(a, b local.Event) int {
		return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.Node, b.Node), cmp.Compare(a.Seq, b.Seq))
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, e := range evs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Time.UTC().Format("2006-01-02 15:04:05.000"), views.Untrusted(e.Node), views.Untrusted(string(e.Kind)), views.Untrusted(eventDetail(e)))
	}
	w.Flush()
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(c.stdout, strings.TrimRight(line, " \n")) // the padding of an event without detail
	}
	return 0
}

// eventDetail is the rest of an event, for people.
func eventDetail(e local.Event) string {
	var d string
	switch e.Kind {
	case local.EventWorking:
		d = "to " + e.DesiredConfig
	case local.EventDone:
		d = "on " + e.CurrentConfig
	case local.EventDegraded:
		d = e.Reason
	case local.EventDrain:
		d = "evicted " + strings.Join(e.Pods, ", ")
	case local.EventFirstBoot:
		d = fmt.Sprintf("from %s with the served config of %s", e.OSImage, e.DesiredConfig)
	case local.EventPivot:
		d = fmt.Sprintf("to %s (for %s), from the next boot", e.OSImage, e.DesiredConfig)
	case local.EventClaim:
		d = "by apply " + e.Apply
		if e.TookOver != "" {
			d += ", taken over from apply " + e.TookOver
		}
	case local.EventRelease:
		d = "by apply " + e.Apply
	case local.EventReboot:
		d = fmt.Sprintf("into %s, boot id %.8s → %.8s, ", e.DesiredConfig, e.BootID, e.NextBootID)
		if e.Until.IsZero() {
			d += "hangs"
		} else {
			d += "back at " + e.Until.UTC().Format("15:04:05.000")
		}
	}
	if e.Recovered {
		d += " (recovered from node.json)"
	}
	return strings.TrimSpace(d)
}
