package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/mcpfleet/mcp/engine/config"
)

// fmt rewrites unformatted files; with -check it only lists them and exits 3 (as terraform
// fmt -check does) so CI can fail on them.
func (c *cli) fmt(args []string) int {
	fs := c.newFlags("fmt")
	check := fs.Bool("check", false, "change nothing; list unformatted files and exit 3 if any")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 0 {
		c.dir = pos[0]
	}
	changed, err := config.FormatDir(c.dir)
	if err != nil {
		return c.errorf("%v", err)
	}
	names := make([]string, 0, len(changed))
	for n := range changed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintln(c.stdout, n)
		if *check {
			continue
		}
		p := n
		st, err := os.Stat(p)
		if err != nil {
			return c.errorf("%v", err)
		}
		if err := os.WriteFile(p, changed[n], st.Mode().Perm()); err != nil {
			return c.errorf("writing %s: %v", p, err)
		}
	}
	if *check && len(names) > 0 {
		return 3
	}
	return 0
}
