package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/engine/planfile"
)

// dotBinary finds Graphviz's dot. make test installs it (Debian's graphviz) and sets
// MCP_REQUIRE_K8S, which says every real part the tests use is there: then a missing dot
// fails the test instead of skipping it.
func dotBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("MCP_REQUIRE_K8S") == "1" || os.Getenv("CI") != "" {
			t.Fatal("Graphviz's dot is missing: run `make graphviz` (make test does)")
		}
		t.Skip("Graphviz's dot is missing (make graphviz installs it)")
	}
	return p
}

// svgShapes reads an SVG that dot made: each graph element's title (its DOT identifier),
// with its text lines and whether it is drawn red.
type svgShape struct {
	class      string
	texts      []string
	red        bool    // drawn in red (its outline or line, not only its text)
	top, lower float64 // the vertical extent of its outline (SVG y grows downwards)
	outlined   bool
}

// centre is the vertical middle of the shape's outline.
func (s *svgShape) centre() float64 { return (s.top + s.lower) / 2 }

func readSVG(t *testing.T, svg []byte) map[string]*svgShape {
	t.Helper()
	shapes := map[string]*svgShape{}
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = false
	var cur *svgShape
	var inTitle, inText bool
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "g":
				for _, a := range e.Attr {
					if a.Name.Local == "class" && (a.Value == "node" || a.Value == "edge" || a.Value == "cluster") {
						cur = &svgShape{class: a.Value}
					}
				}
			case "title":
				inTitle = true
			case "text":
				inText = true
			}
			for _, a := range e.Attr {
				switch {
				case cur == nil:
				case a.Name.Local == "stroke" && a.Value == "red":
					cur.red = true
				case a.Name.Local == "points":
					for _, pt := range strings.Fields(a.Value) {
						_, ys, _ := strings.Cut(pt, ",")
						y, err := strconv.ParseFloat(ys, 64)
						if err != nil {
							t.Fatalf("points %q: %v", a.Value, err)
						}
						if !cur.outlined || y < cur.top {
							cur.top = y
						}
						if !cur.outlined || y > cur.lower {
							cur.lower = y
						}
						cur.outlined = true
					}
				}
			}
		case xml.EndElement:
			inTitle = inTitle && e.Name.Local != "title"
			inText = inText && e.Name.Local != "text"
		case xml.CharData:
			switch {
			case cur != nil && inTitle:
				shapes[string(e)] = cur
			case cur != nil && inText:
				cur.texts = append(cur.texts, string(e))
			}
		}
	}
	return shapes
}

// mcp graph's DOT renders with Graphviz, and the drawing has every changing node with each
// of its steps in order, a wave marker per wave, each pool as a cluster, and the blockers
// red: a PDB that allows no disruption, a used-up budget, a paused pool.
func TestGraphRendersWithDot(t *testing.T) {
	dot := dotBinary(t)
	dir := t.TempDir()
	if code, _, errOut := mcp(t, dir, "fleet", "init", "fleet", "-nodes", "worker=4,infra=2", "-zones", "a", "-workloads"); code != 0 {
		t.Fatal(errOut)
	}
	hcl := `provider "local" { fleet = "./fleet" }

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 2
}

pool "infra" {
  node_selector = { "node-role.kubernetes.io/infra" = "" }
  paused        = true
}

config "50-x" {
  pools = ["worker", "infra"]
  file "/etc/x.conf" { content = "x\n" }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	// worker-3 NotReady: its web pod is unhealthy, so the PDB (min_available 3 of 4) allows
	// no disruption and every other worker's drain is blocked; worker-3 updates in its own
	// slot, the others share the one slot left, wave after wave.
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-3", "ready=false"); code != 0 {
		t.Fatal(errOut)
	}
	if code, out, errOut := mcp(t, dir, "plan", "-out=p", "-no-color"); code != 0 {
		t.Fatalf("plan: %d\n%s%s", code, out, errOut)
	}
	code, saved, errOut := mcp(t, dir, "graph", "p")
	if code != 0 {
		t.Fatalf("graph p: %d %s", code, errOut)
	}
	// Without a plan file it plans as mcp plan does: the same plan, the same graph.
	if code, fresh, errOut := mcp(t, dir, "graph"); code != 0 || fresh != saved {
		t.Fatalf("graph without a plan file: %d %s\n%s\nwant the saved plan's graph:\n%s", code, errOut, fresh, saved)
	}
	if code, _, errOut := mcp(t, dir, "graph", "-var", "a=b", "p"); code != 1 || !strings.Contains(errOut, "-var") {
		t.Errorf("graph -var beside a plan file: exit %d %q, want it refused", code, errOut)
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(saved)
	var svg, dotErr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &svg, &dotErr
	if err := cmd.Run(); err != nil || dotErr.Len() > 0 {
		t.Fatalf("dot -Tsvg: %v %s\n%s", err, dotErr.String(), saved)
	}
	shapes := readSVG(t, svg.Bytes())

	pf, err := planfile.Read(filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	has := func(id, class, text string, red bool) {
		t.Helper()
		s := shapes[id]
		switch {
		case s == nil:
			t.Errorf("the SVG has no %s", id)
		case s.class != class:
			t.Errorf("%s is a %s, want a %s", id, s.class, class)
		case text != "" && !strings.Contains(strings.Join(s.texts, "\n"), text):
			t.Errorf("%s reads %q, want %q in it", id, s.texts, text)
		case s.red != red:
			t.Errorf("%s: red %v, want %v", id, s.red, red)
		}
	}
	has("cluster_worker", "cluster", "max_unavailable 2, 1 slot, 4 updates in 3 waves", false)
	has("cluster_infra", "cluster", "max_unavailable 1, 1 slot, 2 updates in 0 waves (paused)", false)
	var waves, deferred, pdbs int
	for _, n := range pf.Rollout.Nodes {
		head := "node." + n.Name
		if !n.Changed() {
			if shapes[head] != nil {
				t.Errorf("unchanged %s is drawn", head)
			}
			continue
		}
		has(head, "node", head, n.Deferred)
		prev := head
		for i, s := range n.Steps {
			id := fmt.Sprintf("%s/step.%d", head, i)
			has(id, "node", s.String(), false)
			has(prev+"->"+id, "edge", "", false) // the chain, in order
			prev = id
		}
		if n.Deferred {
			deferred++
		} else {
			waves = max(waves, n.Wave)
			has(fmt.Sprintf("pool.%s/wave.%d", n.Pool, n.Wave), "node", fmt.Sprintf("wave %d", n.Wave), false)
		}
		for i, b := range n.Blockers {
			id := fmt.Sprintf("%s/blocker.%d", head, i)
			has(id, "node", string(b.Kind), true)
			has(id+"->"+head+"/step.1", "edge", "blocks", true) // the drain (after the cordon)
			pdbs++
		}
	}
	for _, pp := range pf.Rollout.Pools {
		for i, b := range pp.Blockers {
			has(fmt.Sprintf("pool.%s/blocker.%d", pp.Name, i), "node", string(b.Kind), true)
		}
	}
	// Waves are ranks: the nodes of a wave side by side, each wave below the steps of the
	// one before.
	lowest := map[int]float64{} // wave → the lowest point of its nodes' steps
	heads := map[int][]string{}
	for _, n := range pf.Rollout.Nodes {
		if !n.Changed() || n.Deferred || shapes["node."+n.Name] == nil {
			continue
		}
		heads[n.Wave] = append(heads[n.Wave], "node."+n.Name)
		for i := range n.Steps {
			if s := shapes[fmt.Sprintf("node.%s/step.%d", n.Name, i)]; s != nil {
				if l, ok := lowest[n.Wave]; !ok || s.lower > l {
					lowest[n.Wave] = s.lower
				}
			}
		}
	}
	for k, hs := range heads {
		first := shapes[hs[0]]
		for _, h := range hs[1:] {
			if c := shapes[h].centre(); c != first.centre() {
				t.Errorf("wave %d: %s is drawn at y %v, %s at %v; want one rank", k, hs[0], first.centre(), h, c)
			}
		}
		if k > 1 && first.top <= lowest[k-1] {
			t.Errorf("wave %d starts at y %v, above the end of wave %d's steps (%v)", k, first.top, k-1, lowest[k-1])
		}
	}
	if waves < 3 || deferred != 2 || pdbs < 3 {
		t.Errorf("the scenario should have 3 waves, 2 deferred infra nodes and 3 PDB blockers; has %d, %d, %d:\n%s",
			waves, deferred, pdbs, saved)
	}
}
