// Package layering states mcp's package layering as rules over the real import graph, and
// checks them (layering_test.go runs `go list -deps` on the module). A rule names packages
// and what they must not reach, directly or through any dependency:
//
//	cmd/mcp, cmd/mcp-agent          the composition roots: they alone name concrete parts
//	engine, engine/{config,planfile}, state  know providers, backends and sources by interface
//	providers/local, providers/kubernetes/…  concrete parts (kubernetes: all of client-go)
//	bootsrv                         serves snapshots from a Source; no engine, no client-go
//	planner, steps                  pure: no I/O, no network, no client-go
//	nodeexec, cmd/mcp-agent         the node side: no HCL, no go-cty, no kubectl, no old Ignition
//	                                specs; mcp-agent reaches the API through nodeclient alone
//	model                           plain data: imports nothing of mcp and no language
//	cmd/mcp, cmd/mcp-agent          no OPA, no terraform-json (test-only, in examples/ci)
package layering

import (
	"fmt"
	"slices"
	"strings"
)

// Module is mcp's module path.
const Module = "github.com/mcpfleet/mcp"

// Package is one package of the import graph.
type Package struct {
	ImportPath string
	Imports    []string // direct imports
	Deps       []string // every package it reaches
}

// Rule forbids the packages Of (module-relative paths) to import what Forbid matches.
type Rule struct {
	Of []string
	// Direct limits the rule to the packages' own imports (for "does no I/O": the
	// standard library's os is fine deep inside a dependency, not in the package itself).
	Direct bool
	Forbid []string // import paths; a trailing "/..." matches the path and everything under it
	Why    string
}

// Rules are mcp's layering.
var Rules = []Rule{
	{Of: []string{"engine", "engine/config", "engine/planfile", "state"},
		Forbid: []string{Module + "/providers/local/...", Module + "/providers/kubernetes/...",
			Module + "/state/localstate/...", "k8s.io/client-go/...", "k8s.io/kubectl/..."},
		Why: "the engine knows providers and state backends by their interfaces; cmd composes them"},
	{Of: []string{"bootsrv"},
		Forbid: []string{"k8s.io/client-go/...", Module + "/engine/..."},
		Why:    "the boot server serves what a Source gives; the sources live with their backends"},
	{Of: []string{"planner", "steps"}, Direct: true,
		Forbid: []string{"os", "os/exec", "io/fs", "io/ioutil", "net/...", "syscall"},
		Why:    "the planner is pure: the same input gives the same plan, and it touches nothing"},
	{Of: []string{"planner", "steps"},
		Forbid: []string{"k8s.io/client-go/...", Module + "/providers/...", Module + "/engine/..."},
		Why:    "the planner is pure: it reaches no cluster and no engine"},
	{Of: []string{"nodeexec", "cmd/mcp-agent"},
		Forbid: []string{"github.com/hashicorp/hcl/...", "github.com/zclconf/go-cty/...", "k8s.io/kubectl/...",
			"github.com/coreos/ignition/v2/config/v3_0/...", "github.com/coreos/ignition/v2/config/v3_1/...",
			"github.com/coreos/ignition/v2/config/v3_2/...", "github.com/coreos/ignition/v2/config/v3_3/...",
			"github.com/coreos/ignition/v2/config/v3_4/...", "github.com/coreos/ignition/v2/config/v3_5/...",
			Module + "/planner", Module + "/engine/..."},
		Why: "every node runs the agent: it links the step derivation, not the language, the engine or kubectl"},
	{Of: []string{"nodeexec"},
		Forbid: []string{"net/http/...", Module + "/steps"},
		Why:    "the executor applies the steps it is given to a root; fetching configs and deriving steps are the agent modes' (nodeexec/standalone, kagent), over nodeexec/bootclient"},
	{Of: []string{"cmd/mcp-agent"},
		Forbid: []string{"k8s.io/client-go/kubernetes/..."},
		Why:    "the agent asks for its Node alone (providers/kubernetes/nodeclient): the typed Clientset registers every API group, ~10 MB on every node"},
	{Of: []string{"cmd/mcp", "cmd/mcp-agent"},
		Forbid: []string{"github.com/open-policy-agent/...", "github.com/hashicorp/terraform-json/..."},
		Why:    "OPA and terraform-json check mcp's plan JSON in examples/ci's tests; the binaries write that JSON themselves"},
	{Of: []string{"model"},
		Forbid: []string{Module + "/...", "github.com/hashicorp/hcl/...", "github.com/zclconf/go-cty/..."},
		Why:    "the model is plain data every package may import"},
}

// Check returns every edge of graph that breaks a rule.
func Check(graph map[string]Package, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		for _, of := range r.Of {
			p, ok := graph[Module+"/"+of]
			if !ok {
				out = append(out, fmt.Sprintf("%s: not in the import graph (rule %q names it)", of, r.Why))
				continue
			}
			reach := p.Deps
			if r.Direct {
				reach = p.Imports
			}
			for _, dep := range reach {
				if dep != p.ImportPath && slices.ContainsFunc(r.Forbid, func(f string) bool { return matches(f, dep) }) {
					out = append(out, fmt.Sprintf("%s reaches %s: %s", of, dep, r.Why))
				}
			}
		}
	}
	return out
}

func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}
