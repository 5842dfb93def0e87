package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/nodeexec/bootclient"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
)

const fleetAddUsage = "mcp fleet add NODE -pool POOL [-boot-image IMAGE] [-zone Z] [-server URL]"

// fleetAdd makes a node of a pool in the configuration's local fleet and boots it as a
// machine of the pool boots (docs/fleet-format.md, "Adding a node").
func (c *cli) fleetAdd(args []string) int {
	fs := c.newFlags("fleet add")
	pool := fs.String("pool", "", "the pool whose config the node boots with (required)")
	bootImage := fs.String("boot-image", "", "the image the node boots from (default: the pool's boot image in the state, else its OS image)")
	zone := fs.String("zone", "a", "the node's zone")
	server := fs.String("server", "", "fetch the served config and rendered configs from this mcp serve (default: build them from the state)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) != 1 || *pool == "" {
		return c.errorf("usage: " + fleetAddUsage)
	}
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	p, ok := ws.Provider.(*local.Provider)
	if !ok {
		return c.errorf("mcp fleet add adds a node to a local fleet; this configuration's provider is %q", ws.Desired.Provider.Type)
	}
	i := slices.IndexFunc(ws.Desired.Pools, func(p model.Pool) bool { return p.Name == *pool })
	if i < 0 {
		var names []string
		for _, p := range ws.Desired.Pools {
			names = append(names, p.Name)
		}
		return c.errorf("pool %q is not in the configuration (pools: %s)", *pool, strings.Join(names, ", "))
	}
	st, err := ws.ReadState(c.ctx)
	if err != nil {
		return c.failErr(err)
	}
	boot, err := newBoot(c.ctx, st, *pool, pos[0], *server)
	if err != nil {
		return c.failErr(err)
	}
	spec := local.AddSpec{Name: pos[0], Pool: *pool, Labels: maps.Clone(ws.Desired.Pools[i].NodeSelector), Zone: *zone,
		BootImage: cmpOr(*bootImage, boot.bootImage(st, *pool)), Ignition: boot.ignition}
	res, err := p.Add(c.ctx, spec, boot.fetch)
	if err != nil {
		return c.failErr(err)
	}
	n := views.Shown(res.Node) // what the node booted and reports
	how := "on its boot image"
	if n.OSImage != n.BootImage {
		how = fmt.Sprintf("pivoted to %s at its first boot", n.OSImage)
	}
	if res.Continued {
		fmt.Fprintf(c.stdout, "Node %s's first boot was unfinished; it is finished now.\n", n.Name)
	}
	fmt.Fprintf(c.stdout, "Node %s of pool %s booted %s, %s, and runs %s (%s).\n",
		n.Name, *pool, cmpOr(n.BootImage, "no image"), how, n.CurrentConfig, n.State)
	return 0
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// boot is what a machine of a pool boots with: the served Ignition config, and where its
// agent gets rendered configs.
type boot struct {
	pointer  *model.Rendered // the pool's rendered config in the state
	ignition []byte
	fetch    nodeexec.Fetch
}

// newBoot gets the served config node boots with: its pool's, or, when a machine block of
// the pool is named node, the machine's (its selectors in the URL, as the machine sends
// them) — from a running mcp serve (server), or built from the state by the code mcp serve
// builds its snapshot with: the same bytes.
func newBoot(ctx context.Context, st *state.State, pool, node, server string) (*boot, error) {
	name := st.Pointers[pool]
	if name == "" {
		return nil, fmt.Errorf("pool %s has no config in the state: it was never applied, so there is nothing to boot its new nodes with; run mcp apply first", pool)
	}
	query := ""
	if m, ok := st.Machines[node]; ok && m.Pool == pool {
		name, query = m.Rendered, machineQuery(&model.Machine{MACs: m.MACs, UUID: m.UUID, Hostname: m.Hostname})
	}
	b := &boot{pointer: st.Rendered[name]}
	if b.pointer == nil {
		return nil, fmt.Errorf("pool %s points at rendered config %s, which the state lacks", pool, name)
	}
	if server != "" {
		client := &http.Client{Timeout: 30 * time.Second}
		ign, err := fetchServed(ctx, client, server, pool, query)
		if err != nil {
			return nil, err
		}
		b.ignition = ign
		b.fetch = func(ctx context.Context, name string) (*model.Rendered, error) {
			return bootclient.FetchRendered(ctx, client, server, name)
		}
		return b, nil
	}
	snap, err := bootsrv.Build(st.Serial, map[string]string{pool: name}, map[string]*model.Rendered{name: b.pointer})
	if err != nil {
		return nil, err
	}
	if b.ignition, err = snap.PoolConfig(pool, bootsrv.IgnitionAccept); err != nil {
		return nil, err
	}
	b.fetch = func(_ context.Context, name string) (*model.Rendered, error) {
		if r := st.Rendered[name]; r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("the state has no rendered config %s", name)
	}
	return b, nil
}

// bootImage is the image a new node of pool boots when none is given: the one apply last
// made the pool's new nodes boot (the state's boot images, the local platform's image),
// else the pool's OS image, else the fleet's default.
func (b *boot) bootImage(st *state.State, pool string) string {
	if def, ok := st.BootImages[pool]; ok {
		if img, ok := def.ImageFor(model.PlatformLocal); ok && img != "" {
			return img
		}
	}
	return cmpOr(b.pointer.OSImage, local.DefaultOSImage)
}

// fetchServed is GET SERVER/config/POOL as the Ignition client asks for it.
func fetchServed(ctx context.Context, client *http.Client, server, pool, query string) ([]byte, error) {
	url := strings.TrimSuffix(server, "/") + "/config/" + pool
	if query != "" {
		url += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", bootsrv.IgnitionAccept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the served config: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(boundedfile.LimitBody("the answer", resp.Body, model.MaxRenderedSize))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
