package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/engine/state"
)

// serve runs the boot server (docs/boot-server.md).
func (c *cli) serve(args []string) int {
	fs := c.newFlags("serve")
	listen := fs.String("listen", ":8080", "address to serve on")
	statePath := fs.String("state", "", "the local state to follow (default: the configuration's)")
	certFile := fs.String("tls-cert", "", "serve HTTPS with this certificate (reloaded when it changes)")
	keyFile := fs.String("tls-key", "", "the certificate's key")
	tokenFile := fs.String("token-file", "", "require this bearer token on /config and /rendered")
	poll := fs.Duration("poll", 500*time.Millisecond, "how often to check the state for changes")
	var lf loadFlags
	lf.register(fs, false)
	if _, err := parse(fs, args); err != nil {
		return 1
	}
	path := c.path(*statePath)
	if path == "" {
		ws := c.load(&lf)
		if ws == nil {
			return 1
		}
		b, ok := ws.Backend.(*state.Local)
		if !ok {
			return c.errorf("mcp serve follows a local state here; the configuration's backend is another")
		}
		path = b.Path
	}
	log := slog.New(slog.NewJSONHandler(c.stderr, nil))
	reg := prometheus.NewRegistry()
	srv := bootsrv.New(reg)
	if *tokenFile != "" {
		b, err := os.ReadFile(c.path(*tokenFile))
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
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go bootsrv.Follow(ctx, srv, bootsrv.LocalSource{Backend: &state.Local{Path: path}}, *poll, log)
	log.Info("listening", "url", fmt.Sprintf("%s://%s", scheme, ln.Addr()), "state", path)
	if err := srv.Serve(ctx, ln, log); err != nil {
		return c.errorf("%v", err)
	}
	return 0
}
