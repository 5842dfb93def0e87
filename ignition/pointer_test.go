package ignition

import "testing"

// TestPointerConfigParses: a pointer config merges its pool's config from the server, with
// the token as a header and the CA trusted, and Ignition's parser takes it.
func TestPointerConfigParses(t *testing.T) {
	b, err := Pointer(PointerOptions{URL: "https://boot.example:8443/", Pool: "worker", Token: "t", CAPEM: []byte("-----BEGIN CERTIFICATE-----\n")})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ParseAny(b)
	if err != nil || *cfg.Ignition.Config.Merge[0].Source != "https://boot.example:8443/config/worker" ||
		*cfg.Ignition.Config.Merge[0].HTTPHeaders[0].Value != "Bearer t" || len(cfg.Ignition.Security.TLS.CertificateAuthorities) != 1 {
		t.Errorf("pointer: %v %s", err, b)
	}
}
