// Command testtiming reads `go test -json` and says how long each package took.
//
// As a filter (make test: go test -json ./... | testtiming -save build/test.json) it
// prints what `go test` without -json prints — each package's ok/FAIL line, and the output
// of the tests that failed —, keeps the JSON, and ends with the per-package table. With
// -in FILE -doc FILE (make test-timing) it writes the table, with the slowest tests and the
// machine, into a markdown file instead (docs/test-timing.md). As a filter its exit status
// is 1 when a package or test failed, so a pipeline's status is the tests'.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

func main() {
	in := flag.String("in", "", "read this go test -json file (default: standard input, echoed as go test prints it)")
	save := flag.String("save", "", "also save the JSON read to this file")
	doc := flag.String("doc", "", "write the timing table into this markdown file instead of printing it")
	budget := flag.Duration("budget", 25*time.Minute, "the run's time budget, which the document compares the run with")
	flag.Parse()
	log.SetFlags(0)

	var r io.Reader = os.Stdin
	echo := *in == ""
	if !echo {
		f, err := os.Open(*in)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		r = io.TeeReader(r, f)
	}
	var out io.Writer = io.Discard
	if echo {
		out = os.Stdout
	}
	run, err := read(r, out)
	if err != nil {
		log.Fatal(err)
	}
	if *save != "" { // the load the run had, for the document written later
		os.WriteFile(*save+".load", []byte(loadAverages()+"\n"), 0o644)
	}
	if *doc != "" {
		load := "load average when written: " + loadAverages()
		if b, err := os.ReadFile(*in + ".load"); err == nil {
			load = "load average at its end: " + strings.TrimSpace(string(b))
		}
		if err := os.WriteFile(*doc, []byte(document(run, *budget, load)), 0o644); err != nil {
			log.Fatal(err)
		}
	} else {
		fmt.Print("\n" + table(run))
	}
	if run.failed() && *doc == "" {
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// pkg is what one package's events say.
type pkg struct {
	name                 string
	first, last          time.Time // its events'
	elapsed              time.Duration
	result               string // pass, fail, skip ("" while running)
	passed, failed, skip int
}

// testTime is one test's result.
type testTime struct {
	pkg, name string
	elapsed   time.Duration
	waited    time.Duration // for a slot of its class, before it ran
	result    string
}

// waitedLine is what acceptance/main_test.go's inClass logs when a test waited for a slot
// of its class: that time is the other tests', not this one's.
var waitedLine = regexp.MustCompile(`waited (\S+) for a slot of its class`)

// run is a whole go test -json stream.
type run struct {
	first, last time.Time
	pkgs        []*pkg
	tests       []testTime
}

// outcome says, after the run's time, what kept it from being a whole passing run.
func (r *run) outcome() string {
	var cut []string
	failed := 0
	for _, p := range r.pkgs {
		if p.result == "" {
			cut = append(cut, strings.TrimPrefix(p.name, "github.com/mcpfleet/mcp/"))
		}
	}
	for _, t := range r.tests {
		if t.result == "fail" && !strings.Contains(t.name, "/") {
			failed++
		}
	}
	s := ""
	if failed > 0 {
		s += fmt.Sprintf(", and failed (%d tests)", failed)
	}
	if len(cut) > 0 {
		s += ", cut short (" + strings.Join(cut, ", ") + " did not finish)"
	}
	return s
}

func (r *run) failed() bool {
	for _, p := range r.pkgs {
		if p.result == "fail" || p.failed > 0 {
			return true
		}
	}
	return false
}

// read takes the events from r, writing to out what go test without -json prints: the
// packages' own lines, and a failed test's output once it has failed.
func read(r io.Reader, out io.Writer) (*run, error) {
	ru := &run{}
	byName := map[string]*pkg{}
	pending := map[[2]string]*strings.Builder{} // a running test's output
	waited := map[[2]string]time.Duration{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, sc.Text()) // not an event: go's own messages (a build error)
			continue
		}
		if ru.first.IsZero() || e.Time.Before(ru.first) {
			ru.first = e.Time
		}
		if e.Time.After(ru.last) {
			ru.last = e.Time
		}
		p := byName[e.Package]
		if p == nil && e.Package != "" {
			p = &pkg{name: e.Package}
			byName[e.Package] = p
			ru.pkgs = append(ru.pkgs, p)
		}
		if p != nil {
			p.saw(e.Time)
		}
		key := [2]string{e.Package, e.Test}
		if m := waitedLine.FindStringSubmatch(e.Output); m != nil && e.Action == "output" {
			waited[key], _ = time.ParseDuration(m[1])
		}
		switch {
		case e.Action == "output" && e.Test == "":
			if e.Output != "PASS\n" { // go test prints it only with -v
				fmt.Fprint(out, e.Output)
			}
		case e.Action == "output":
			if pending[key] == nil {
				pending[key] = &strings.Builder{}
			}
			pending[key].WriteString(e.Output)
		case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			if e.Action == "fail" && pending[key] != nil {
				fmt.Fprint(out, pending[key].String())
			}
			delete(pending, key)
			p.count(e.Action, !strings.Contains(e.Test, "/"))
			ru.tests = append(ru.tests, testTime{pkg: e.Package, name: e.Test, elapsed: seconds(e.Elapsed), waited: waited[key], result: e.Action})
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			p.result, p.elapsed = e.Action, seconds(e.Elapsed)
		}
	}
	for _, p := range ru.pkgs {
		if p.result == "" { // the run was cut short: its events' span
			p.elapsed = p.last.Sub(p.first).Round(100 * time.Millisecond)
		}
	}
	return ru, sc.Err()
}

// saw widens the package's span to an event at t.
func (p *pkg) saw(t time.Time) {
	if p.first.IsZero() || t.Before(p.first) {
		p.first = t
	}
	if t.After(p.last) {
		p.last = t
	}
}

// count adds a finished test to the package's counts; subtests count as failures only.
func (p *pkg) count(action string, top bool) {
	switch {
	case action == "fail":
		p.failed++
	case !top:
	case action == "pass":
		p.passed++
	case action == "skip":
		p.skip++
	}
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond)
}

// table is the per-package table, slowest first, with the run's wall time.
func table(r *run) string {
	var b strings.Builder
	b.WriteString("| package | time | tests passed | failed | skipped |\n|---|---:|---:|---:|---:|\n")
	pkgs := append([]*pkg(nil), r.pkgs...)
	sortBy(pkgs, func(p *pkg) time.Duration { return p.elapsed })
	var sum time.Duration
	for _, p := range pkgs {
		if p.passed+p.failed+p.skip == 0 && p.result != "fail" && p.result != "" {
			continue // no tests
		}
		res := ""
		switch p.result {
		case "fail":
			res = " (FAIL)"
		case "":
			res = " (did not finish)"
		}
		sum += p.elapsed
		fmt.Fprintf(&b, "| %s%s | %s | %d | %d | %d |\n", strings.TrimPrefix(p.name, "github.com/mcpfleet/mcp/"), res,
			minutes(p.elapsed), p.passed, p.failed, p.skip)
	}
	fmt.Fprintf(&b, "\nWall time %s from the first event to the last; the packages' times add up to %s "+
		"(go test runs packages side by side).\n", minutes(r.last.Sub(r.first)), minutes(sum))
	return b.String()
}

// document is docs/test-timing.md: the table, the slowest tests, the machine.
func document(r *run, budget time.Duration, load string) string {
	var b strings.Builder
	wall := r.last.Sub(r.first)
	verdict := "within"
	if wall > budget {
		verdict = "over"
	}
	verdict += " the budget" + r.outcome()
	fmt.Fprintf(&b, "# Test timing\n\nWritten by `make test-timing` from the `go test -json` output of the last `make test` "+
		"(build/test.json), so that the suite's cost is seen as it grows (budget: %s on this machine, with the tools "+
		"in bin/ built; docs/decisions.md, \"One control plane per test package\"). The run of %s took %s, %s; "+
		"%s.\n\n%s\n\n", minutes(budget), r.first.Format("2006-01-02 15:04"), minutes(wall), verdict,
		load, strings.TrimSpace(benchdoc.Machine()))
	b.WriteString("## Packages\n\n" + table(r))
	b.WriteString("\n## The slowest tests\n\nTop-level tests, with their subtests, by the time they ran: a parallel test's " +
		"time runs from its turn on, shared with the tests beside it, and an acceptance test's wait for a slot of its " +
		"class (acceptance/main_test.go) is the other tests' time, taken off and shown apart.\n\n" +
		"| test | package | ran | waited for its class | result |\n|---|---|---:|---:|---|\n")
	var top []testTime
	for _, t := range r.tests {
		if !strings.Contains(t.name, "/") {
			top = append(top, t)
		}
	}
	sortBy(top, func(t testTime) time.Duration { return t.elapsed - t.waited })
	for _, t := range top[:min(20, len(top))] {
		waited := ""
		if t.waited > 0 {
			waited = minutes(t.waited)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.name, strings.TrimPrefix(t.pkg, "github.com/mcpfleet/mcp/"),
			minutes(t.elapsed-t.waited), waited, t.result)
	}
	return b.String()
}

// sortBy sorts s by key, largest first.
func sortBy[T any](s []T, key func(T) time.Duration) {
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(key(b), key(a)) })
}

// minutes prints d as 12m34s or 5.6s.
func minutes(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func loadAverages() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return f[0] + " / " + f[1] + " / " + f[2] + " (1, 5, 15 min)"
}
