package main

import (
	"fmt"
	"os"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/config/machineconfig"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// import_ brings configuration written for other tools into mcp's language. Its one kind
// is machineconfig: the MCO's MachineConfig YAML, written as config blocks.
func (c *cli) import_(args []string) int {
	if len(args) == 0 {
		return c.errorf("usage: mcp import machineconfig [-out FILE] [-pool NAME] FILE...")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		c.helped = true
		return c.printHelp("import", nil)
	case "machineconfig":
		return c.importMachineConfig(args[1:])
	}
	return c.errorf("unknown import kind %q: mcp imports machineconfig.%s", args[0], didYouMean(args[0], []string{"machineconfig"}))
}

func (c *cli) importMachineConfig(args []string) int {
	fs := c.newFlags("import machineconfig")
	out := fs.String("out", "", "write the HCL to FILE instead of standard output (an existing FILE is refused)")
	var pools multiFlag
	fs.Var(&pools, "pool", "the pool the configs are for, instead of each MachineConfig's role label (repeatable)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) == 0 {
		return c.errorf("usage: mcp import machineconfig [-out FILE] [-pool NAME] FILE...")
	}
	var all []machineconfig.MachineConfig
	failed := false
	for _, name := range pos {
		b, err := boundedfile.Read(c.path(name), machineconfig.MaxSize, 0)
		if err != nil {
			return c.failErr(err)
		}
		mcs, problems := machineconfig.ParseWith(b, config.MachineConfigChecks())
		for _, p := range problems {
			failed = failed || !p.Warning
		}
		c.importProblems(name, b, problems)
		all = append(all, mcs...)
	}
	if failed {
		return 1
	}
	text, warnings, err := machineconfig.HCL(all, pools)
	if err != nil {
		return c.failErr(err)
	}
	var diags model.Diagnostics
	for _, w := range warnings {
		diags = append(diags, &model.Diagnostic{Severity: model.DiagWarning, Summary: views.Capitalize(w)})
	}
	views.Diagnostics(c.stderr, nil, diags, isTerminal(c.stderr))
	if *out == "" {
		_, err = c.stdout.Write(text)
	} else {
		err = writeNew(c.path(*out), text)
	}
	if err != nil {
		return c.failErr(err)
	}
	return 0
}

// writeNew writes a file that must not exist yet: an import never overwrites configuration.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return fmt.Errorf("-out %s exists: mcp import does not overwrite configuration", path)
		}
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// importProblems prints the problems of the MachineConfig file name (its bytes b) as
// diagnostics, at their line and column in it.
func (c *cli) importProblems(name string, b []byte, problems []machineconfig.Problem) {
	var diags model.Diagnostics
	for _, p := range problems {
		d := &model.Diagnostic{Severity: model.DiagError, Summary: views.Capitalize(p.Message)}
		if p.Warning {
			d.Severity = model.DiagWarning
		}
		if p.At.Line > 0 {
			at := model.Pos{Line: p.At.Line, Column: p.At.Column}
			d.Subject = &model.Range{Filename: name, Start: at, End: at}
		}
		diags = append(diags, d)
	}
	views.Diagnostics(c.stderr, map[string][]byte{name: b}, diags, isTerminal(c.stderr))
}
