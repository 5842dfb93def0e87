package ignition

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
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
}

// Pointer returns the Ignition config (user-data) that makes a booting node fetch and
// merge its pool's config from the server, validated by Ignition's parser.
func Pointer(o PointerOptions) ([]byte, error) {
	var c types.Config
	c.Ignition.Version = "3.4.0"
	src := strings.TrimSuffix(o.URL, "/") + "/config/" + o.Pool
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
