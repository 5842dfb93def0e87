package k8senv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the throw-away public-key infrastructure of one control plane: a CA, the
// apiserver's serving certificate, an admin client certificate (O=system:masters) and the
// RSA key that signs and verifies service-account tokens. Everything is PEM on disk under
// dir, because the binaries read files.
type pki struct {
	dir                    string
	caPEM                  []byte
	adminCertPEM, adminKey []byte
}

// file names under pki.dir
const (
	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	adminCertFile   = "admin.crt"
	adminKeyFile    = "admin.key"
	saKeyFile       = "sa.key"
	saPubFile       = "sa.pub"
)

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI writes a fresh CA and the certificates and keys the control plane needs into dir.
// ECDSA P-256 keeps generation fast; the service-account key is RSA, as kube-apiserver's
// defaults (RS256) expect.
func newPKI(dir string) (*pki, error) {
	p := &pki{dir: dir}
	now := time.Now().Add(-time.Hour) // tolerate small clock skew between processes
	notAfter := now.Add(48 * time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "mcp-acceptance-ca"},
		NotBefore:             now,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.caPEM = pemBlock("CERTIFICATE", caDER)
	if err := p.write(caCertFile, p.caPEM); err != nil {
		return nil, err
	}
	if err := p.writeKey(caKeyFile, caKey); err != nil {
		return nil, err
	}

	// The apiserver's serving certificate: loopback only, plus the in-cluster names so a
	// client configured for kubernetes.default.svc also verifies.
	serving := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
	}
	if _, _, err := p.issue(servingCertFile, servingKeyFile, serving, ca, caKey); err != nil {
		return nil, err
	}

	admin := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "mcp-acceptance-admin", Organization: []string{"system:masters"}},
		NotBefore:    now,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if p.adminCertPEM, p.adminKey, err = p.issue(adminCertFile, adminKeyFile, admin, ca, caKey); err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := p.writeKey(saKeyFile, saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := p.write(saPubFile, pemBlock("PUBLIC KEY", pub)); err != nil {
		return nil, err
	}
	return p, nil
}

// issue signs tmpl with the CA and writes the certificate and a new key; it returns both PEMs.
func (p *pki) issue(certName, keyName string, tmpl, ca *x509.Certificate, caKey crypto.Signer) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	certPEM = pemBlock("CERTIFICATE", der)
	if keyPEM, err = keyBlock(key); err != nil {
		return nil, nil, err
	}
	if err := p.write(certName, certPEM); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, p.write(keyName, keyPEM)
}

func (p *pki) writeKey(name string, key crypto.Signer) error {
	b, err := keyBlock(key)
	if err != nil {
		return err
	}
	return p.write(name, b)
}

func (p *pki) write(name string, b []byte) error { return os.WriteFile(p.path(name), b, 0o600) }

func keyBlock(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
