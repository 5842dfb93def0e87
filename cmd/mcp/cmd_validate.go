package main

import (
	"fmt"
	"os"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func (c *cli) validate(args []string) int {
	fs := c.newFlags("validate")
	asJSON := fs.Bool("json", false, "print the result as JSON (the shape of terraform validate -json)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 1 {
		return c.tooMany("validate", pos[1:])
	}
	if len(pos) > 0 {
		c.dir = c.path(pos[0])
		if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
			return c.errorf("%s: %s", pos[0], notADir(err))
		}
	}
	var loads []validated
	if !c.whileReading(func() { loads = c.validateAll(&lf) }) {
		return 1
	}
	var diags model.Diagnostics
	seen := map[string]bool{}
	for _, v := range loads {
		own := once(seen, v.diags)
		diags = append(diags, own...)
		if !*asJSON {
			c.diagnostics(v.res, own, &lf)
		}
	}
	if *asJSON {
		b, err := views.DiagnosticsJSON(diags)
		if err != nil {
			return c.failErr(err)
		}
		fmt.Fprintln(c.stdout, string(b))
	}
	if diags.HasErrors() {
		return 1
	}
	if !*asJSON {
		fmt.Fprintln(c.stdout, "Success! The configuration is valid.")
	}
	return 0
}

// validated is the configuration as loaded for one cluster, and its diagnostics.
type validated struct {
	res   *config.Result
	diags model.Diagnostics
}

// validateAll loads and renders the configuration: for each cluster -cluster names (all
// without it) in a configuration of clusters.
func (c *cli) validateAll(lf *loadFlags) []validated {
	opts := c.configOptions(lf)
	res, diags := validateOne(c.dir, opts)
	if len(res.Clusters) == 0 && len(lf.clusters) > 1 {
		diags = append(diags, &model.Diagnostic{Severity: model.DiagError, Summary: "No cluster blocks",
			Detail: "-cluster: this configuration declares no cluster blocks; it is one cluster, loaded without -cluster."})
	}
	if diags.HasErrors() || res.Desired != nil || len(lf.clusters) == 1 {
		return []validated{{res, diags}}
	}
	sel, err := clusters.Select(res, lf.clusters)
	if err != nil {
		return []validated{{res, append(diags, &model.Diagnostic{Severity: model.DiagError, Summary: "Unknown cluster", Detail: err.Error()})}}
	}
	var out []validated
	for _, cl := range sel {
		opts.Cluster = cl.Name
		r, d := validateOne(c.dir, opts)
		out = append(out, validated{r, d})
	}
	return out
}

// validateOne loads the configuration and renders it: rendering validates every pool's
// config with Ignition's own parser.
func validateOne(dir string, opts config.Options) (*config.Result, model.Diagnostics) {
	res, diags := config.Load(dir, opts)
	if !diags.HasErrors() && res.Desired != nil {
		_, rdiags := planner.Render(res.Desired, ignition.Renderer{})
		diags = append(diags, rdiags...)
	}
	return res, diags
}
