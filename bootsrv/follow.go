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
	"github.com/mcpfleet/mcp/state/localstate"
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
	Read func(ctx context.Context) (Stored, error)
	// Options are the snapshots' (BuildWith).
	Options ignition.ServeOptions
}

// LocalSource follows the local state l (a file replaced atomically after the rendered
// configs it names are stored), reading it as l.Served does: each rendered config apart.
func LocalSource(l *localstate.Local) FileSource {
	return FileSource{Path: l.Path, Read: func(ctx context.Context) (Stored, error) {
		s, unreadable, err := l.Served(ctx)
		if err != nil {
			return Stored{}, err
		}
		return Stored{Serial: s.Serial, Pointers: s.Pointers, Machines: s.Machines, Rendered: s.Rendered, Unreadable: unreadable}, nil
	}}
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
	st, err := l.Read(ctx)
	if err != nil {
		return nil, err
	}
	return BuildStored(st, l.Options)
}

// Follow keeps the server on the source's latest snapshot, checking every interval until
// ctx ends. A snapshot that fails to load is logged (once, until the error changes) and
// the one in service stays; a pool whose rendered config no longer reads from the store
// keeps the copy in service of that same config (Snapshot.Keeping).
func Follow(ctx context.Context, srv *Server, src Source, every time.Duration, log *slog.Logger) {
	last, lastErr := "", ""
	for {
		tok, err := src.Token()
		if err == nil && tok != last {
			snap, lerr := src.Load(ctx)
			switch {
			case lerr != nil && lerr.Error() != lastErr:
				log.Error("loading configs; keeping the ones in service", "err", lerr.Error())
				lastErr = lerr.Error()
			case lerr == nil:
				swap(srv, snap, log)
				last, lastErr = tok, ""
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

// swap puts snap in service, keeping what the one in service serves of configs the store
// no longer reads, and logs what it serves and what it cannot.
func swap(srv *Server, snap *Snapshot, log *slog.Logger) {
	snap, kept := snap.Keeping(srv.Current())
	srv.Swap(snap)
	log.Info("serving", "serial", snap.Serial, "pools", len(snap.pools), "rendered", len(snap.rendered))
	for pool, why := range kept {
		log.Error("a pool's rendered config does not read from the store; serving the copy in service", "pool", pool, "err", why)
	}
	for pool, why := range snap.Failed() {
		log.Error("not serving a pool: its config cannot be served; the other pools are served", "pool", pool, "err", why)
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
