package acceptance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
)

// apiserverMetrics is what the benchmarks read from kube-apiserver's /metrics.
type apiserverMetrics struct {
	// requests: apiserver_request_total summed over codes and scopes, by "VERB resource"
	// ("PATCH nodes", "GET pods/status"); requests to paths that are not resources (such as
	// /metrics itself) are left out.
	requests map[string]float64
	// watches: open watches by resource (apiserver_longrunning_requests, verb WATCH).
	watches map[string]float64
	// evictions: POST pods/eviction by HTTP code ("201": evicted, "429": refused).
	evictions map[string]float64
}

var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

func scrapeAPIServer(ctx context.Context, c kubernetes.Interface) (apiserverMetrics, error) {
	m := apiserverMetrics{requests: map[string]float64{}, watches: map[string]float64{}, evictions: map[string]float64{}}
	body, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return m, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "apiserver_request_total" && name != "apiserver_longrunning_requests") {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(valueText), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range metricLabel.FindAllStringSubmatch(labelText, -1) {
			l[kv[1]] = kv[2]
		}
		res := l["resource"]
		if res == "" {
			continue
		}
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		switch name {
		case "apiserver_request_total":
			m.requests[l["verb"]+" "+res] += v
			if res == "pods/eviction" && l["verb"] == "POST" {
				m.evictions[l["code"]] += v
			}
		case "apiserver_longrunning_requests":
			if l["verb"] == "WATCH" {
				m.watches[res] += v
			}
		}
	}
	return m, sc.Err()
}

// requestsSince is the requests made between earlier and m, by "VERB resource".
func (m apiserverMetrics) requestsSince(earlier apiserverMetrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m.requests {
		if d := v - earlier.requests[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// evictionsSince is the evictions asked for between earlier and m, by HTTP code.
func (m apiserverMetrics) evictionsSince(earlier apiserverMetrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m.evictions {
		if d := v - earlier.evictions[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// requestCounter counts one client's requests to the API server, reads (GET: gets, lists,
// watches) and writes (every other method), as it sends them.
type requestCounter struct{ reads, writes atomic.Int64 }

func (c *requestCounter) RoundTrip(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodGet {
			c.reads.Add(1)
		} else {
			c.writes.Add(1)
		}
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countedClient is a client of rc whose requests c counts.
func countedClient(rc *rest.Config, c *requestCounter) (kubernetes.Interface, error) {
	rc = rest.CopyConfig(rc)
	rc.Wrap(c.RoundTrip)
	return kubernetes.NewForConfig(rc)
}

// watchSampler scrapes the open watches every interval until stopped and keeps the most
// seen per resource.
type watchSampler struct {
	mu   sync.Mutex
	most map[string]float64
	stop func()
}

func sampleWatches(c kubernetes.Interface, interval time.Duration) *watchSampler {
	s := &watchSampler{most: map[string]float64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stop = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if m, err := scrapeAPIServer(ctx, c); err == nil {
				s.mu.Lock()
				for k, v := range m.watches {
					s.most[k] = max(s.most[k], v)
				}
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *watchSampler) result() map[string]float64 {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.most)
}

// planeCPU is the CPU time (user + system) each control-plane process and this process
// (the simulated agents, and the benchmark's own watching) have used so far.
func planeCPU(env *k8senv.Env) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, name := range []string{"kube-apiserver", "etcd", "kwok", "kube-controller-manager"} {
		if pid := env.Pid(name); pid > 0 {
			if d, err := procCPU(pid); err == nil {
				out[name] = d
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out["agents"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return out
}

// procCPU reads a process's utime + stime from /proc/PID/stat (clock ticks of 10ms: Linux's
// USER_HZ is 100).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

func cpuSince(now, before map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range now {
		out[k] = v - before[k]
	}
	return out
}

// sortedKeys is m's keys, largest value first.
func sortedKeys[V int | float64 | time.Duration](m map[string]V) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return keys
}

// peakRSS follows a started child's VmHWM (its peak resident set, KiB) until the returned
// function is called, which returns the highest seen. rusage's maxrss cannot be used here:
// Go starts a child sharing the parent's memory until exec (vfork), and Linux keeps the
// larger of that memory's high-water mark across exec, so every child of a benchmark
// holding thousands of agents' watches would report the benchmark's own peak.
func peakRSS(pid int) (stop func() int64) {
	done, finished := make(chan struct{}), make(chan int64)
	go func() {
		var most int64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if kb, err := vmHWM(pid); err == nil {
				most = max(most, kb)
			}
			select {
			case <-done:
				finished <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(done); return <-finished }
}

func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}
