package bootsrv

import (
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// served is 1 for each pool of the snapshot in service whose config is served, 0 for
	// one whose config cannot be (it answers 503).
	served  *prometheus.GaugeVec
	handler http.Handler
	// series holds each label set's metrics once looked up: a lookup in the vectors hashes
	// the labels and takes a lock, on every request. Copied on write; the label sets are
	// few (endpoints × known pools × codes).
	series atomic.Pointer[map[seriesKey]*series]
	mu     sync.Mutex // writers of series
}

type seriesKey struct {
	endpoint, pool string
	code           int
}

type series struct {
	requests, bytes prometheus.Counter
	latency         prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcp_bootsrv_requests_total",
			Help: "Requests by endpoint, pool (config requests for known pools) and status code."}, []string{"endpoint", "pool", "code"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcp_bootsrv_response_bytes_total",
			Help: "Body bytes sent by endpoint."}, []string{"endpoint"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_bootsrv_request_duration_seconds",
			Help: "Time to answer, by endpoint.", Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1}}, []string{"endpoint"}),
		served: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcp_bootsrv_pool_served",
			Help: "1 for each pool whose config is served, 0 for one whose config cannot be (its /config answers 503)."}, []string{"pool"}),
		handler: http.NotFoundHandler(),
	}
	m.series.Store(&map[seriesKey]*series{})
	if reg != nil {
		reg.MustRegister(m.requests, m.bytes, m.latency, m.served)
		if g, ok := reg.(prometheus.Gatherer); ok {
			m.handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
		}
	}
	return m
}

// observe counts one answer. endpoint and pool must not alias a request's bytes: they are
// kept as labels.
func (m *metrics) observe(endpoint, pool string, code, n int, d time.Duration) {
	k := seriesKey{endpoint, pool, code}
	s := (*m.series.Load())[k]
	if s == nil {
		s = m.add(k)
	}
	s.requests.Inc()
	if n > 0 {
		s.bytes.Add(float64(n))
	}
	s.latency.Observe(d.Seconds())
}

func (m *metrics) add(k seriesKey) *series {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if s := old[k]; s != nil {
		return s
	}
	s := &series{requests: m.requests.WithLabelValues(k.endpoint, k.pool, strconv.Itoa(k.code)),
		bytes: m.bytes.WithLabelValues(k.endpoint), latency: m.latency.WithLabelValues(k.endpoint)}
	next := make(map[seriesKey]*series, len(old)+1)
	maps.Copy(next, old)
	next[k] = s
	m.series.Store(&next)
	return s
}

// pools sets mcp_bootsrv_pool_served from the snapshot put in service.
func (m *metrics) pools(snap *Snapshot) {
	m.served.Reset()
	if snap == nil {
		return
	}
	for name, pc := range snap.pools {
		v := 1.0
		if pc.failed != "" {
			v = 0
		}
		m.served.WithLabelValues(name).Set(v)
	}
}
