// Command benchserve measures `mcp serve`: requests per second and p99 latency for a 50 KB
// /config/<pool> against nginx serving the same bytes as a static file, with wrk, in the
// same run; then a boot storm of 1,000 simultaneous connections. It installs nginx and wrk
// from Debian's packages when they are missing, and writes a section of
// docs/benchmarks.md.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

const accept = "application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1"

func main() {
	size := flag.Int("size", 50*1024, "bytes of the served config")
	dur := flag.Duration("duration", 10*time.Second, "wrk duration per server")
	conns := flag.Int("connections", 64, "wrk connections")
	rounds := flag.Int("rounds", 5, "alternating wrk runs of each server; medians are reported")
	storm := flag.Int("storm", 1000, "simultaneous connections in the boot storm")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update")
	stateOnly := flag.String("write-state", "", "only write the benchmark's state file here (for profiling mcp serve by hand)")
	flag.Parse()
	if *stateOnly != "" {
		if err := writeState(*stateOnly, *size); err != nil {
			log.Fatal(err)
		}
		return
	}
	mcp := os.Getenv("MCP")
	if mcp == "" {
		log.Fatal("set MCP to the mcp binary")
	}
	ensure("nginx", "nginx-light")
	ensure("wrk", "wrk")
	dir, err := os.MkdirTemp("", "mcp-benchserve-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // nginx's workers run as nobody

	statePath := filepath.Join(dir, "mcp.state")
	if err := writeState(statePath, *size); err != nil {
		log.Fatal(err)
	}
	mcpAddr := freeAddr()
	serve := exec.Command(mcp, "serve", "-listen", mcpAddr, "-state", statePath)
	if err := serve.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { serve.Process.Signal(os.Interrupt); serve.Wait() }()
	mcpURL := "http://" + mcpAddr + "/config/worker"
	body := waitBody(mcpURL)

	nginxAddr := freeAddr()
	stop, err := startNginx(dir, nginxAddr, body)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	nginxURL := "http://" + nginxAddr + "/config/worker"
	if b := waitBody(nginxURL); len(b) != len(body) {
		log.Fatalf("nginx serves %d bytes, mcp %d", len(b), len(body))
	}

	// Alternate the two servers and take medians: one run of each swings by 15% with
	// whatever else the 2 cores are doing. A short unmeasured run of each comes first.
	runWrk(mcpURL, 2*time.Second, *conns)
	runWrk(nginxURL, 2*time.Second, *conns)
	var ms, ns []wrkResult
	for i := 0; i < *rounds; i++ {
		ms = append(ms, runWrk(mcpURL, *dur, *conns))
		ns = append(ns, runWrk(nginxURL, *dur, *conns))
	}
	wm, wn := median(ms), median(ns)
	errs, stormTime := bootStorm(mcpURL, *storm, len(body))
	fmt.Printf("mcp serve: %.0f req/s, p99 %v; nginx: %.0f req/s, p99 %v; storm of %d: %d errors in %v\n",
		wm.rps, wm.p99, wn.rps, wn.p99, *storm, errs, stormTime)

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Boot server\n\nMeasured %s by `make bench` (scripts/benchserve): the real `mcp serve` and nginx (Debian's, `sendfile on`, "+
		"2 workers, access log off) serving the same %d-byte config on loopback, each loaded by `wrk -t2 -c%d -d%s --latency` "+
		"with an Ignition client's Accept header, after a 2 s warm-up of each, %d rounds alternating the two servers in the same run; medians of the rounds "+
		"(requests/s per round: mcp %s; nginx %s). Both servers and wrk share the 2 cores.\n\n",
		time.Now().UTC().Format("2006-01-02"), len(body), *conns, *dur, *rounds, rpsList(ms), rpsList(ns))
	fmt.Fprintf(&b, "| measure | mcp serve | nginx | ratio | target |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| requests/s | %.0f | %.0f | %.2f× | ≥ 1.0× (%s) |\n", wm.rps, wn.rps, wm.rps/wn.rps, verdict(wm.rps >= wn.rps))
	fmt.Fprintf(&b, "| p99 latency | %v | %v | %.2f× | ≤ 1.5× (%s) |\n", wm.p99, wn.p99, float64(wm.p99)/float64(wn.p99),
		verdict(float64(wm.p99) <= 1.5*float64(wn.p99)))
	fmt.Fprintf(&b, "\nBoot storm: %d connections opened at once, each a GET of /config/worker checked for the full body: "+
		"**%d errors**, all answered in %v (target: 0 errors, %s).\n\n", *storm, errs, stormTime.Round(time.Millisecond), verdict(errs == 0))
	if err := benchdoc.WriteSection(*out, "serve", b.String()); err != nil {
		log.Fatal(err)
	}
}

func ensure(bin, pkg string) {
	if _, err := exec.LookPath(bin); err == nil {
		return
	}
	log.Printf("installing %s (Debian package %s)", bin, pkg)
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", pkg}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("apt-get %v: %v\n%s", args, err, out)
		}
	}
}

// writeState stores one rendered config of about size bytes as pool worker's pointer.
func writeState(path string, size int) error {
	rng := rand.New(rand.NewPCG(1, 1))
	words := []string{"server", "pool", "iburst", "makestep", "driftfile", "node", "config", "value"}
	var sb strings.Builder
	for sb.Len() < size*3/4 {
		sb.WriteString(words[rng.IntN(len(words))])
		sb.WriteString(" = ")
		sb.WriteString(strconv.Itoa(rng.IntN(100000)))
		sb.WriteByte('\n')
	}
	d := &model.Desired{Pools: []model.Pool{{Name: "worker"}}, Configs: []model.Config{{Name: "10-big", Pools: []string{"worker"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/big.conf"}, Mode: 0o644, Contents: []byte(sb.String())}}}}}
	out, diags := planner.Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		return diags
	}
	st := state.New()
	r := out["worker"]
	st.Rendered[r.Name], st.Pointers["worker"], st.Serial = r, r.Name, 1
	return (&localstate.Local{Path: path}).Write(context.Background(), st)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitBody(url string) []byte {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Accept", accept)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return b
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatalf("%s never answered", url)
	return nil
}

func startNginx(dir, addr string, body []byte) (func(), error) {
	root := filepath.Join(dir, "www")
	os.MkdirAll(filepath.Join(root, "config"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "config/worker"), body, 0o644); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`daemon off;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
  server {
    listen %[2]s;
    root %[3]s;
    default_type application/vnd.coreos.ignition+json;
  }
}
`, dir, addr, root)
	p := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	cmd := exec.Command("nginx", "-c", p, "-p", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }, nil
}

type wrkResult struct {
	rps float64
	p99 time.Duration
}

var (
	reRPS = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reP99 = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
)

func runWrk(url string, d time.Duration, conns int) wrkResult {
	out, err := exec.Command("wrk", "-t2", fmt.Sprintf("-c%d", conns), "-d"+d.String(), "--latency", "-H", "Accept: "+accept, url).CombinedOutput()
	if err != nil {
		log.Fatalf("wrk: %v\n%s", err, out)
	}
	var r wrkResult
	if m := reRPS.FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := reP99.FindSubmatch(out); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[2])]
		r.p99 = time.Duration(v * float64(unit))
	}
	if strings.Contains(string(out), "Non-2xx") || strings.Contains(string(out), "Socket errors") {
		log.Printf("wrk reported errors for %s:\n%s", url, out)
	}
	return r
}

// bootStorm opens n connections at once, each fetching the config once, and counts the
// answers that are not a complete 200.
func bootStorm(url string, n, size int) (int64, time.Duration) {
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Accept", accept)
			<-start
			resp, err := c.Do(req)
			if err != nil {
				errs.Add(1)
				return
			}
			defer resp.Body.Close()
			var doc json.RawMessage
			b, err := io.ReadAll(bufio.NewReader(resp.Body))
			if err != nil || resp.StatusCode != 200 || len(b) != size || json.Unmarshal(b, &doc) != nil {
				errs.Add(1)
			}
		}()
	}
	t0 = time.Now()
	close(start)
	wg.Wait()
	return errs.Load(), time.Since(t0)
}

// median is the run with the median requests/s, and the median p99 of the runs.
func median(rs []wrkResult) wrkResult {
	byRPS := slices.Clone(rs)
	slices.SortFunc(byRPS, func(a, b wrkResult) int { return cmp.Compare(a.rps, b.rps) })
	byP99 := slices.Clone(rs)
	slices.SortFunc(byP99, func(a, b wrkResult) int { return cmp.Compare(a.p99, b.p99) })
	return wrkResult{rps: byRPS[len(rs)/2].rps, p99: byP99[len(rs)/2].p99}
}

func rpsList(rs []wrkResult) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%.0f", r.rps))
	}
	return strings.Join(parts, ", ")
}
