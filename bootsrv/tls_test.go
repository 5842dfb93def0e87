package bootsrv

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned returns a PEM certificate for 127.0.0.1 named cn, and its PEM key.
func selfSigned(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestTLSCertificateReload: Serve over TLS with a CertReloader; replacing the certificate
// files changes the certificate new connections get, without a restart; a half-rotated pair
// (new certificate, old key) keeps the old certificate in service.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certA, keyA := selfSigned(t, "boot-a")
	certB, keyB := selfSigned(t, "boot-b")
	os.WriteFile(certFile, certA, 0o644)
	os.WriteFile(keyFile, keyA, 0o600)
	cr := &CertReloader{CertFile: certFile, KeyFile: keyFile}
	if _, err := cr.GetCertificate(nil); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.GetCertificate})
	s := serverWith(t, rendered(t, "worker", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Serve(ctx, ln, discardLog())

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certA)
	roots.AppendCertsFromPEM(certB)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	served := func() string {
		t.Helper()
		resp, err := client.Get("https://" + ln.Addr().String() + "/config/worker")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "boot-a" {
		t.Fatalf("first certificate: %s", cn)
	}
	os.WriteFile(certFile, certB, 0o644) // the key is still A's
	time.Sleep(1100 * time.Millisecond)  // past the reloader's once-a-second check
	if cn := served(); cn != "boot-a" {
		t.Errorf("a half-rotated pair replaced the certificate: %s", cn)
	}
	os.WriteFile(keyFile, keyB, 0o600)
	deadline := time.Now().Add(5 * time.Second)
	for served() != "boot-b" {
		if time.Now().After(deadline) {
			t.Fatal("the rotated certificate was never served")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLimits: a client that never finishes its request header is cut off after the read
// timeout; an oversized header is refused with 431; an idle kept-alive connection is closed.
func TestLimits(t *testing.T) {
	s := serverWith(t, rendered(t, "worker", "x"))
	s.ReadTimeout, s.IdleTimeout, s.MaxHeaderBytes = 300*time.Millisecond, 300*time.Millisecond, 4096
	addr := strings.TrimPrefix(wire(t, s), "http://")
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				var ne net.Error
				return !(errors.As(err, &ne) && ne.Timeout())
			}
		}
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.Write([]byte("GET /config/worker HTTP/1.1\r\nHost: x\r\n")) // and never the blank line
	if !closedWithin(slow, 3*time.Second) {
		t.Error("a client that never finished its header still holds its connection")
	}

	big, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	big.Write([]byte("GET /config/worker HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8192) + "\r\n\r\n"))
	big.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(big), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("an 8 KiB header with a 4 KiB limit: %v %v", resp, err)
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	idle.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	if !closedWithin(idle, 3*time.Second) {
		t.Error("an idle kept-alive connection was never closed")
	}
}
