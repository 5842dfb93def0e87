// Package bootclient is the node agent's client of the boot server (`mcp serve`): it
// fetches the immutable rendered configs the server holds for agents, GET
// {server}/rendered/{name}. It is the agent's only transport to the server, kept apart from
// the node executor so that the executor speaks no HTTP: the standalone agent, the
// Kubernetes agent and `mcp fleet add -server` fetch through it.
package bootclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// ErrNotServed is the boot server's answer for a rendered config its store does not hold
// (404): a name mcp never stored — the MCO's, one from a lost state.
var ErrNotServed = errors.New("the boot server does not serve it")

// FetchRendered gets the rendered config name from a boot server: GET {server}/rendered/{name}
// (immutable there). The answer must be that config. Every agent mode fetches through it.
func FetchRendered(ctx context.Context, client *http.Client, server, name string) (*model.Rendered, error) {
	if server == "" {
		return nil, fmt.Errorf("fetching rendered config %s: no boot server URL given", name)
	}
	if client == nil {
		client = http.DefaultClient
	}
	url := strings.TrimSuffix(server, "/") + "/rendered/" + name
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("fetching %s: %s: %w", url, resp.Status, ErrNotServed)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	r := new(model.Rendered)
	body := boundedfile.LimitBody("the answer", resp.Body, model.MaxRenderedSize)
	if err := json.NewDecoder(body).Decode(r); err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	if r.Name != name {
		return nil, fmt.Errorf("fetching %s: the server answered with rendered config %q", url, r.Name)
	}
	return r, nil
}
