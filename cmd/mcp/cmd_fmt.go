package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/mcpfleet/mcp/config"
)

// fmt rewrites unformatted files; with -check it only lists them and exits 3 (as terraform
// fmt -check does) so CI can fail on them. Each argument is a *.hcl file or a directory;
// one that does not exist is an error, as is a file that is not *.hcl.
func (c *cli) fmt(args []string) int {
	fs := c.newFlags("fmt")
	check := fs.Bool("check", false, "change nothing; list unformatted files and exit 3 if any")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) == 0 {
		pos = []string{"."}
	}
	changed := map[string][]byte{}
	for _, p := range pos {
		more, err := formatPath(c.path(p))
		if err != nil {
			return c.failErr(err)
		}
		for n, b := range more {
			changed[n] = b
		}
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
		st, err := os.Stat(n)
		if err != nil {
			return c.failErr(err)
		}
		if err := os.WriteFile(n, changed[n], st.Mode().Perm()); err != nil {
			return c.errorf("writing %s: %v", n, err)
		}
	}
	if *check && len(names) > 0 {
		return 3
	}
	return 0
}

// formatPath formats a *.hcl file, or the *.hcl files of a directory.
func formatPath(p string) (map[string][]byte, error) {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no file or directory at %s", p)
	case err != nil:
		return nil, err
	case st.IsDir():
		return config.FormatDir(p)
	case filepath.Ext(p) != ".hcl":
		return nil, fmt.Errorf("%s: only *.hcl files can be formatted", p)
	}
	return config.FormatFiles([]string{p})
}
