// Package health runs a node's health gates after its steps: the provider's (the node
// Ready, its DaemonSet pods Ready; providers.HealthGater) and then the pool's health_check
// blocks — an HTTP GET from this machine, or a command the provider runs on the node
// (providers.CommandChecker). A node counts as done only once they all pass; a gate that
// does not pass in its timeout is a *providers.GateError naming it, with what it saw last.
package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Defaults of Gates.
const (
	DefaultReadyTimeout = 10 * time.Minute
	DefaultInterval     = 2 * time.Second
	// requestTimeout bounds one try of an HTTP check (the check's timeout bounds them all).
	requestTimeout = 10 * time.Second
)

// Gates checks nodes. The zero value takes the defaults; Provider may lack HealthGater (then
// only the pool's checks run, and ${node.address} cannot be filled in).
type Gates struct {
	Provider providers.Provider
	// ReadyTimeout bounds the wait for the node and its DaemonSet pods to be Ready.
	ReadyTimeout time.Duration
	// Interval is the pause between two tries of a failing HTTP check.
	Interval time.Duration
	Client   *http.Client
	// SkipBuiltIn leaves out the provider's gates (for a node that was not Ready before its
	// update); the pool's checks still run.
	SkipBuiltIn bool
	// Pool is the node's pool: its command checks are looked up under it on the node.
	Pool string
}

// Check runs node's gates in order and returns the first that does not pass.
func (g *Gates) Check(ctx context.Context, node string, checks []model.HealthCheck) error {
	hg := providers.Adapt(g.Provider)
	if !g.SkipBuiltIn {
		if err := hg.WaitHealthy(ctx, node, cmpOr(g.ReadyTimeout, DefaultReadyTimeout)); err != nil {
			return err
		}
	}
	address := ""
	for _, c := range checks {
		if len(c.Command) > 0 {
			if err := g.command(ctx, node, c); err != nil {
				return err
			}
			continue
		}
		if c.NeedsAddress() && address == "" {
			a, err := hg.NodeAddress(ctx, node)
			switch {
			case errors.Is(err, errors.ErrUnsupported):
				return &providers.GateError{Gate: c.Name, Output: "its URL has ${node.address}, and " + err.Error()}
			case err != nil:
				return &providers.GateError{Gate: c.Name, Output: err.Error()}
			}
			address = a
		}
		if err := g.httpGet(ctx, c, c.URLFor(node, address)); err != nil {
			return err
		}
	}
	return nil
}

// httpGet asks url until it answers 2xx or the check's timeout passes (a try started
// before then may end up to requestTimeout later).
func (g *Gates) httpGet(ctx context.Context, c model.HealthCheck, url string) error {
	client := g.Client
	if client == nil {
		client = http.DefaultClient
	}
	// A try is not cut short by the check's deadline: its answer (a 500 and its body)
	// says more than a deadline would. The deadline bounds when tries start.
	return g.retry(ctx, c, "answered 2xx", func() string { return try(ctx, client, url, requestTimeout) })
}

// command has the provider run the command check on the node until it exits 0 or the
// check's timeout passes. One run is bounded by the check's timeout too: the node kills it
// then.
func (g *Gates) command(ctx context.Context, node string, c model.HealthCheck) error {
	cc := providers.Adapt(g.Provider)
	if !cc.Has(providers.CapCommandChecker) {
		return &providers.GateError{Gate: c.Name, Output: "it is a command, and this provider cannot run commands on its nodes"}
	}
	return g.retry(ctx, c, "exited 0", func() string {
		res, err := cc.RunCheck(ctx, node, g.Pool, c)
		switch {
		case err != nil:
			return err.Error()
		case res.Passed():
			return ""
		}
		return fmt.Sprintf("%q: %s", c.Command, res)
	})
}

// retry calls once until it passes (returns "") or the check's timeout has passed, pausing
// Interval between tries; the GateError then says what the last try saw. passed says what
// a passing try does, for that error.
func (g *Gates) retry(ctx context.Context, c model.HealthCheck, passed string, once func() string) error {
	timeout := cmpOr(c.Timeout, model.DefaultHealthCheckTimeout)
	deadline := time.Now().Add(timeout)
	tries := 0
	for {
		tries++
		last := once()
		if last == "" {
			return nil
		}
		wait := min(cmpOr(g.Interval, DefaultInterval), time.Until(deadline))
		if wait <= 0 || ctx.Err() != nil {
			why := fmt.Sprintf("within %s", timeout)
			if ctx.Err() != nil {
				why = "before apply stopped waiting: " + context.Cause(ctx).Error()
			}
			return &providers.GateError{Gate: c.Name, Output: fmt.Sprintf("%s (%d tries, none %s %s)", last, tries, passed, why)}
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// try makes one GET; it returns "" on a 2xx answer, else what went wrong.
func try(ctx context.Context, client *http.Client, url string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Sprintf("GET %s: %v", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap() // the url.Error repeats the URL
		}
		return fmt.Sprintf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, model.CheckOutputLimit))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return ""
	}
	out := fmt.Sprintf("GET %s: %s", url, resp.Status)
	if b := strings.TrimSpace(string(body)); b != "" {
		out += ": " + b
	}
	return out
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
