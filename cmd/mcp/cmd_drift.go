package main

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/cmd/mcp/driftmetrics"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
)

// drift reports how each node differs from the rendered config it runs (docs/drift.md):
// a refresh, no plan, no lock, nothing written. With -every it runs again and again and
// serves the results as Prometheus metrics (-listen).
func (c *cli) drift(args []string) int {
	fs := c.newFlags("drift")
	asJSON := fs.Bool("json", false, "print the report as JSON (docs/drift.md; with -every one line per run)")
	detailed := fs.Bool("detailed-exitcode", false, "exit 0 when there is no drift, 1 on error, 2 when there is")
	every := fs.Duration("every", 0, "run again every D (e.g. 10m) until interrupted, instead of once")
	listen := fs.String("listen", "", "with -every: serve Prometheus metrics on this address (e.g. :9102), at /metrics")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	switch {
	case len(pos) > 0:
		return c.tooMany("drift", pos)
	case *every < 0:
		return c.errorf("-every %s: want a positive duration such as 10m", *every)
	case *listen != "" && *every == 0:
		return c.errorf("-listen serves the metrics of periodic runs: give -every too (e.g. -every 10m)")
	case *detailed && *every > 0:
		return c.errorf("-detailed-exitcode is the result of one run: not with -every (use the metrics)")
	}
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	v := views.NewDrift(*asJSON, c.stdout, c.color(&lf))
	if *every == 0 {
		drifted, err := c.driftOnce(ws, v, nil)
		switch {
		case err != nil:
			return c.failErr(err)
		case *detailed && drifted:
			return 2
		}
		return 0
	}
	return c.driftEvery(ws, v, *every, *listen)
}

// driftEvery runs a drift check every interval until interrupted; a failed run is printed
// and counted, and the next one goes ahead.
func (c *cli) driftEvery(ws *engine.Workspace, v views.Drift, every time.Duration, listen string) int {
	c.intr.setNotice("stopping the periodic drift runs: the run in progress is abandoned and the metrics server closed; nothing was changed")
	m := driftmetrics.New()
	if listen != "" {
		addr, stop, err := m.Serve(listen, func(err error) { c.fail("Serving the drift metrics", views.Capitalize(err.Error())) })
		if err != nil {
			return c.failErr(err)
		}
		defer stop()
		fmt.Fprintf(c.stderr, "Serving drift metrics on http://%s/metrics\n", addr)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := c.driftOnce(ws, v, m); err != nil && c.ctx.Err() == nil {
			c.failErr(err)
		}
		select {
		case <-c.ctx.Done():
			return 0
		case <-tick.C:
		}
	}
}

// driftOnce makes one drift run, shows it and records it in m (when not nil).
func (c *cli) driftOnce(ws *engine.Workspace, v views.Drift, m *driftmetrics.Metrics) (bool, error) {
	at := time.Now()
	r, err := ws.Drift(c.ctx)
	took := time.Since(at)
	if m != nil {
		m.Observe(r, at, took)
	}
	if err != nil {
		return false, err
	}
	if err := v.Report(r, views.DriftRun{At: at, Duration: took, Version: engine.Version}); err != nil {
		return false, err
	}
	return r.HasDrift(), nil
}
