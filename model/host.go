package model

import (
	"slices"
	"strings"
)

// CheckHost compares what a node's host says its running boot runs — its kernel arguments
// (nil: the host cannot say) and OS image ("": it cannot say, or the boot runs no container
// image) — with target. It is the one comparison of a node's kernel arguments and image:
// the engine's refresh runs it over what the provider reports (HostDrift), the node
// executor's verify step and the agents' drift checks over what the host reads.
//
// Only what target manages is compared, as the MCO does: every kernel argument of target
// must be present and each of removed (those the update took away) absent; arguments of
// the node's own (root=, console=, the boot loader's) are not drift. A config without an
// OS image manages none. An unknown is not drift.
func CheckHost(kernelArgs []string, osImage string, target *Rendered, removed []string) []Drift {
	var out []Drift
	if kernelArgs != nil {
		var wrong []string
		for _, a := range target.KernelArgs {
			if !slices.Contains(kernelArgs, a) {
				wrong = append(wrong, a)
			}
		}
		for _, a := range removed {
			if slices.Contains(kernelArgs, a) && !slices.Contains(target.KernelArgs, a) {
				wrong = append(wrong, a)
			}
		}
		if len(wrong) > 0 {
			out = append(out, Drift{Path: DriftPathKernelArgs, Kind: DriftKernelArgs,
				Expected: expectedArgs(target.KernelArgs, removed), Found: strings.Join(relevantArgs(kernelArgs, target.KernelArgs, removed), " ")})
		}
	}
	if osImage != "" && target.OSImage != "" && osImage != target.OSImage {
		out = append(out, Drift{Path: DriftPathOSImage, Kind: DriftOSImage, Expected: target.OSImage, Found: osImage})
	}
	return out
}

// HostDrift compares what the node reports of its kernel arguments and OS image with
// current, the config it runs (CheckHost).
func HostDrift(n *Node, current *Rendered) []Drift {
	return CheckHost(n.KernelArgs, n.OSImage, current, nil)
}

// expectedArgs says what the node's arguments should be: target's, and not those removed.
func expectedArgs(target, removed []string) string {
	s := strings.Join(target, " ")
	var without []string
	for _, a := range removed {
		if !slices.Contains(target, a) {
			without = append(without, a)
		}
	}
	if len(without) > 0 {
		s = strings.TrimSpace(s + " (without " + strings.Join(without, " ") + ")")
	}
	return s
}

// relevantArgs are the node's arguments a person comparing them with the expected ones
// needs: those of the same names as target's or removed's (mitigations=off against an
// expected mitigations=auto), not the whole command line.
func relevantArgs(node, target, removed []string) []string {
	names := map[string]bool{}
	for _, a := range append(slices.Clone(target), removed...) {
		names[argName(a)] = true
	}
	var out []string
	for _, a := range node {
		if names[argName(a)] {
			out = append(out, a)
		}
	}
	return out
}

func argName(a string) string {
	name, _, _ := strings.Cut(a, "=")
	return name
}
