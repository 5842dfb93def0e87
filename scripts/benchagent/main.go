// Command benchagent measures the node agent: a drift check of 2,000 managed files against
// `sha256sum` over the same files in the same run, and the idle RSS of `mcp agent`; it
// writes a section of docs/benchmarks.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

func main() {
	files := flag.Int("files", 2000, "managed files")
	size := flag.Int("size", 4096, "bytes per file")
	runs := flag.Int("runs", 9, "runs of each measurement")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update")
	flag.Parse()
	mcp, agent := os.Getenv("MCP"), os.Getenv("MCP_AGENT")
	if mcp == "" || agent == "" {
		log.Fatal("set MCP to the mcp binary and MCP_AGENT to the mcp-agent binary")
	}
	root, err := os.MkdirTemp("", "mcp-benchagent-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	r := &model.Rendered{Name: "rendered-bench"}
	var paths []string
	for i := 0; i < *files; i++ {
		p := fmt.Sprintf("/etc/bench/%02d/f%04d.conf", i%20, i)
		body := bytes.Repeat([]byte(fmt.Sprintf("key-%d = value\n", i)), *size/16)
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, body, 0o644); err != nil {
			log.Fatal(err)
		}
		r.Files = append(r.Files, model.File{Entry: model.Entry{Path: p}, Mode: 0o644, Contents: body})
		paths = append(paths, full)
	}
	ex := &nodeexec.Executor{Root: root}
	load := benchdoc.LoadAverage()
	var verify, sums []time.Duration
	for i := 0; i < *runs; i++ {
		t0 := time.Now()
		drift, err := ex.Verify(r)
		verify = append(verify, time.Since(t0))
		if err != nil || len(drift) != 0 {
			log.Fatalf("verify: %v %v", drift, err)
		}
		cmd := exec.Command("sha256sum", paths...)
		cmd.Stdout = nil
		t0 = time.Now()
		if err := cmd.Run(); err != nil {
			log.Fatalf("sha256sum: %v", err)
		}
		sums = append(sums, time.Since(t0))
	}
	slices.Sort(verify)
	slices.Sort(sums)
	mv, ms := verify[len(verify)/2], sums[len(sums)/2]
	ratio := float64(mv) / float64(ms)

	rss, err := idleRSS(root, agent)
	if err != nil {
		log.Fatal(err)
	}
	rssAll, err := idleRSS(root, mcp, "agent")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("drift check of %d files: %v (sha256sum %v, %.2fx); idle RSS: mcp-agent %.1f MB, mcp agent %.1f MB\n", *files, mv, ms, ratio, rss, rssAll)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Node agent\n\nMeasured %s by `make bench` (scripts/benchagent), %d runs each, medians. "+
		"Load: %s, the 1-minute load average before the runs (the machine's cores are shared; the drift check and sha256sum alternate run by run, so their ratio suffers less from it than either time).\n\n",
		time.Now().UTC().Format("2006-01-02"), *runs, load)
	fmt.Fprintf(&b, "- Drift check: `nodeexec.Executor.Verify` of %d managed files of %d bytes (content compared byte for byte — digests are computed only to report a difference —, mode and type, through os.Root, each directory opened once), against `sha256sum` over the same files in the same run (its time includes starting the process, about a millisecond).\n", *files, *size)
	fmt.Fprintf(&b, "- Idle RSS: a real `mcp-agent -host=record -listen 127.0.0.1:0` process (the lean agent binary the DaemonSet runs) after its first reconcile, from /proc/PID/status (VmRSS); and the same agent run as `mcp agent` from the all-in-one binary, whose engine, boot server, HCL and Butane the node does not need.\n\n")
	fmt.Fprintf(&b, "| measure | result | target |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| drift check, %d files | %v | |\n", *files, mv.Round(100*time.Microsecond))
	fmt.Fprintf(&b, "| sha256sum, same files | %v | |\n", ms.Round(100*time.Microsecond))
	fmt.Fprintf(&b, "| ratio | %.2f× | ≤ 1.2× (%s) |\n", ratio, verdict(ratio <= 1.2))
	fmt.Fprintf(&b, "| agent idle RSS (`mcp-agent`) | %.1f MB | ≤ 20 MB (%s) |\n", rss, verdict(rss <= 20))
	fmt.Fprintf(&b, "| idle RSS of `mcp agent` (all-in-one binary) | %.1f MB | |\n\n", rssAll)
	if err := benchdoc.WriteSection(*out, "agent", b.String()); err != nil {
		log.Fatal(err)
	}
}

// idleRSS starts the agent, lets it reconcile once and settle, and reads its RSS in MB.
func idleRSS(root string, command ...string) (float64, error) {
	cmd := exec.Command(command[0], append(command[1:], "-host=record", "-root", root, "-listen", "127.0.0.1:0", "-interval", "1h",
		"-boot-id-file", "/proc/sys/kernel/random/boot_id")...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(3 * time.Second)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb float64
			fmt.Sscan(f[1], &kb)
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for the agent")
}
