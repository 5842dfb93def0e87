package ignition

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v34 "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_4/types"
)

// PointerOptions describe a pointer config.
type PointerOptions struct {
	URL   string // the server's base URL
	Pool  string
	CAPEM []byte // trust this CA for the server (optional)
	Token string // send it as a bearer token (optional)
	// Query is added to the config URL ("mac=…&uuid=…"): the selectors that tell the
	// machine apart at the boot server, for a pointer made for one machine (optional).
	Query string
}

// Pointer returns the Ignition config (user-data) that makes a booting node fetch and
// merge its pool's config from the server, validated by Ignition's parser.
func Pointer(o PointerOptions) ([]byte, error) {
	var c types.Config
	c.Ignition.Version = "3.4.0"
	src := strings.TrimSuffix(o.URL, "/") + "/config/" + o.Pool
	if o.Query != "" {
		src += "?" + o.Query
	}
	res := types.Resource{Source: &src}
	if o.Token != "" {
		auth := "Bearer " + o.Token
		res.HTTPHeaders = types.HTTPHeaders{{Name: "Authorization", Value: &auth}}
	}
	c.Ignition.Config.Merge = []types.Resource{res}
	if len(o.CAPEM) > 0 {
		ca := "data:;base64," + base64.StdEncoding.EncodeToString(o.CAPEM)
		c.Ignition.Security.TLS.CertificateAuthorities = []types.Resource{{Source: &ca}}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, rpt, err := v34.Parse(b); err != nil {
		return nil, fmt.Errorf("pointer config: %v: %s", err, rpt.String())
	}
	return b, nil
}

// RedactedHeader stands for every HTTP header value in RedactPointer's output.
const RedactedHeader = "(redacted)"

// RedactPointer returns a pointer config (or any Ignition config) with the value of every
// HTTP header replaced by RedactedHeader, re-encoded canonically (sorted keys, no
// indentation), and the values it took out, in document order. A plan names a user-data
// Secret by a digest of the redacted form, so the digest says nothing about the bearer
// token (an unkeyed hash of the whole config would let anyone holding the plan check
// guessed tokens offline); the caller compares the values in memory. ok is false when b is
// not JSON: it is then no config mcp wrote and carries no mcp token.
func RedactPointer(b []byte) (redacted []byte, values []string, ok bool) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, nil, false
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if hs, isList := v["httpHeaders"].([]any); isList {
				for _, h := range hs {
					if h, isObj := h.(map[string]any); isObj {
						if s, isStr := h["value"].(string); isStr {
							values = append(values, s)
							h["value"] = RedactedHeader
						}
					}
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return nil, nil, false
	}
	return out, values, true
}
