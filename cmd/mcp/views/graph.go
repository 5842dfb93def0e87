package views

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Graph writes the plan's action graph in Graphviz DOT, as `terraform graph` does: each pool
// a cluster (subgraph cluster_POOL); in it each changing node a chain of its steps in
// order, from the node down; the nodes of a wave on one rank beside the wave's marker, each
// wave below the last one's steps; blockers red, with their reason as label and a red
// edge to what they block (a PDB to the drain, a paused pool or a used-up budget to each
// deferred node). Node identifiers are addresses: node.NAME, node.NAME/step.I,
// pool.NAME/wave.K, pool.NAME/blocker.I, node.NAME/blocker.I.
func Graph(out io.Writer, p *planner.Rollout) error {
	p = Shown(p)
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, `digraph "mcp plan" {`)
	fmt.Fprintln(w, `  rankdir = "TB";`)
	fmt.Fprintln(w, `  newrank = true;`)
	fmt.Fprintln(w, `  node [shape = "box", fontname = "Helvetica", fontsize = 10];`)
	fmt.Fprintln(w, `  edge [fontname = "Helvetica", fontsize = 9];`)
	byPool := nodesByPool(p)
	for _, pp := range p.Pools {
		graphPool(w, pp, byPool[pp.Name])
	}
	fmt.Fprintln(w, "}")
	return w.Flush()
}

func graphPool(w *bufio.Writer, pp planner.PoolPlan, nodes []*planner.NodePlan) {
	fmt.Fprintf(w, "  subgraph %s {\n", dotID("cluster_"+pp.Name))
	label := fmt.Sprintf("pool %s → %s\nmax_unavailable %d, %s, %s in %s",
		pp.Name, pp.Rendered, pp.MaxUnavailable, plural(pp.Slots, "%d slot", "%d slots"), plural(pp.Updates, "%d update", "%d updates"),
		plural(pp.Waves, "%d wave", "%d waves"))
	if pp.Paused {
		label += " (paused)"
	}
	fmt.Fprintf(w, "    label = %s;\n", dotID(label))
	poolID := "pool." + pp.Name
	waves := map[int][]string{} // wave → node heads
	longest := map[int]int{}    // wave → most steps of a node in it
	var deferred []string
	changing := 0
	for _, n := range nodes {
		if !n.Changed() {
			continue
		}
		changing++
		head := "node." + n.Name
		attrs := fmt.Sprintf(`shape = "box3d", label = %s`, dotID(fmt.Sprintf("%s\n%s → %s", head, dash(n.From), n.To)))
		if n.Deferred {
			attrs += `, style = "dashed", color = "red", fontcolor = "red"`
			deferred = append(deferred, head)
		} else {
			waves[n.Wave] = append(waves[n.Wave], head)
			longest[n.Wave] = max(longest[n.Wave], len(n.Steps))
		}
		fmt.Fprintf(w, "    %s [%s];\n", dotID(head), attrs)
		prev := head
		var drain string
		for i, s := range n.Steps {
			id := fmt.Sprintf("%s/step.%d", head, i)
			style := ""
			if s.Kind.Disruptive() {
				style = `, style = "bold"`
			}
			fmt.Fprintf(w, "    %s [label = %s%s];\n", dotID(id), dotID(s.String()), style)
			fmt.Fprintf(w, "    %s -> %s;\n", dotID(prev), dotID(id))
			if s.Kind == model.StepDrain && drain == "" {
				drain = id
			}
			prev = id
		}
		for i, b := range n.Blockers {
			to := drain
			if to == "" {
				to = head
			}
			blocker(w, fmt.Sprintf("%s/blocker.%d", head, i), b, to)
		}
	}
	if changing == 0 {
		note := "no changes"
		if pp.ReRendered {
			note = "no node changes; the boot pointer moves to " + pp.Rendered
		}
		fmt.Fprintf(w, "    %s [shape = \"plaintext\", label = %s];\n", dotID(poolID+"/nochange"), dotID(note))
	}
	prevWave, gap := "", 0
	for k := 1; k <= pp.Waves; k++ {
		if len(waves[k]) == 0 {
			continue
		}
		id := fmt.Sprintf("%s/wave.%d", poolID, k)
		fmt.Fprintf(w, "    %s [shape = \"plaintext\", label = %s];\n", dotID(id), dotID(fmt.Sprintf("wave %d", k)))
		if prevWave != "" {
			// The next wave starts below the last one's longest chain of steps.
			fmt.Fprintf(w, "    %s -> %s [style = \"dotted\", arrowhead = \"none\", minlen = %d];\n", dotID(prevWave), dotID(id), gap+1)
		}
		fmt.Fprintf(w, "    { rank = same; %s;", dotID(id))
		for _, h := range waves[k] {
			fmt.Fprintf(w, " %s;", dotID(h))
		}
		fmt.Fprintln(w, " }")
		prevWave, gap = id, longest[k]
	}
	for i, b := range pp.Blockers {
		id := fmt.Sprintf("%s/blocker.%d", poolID, i)
		blocker(w, id, b, "")
		for _, d := range deferred {
			blockEdge(w, id, d)
		}
	}
	fmt.Fprintln(w, "  }")
}

// blocker writes a red blocker node with its reason, and a red edge to what it blocks
// ("" for none).
func blocker(w *bufio.Writer, id string, b planner.Blocker, to string) {
	fmt.Fprintf(w, "    %s [shape = \"octagon\", color = \"red\", fontcolor = \"red\", label = %s];\n",
		dotID(id), dotID(string(b.Kind)+": "+wrap(b.Message, 48)))
	if to != "" {
		blockEdge(w, id, to)
	}
}

func blockEdge(w *bufio.Writer, from, to string) {
	fmt.Fprintf(w, "    %s -> %s [color = \"red\", fontcolor = \"red\", label = \"blocks\"];\n", dotID(from), dotID(to))
}

// dotID quotes s as a DOT identifier: backslashes and quotes escaped, line breaks as
// DOT's centred \n.
func dotID(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

// wrap breaks s at spaces into lines of about n characters, for labels.
func wrap(s string, n int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if line+1+len(word) > n {
				b.WriteByte('\n')
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
