package ignition

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

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

func TestRedactPointer(t *testing.T) {
	b, err := Pointer(PointerOptions{URL: "https://boot.example:22623", Pool: "worker", CAPEM: []byte("CA"), Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	r, values, ok := RedactPointer(b)
	if !ok || !slices.Equal(values, []string{"Bearer s3cret"}) {
		t.Fatalf("RedactPointer: ok %v, values %q", ok, values)
	}
	if bytes.Contains(r, []byte("s3cret")) || !bytes.Contains(r, []byte(`"value":"`+RedactedHeader+`"`)) {
		t.Errorf("redacted config:\n%s", r)
	}
	// Only the header values are left out: another URL, CA or pool shows in the redacted form.
	other, _ := Pointer(PointerOptions{URL: "https://boot.example:22623", Pool: "worker", CAPEM: []byte("CA2"), Token: "other"})
	if r2, _, _ := RedactPointer(other); bytes.Equal(r, r2) {
		t.Error("a pointer with another CA redacts to the same bytes")
	}
	// The layout of the JSON does not matter (a Secret written by hand, or by another version).
	var v any
	json.Unmarshal(b, &v)
	compact, _ := json.Marshal(v)
	if r3, _, _ := RedactPointer(compact); !bytes.Equal(r, r3) {
		t.Errorf("compact and indented forms redact differently:\n%s\n%s", r, r3)
	}
	if _, _, ok := RedactPointer([]byte("#cloud-config\n")); ok {
		t.Error("RedactPointer took a cloud-config for JSON")
	}
}
