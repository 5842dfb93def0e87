package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/bootsrv/fleetlock"
	"github.com/mcpfleet/mcp/bootsrv/kubesource"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// serve runs the boot server (docs/boot-server.md).
func (c *cli) serve(args []string) int {
	fs := c.newFlags("serve")
	listen := fs.String("listen", ":8080", "address to serve on")
	statePath := fs.String("state", "", "the local state to follow (default: the configuration's state, local or kubernetes)")
	certFile := fs.String("tls-cert", "", "serve HTTPS with this certificate (reloaded when it changes)")
	keyFile := fs.String("tls-key", "", "the certificate's key")
	tokenFile := fs.String("token-file", "", "require this bearer token on /config and /rendered")
	poll := fs.Duration("poll", 500*time.Millisecond, "how often to check the state for changes")
	agent := fs.String("first-boot-agent", "", "add to every served config a unit that runs this mcp-agent's first boot before kubelet, and embed the rendered config in the first-boot record (e.g. /usr/local/bin/mcp-agent on the boot images)")
	fleetLock := fs.Bool("fleetlock", false, "answer the FleetLock protocol (Zincati's fleet_lock strategy) under /v1/: reboot slots from the pools' max_unavailable, shared with mcp apply (kubernetes provider; docs/boot-server.md)")
	lease := fs.Duration("fleetlock-lease", time.Hour, "how long a FleetLock reboot slot lives when its client never reports steady state")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 0 {
		return c.tooMany("serve", pos)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	c.intr.setNotice("stopping the boot server: no new connections; requests in flight get 5 seconds to finish")
	if *agent != "" {
		if err := ignition.CheckFirstBootAgent(*agent); err != nil {
			return c.errorf("-first-boot-agent: %v", err)
		}
	}
	src, where, err := c.bootSource(ctx, &lf, *statePath)
	if errors.Is(err, errDiagnosed) {
		return 1
	} else if err != nil {
		return c.failErr(err)
	}
	opts := ignition.ServeOptions{FirstBootAgent: *agent}
	switch s := src.(type) {
	case bootsrv.FileSource:
		s.Options = opts
		src = s
	case *kubesource.Source:
		s.Options = opts
	}
	log := slog.New(slog.NewJSONHandler(c.stderr, nil))
	reg := prometheus.NewRegistry()
	srv := bootsrv.New(reg)
	if *fleetLock {
		slots, code := c.fleetLockSlots(&lf, *lease)
		if slots == nil {
			return code
		}
		srv.FleetLock = fleetlock.Handler(slots, log)
	}
	if *tokenFile != "" {
		b, err := boundedfile.ReadToken(c.path(*tokenFile))
		if err != nil {
			return c.errorf("-token-file: %v", err)
		}
		srv.Token = strings.TrimSpace(string(b))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return c.errorf("-listen: %v", err)
	}
	scheme := "http"
	if *certFile != "" || *keyFile != "" {
		cr := &bootsrv.CertReloader{CertFile: c.path(*certFile), KeyFile: c.path(*keyFile)}
		if _, err := cr.GetCertificate(nil); err != nil {
			return c.errorf("-tls-cert/-tls-key: %v", err)
		}
		ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.GetCertificate})
		scheme = "https"
	}
	go bootsrv.Follow(ctx, srv, src, *poll, log)
	log.Info("listening", "url", fmt.Sprintf("%s://%s", scheme, ln.Addr()), "state", where)
	if err := srv.Serve(ctx, ln, log); err != nil {
		return c.failErr(err)
	}
	return 0
}

// bootSource is what serve follows: the state file named by -state, else the configuration's
// state backend — read from its state block alone, without rendering the configuration.
func (c *cli) bootSource(ctx context.Context, lf *loadFlags, statePath string) (bootsrv.Source, string, error) {
	if statePath != "" {
		return localSource(&localstate.Local{Path: c.path(statePath)}), c.path(statePath), nil
	}
	res, diags := config.Load(c.dir, c.configOptions(lf))
	c.diagnostics(res, diags, lf)
	if diags.HasErrors() || c.notOneCluster(res, lf, false) {
		return nil, "", errDiagnosed
	}
	name := res.Desired.State.Backend
	b := c.parts.backend(name)
	if b == nil || b.Boot == nil {
		return nil, "", fmt.Errorf("mcp serve cannot follow the state backend %q", name)
	}
	return b.Boot(ctx, res.Desired.State.Settings)
}

// fleetLockSlots are serve -fleetlock's reboot slots: the configuration's pools, claimed on
// its provider's nodes, with its state lock; nil and the exit code when they cannot be.
func (c *cli) fleetLockSlots(lf *loadFlags, lease time.Duration) (*fleetlock.Slots, int) {
	if lease <= 0 || lease > model.MaxFleetLockLease {
		return nil, c.errorf("-fleetlock-lease %s: a slot's lease is more than 0 and at most %s", lease, model.MaxFleetLockLease)
	}
	ws := c.load(lf)
	if ws == nil {
		return nil, 1
	}
	store, ok := ws.Provider.(fleetlock.Store)
	if !ok {
		return nil, c.errorf("-fleetlock: the configuration's provider keeps no claims on Kubernetes Nodes (it needs provider \"kubernetes\")")
	}
	s := &fleetlock.Slots{Store: store, Pools: ws.Desired.Pools, Lease: lease}
	s.StateLock, _ = ws.Backend.(state.LockInspector)
	s.Lineage = func(ctx context.Context) (string, error) {
		st, err := ws.ReadState(ctx)
		if err != nil || st == nil {
			return "", err
		}
		return st.Lineage, nil
	}
	return s, 0
}

// errDiagnosed is an error already printed as diagnostics.
var errDiagnosed = errors.New("the configuration has errors")
