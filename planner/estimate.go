package planner

import (
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Estimate is how long a pool's rollout is expected to take, from the times its earlier
// rollouts' steps took (model.StepTimes), or from DefaultStepTimes where none was
// recorded. For people reading the plan only: apply decides nothing on it.
type Estimate struct {
	// Duration is the whole rollout of the pool's nodes this plan starts: per wave its
	// slowest node, the waves one after the other, and the soaks between them.
	Duration time.Duration `json:"duration"`
	// Node is the slowest node's expected time: the median time of each of its steps'
	// kinds, summed, and its health gates'.
	Node  time.Duration `json:"node"`
	Waves int           `json:"waves"`
	// Soak is the part of Duration spent waiting for soaks: the canary soak, and the
	// soak after each node between waves.
	Soak time.Duration `json:"soak,omitempty"`
	// ObservedNodes counts the finished nodes whose recorded times it is made from (the
	// last model.MaxStepSamples at most); 0: from defaults alone.
	ObservedNodes int `json:"observed_nodes"`
	// Defaults names what no time was recorded for, so that its default was taken: step
	// kinds, and "health" for the health gates.
	Defaults []string `json:"defaults,omitempty"`
	// Window says whether the rollout fits the pool's maintenance windows, starting at the
	// plan's time (nil: the pool has none).
	Window *WindowFit `json:"window,omitempty"`
}

// WindowFit is how a rollout of some duration fits a pool's maintenance windows.
type WindowFit struct {
	// Opens is when the window the rollout starts in opens (the plan's time when one is
	// open then), and Open how long it stays open from then.
	Opens time.Time     `json:"opens"`
	Open  time.Duration `json:"open"`
	// Windows is how many openings the rollout needs (1: it fits the first); 0: more than
	// MaxWindows, or none opens again.
	Windows int `json:"windows"`
}

// MaxWindows is how many openings a window fit looks ahead.
const MaxWindows = 8

// DefaultStepTimes are what a step of each kind is taken to last when its pool has no
// recorded time of one (a first rollout): the MCO's own rule of thumb gives a node about 5
// minutes, most of it the drain and the reboot. docs/configuration.md ("Estimates") lists
// them.
var DefaultStepTimes = map[model.StepKind]time.Duration{
	model.StepStage:        time.Minute,
	model.StepCordon:       time.Second,
	model.StepDrain:        2 * time.Minute,
	model.StepWrite:        time.Second,
	model.StepDaemonReload: 2 * time.Second,
	model.StepKargs:        5 * time.Second,
	model.StepPivot:        3 * time.Minute,
	model.StepReload:       5 * time.Second,
	model.StepRestart:      10 * time.Second,
	model.StepReboot:       3 * time.Minute,
	model.StepVerify:       5 * time.Second,
	model.StepUncordon:     time.Second,
	model.StepAdopt:        5 * time.Second,
}

// DefaultHealthTime is what a node's health gates are taken to last with none recorded.
const DefaultHealthTime = 30 * time.Second

// estimates sets each pool's Estimate, once the waves are final (after pdbWaves). The
// plan's nodes are pool by pool, in the plan's order of pools.
func estimates(in Input, p *Rollout) {
	at := 0
	for i := range p.Pools {
		pp := &p.Pools[i]
		end := at
		for end < len(p.Nodes) && p.Nodes[end].Pool == pp.Name {
			end++
		}
		var windows []model.Window
		if k := slices.IndexFunc(in.Desired.Pools, func(q model.Pool) bool { return q.Name == pp.Name }); k >= 0 {
			windows = in.Desired.Pools[k].Windows
		}
		pp.Estimate = estimate(pp, p.Nodes[at:end], in.StepTimes[pp.Name], windows, in.Now)
		at = end
	}
}

// estimate estimates pool pp's rollout of nodes (the pool's, in plan order; their waves
// set), with times its record, and fits it to windows from now.
func estimate(pp *PoolPlan, nodes []NodePlan, times *model.StepTimes, windows []model.Window, now time.Time) *Estimate {
	e := &Estimate{}
	if times != nil {
		e.ObservedNodes = times.Nodes
	}
	defaulted := map[string]bool{}
	// Per wave: its slowest node's time in its slot, and its slowest stage ahead of the
	// slot and how many nodes stage (the pool's max_staging at once).
	waveTime, waveStage, waveStaging := map[int]time.Duration{}, map[int]time.Duration{}, map[int]int{}
	lastCanary := 0
	for i := range nodes {
		n := &nodes[i]
		if !n.Changed() || n.Deferred || n.Wave == 0 {
			continue
		}
		t := nodeTime(n.Steps, times, defaulted)
		e.Node = max(e.Node, t)
		if pp.MaxStaging > 0 && model.StagesFirst(n.Steps) {
			stage := stepTime(model.StepStage, times, defaulted)
			t -= stage
			waveStage[n.Wave] = max(waveStage[n.Wave], stage)
			waveStaging[n.Wave]++
		}
		waveTime[n.Wave] = max(waveTime[n.Wave], t)
		e.Waves = max(e.Waves, n.Wave)
		if n.Canary {
			lastCanary = max(lastCanary, n.Wave)
		}
	}
	if e.Waves == 0 {
		return nil
	}
	for w := 1; w <= e.Waves; w++ {
		// A wave's stages run ahead, max_staging at once: those of the first before it,
		// the others' while the wave before is in its slots.
		stage := waveStage[w] * time.Duration((waveStaging[w]+max(pp.MaxStaging, 1)-1)/max(pp.MaxStaging, 1))
		if w > 1 {
			stage = max(0, stage-waveTime[w-1])
		}
		e.Duration += stage + waveTime[w]
		if w == e.Waves {
			break
		}
		soak := pp.Soak
		if w == lastCanary {
			soak = max(soak, pp.CanarySoak)
		}
		e.Soak += soak
	}
	e.Duration += e.Soak
	for k := range defaulted {
		e.Defaults = append(e.Defaults, k)
	}
	slices.Sort(e.Defaults)
	e.Window = windowFit(windows, now, e.Duration)
	return e
}

// nodeTime is a node's expected time: each step's kind's median, or its default (noted in
// defaulted), and the health gates'.
func nodeTime(steps []model.Step, times *model.StepTimes, defaulted map[string]bool) time.Duration {
	var t time.Duration
	for _, s := range steps {
		t += stepTime(s.Kind, times, defaulted)
	}
	var health []time.Duration
	if times != nil {
		health = times.Health
	}
	h, ok := model.Median(health)
	if !ok {
		h, defaulted["health"] = DefaultHealthTime, true
	}
	return t + h
}

// stepTime is a step kind's expected time: its median, or its default (noted in
// defaulted).
func stepTime(k model.StepKind, times *model.StepTimes, defaulted map[string]bool) time.Duration {
	d, ok := times.Median(k)
	if !ok {
		d, defaulted[k.String()] = DefaultStepTimes[k], true
	}
	return d
}

// windowFit fits a rollout of d starting at now to windows: how many openings it needs,
// each used from its start (or from now) to its end. Nil without windows.
func windowFit(windows []model.Window, now time.Time, d time.Duration) *WindowFit {
	if len(windows) == 0 {
		return nil
	}
	fit := &WindowFit{}
	t := now
	for n := 1; n <= MaxWindows; n++ {
		open, closes, next := WindowState(windows, t)
		if !open {
			if next.IsZero() {
				return fit
			}
			t = next
			if open, closes, _ = WindowState(windows, t); !open {
				return fit
			}
		}
		if n == 1 {
			fit.Opens, fit.Open = t, closes.Sub(t)
		}
		if avail := closes.Sub(t); avail >= d {
			fit.Windows = n
			return fit
		} else {
			d -= avail
		}
		t = closes
	}
	return fit
}

// Left is how long a pool's rollout still has to go, for apply's live view: the nodes
// running end (each expected to take its time per node, less what it ran already), then
// the notStarted go in waves of slots, each wave with the pool's soak after it. The time
// per node is the median of the nodes this run finished (finished), once one did, else
// the plan's estimate for the slowest node.
func (e *Estimate) Left(slots, notStarted int, soak time.Duration, running, finished []time.Duration) time.Duration {
	per := e.Node
	if m, ok := model.Median(finished); ok {
		per = m
	}
	var left time.Duration
	for _, r := range running {
		left = max(left, per-r)
	}
	if notStarted > 0 {
		waves := (notStarted + max(slots, 1) - 1) / max(slots, 1)
		left += time.Duration(waves) * (per + soak)
	}
	return left
}
