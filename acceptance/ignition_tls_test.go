package acceptance

import (
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
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/state/localstate"
)

// TestIgnitionOverTLSWithToken: `mcp serve` as deploy/ runs it — TLS, a bearer token —
// answers /readyz 503 until a configuration is loaded; /config/worker without the token is
// 401; and the real Ignition client, given nothing but what `mcp pointer -url -ca
// -token-file` printed (as a machine's user-data: Ignition's "file" platform), fetches the
// pool's config over TLS and writes its files.
func TestIgnitionOverTLSWithToken(t *testing.T) {
	exclusive(t)
	ign := ignitionClient(t)
	dir := localQuickstart(t, "0s", "0s")
	pki := t.TempDir()
	caFile, certFile, keyFile := writeServingPKI(t, pki)
	tokFile := filepath.Join(pki, "token")
	os.WriteFile(tokFile, []byte("boot-token-0123456789\n"), 0o600)

	url := startServe(t, dir, "-tls-cert", certFile, "-tls-key", keyFile, "-token-file", tokFile)
	caPEM, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	status := func(path string) int {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz before anything is applied: %d, want 503", got)
	}
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for status("/readyz") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz not 200 15s after apply")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := status("/config/worker"); got != http.StatusUnauthorized {
		t.Errorf("/config/worker without the token: %d, want 401", got)
	}

	// mcp pointer reads the configuration (it refuses a pool it lacks): run it in dir.
	ptr, err := exec.Command(mcpBinary(t), "-chdir="+dir, "pointer", "worker", "-url", url, "-ca", caFile, "-token-file", tokFile).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("mcp pointer: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("mcp pointer: %v", err)
	}
	userData := filepath.Join(t.TempDir(), "user-data.ign")
	os.WriteFile(userData, ptr, 0o600)
	S := firstBootWith(t, ign, "file", "", []string{"IGNITION_CONFIG_FILE=" + userData})

	st, err := (&localstate.Local{Path: filepath.Join(dir, "mcp.state")}).Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := st.Rendered[st.Pointers["worker"]]
	for _, f := range r.Files {
		if got, err := os.ReadFile(filepath.Join(S, f.Path)); err != nil || string(got) != string(f.Contents) {
			t.Errorf("%s: %v, content %q, want %q", f.Path, err, got, f.Contents)
		}
	}
	checkFirstBootRecord(t, S, r)
}

// writeServingPKI writes a CA and a serving certificate for 127.0.0.1 signed by it (what
// docs/kubernetes.md makes with openssl for the Secret mcp-server-tls).
func writeServingPKI(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcp boot CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "mcp-server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, _ := x509.ParseCertificate(caDER)
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	ca, cert, key = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644)
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return ca, cert, key
}
