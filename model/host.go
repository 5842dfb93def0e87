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
			if !HasKernelArg(kernelArgs, a) {
				wrong = append(wrong, a)
			}
		}
		for _, a := range removed {
			if HasKernelArg(kernelArgs, a) && !slices.Contains(target.KernelArgs, a) {
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
		names[argName(KernelReads(a))] = true
	}
	var out []string
	for _, a := range node {
		if names[argName(KernelReads(a))] {
			out = append(out, a)
		}
	}
	return out
}

func argName(a string) string {
	name, _, _ := strings.Cut(a, "=")
	return name
}

// HostRecord is what a node's host ran at one moment: its kernel arguments (nil: it could
// not say; an empty list: none) and its OS image ("": it could not say).
type HostRecord struct {
	KernelArgs []string `json:"kernel_args"`
	OSImage    string   `json:"os_image,omitempty"`
}

// UnmanagedHostDrift compares what the node reports it runs with what it ran when its
// current config was rolled out (n.RolledOut), in what current does not manage: kernel
// arguments current does not name, added or removed since (a debug argument set by
// hand), and the OS image when current names none. These are information, never steps:
// nothing in the configuration says what they should be. Unknown on either side is not
// compared.
func UnmanagedHostDrift(n *Node, current *Rendered) []Drift {
	base := n.RolledOut
	if base == nil {
		return nil
	}
	var out []Drift
	if base.KernelArgs != nil && n.KernelArgs != nil {
		added := unmanagedArgs(n.KernelArgs, base.KernelArgs, current.KernelArgs)
		removed := unmanagedArgs(base.KernelArgs, n.KernelArgs, current.KernelArgs)
		if len(added)+len(removed) > 0 {
			out = append(out, Drift{Path: DriftPathKernelArgs, Kind: DriftUnmanagedKernelArgs,
				Expected: strings.Join(removed, " "), Found: strings.Join(added, " ")})
		}
	}
	if current.OSImage == "" && base.OSImage != "" && n.OSImage != "" && n.OSImage != base.OSImage {
		out = append(out, Drift{Path: DriftPathOSImage, Kind: DriftUnmanagedOSImage, Expected: base.OSImage, Found: n.OSImage})
	}
	return out
}

// unmanagedArgs are the arguments of a that b lacks and managed (a config's, as written)
// does not name.
func unmanagedArgs(a, b, managed []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.ContainsFunc(managed, func(m string) bool { return KernelReads(m) == x }) {
			out = append(out, x)
		}
	}
	return out
}

// KernelReads is a kernel argument as written in a config (and passed to the boot loader)
// read back as the running kernel reports it: its double quotes dropped, as the kernel's
// command-line parser drops them (`dyndbg="file x +p"` runs as `dyndbg=file x +p`), which
// is how nodes report their arguments (nodeexec.ParseCmdline).
func KernelReads(a string) string {
	if !strings.Contains(a, `"`) {
		return a
	}
	return strings.ReplaceAll(a, `"`, "")
}

// HasKernelArg reports whether running, a node's arguments as its kernel reports them,
// holds a, an argument as a config writes it.
func HasKernelArg(running []string, a string) bool {
	return slices.Contains(running, KernelReads(a))
}
