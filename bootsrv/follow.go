package bootsrv

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mcpfleet/mcp/engine/state"
)

// Source is where the server's data lives: the local state backend here; the Kubernetes
// backend brings its own (an informer).
type Source interface {
	// Token is a cheap change marker: when it is unchanged, Load would give the same.
	Token() (string, error)
	// Load reads the pointers and rendered configs and prepares a snapshot.
	Load(ctx context.Context) (*Snapshot, error)
}

// LocalSource follows a local state (state.Local): the state file names the pointers and
// is replaced atomically after the rendered configs it names are stored.
type LocalSource struct{ Backend *state.Local }

func (l LocalSource) Token() (string, error) {
	st, err := os.Stat(l.Backend.Path)
	if os.IsNotExist(err) {
		return "absent", nil
	}
	if err != nil {
		return "", err
	}
	ino := uint64(0)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = sys.Ino
	}
	return fmt.Sprintf("%d:%d:%d", ino, st.Size(), st.ModTime().UnixNano()), nil
}

func (l LocalSource) Load(ctx context.Context) (*Snapshot, error) {
	s, err := l.Backend.Read(ctx)
	if err != nil {
		return nil, err
	}
	return Build(s.Serial, s.Pointers, s.Rendered)
}

// Follow keeps the server on the source's latest snapshot, checking every interval until
// ctx ends. A snapshot that fails to build is logged and the one in service stays.
func Follow(ctx context.Context, srv *Server, src Source, every time.Duration, log *slog.Logger) {
	last := ""
	for {
		tok, err := src.Token()
		if err == nil && tok != last {
			snap, lerr := src.Load(ctx)
			if lerr != nil {
				log.Error("loading configs; keeping the ones in service", "err", lerr.Error())
			} else {
				srv.Swap(snap)
				last = tok
				log.Info("serving", "serial", snap.Serial, "pools", len(snap.pools), "rendered", len(snap.rendered))
			}
		} else if err != nil {
			log.Error("checking the state", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// CertReloader serves a certificate and key from files, reloading them when they change
// (checked at most once a second), so certificates can be rotated without a restart.
type CertReloader struct {
	CertFile, KeyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	stamp             string
	checked           time.Time
}

// GetCertificate is for tls.Config.GetCertificate.
func (c *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil && time.Since(c.checked) < time.Second {
		return c.cert, nil
	}
	c.checked = time.Now()
	stamp := ""
	for _, f := range []string{c.CertFile, c.KeyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if c.cert != nil {
				return c.cert, nil
			}
			return nil, err
		}
		stamp += fmt.Sprintf("%d:%d;", st.Size(), st.ModTime().UnixNano())
	}
	if stamp == c.stamp && c.cert != nil {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil // a half-rotated pair: keep the old one until both are new
		}
		return nil, err
	}
	c.cert, c.stamp = &cert, stamp
	return c.cert, nil
}
