package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// drainer is one scheduled node in the prediction of pdbWaves.
type drainer struct {
	np            *NodePlan
	pool          int
	ownSlot       bool
	need          map[int]int      // PDB index → healthy pods of it the drain evicts
	pods          map[int][]string // PDB index → those pods, namespace/name
	start, finish int              // in waves, from 0
	waited        bool
}

// pdbWaves predicts how PodDisruptionBudgets serialise drains: a drain evicts a PDB's pods
// only while the PDB allows it, and evicted pods come back when their node is uncordoned.
// So when nodes that start together drain more of a PDB's healthy pods than it allows
// disruptions, the later ones (in plan order) wait — holding their slot, cordoned, as apply
// does — until the earlier ones are back; they get a pdb-wait blocker naming the PDB and
// those nodes, and the nodes after them start later. It simulates the rollout in waves of
// equal step durations over every pool at once (a PDB spans pools). PDBs that allow no
// disruption are pdbBlockers' (nothing comes back to free them).
func pdbWaves(p *Rollout, slots []poolSlots, podsByNode map[string][]*model.Pod, pdbs []model.PDB, ready map[string]bool) {
	var ds []*drainer
	found := false
	for i := range p.Nodes {
		np := &p.Nodes[i]
		if !np.Changed() || np.Deferred || np.Wave == 0 {
			continue
		}
		d := &drainer{np: np, pool: poolIndex(p, np.Pool), ownSlot: np.Condition != ""}
		if hasStep(np.Steps, model.StepDrain) && ready[np.Name] {
			d.need, d.pods = needs(podsByNode[np.Name], pdbs)
			found = found || len(d.need) > 0
		}
		ds = append(ds, d)
	}
	if !found {
		return // the schedule's waves stand
	}
	simulateDrains(p, slots, ds, pdbs)
	for pi := range p.Pools {
		waves := 0
		for _, d := range ds {
			if d.pool == pi {
				waves = max(waves, d.start+1)
			}
		}
		if waves > 0 {
			p.Pools[pi].Waves = waves
		}
	}
}

// needs counts, per PDB that allows disruptions, the healthy pods of it a drain of the node
// evicts. A drain needing more than the PDB ever allows is counted as needing all of it: it
// waits until nothing else disrupts the PDB.
func needs(pods []*model.Pod, pdbs []model.PDB) (map[int]int, map[int][]string) {
	var out map[int]int
	var names map[int][]string
	for _, pod := range pods {
		if pod.DaemonSet || !pod.Ready {
			continue
		}
		for j := range pdbs {
			if pdbs[j].DisruptionsAllowed <= 0 || !pdbs[j].Matches(pod) {
				continue
			}
			if out == nil {
				out, names = map[int]int{}, map[int][]string{}
			}
			out[j] = min(out[j]+1, pdbs[j].DisruptionsAllowed)
			names[j] = append(names[j], pod.Namespace+"/"+pod.Name)
		}
	}
	return out, names
}

func poolIndex(p *Rollout, name string) int {
	for i := range p.Pools {
		if p.Pools[i].Name == name {
			return i
		}
	}
	return -1
}

// simulateDrains runs the rollout wave by wave: finished nodes free their slot and give their
// pods back; nodes start in plan order while their pool has a slot (nodes out of service
// already in their own, at once); started nodes drain, in the order they started, when
// every PDB they touch allows it. Waves and pdb-wait blockers are written to the plans.
func simulateDrains(p *Rollout, slots []poolSlots, ds []*drainer, pdbs []model.PDB) {
	busy := make([]int, len(p.Pools))
	next := make([]int, len(p.Pools)) // index into byPool of the next node to start
	byPool := make([][]*drainer, len(p.Pools))
	for _, d := range ds {
		if d.ownSlot {
			continue
		}
		byPool[d.pool] = append(byPool[d.pool], d)
	}
	disrupted := make([]int, len(pdbs))
	holders := make([][]*drainer, len(pdbs)) // nodes whose pods of the PDB are out
	var waiting, running []*drainer
	left := len(ds)
	for _, d := range ds {
		if d.ownSlot {
			waiting = append(waiting, d)
		}
	}
	for t := 0; left > 0; t++ {
		keep := running[:0]
		for _, d := range running {
			if d.finish > t {
				keep = append(keep, d)
				continue
			}
			left--
			if !d.ownSlot {
				busy[d.pool]--
			}
			for j, n := range d.need {
				disrupted[j] -= n
				holders[j] = remove(holders[j], d)
			}
		}
		running = keep
		for pi := range p.Pools {
			sl := slots[pi]
			for next[pi] < len(byPool[pi]) && busy[pi] < sl.slots && t >= sl.first-1 {
				d := byPool[pi][next[pi]]
				d.start = t
				next[pi]++
				busy[pi]++
				waiting = append(waiting, d)
			}
		}
		still := waiting[:0]
		for _, d := range waiting {
			if short := lacking(d, disrupted, pdbs); len(short) > 0 {
				if !d.waited {
					d.waited = true
					d.np.Blockers = append(d.np.Blockers, waitBlockers(d, short, holders, pdbs)...)
				}
				still = append(still, d)
				continue
			}
			for j, n := range d.need {
				disrupted[j] += n
				holders[j] = append(holders[j], d)
			}
			d.finish = t + 1
			running = append(running, d)
		}
		waiting = still
		if t > 2*len(ds)+2 { // cannot happen: some drain always fits once nothing disrupts
			break
		}
	}
	for _, d := range ds {
		d.np.Wave = d.start + 1
	}
}

// lacking lists the PDBs that do not allow the node's drain now, in index order.
func lacking(d *drainer, disrupted []int, pdbs []model.PDB) []int {
	var out []int
	for j, n := range d.need { // a node's few PDBs, not every PDB of the fleet
		if disrupted[j]+n > pdbs[j].DisruptionsAllowed {
			out = append(out, j)
		}
	}
	slices.Sort(out)
	return out
}

func waitBlockers(d *drainer, short []int, holders [][]*drainer, pdbs []model.PDB) []Blocker {
	var out []Blocker
	for _, j := range short {
		b := &pdbs[j]
		var after []string
		for _, h := range holders[j] {
			after = append(after, h.np.Name)
		}
		pods := d.pods[j]
		out = append(out, Blocker{Kind: BlockPDBWait, PDB: b.Namespace + "/" + b.Name, Pod: first(pods), After: after,
			Message: fmt.Sprintf("drain waits for PodDisruptionBudget %s/%s (allows %s) to evict %s until %s %s uncordoned with %s pods back; cordoned meanwhile, within the drain timeout",
				b.Namespace, b.Name, disruptions(b.DisruptionsAllowed), podList(pods), strings.Join(after, ", "), isAre(len(after)), itsTheir(len(after)))})
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// podList names the pods a drain waits to evict: "pod demo/web-2", "pods demo/web-2 and
// demo/web-5", the first three and how many more.
func podList(pods []string) string {
	switch len(pods) {
	case 0:
		return "its pods"
	case 1:
		return "pod " + pods[0]
	case 2:
		return "pods " + pods[0] + " and " + pods[1]
	case 3:
		return "pods " + pods[0] + ", " + pods[1] + " and " + pods[2]
	}
	return fmt.Sprintf("pods %s, %s, %s and %d more", pods[0], pods[1], pods[2], len(pods)-3)
}

func remove(ds []*drainer, d *drainer) []*drainer {
	for i := range ds {
		if ds[i] == d {
			return append(ds[:i], ds[i+1:]...)
		}
	}
	return ds
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func itsTheir(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

func disruptions(n int) string {
	if n == 1 {
		return "1 disruption"
	}
	return fmt.Sprintf("%d disruptions", n)
}
