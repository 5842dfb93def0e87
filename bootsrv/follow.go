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

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// Source is where the server's data lives: a state file (FileSource) or, for the
// Kubernetes backend, an informer on its Secrets (bootsrv/kubesource).
type Source interface {
	// Token is a cheap change marker: when it is unchanged, Load would give the same.
	Token() (string, error)
	// Load reads the pointers and rendered configs and prepares a snapshot.
	Load(ctx context.Context) (*Snapshot, error)
}

// FileSource follows a state kept in one file that is replaced atomically after the
// rendered configs it names are stored (the local backend): the file's inode, size and
// modification time are the change token, and Read loads what it names.
type FileSource struct {
	Path string
	Read func(ctx context.Context) (serial int64, pointers map[string]string, rendered map[string]*model.Rendered, err error)
	// Options are the snapshots' (BuildWith).
	Options ignition.ServeOptions
}

func (l FileSource) Token() (string, error) {
	st, err := os.Stat(l.Path)
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

func (l FileSource) Load(ctx context.Context) (*Snapshot, error) {
	serial, pointers, rendered, err := l.Read(ctx)
	if err != nil {
		return nil, err
	}
	return BuildWith(serial, pointers, rendered, l.Options)
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
				for pool, why := range snap.Failed() {
					log.Error("not serving a pool: its config cannot be served; the other pools are served", "pool", pool, "err", why)
				}
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
	cert, err := loadKeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil // a half-rotated pair: keep the old one until both are new
		}
		return nil, err
	}
	c.cert, c.stamp = &cert, stamp
	return c.cert, nil
}

// loadKeyPair is tls.LoadX509KeyPair with both files read as boundedfile reads them.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := boundedfile.Read(certFile, boundedfile.MaxCredential, 0)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := boundedfile.Read(keyFile, boundedfile.MaxCredential, 0)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
