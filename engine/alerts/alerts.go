// Package alerts asks a Prometheus server which alerts fire, through Prometheus' own API
// client (/api/v1/alerts), for the pools' alert gates (engine.AlertSource; cmd composes
// it). It reports firing alerts only: a pending alert may never fire (kured's
// --alert-firing-only). Which of them hold a pool is the gate's word (model.AlertGate.Select).
package alerts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// DefaultRequestTimeout bounds one question to Prometheus: an answer that does not come
// is an error, which holds the pool as a firing alert would.
const DefaultRequestTimeout = 10 * time.Second

// MaxAnswer bounds Prometheus' answer: tens of thousands of alerts fit; an answer that
// never ends is an error naming the server and the bound, as a refusal is (the pool is
// held), not a read until memory runs out.
const MaxAnswer = 64 << 20

// Prometheus asks Prometheus servers by their base URL. The zero value uses
// http.DefaultTransport and DefaultRequestTimeout.
type Prometheus struct {
	Transport      http.RoundTripper
	RequestTimeout time.Duration
}

// Firing returns the alerts firing at the Prometheus server at base. An error names the
// server and says what went wrong.
func (p Prometheus) Firing(ctx context.Context, base string) ([]model.Alert, error) {
	rt := p.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c, err := api.NewClient(api.Config{Address: base, RoundTripper: bounded{rt}})
	if err != nil {
		return nil, fmt.Errorf("asking Prometheus at %s: %w", base, err)
	}
	timeout := p.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := v1.NewAPI(c).Alerts(rctx)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("asking Prometheus at %s for its alerts: no answer within %s", base, timeout)
		}
		return nil, fmt.Errorf("asking Prometheus at %s for its alerts: %w", base, shorter(err))
	}
	var out []model.Alert
	for _, a := range res.Alerts {
		if a.State != v1.AlertStateFiring {
			continue
		}
		labels := make(map[string]string, len(a.Labels))
		for k, v := range a.Labels {
			labels[string(k)] = string(v)
		}
		out = append(out, model.Alert{Labels: labels, ActiveAt: a.ActiveAt})
	}
	return out, nil
}

// bounded bounds each answer's body at MaxAnswer: Prometheus' client reads it whole.
type bounded struct{ next http.RoundTripper }

func (b bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err == nil {
		resp.Body = boundedfile.LimitBody("the answer to "+req.Method+" "+req.URL.Path, resp.Body, MaxAnswer)
	}
	return resp, err
}

// shorter drops the url.Error's repetition of the URL the message names already.
func shorter(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
