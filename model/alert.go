package model

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AlertGate is a pool's alert_gate: the alerts firing at a Prometheus server hold the
// pool's rollout, as kured holds reboots (--prometheus-url, --alert-filter-regexp). Before
// each node starts, apply waits up to Timeout for none it counts (Counts) to fire; one
// firing when a node has finished stops the pool's rollout.
type AlertGate struct {
	// PrometheusURL is the server's base URL (http or https), as kured's --prometheus-url.
	PrometheusURL string `json:"prometheus_url"`
	// Ignore are regular expressions (RE2, unanchored, as kured's --alert-filter-regexp) on
	// an alert's name: an alert whose name one matches does not count.
	Ignore []string `json:"ignore,omitempty"`
	// MatchLabels: when set, only alerts with every one of these labels, with these exact
	// values, count (as a Kubernetes label selector's matchLabels).
	MatchLabels map[string]string `json:"match_labels,omitempty"`
	// Timeout bounds the wait before each node for the counted alerts to stop firing; 0
	// looks once. In nanoseconds in the plan's JSON, as the pool's other durations.
	Timeout   time.Duration `json:"timeout"`
	DeclRange Range         `json:"-"`
}

// DefaultAlertGateTimeout is an alert_gate's timeout when the block gives none: as long
// as apply waits for room in a budget (-budget-wait) by default.
const DefaultAlertGateTimeout = 10 * time.Minute

// Alert is one alert a Prometheus server reports firing (pending alerts are not reported:
// they may never fire).
type Alert struct {
	// Labels are the alert's labels, its name under "alertname".
	Labels   map[string]string `json:"labels"`
	ActiveAt time.Time         `json:"active_at,omitzero"`
}

// Name is the alert's name (its alertname label).
func (a Alert) Name() string { return a.Labels["alertname"] }

// String writes the alert as Prometheus writes a series: HighLoad{instance="a:9100",
// severity="critical"}, its labels sorted.
func (a Alert) String() string {
	var b strings.Builder
	b.WriteString(a.Name())
	b.WriteByte('{')
	first := true
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
		if k == "alertname" {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s=%s", k, strconv.Quote(a.Labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// Select returns the alerts the gate counts, in the order given: those whose name no
// Ignore expression matches, and which carry every MatchLabels label. An expression that
// does not compile (the configuration refuses them) ignores nothing: the gate fails
// closed.
func (g AlertGate) Select(alerts []Alert) []Alert {
	var ignore []*regexp.Regexp
	for _, s := range g.Ignore {
		if re, err := regexp.Compile(s); err == nil {
			ignore = append(ignore, re)
		}
	}
	var out []Alert
	for _, a := range alerts {
		if slices.ContainsFunc(ignore, func(re *regexp.Regexp) bool { return re.MatchString(a.Name()) }) {
			continue
		}
		if !hasLabels(a.Labels, g.MatchLabels) {
			continue
		}
		out = append(out, a)
	}
	return out
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// String says what the gate asks, as the plan shows it: "no firing alerts at
// http://prometheus:9090 (ignoring ^Watchdog$; only severity=critical)".
func (g AlertGate) String() string {
	var notes []string
	if len(g.Ignore) > 0 {
		notes = append(notes, "ignoring "+strings.Join(g.Ignore, ", "))
	}
	if len(g.MatchLabels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(g.MatchLabels)) {
			ls = append(ls, k+"="+g.MatchLabels[k])
		}
		notes = append(notes, "only "+strings.Join(ls, ", "))
	}
	s := "no firing alerts at " + g.PrometheusURL
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}

// DescribeAlerts lists alerts for a message: the first few, and how many more.
func DescribeAlerts(alerts []Alert) string {
	const shown = 5
	var s []string
	for i, a := range alerts {
		if i == shown {
			s = append(s, fmt.Sprintf("and %d more", len(alerts)-shown))
			break
		}
		s = append(s, a.String())
	}
	return strings.Join(s, ", ")
}
