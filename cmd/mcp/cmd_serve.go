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
	"github.com/mcpfleet/mcp/providers/kubernetes/kubesource"
	"github.com/mcpfleet/mcp/engine/state"
	"github.com/mcpfleet/mcp/providers/kubernetes/kubestate"
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
	var lf loadFlags
	lf.register(fs, false)
	if _, err := c.parse(fs, args); err != nil {
		return 1
	}
	path := c.path(*statePath)
	var kb *kubestate.Backend
	if path == "" {
		ws := c.load(&lf)
		if ws == nil {
			return 1
		}
		switch b := ws.Backend.(type) {
		case *state.Local:
			path = b.Path
		case *kubestate.Backend:
			kb = b
		default:
			return c.errorf("mcp serve cannot follow the configuration's state backend (%T)", ws.Backend)
		}
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
	var src bootsrv.Source = bootsrv.LocalSource{Backend: &state.Local{Path: path}}
	where := path
	if kb != nil {
		// The cluster's Secrets, followed by an informer: every replica serves the same
		// bytes, and requests never reach the apiserver.
		ks, err := kubesource.New(kb.Client(), kb.Namespace())
		if err != nil {
			return c.errorf("following the state in namespace %s: %v", kb.Namespace(), err)
		}
		if err := ks.Start(ctx, time.Minute); err != nil {
			return c.errorf("%v", err)
		}
		src, where = ks, "kubernetes:"+kb.Namespace()
	}
	go bootsrv.Follow(ctx, srv, src, *poll, log)
	log.Info("listening", "url", fmt.Sprintf("%s://%s", scheme, ln.Addr()), "state", where)
	if err := srv.Serve(ctx, ln, log); err != nil {
		return c.errorf("%v", err)
	}
	return 0
}
