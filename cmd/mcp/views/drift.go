package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/planner"
)

// Drift is what mcp drift shows: one drift run's report.
type Drift interface {
	Report(r *planner.DriftReport, run DriftRun) error
}

// DriftRun is when a drift run was made and how long it took.
type DriftRun struct {
	At       time.Time
	Duration time.Duration
	Version  string
}

// DriftFormatVersion is the version of mcp drift -json's document (docs/drift.md): a
// minor bump adds fields, a major one changes or removes some.
const DriftFormatVersion = "1.0"

// NewDrift returns mcp drift's view: JSON (-json: one document per run, one line each), or
// text coloured when color.
func NewDrift(asJSON bool, w io.Writer, color bool) Drift {
	if asJSON {
		return driftJSON{w}
	}
	return driftHuman{text{w, color}}
}

type driftJSON struct{ w io.Writer }

type jsonDrift struct {
	FormatVersion string              `json:"format_version"`
	MCPVersion    string              `json:"mcp_version"`
	CheckedAt     time.Time           `json:"checked_at"`
	DurationMS    int64               `json:"duration_ms"`
	Drifted       bool                `json:"drifted"` // the exit code 2 of -detailed-exitcode
	Summary       string              `json:"summary"`
	Pools         []planner.DriftPool `json:"pools"`
	Nodes         []planner.DriftNode `json:"nodes"`
}

func (v driftJSON) Report(r *planner.DriftReport, run DriftRun) error {
	b, err := json.Marshal(jsonDrift{FormatVersion: DriftFormatVersion, MCPVersion: run.Version, CheckedAt: run.At.UTC(),
		DurationMS: run.Duration.Milliseconds(), Drifted: r.HasDrift(), Summary: DriftSummary(r),
		Pools: r.Pools, Nodes: r.Nodes})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(v.w, string(b))
	return err
}

type driftHuman struct{ text }

func (v driftHuman) Report(r *planner.DriftReport, _ DriftRun) error {
	r = Shown(r)
	c := painter(v.color)
	var b strings.Builder
	for i := range r.Nodes {
		n := &r.Nodes[i]
		switch n.Status {
		case planner.DriftDrifted, planner.DriftChanged:
			fmt.Fprintf(&b, "%s (pool %s, %s)\n", c.bold("node."+n.Name), n.Pool, n.CurrentConfig)
			for _, d := range n.Drift {
				fmt.Fprintf(&b, "  %s%s\n", c.yellow("drift: "), d.String())
				writeDiff(&b, c, "      ", d.Diff)
			}
			if n.DriftUnlisted > 0 {
				fmt.Fprintf(&b, "  %sand %d more paths, not listed\n", c.yellow("drift: "), n.DriftUnlisted)
			}
			for _, d := range n.Outside {
				fmt.Fprintf(&b, "  %s%s\n", "info: ", d.String())
			}
		case planner.DriftUnmanaged:
			fmt.Fprintf(&b, "%s: no pool selects it\n", c.bold("node."+n.Name))
		case planner.DriftUnknownConfig:
			fmt.Fprintf(&b, "%s (pool %s): runs %s, which the state does not hold: what it should look like is not known\n",
				c.bold("node."+n.Name), n.Pool, n.CurrentConfig)
		}
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	for _, p := range r.Pools {
		if p.Changed > 0 {
			fmt.Fprintf(&b, "pool.%s: %d of %s changed since the rollout in what the configuration does not manage "+
				"(information: no plan changes it)\n", p.Name, p.Changed, plural(p.Size, "%d node", "%d nodes"))
		}
		if p.Drifted == 0 {
			continue
		}
		then := "mcp plan restores it"
		if p.OnDrift.Reports() {
			then = "mcp plan only reports it"
		}
		fmt.Fprintf(&b, "pool.%s: %d of %s drifted, %s; on_drift = %q: %s\n", p.Name, p.Drifted, plural(p.Size, "%d node", "%d nodes"),
			plural(p.Paths, "%d difference", "%d differences"), p.OnDrift, then)
	}
	if r.HasDrift() {
		fmt.Fprintf(&b, "\n%s\n", c.bold(DriftSummary(r)))
	} else {
		fmt.Fprintf(&b, "%s\n", c.green(DriftSummary(r)))
	}
	_, err := io.WriteString(v.w, b.String())
	return err
}

// DriftSummary is a drift run's last line.
func DriftSummary(r *planner.DriftReport) string {
	counts := map[planner.DriftStatus]int{}
	for _, n := range r.Nodes {
		counts[n.Status]++
	}
	var extra []string
	if n := counts[planner.DriftUnmanaged]; n > 0 {
		extra = append(extra, plural(n, "%d node no pool selects", "%d nodes no pool selects"))
	}
	if n := counts[planner.DriftUnknownConfig]; n > 0 {
		extra = append(extra, plural(n, "%d node on a config the state lacks", "%d nodes on a config the state lacks"))
	}
	if n := counts[planner.DriftChanged]; n > 0 {
		extra = append(extra, plural(n, "%d node changed only in what no config manages", "%d nodes changed only in what no config manages"))
	}
	if n := counts[planner.DriftUnconfigured]; n > 0 {
		extra = append(extra, plural(n, "%d node not configured by mcp yet", "%d nodes not configured by mcp yet"))
	}
	s := "No drift: every node matches the config it runs."
	if d := counts[planner.DriftDrifted]; d > 0 || counts[planner.DriftUnmanaged]+counts[planner.DriftUnknownConfig] > 0 {
		verb := "differ from the config they run"
		if d == 1 {
			verb = "differs from the config it runs"
		}
		s = fmt.Sprintf("Drift: %d of %s %s.", d, plural(len(r.Nodes), "%d node", "%d nodes"), verb)
	}
	if len(extra) > 0 {
		s = strings.TrimSuffix(s, ".") + "; " + strings.Join(extra, ", ") + "."
	}
	return s
}
