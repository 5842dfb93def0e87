package main

import (
	"fmt"
	"net/url"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// pointer prints the Ignition pointer config (user-data) for a pool.
func (c *cli) pointer(args []string) int {
	fs := c.newFlags("pointer")
	url := fs.String("url", "", "the boot server's base URL, e.g. https://boot.example:8443")
	ca := fs.String("ca", "", "PEM file of the CA the node must trust for the server")
	token := fs.String("token-file", "", "file with the bearer token the node must send")
	machine := fs.String("machine", "", "a machine block's name: the pointer names its selectors, so it boots its own config (per-instance user data)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 1 {
		return c.tooMany("pointer", pos[1:])
	}
	if len(pos) != 1 || *url == "" {
		return c.errorf("usage: mcp pointer POOL -url URL [-ca FILE] [-token-file FILE] [-machine NAME]")
	}
	// The pool is the configuration's: a pointer to a pool the server does not have
	// would make a machine that never boots.
	res, diags := config.Load(c.dir, c.configOptions(&lf))
	c.diagnostics(res, diags, &lf)
	if diags.HasErrors() || c.notOneCluster(res, &lf, false) {
		return 1
	}
	if res.Desired.Pool(pos[0]) == nil {
		return c.noPool(pos[0], res.Desired)
	}
	o := ignition.PointerOptions{URL: *url, Pool: pos[0]}
	if *machine != "" {
		m := res.Desired.Machine(*machine)
		if m == nil || m.Pool != pos[0] {
			return c.errorf("-machine: no machine block %q of pool %s in the configuration", *machine, pos[0])
		}
		o.Query = machineQuery(m)
	}
	if *ca != "" {
		if o.CAPEM, err = boundedfile.Read(c.path(*ca), boundedfile.MaxCredential, 0); err != nil {
			return c.errorf("-ca: %v", err)
		}
	}
	if *token != "" {
		b, err := boundedfile.ReadToken(c.path(*token))
		if err != nil {
			return c.errorf("-token-file: %v", err)
		}
		o.Token = string(trimNL(b))
	}
	b, err := ignition.Pointer(o)
	if err != nil {
		return c.failErr(err)
	}
	fmt.Fprintln(c.stdout, string(b))
	return 0
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// machineQuery is the query of m's selectors (each it declares) for its pointer's URL.
func machineQuery(m *model.Machine) string {
	q := url.Values{}
	for _, mac := range m.MACs {
		q.Add("mac", mac)
	}
	if m.UUID != "" {
		q.Set("uuid", m.UUID)
	}
	if m.Hostname != "" {
		q.Set("hostname", m.Hostname)
	}
	return q.Encode()
}
