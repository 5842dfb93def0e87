package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/model"
)

// FleetText writes a plan across clusters: FleetPlan's summary and rows, the changes
// grouped across clusters (FleetChanges), then each cluster's plan under its name.
func FleetText(out io.Writer, ps []clusters.Planned, parts []clusters.Part, waves []model.StageWaves, color bool) error {
	if err := FleetPlan(out, ps, color); err != nil {
		return err
	}
	if err := FleetWaves(out, waves); err != nil {
		return err
	}
	if err := FleetChanges(out, clusters.Changes(parts), color); err != nil {
		return err
	}
	for _, p := range ps {
		ClusterHeader(out, p, color)
		if p.Plan == nil {
			fmt.Fprintf(out, "Unknown: %s\n", Capitalize(p.Err.Error()))
			continue
		}
		if err := NewPlan(false, out, color).Plan(p.Plan.File); err != nil {
			return err
		}
	}
	return nil
}

// FleetChanges writes each pool's change once for every cluster it reaches: its rendered
// configs by content name with the clusters that get each, the items it sets alike
// everywhere, then each item it does not, with the clusters grouped by what they get and
// the cluster values (file:line) that reach it — the overrides that made them differ.
func FleetChanges(out io.Writer, pcs []clusters.PoolChanges, color bool) error {
	if len(pcs) == 0 {
		return nil
	}
	w := bufio.NewWriter(out)
	c := painter(color)
	fmt.Fprintf(w, "\n%s\n", c.bold("Changes across clusters, once per rendered config:"))
	for _, pc := range pcs {
		fmt.Fprintf(w, "\n  pool %s:\n", pc.Pool)
		for _, cf := range pc.Configs {
			fmt.Fprintf(w, "    %s → %s\n", cf.Rendered, strings.Join(cf.Clusters, ", "))
		}
		if len(pc.Alike) > 0 {
			fmt.Fprintf(w, "    alike in every cluster: %s\n", strings.Join(pc.Alike, ", "))
		}
		for _, d := range pc.Differs {
			fmt.Fprintf(w, "    %s %s differs:\n", c.yellow("~"), d.Item)
			for _, v := range d.Groups {
				fmt.Fprintf(w, "        %s\n", variantLine(v))
			}
		}
	}
	return w.Flush()
}

// variantLine is one variant of a differing item: its clusters, what they get, and why.
func variantLine(v clusters.Variant) string {
	var names, why []string
	for _, cv := range v.Clusters {
		names = append(names, cv.Cluster)
		for _, o := range cv.Overrides {
			why = append(why, fmt.Sprintf("%s: var.%s at %s", cv.Cluster, o.Variable, o.At))
		}
	}
	what := "left as it is"
	switch {
	case v.Digest == "removed":
		what = "removed"
	case v.Digest != "":
		what = "content " + v.Digest
	}
	because := "no override of theirs reaches it"
	if len(why) > 0 {
		because = strings.Join(why, "; ")
	}
	return fmt.Sprintf("%s: %s (%s)", strings.Join(names, ", "), what, because)
}

// FleetJSON writes a plan across clusters as one JSON document (docs/plan-json.md, "Across
// clusters"): the fleet's summary, one entry per cluster holding its plan as plan -json
// of that cluster alone gives it (or why it is unknown), and the changes grouped.
func FleetJSON(out io.Writer, ps []clusters.Planned, parts []clusters.Part, waves []model.StageWaves) error {
	doc := fleetJSON{FormatVersion: JSONFormatVersion, Summary: FleetSummary(ps), Clusters: []clusterJSON{},
		Waves: waves, Changes: clusters.Changes(parts)}
	for _, p := range ps {
		cj := clusterJSON{Name: p.Cluster.Name, Stage: p.Cluster.Stage, LockHolder: p.LockHolder, Status: "unknown"}
		if p.Plan == nil {
			cj.Error = Capitalize(p.Err.Error())
		} else {
			b, err := jsonPlanOf(p.Plan.File)
			if err != nil {
				return err
			}
			cj.Plan, cj.Status = b, "no changes"
			if p.Plan.File.Rollout.HasChanges() {
				cj.Status = "changes"
			}
		}
		doc.Clusters = append(doc.Clusters, cj)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}

type fleetJSON struct {
	FormatVersion string                 `json:"format_version"`
	Summary       string                 `json:"summary"`
	Clusters      []clusterJSON          `json:"clusters"`
	Waves         []model.StageWaves     `json:"waves,omitempty"`
	Changes       []clusters.PoolChanges `json:"changes"`
}

type clusterJSON struct {
	Name       string          `json:"name"`
	Stage      string          `json:"stage"`
	Status     string          `json:"status"` // "changes", "no changes" or "unknown"
	Error      string          `json:"error,omitempty"`
	LockHolder string          `json:"lock_holder,omitempty"`
	Plan       json.RawMessage `json:"plan,omitempty"`
}

// FleetMarkdown writes a saved plan across clusters for a pull-request comment: the
// fleet's summary, a row per cluster, the changes grouped across clusters, then each
// cluster's summary as Markdown writes one cluster's, the clusters sharing what is left of
// MarkdownLimit for their diffs.
func FleetMarkdown(out io.Writer, ps []clusters.Planned, parts []clusters.Part, waves []model.StageWaves) error {
	var head bytes.Buffer
	w := bufio.NewWriter(&head)
	fmt.Fprintf(w, "### mcp plan across clusters\n\n**%s**\n\n| Cluster | Stage | Plan |\n|---|---|---|\n", mdEscape(FleetSummary(ps)))
	for _, p := range ps {
		verdict := "unknown: " + mdEscape(Capitalize(errText(p.Err)))
		if p.Plan != nil {
			verdict = mdEscape(PlanSummary(p.Plan.File.Rollout))
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", mdCell(p.Cluster.Name), mdCell(p.Cluster.Stage), mdCell(verdict))
	}
	var grouped strings.Builder
	if err := FleetWaves(&grouped, waves); err != nil {
		return err
	}
	if err := FleetChanges(&grouped, clusters.Changes(parts), false); err != nil {
		return err
	}
	if grouped.Len() > 0 {
		fmt.Fprintf(w, "\n```\n%s\n```\n", strings.TrimSpace(grouped.String()))
	}
	w.Flush()
	if _, err := out.Write(head.Bytes()); err != nil {
		return err
	}
	each := (MarkdownLimit - head.Len()) / max(len(parts), 1)
	for _, p := range ps {
		if p.Plan == nil {
			continue
		}
		fmt.Fprintf(out, "\n## Cluster %s (stage %s)\n\n", mdEscape(p.Cluster.Name), mdEscape(p.Cluster.Stage))
		if err := markdownWithin(out, p.Plan.File, each); err != nil {
			return err
		}
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
