package acceptance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// report writes the rollout's figures: the runs, the targets, the waves, the API server's
// side and the profiles.
func (kr *kubeRollout) report(s *strings.Builder, runs, doubled []kubeRolloutRun, maxRatioSpread float64) {
	perPool := kr.perPool()
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	mb := func(kib int64) string { return fmt.Sprintf("%.1f MB", float64(kib)/1024) }
	all := append(append([]kubeRolloutRun(nil), runs...), doubled...)
	fmt.Fprintf(s, "| run | T | 1-min load at start → end | makespan | limit ceil(N/k)·T | makespan / limit | mcp requests per node | mcp CPU (per node) | mcp peak RSS | apiserver CPU | agents' CPU |\n")
	fmt.Fprintf(s, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range all {
		fmt.Fprintf(s, "| %d | %s | %s → %s | %s | %s | %.3f× | %.2f | %s (%.2fms) | %s | %s | %s |\n", i+1, r.step, r.load1, r.loadEnd,
			ms(r.makespan), r.limit(perPool, kr.k), kr.ratio(r), float64(r.requests)/float64(r.updated),
			ms(r.cpu), float64(r.cpu)/float64(r.updated)/1e6, mb(r.rss), ms(r.plane["kube-apiserver"]), ms(r.plane["agents"]))
	}
	var ratios, perNode, cpuPer []float64
	var rss []int64
	var above, perWave []time.Duration
	for _, r := range runs {
		ratios = append(ratios, kr.ratio(r))
		perNode = append(perNode, float64(r.requests)/float64(r.updated))
		cpuPer = append(cpuPer, float64(r.cpu)/float64(r.updated)/1e6)
		rss = append(rss, r.rss)
		a := r.makespan - r.limit(perPool, kr.k)
		above, perWave = append(above, a), append(perWave, a/time.Duration(max(len(r.waves), 1)))
	}
	f3 := func(x float64) string { return fmt.Sprintf("%.3f×", x) }
	f2 := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	medRatio := medianOf(ratios)
	worstDev := 0.0
	for _, x := range ratios {
		worstDev = max(worstDev, abs(x-medRatio)/medRatio)
	}
	fmt.Fprintf(s, "\n| measure, median of the %d runs at T = %s (min–max) | result | target |\n|---|---|---|\n", len(runs), kr.step)
	fmt.Fprintf(s, "| API requests per node updated (mcp's own) | %s | |\n", medianSpread(perNode, f2))
	var wr []float64
	for _, r := range runs {
		wr = append(wr, writes(r.server)/float64(r.updated))
	}
	fmt.Fprintf(s, "| writes per node updated, every client (apiserver_request_total) | %s | ≤ 2.5 (%s) |\n", medianSpread(wr, f2), verdict(medianOf(wr) <= 2.5))
	// Issue 35's targets: 1.02× at 1,000 nodes, 1.03× at 5,000.
	target := 1.03
	if kr.fleet.nodes <= 1000 {
		target = 1.02
	}
	fmt.Fprintf(s, "| makespan / ceil(N/k)·T | %s | ≤ %.2f× (%s) |\n", medianSpread(ratios, f3), target, verdict(medRatio <= target))
	if maxRatioSpread > 0 {
		fmt.Fprintf(s, "| largest run's distance from the median makespan | %.1f%% | within ±%.0f%% (%s) |\n", worstDev*100,
			maxRatioSpread*100, verdict(worstDev <= maxRatioSpread))
	}
	fmt.Fprintf(s, "| mcp apply CPU per node updated (user + system, with refresh and plan) | %s | |\n",
		medianSpread(cpuPer, func(x float64) string { return fmt.Sprintf("%.2fms", x) }))
	fmt.Fprintf(s, "| mcp apply peak RSS | %s | ≤ 300 MB (%s) |\n", medianSpread(rss, mb), verdict(medianOf(rss) <= 300*1024))
	fmt.Fprintf(s, "| makespan above the limit | %s | |\n", medianSpread(above, secs))
	fmt.Fprintf(s, "| … per wave (ceil(N/k) waves, each node of a slot after the other) | %s | |\n", medianSpread(perWave, secs))

	fmt.Fprintf(s, "\nPer wave (a wave: the w-th %d nodes each pool started, over the %d pools), median of the runs at T = %s (min–max); ", kr.k, len(kr.fleet.pools), kr.step)
	fmt.Fprintf(s, "duration is the wave's first hand-over to its last Done (after the Ready gate), spread its first hand-over to its last, gap its last Done to the next wave's first hand-over (negative: each pool's slots run on without waiting for the other slots, so a wave starts before the one before it has ended)")
	if len(doubled) > 0 {
		fmt.Fprintf(s, "; the last two columns are the run%s at 2T = %s, less 2T", plural(len(doubled)), 2*kr.step)
	}
	fmt.Fprintf(s, ".\n\n| wave | nodes | duration − T | spread | gap to next |")
	if len(doubled) > 0 {
		fmt.Fprintf(s, " 2T: duration − 2T | 2T: gap to next |")
	}
	fmt.Fprintf(s, "\n|---|---|---|---|---|")
	if len(doubled) > 0 {
		fmt.Fprintf(s, "---|---|")
	}
	fmt.Fprintf(s, "\n")
	nw := 0
	for _, r := range all {
		nw = max(nw, len(r.waves))
	}
	col := func(rs []kubeRolloutRun, i int, f func(benchdoc.Wave, time.Duration) time.Duration) string {
		var xs []time.Duration
		for _, r := range rs {
			if i < len(r.waves) {
				xs = append(xs, f(r.waves[i], r.step))
			}
		}
		return medianSpread(xs, secs)
	}
	over := func(w benchdoc.Wave, t time.Duration) time.Duration { return w.Duration() - t }
	spread := func(w benchdoc.Wave, _ time.Duration) time.Duration { return w.Spread() }
	gap := func(w benchdoc.Wave, _ time.Duration) time.Duration { return w.Gap }
	for i := range nw {
		nodes := 0
		if i < len(runs[0].waves) {
			nodes = runs[0].waves[i].Nodes
		}
		g := col(runs, i, gap)
		if i == nw-1 {
			g = "–"
		}
		fmt.Fprintf(s, "| %d | %d | %s | %s | %s |", i+1, nodes, col(runs, i, over), col(runs, i, spread), g)
		if len(doubled) > 0 {
			g2 := col(doubled, i, gap)
			if i == nw-1 {
				g2 = "–"
			}
			fmt.Fprintf(s, " %s | %s |", col(doubled, i, over), g2)
		}
		fmt.Fprintf(s, "\n")
	}

	// Each node's way through its slot, part by part.
	fmt.Fprintf(s, "\nEach node's way through its pool's slot, part by part, over every node of a run (median of the\n")
	fmt.Fprintf(s, "runs' figures; the agents' times are read in this process, mcp's from its events: one clock):\n\n")
	fmt.Fprintf(s, "| part | T: median | T: p90 | T: max |")
	if len(doubled) > 0 {
		fmt.Fprintf(s, " 2T: median | 2T: p90 | 2T: max |")
	}
	fmt.Fprintf(s, "\n|---|---|---|---|")
	if len(doubled) > 0 {
		fmt.Fprintf(s, "---|---|---|")
	}
	fmt.Fprintf(s, "\n")
	stat := func(rs []kubeRolloutRun, part string, q float64) string {
		return runsQuantile(rs, func(r kubeRolloutRun) []time.Duration { return r.chain[part] }, q)
	}
	for _, part := range chainParts {
		fmt.Fprintf(s, "| %s | %s | %s | %s |", part, stat(runs, part, 0.5), stat(runs, part, 0.9), stat(runs, part, 1))
		if len(doubled) > 0 {
			fmt.Fprintf(s, " %s | %s | %s |", stat(doubled, part, 0.5), stat(doubled, part, 0.9), stat(doubled, part, 1))
		}
		fmt.Fprintf(s, "\n")
	}

	sum := func(rs []kubeRolloutRun, q float64) time.Duration {
		var t time.Duration
		for _, part := range chainParts {
			var xs []time.Duration
			for _, r := range rs {
				if v := r.chain[part]; len(v) > 0 {
					xs = append(xs, quantile(v, q))
				}
			}
			if len(xs) > 0 {
				t += medianOf(xs)
			}
		}
		return t
	}
	fmt.Fprintf(s, "\nPer wave the makespan ran %s above ceil(N/k)·T (median of the runs at T); the parts above add\n", secs(medianOf(perWave)))
	fmt.Fprintf(s, "up to %s for the median node and %s at the 90th percentile. A pool's slot runs its nodes one after\n", secs(sum(runs, 0.5)), secs(sum(runs, 0.9)))
	fmt.Fprintf(s, "the other, so the makespan is the slowest slot's: ceil(N/k) nodes, each with its parts above T.\n")
	if len(doubled) > 0 {
		var dw []time.Duration
		for _, r := range doubled {
			dw = append(dw, (r.makespan-r.limit(perPool, kr.k))/time.Duration(max(len(r.waves), 1)))
		}
		fmt.Fprintf(s, "At 2T: %s per wave above 2T, parts %s (median node), %s (p90).\n", secs(medianOf(dw)), secs(sum(doubled, 0.5)), secs(sum(doubled, 0.9)))
	}

	// The API server's side: requests by verb and resource, per node updated.
	fmt.Fprintf(s, "\nThe API server's side during each apply (its /metrics, apiserver_request_total before and after;\n")
	fmt.Fprintf(s, "every client: mcp, the simulated agents, kwok, the controller manager), median of the runs at T per node updated:\n\n")
	serverTable(s, runs)
	fmt.Fprintf(s, "\nBy client, per node updated, median of the runs at T (min–max):\n\n")
	clientTable(s, runs)
	watches := map[string]float64{}
	for _, r := range runs {
		for k, v := range r.watches {
			watches[k] = max(watches[k], v)
		}
	}
	fmt.Fprintf(s, "\nOpen watches (apiserver_longrunning_requests, verb WATCH), the most seen in any run (scraped every 5 s): ")
	others, kinds := 0.0, 0
	for k, v := range watches {
		if k != "nodes" && k != "pods" {
			others, kinds = others+v, kinds+1
		}
	}
	fmt.Fprintf(s, "nodes %.0f, of which %d are the agents' (one each, on its own Node) and the rest mcp's one shared watch and the other clients'; pods %.0f; %.0f on %d other resources (the other clients' informers).\n",
		watches["nodes"], kr.fleet.nodes, watches["pods"], others, kinds)
	plane := map[string]time.Duration{}
	for _, r := range runs {
		for k, v := range r.plane {
			plane[k] = max(plane[k], v)
		}
	}
	fmt.Fprintf(s, "\nCPU (user + system) during each apply, median of the runs at T (min–max): ")
	var cs []string
	for _, k := range sortedKeys(plane) {
		var xs []time.Duration
		for _, r := range runs {
			xs = append(xs, r.plane[k])
		}
		cs = append(cs, fmt.Sprintf("%s %s", k, medianSpread(xs, secs)))
	}
	var mcpCPU []time.Duration
	for _, r := range runs {
		mcpCPU = append(mcpCPU, r.cpu)
	}
	cs = append(cs, "mcp apply "+medianSpread(mcpCPU, secs))
	fmt.Fprintf(s, "%s; the machine has %s of CPU in the median makespan.\n", strings.Join(cs, ", "),
		secs(2*medianOf(func() []time.Duration {
			var xs []time.Duration
			for _, r := range runs {
				xs = append(xs, r.makespan)
			}
			return xs
		}())))
	if last := runs[len(runs)-1]; last.cpuProf != "" {
		fmt.Fprintf(s, "\nmcp apply's CPU profile (MCP_CPUPROFILE) of run %d, top entries:\n\n```\n%s\n```\n", len(runs),
			pprofTop(kr.mcp, last.cpuProf, 15))
		fmt.Fprintf(s, "\nIts heap at the live heap's highest (MCP_MEMPROFILE), in use, top entries:\n\n```\n%s\n```\n",
			pprofTop(kr.mcp, last.memProf, 12, "-sample_index=inuse_space"))
	}
}

// quantile is the q-quantile of xs (nearest rank).
// runsQuantile is the median over runs of each run's q-quantile of its figures (of), "–"
// when no run has any.
func runsQuantile(runs []kubeRolloutRun, of func(kubeRolloutRun) []time.Duration, q float64) string {
	var xs []time.Duration
	for _, r := range runs {
		if v := of(r); len(v) > 0 {
			xs = append(xs, quantile(v, q))
		}
	}
	if len(xs) == 0 {
		return "–"
	}
	return secs(medianOf(xs))
}

func quantile(xs []time.Duration, q float64) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// serverTable writes the API server's requests of runs by verb and resource, per node
// updated.
func serverTable(s *strings.Builder, runs []kubeRolloutRun) {
	f2 := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	keys := map[string]float64{}
	for _, r := range runs {
		for k, v := range r.server {
			keys[k] = max(keys[k], v)
		}
	}
	fmt.Fprintf(s, "| verb resource | requests per node updated (min–max) |\n|---|---|\n")
	var total []float64
	for _, r := range runs {
		t := 0.0
		for _, v := range r.server {
			t += v
		}
		total = append(total, t/float64(r.updated))
	}
	small, smallKinds := make([]float64, len(runs)), 0
	for _, k := range sortedKeys(keys) {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, r.server[k]/float64(r.updated))
		}
		if keys[k]/float64(runs[0].updated) < 0.005 {
			// The other clients' informers re-opening their watches, and the like.
			for i := range xs {
				small[i] += xs[i]
			}
			smallKinds++
			continue
		}
		fmt.Fprintf(s, "| %s | %s |\n", k, medianSpread(xs, f2))
	}
	if smallKinds > 0 {
		fmt.Fprintf(s, "| %d other kinds, each under 0.005 | %s |\n", smallKinds, medianSpread(small, f2))
	}
	fmt.Fprintf(s, "| all | %s |\n", medianSpread(total, f2))
	var ws []float64
	for _, r := range runs {
		ws = append(ws, writes(r.server)/float64(r.updated))
	}
	fmt.Fprintf(s, "| of which writes (POST, PUT, PATCH, DELETE) | %s |\n", medianSpread(ws, f2))
}

// clientTable writes the requests of runs per node updated by client: mcp's own count, the
// simulated agents' and the pod replacer's (counted as they send them), and the rest of
// the API server's count (kwok, the controller manager).
func clientTable(s *strings.Builder, runs []kubeRolloutRun) {
	f2 := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	col := func(f func(r kubeRolloutRun) float64) string {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, f(r)/float64(r.updated))
		}
		return medianSpread(xs, f2)
	}
	total := func(r kubeRolloutRun) float64 {
		t := 0.0
		for _, v := range r.server {
			t += v
		}
		return t
	}
	fmt.Fprintf(s, "| client | requests | of which writes |\n|---|---|---|\n")
	fmt.Fprintf(s, "| mcp apply (its own count, after its refresh and plan) | %s | |\n", col(func(r kubeRolloutRun) float64 { return float64(r.requests) }))
	fmt.Fprintf(s, "| the simulated agents | %s | %s |\n", col(func(r kubeRolloutRun) float64 { return float64(r.agentReqs[0] + r.agentReqs[1]) }),
		col(func(r kubeRolloutRun) float64 { return float64(r.agentReqs[1]) }))
	if runs[0].replacerReqs != [2]int64{} {
		fmt.Fprintf(s, "| the pod replacer (ReplicaSets and scheduler) | %s | %s |\n", col(func(r kubeRolloutRun) float64 { return float64(r.replacerReqs[0] + r.replacerReqs[1]) }),
			col(func(r kubeRolloutRun) float64 { return float64(r.replacerReqs[1]) }))
	}
	fmt.Fprintf(s, "| the rest: kwok, the controller manager (the API server's count less the above) | %s | |\n",
		col(func(r kubeRolloutRun) float64 {
			return total(r) - float64(r.requests+r.agentReqs[0]+r.agentReqs[1]+r.replacerReqs[0]+r.replacerReqs[1])
		}))
	fmt.Fprintf(s, "| every client (the API server's count) | %s | %s |\n", col(total), col(func(r kubeRolloutRun) float64 { return writes(r.server) }))
}
