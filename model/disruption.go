package model

import "fmt"

// The arithmetic of Kubernetes' disruption controller and eviction API, for the fleets mcp
// simulates (providers/local, providers/record): the kubernetes provider reads the status
// the real controller wrote instead.

// DisruptionBudget is a PodDisruptionBudget's spec as the disruption controller reads it:
// MinAvailable or MaxUnavailable (nil: not given), each a count or a percentage.
type DisruptionBudget struct {
	MinAvailable, MaxUnavailable *IntOrPercent
}

// Status is the budget's status over expected pods of which healthy are healthy (selected,
// Ready): the healthy pods it needs, and the disruptions it allows. expected is the
// selected pods' count for a MinAvailable count, else their controllers' scale.
// Percentages round up (a budget of 50% of 3 pods needs 2, or lets 2 go); a budget that
// expects no pod allows no disruption, so that pods appearing before the controller counts
// them are safe (its updatePdbStatus). A budget with neither given expects no pod: it
// needs none and allows nothing, as the controller reads it.
func (b DisruptionBudget) Status(expected, healthy int) (desiredHealthy, allowed int) {
	switch {
	case b.MaxUnavailable != nil:
		desiredHealthy = max(0, expected-scaleUp(*b.MaxUnavailable, expected))
	case b.MinAvailable != nil:
		desiredHealthy = scaleUp(*b.MinAvailable, expected)
	default:
		return 0, 0
	}
	allowed = healthy - desiredHealthy
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	return desiredHealthy, allowed
}

// scaleUp is v of total, a percentage rounded up (Kubernetes'
// GetScaledValueFromIntOrPercent with roundUp).
func scaleUp(v IntOrPercent, total int) int {
	if !v.Percent {
		return v.Value
	}
	return (v.Value*total + 99) / 100
}

// SetHealthy sets b's status, its MinAvailable a count, for healthy healthy pods. The
// selected pods' count (the controller's expected count) is not needed for such a budget:
// it only keeps one that selects no pod at no disruption, which healthy 0 does already.
func (b *PDB) SetHealthy(healthy int) {
	b.CurrentHealthy = healthy
	b.DesiredHealthy, b.DisruptionsAllowed = DisruptionBudget{MinAvailable: &IntOrPercent{Value: b.MinAvailable}}.Status(healthy, healthy)
}

// Evict is the eviction API's judgement of evicting pod under pdbs: refused says why the
// first budget selecting it that allows no disruption refuses it ("" when none does); an
// eviction not refused is counted in pdbs (a Ready pod leaves each budget selecting it one
// healthy pod and one disruption fewer), so that the next pod's is judged after it.
func Evict(pod *Pod, pdbs []PDB) (refused string) {
	for i := range pdbs {
		b := &pdbs[i]
		if b.Matches(pod) && b.DisruptionsAllowed <= 0 {
			return fmt.Sprintf("eviction of %s/%s refused by PodDisruptionBudget %s/%s (needs %d healthy, has %d)",
				pod.Namespace, pod.Name, b.Namespace, b.Name, b.DesiredHealthy, b.CurrentHealthy)
		}
	}
	for i := range pdbs {
		if b := &pdbs[i]; pod.Ready && b.Matches(pod) {
			b.CurrentHealthy--
			b.DisruptionsAllowed--
		}
	}
	return ""
}
