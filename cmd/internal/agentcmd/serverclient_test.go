package agentcmd

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestServerClient: with the server's CA and token file the agent's client gets through
// TLS and the token check, and reads a renewed token; without the CA TLS fails.
func TestServerClient(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+currentToken(t, r) {
			http.Error(w, "no", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	wantToken = "s3cret"
	c, err := serverClient(ca, tok)
	if err != nil {
		t.Fatal(err)
	}
	get := func(c *http.Client) int {
		resp, err := c.Get(srv.URL + "/rendered/x")
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(c); got != 200 {
		t.Errorf("with CA and token: %d", got)
	}
	os.WriteFile(tok, []byte("renewed"), 0o600)
	wantToken = "renewed"
	if got := get(c); got != 200 {
		t.Errorf("after the token was renewed: %d", got)
	}
	noTok, _ := serverClient(ca, "")
	if got := get(noTok); got != 401 {
		t.Errorf("without the token: %d, want 401", got)
	}
	noCA, _ := serverClient("", tok)
	if got := get(noCA); got != -1 {
		t.Errorf("without the CA: %d, want a TLS error", got)
	}
	if _, err := serverClient(tok, ""); err == nil {
		t.Error("a CA file with no certificate: no error")
	}
}

var wantToken string

func currentToken(t *testing.T, _ *http.Request) string { return wantToken }
