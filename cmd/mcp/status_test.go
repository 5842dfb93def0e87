package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mcp status before and after the quickstart's first apply: the pools table counts
// nothing updated (no config yet), then every machine updated and ready at the pool's
// config; -nodes lists each node at its config; -watch off a terminal prints a table per
// refresh, separated by a blank line (with -json a document per line).
func TestStatusTablesAndWatch(t *testing.T) {
	dir := quickstart(t)
	code, out, errOut := mcp(t, dir, "status")
	if code != 0 || !strings.Contains(out, "MACHINES") || !regexpLine(out, `worker\s*[│|]\s*-\s*[│|]\s*4\s*[│|]\s*0\s*[│|]`) {
		t.Fatalf("status before apply: %d %s\n%s", code, errOut, out)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "status", "-json")
	var s struct {
		FormatVersion string `json:"format_version"`
		Pools         []struct {
			Name                               string
			Config                             string
			Machines, Updated, Ready, Updating int
		}
	}
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || s.FormatVersion != "1.2" || len(s.Pools) != 2 {
		t.Fatalf("status -json: %d %v %s\n%s", code, err, errOut, out)
	}
	for _, p := range s.Pools {
		if !strings.HasPrefix(p.Config, "rendered-"+p.Name+"-") || p.Updated != p.Machines || p.Ready != p.Machines || p.Updating != 0 {
			t.Errorf("after apply: %+v", p)
		}
	}
	code, out, errOut = mcp(t, dir, "status", "-nodes")
	if code != 0 || !regexpLine(out, `worker-0\s*[│|]\s*worker\s*[│|]\s*`+s.Pools[1].Config+`\s*[│|]\s*Done`) {
		t.Errorf("status -nodes: %d %s\n%s", code, errOut, out)
	}

	statusInterval = 100 * time.Millisecond
	defer func() { statusInterval = 2 * time.Second }()
	// Each watch ends when it has printed three views (or after a minute).
	watch := func(marker string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out := &cancelAfter{marker: marker, n: 3, cancel: cancel}
		var errb bytes.Buffer
		if code := run(ctx, append([]string{"-chdir=" + dir, "status", "-watch"}, args...), strings.NewReader(""), out, &errb); code != 0 {
			t.Fatalf("status -watch %v: exit %d %s", args, code, errb.String())
		}
		return out.String()
	}
	tables := strings.Split(strings.TrimSuffix(watch("MACHINES"), "\n"), "\n\n")
	if len(tables) != 3 {
		t.Errorf("status -watch off a terminal printed %d tables, want one per refresh:\n%s", len(tables), strings.Join(tables, "\n\n"))
	}
	for _, tb := range tables {
		if !strings.Contains(tb, "MACHINES") || strings.Contains(tb, "\x1b[") {
			t.Errorf("a table of status -watch off a terminal:\n%q", tb)
		}
	}
	lines := strings.Split(strings.TrimSpace(watch("format_version", "-json")), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("status -watch -json printed a line that is not a document: %q", l)
		}
	}
	if len(lines) != 3 {
		t.Errorf("status -watch -json printed %d documents, want one per refresh", len(lines))
	}
	if code, _, errOut := mcp(t, dir, "status", "extra"); code != 1 || !strings.Contains(errOut, "Too many command line arguments") {
		t.Errorf("status with an argument: %d %q", code, errOut)
	}
}

// regexpLine reports whether the table s has a line matching re.
func regexpLine(s, re string) bool { return regexp.MustCompile(`(?m)` + re).MatchString(s) }

// cancelAfter collects a watch's output and ends the watch (cancels its context) once n
// writes have carried marker: a view is written in one write.
type cancelAfter struct {
	bytes.Buffer
	marker string
	n      int
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.marker)) {
		if c.n--; c.n == 0 {
			c.cancel()
		}
	}
	return c.Buffer.Write(p)
}
