package agentcmd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// serverClient is the HTTP client the agent fetches rendered configs with: trusting the
// CA in caFile (as well as the system's) when given, and sending the bearer token of
// tokenFile when given — what `mcp serve -tls-cert … -token-file …` asks for.
func serverClient(caFile, tokenFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := boundedfile.Read(caFile, boundedfile.MaxCredential, 0)
		if err != nil {
			return nil, fmt.Errorf("-server-ca: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-server-ca %s: no PEM certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	if tokenFile != "" {
		if _, err := readToken(tokenFile); err != nil {
			return nil, err
		}
		rt = bearer{next: tr, file: tokenFile}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: rt}, nil
}

func readToken(file string) (string, error) {
	b, err := boundedfile.ReadToken(file)
	if err != nil {
		return "", fmt.Errorf("-server-token-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// bearer adds the token, read again at each request (a Secret's mounted file follows the
// Secret).
type bearer struct {
	next http.RoundTripper
	file string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := readToken(b.file)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}
