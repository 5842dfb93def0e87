package bootsrv

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcp_bootsrv_requests_total",
			Help: "Requests by endpoint, pool (config requests for known pools) and status code."}, []string{"endpoint", "pool", "code"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcp_bootsrv_response_bytes_total",
			Help: "Body bytes sent by endpoint."}, []string{"endpoint"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_bootsrv_request_duration_seconds",
			Help: "Time to answer, by endpoint.", Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1}}, []string{"endpoint"}),
		handler: http.NotFoundHandler(),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.bytes, m.latency)
		if g, ok := reg.(prometheus.Gatherer); ok {
			m.handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
		}
	}
	return m
}

func (m *metrics) observe(endpoint, pool string, code, n int, d time.Duration) {
	m.requests.WithLabelValues(endpoint, pool, strconv.Itoa(code)).Inc()
	if n > 0 {
		m.bytes.WithLabelValues(endpoint).Add(float64(n))
	}
	m.latency.WithLabelValues(endpoint).Observe(d.Seconds())
}
