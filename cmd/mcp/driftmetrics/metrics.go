// Package driftmetrics is what a periodic drift run (mcp drift -every D -listen ADDR)
// serves to Prometheus: drifted nodes and differences per pool, the last run's time and
// duration, and errors. It holds the gauges and their HTTP endpoint; the runs are cmd's.
package driftmetrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpfleet/mcp/planner"
)

// Metrics are a drift run's gauges and counters, in a registry of their own.
type Metrics struct {
	reg          *prometheus.Registry
	nodes, paths *prometheus.GaugeVec
	unmanaged    prometheus.Gauge
	lastRun      prometheus.Gauge
	lastDuration prometheus.Gauge
	lastSuccess  prometheus.Gauge
	runs, errs   prometheus.Counter
}

// New makes the metrics and registers them.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcp_drift_nodes",
			Help: "Nodes of the pool that differ from the rendered config they run (or run one the state lacks), at the last successful run."}, []string{"pool"}),
		paths: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcp_drift_paths",
			Help: "Differences those nodes reported (files, units, kernel arguments, OS image), at the last successful run."}, []string{"pool"}),
		unmanaged: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcp_drift_unmanaged_nodes",
			Help: "Nodes no pool selects, at the last successful run."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcp_drift_last_run_timestamp_seconds",
			Help: "When the last drift run started (unix seconds), whether it succeeded or not."}),
		lastDuration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcp_drift_last_run_duration_seconds",
			Help: "How long the last drift run took."}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcp_drift_last_success_timestamp_seconds",
			Help: "When the last successful drift run started (unix seconds): the age of the other gauges."}),
		runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "mcp_drift_runs_total", Help: "Drift runs made."}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{Name: "mcp_drift_errors_total", Help: "Drift runs that failed."}),
	}
	m.reg.MustRegister(m.nodes, m.paths, m.unmanaged, m.lastRun, m.lastDuration, m.lastSuccess, m.runs, m.errs)
	return m
}

// Observe records a run that started at and took d. r is its report, or nil when it
// failed: the drift gauges then keep the last successful run's values (a failed refresh
// says nothing about the nodes), and the error counter goes up.
func (m *Metrics) Observe(r *planner.DriftReport, at time.Time, d time.Duration) {
	m.runs.Inc()
	m.lastRun.Set(float64(at.Unix()))
	m.lastDuration.Set(d.Seconds())
	if r == nil {
		m.errs.Inc()
		return
	}
	m.lastSuccess.Set(float64(at.Unix()))
	m.nodes.Reset() // a pool gone from the configuration leaves no stale series
	m.paths.Reset()
	for _, p := range r.Pools {
		m.nodes.WithLabelValues(p.Name).Set(float64(p.Drifted))
		m.paths.WithLabelValues(p.Name).Set(float64(p.Paths))
	}
	unmanaged := 0
	for _, n := range r.Nodes {
		if n.Status == planner.DriftUnmanaged {
			unmanaged++
		}
	}
	m.unmanaged.Set(float64(unmanaged))
}

// Serve serves GET /metrics and GET /healthz on addr until stop is called; it returns the
// address it listens on (addr with port 0 picks a free one).
func (m *Metrics) Serve(addr string, logErr func(error)) (bound string, stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logErr(err)
		}
	}()
	return ln.Addr().String(), func() { srv.Close() }, nil
}
