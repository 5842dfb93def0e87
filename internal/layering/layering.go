// Package layering states mcp's package layering over the real import graph, and checks
// it (layering_test.go runs `go list -deps` on the module). It says three things.
//
// Floors: the module's top-level folders stand on floors, each above all it imports. A
// package imports only packages of its own folder and of folders on lower floors, so no
// import runs back up and no two folders import each other:
//
//	10 cmd, scripts, acceptance, examples, deploy   what people run, and the tests of the whole
//	9  testkit                                      harnesses: chaos, benchmarks, test helpers
//	8  clusters                                     a fleet of clusters: the engine per cluster
//	7  engine                                       load, render, refresh, plan, apply
//	6  providers                                    the fleets: local, kubernetes (record in tests)
//	5  bootsrv, agent                               the two ends of a node's configs: the boot
//	                                                server (and its sources, one per backend),
//	                                                the node agent's modes (standalone, kagent)
//	4  state, nodeexec, planner, config             the state backends, the node's executor, the
//	                                                planner, the configuration language
//	3  kubeapi                                      talking to an apiserver: mcp's wire protocol
//	                                                over Node annotations and Secrets, its clients
//	2  internal, steps, ignition                    leaf helpers; the one step derivation;
//	                                                Ignition configs
//	1  model                                        plain data
//
// Rules: a rule names packages and what they must not reach, directly or through any
// dependency:
//
//	cmd/mcp, cmd/mcp-agent          the composition roots: they alone name concrete parts
//	engine/…, clusters/…,           reach no concrete provider: nothing under providers/ but the
//	planner/…, state/…, steps/…,    interfaces (providers) and their suite (providertest), so a new
//	model/…, kubeapi/…, bootsrv/…,  provider is covered the day it is added
//	agent/…
//	kubeapi/…                       the apiserver's protocol and clients: no provider, backend, boot
//	                                server, agent, node executor or engine stands under them
//	providers/…                     no agent mode and no boot server: a provider talks to the nodes
//	                                through kubeapi's protocol (or runs nodeexec, simulated)
//	engine/…, clusters/…, state     know state backends by interface: nothing under state/ but
//	                                state, no client-go, no kubectl
//	engine                          no boot server, fasthttp or Prometheus (Ignition is the room's)
//	bootsrv                         serves snapshots from a Source; no engine, no client-go
//	planner, steps                  pure: no I/O, no network, no client-go
//	planner/…                       no language and no Ignition parser: no HCL, no vcontext, not
//	                                the ignition room (render is handed it); model diagnostics
//	engine, engine/{planfile,…}     no HCL or vcontext of their own: the language (config)
//	                                gives model diagnostics, the ignition room checks Ignition
//	nodeexec/…, agent/…,            the node side: no HCL, no go-cty, no kubectl, no Ignition
//	cmd/mcp-agent                   parsers (ignition/content only), no engine, planner, state
//	                                backend or boot server; it reaches the API through
//	                                kubeapi/nodeclient alone
//	nodeexec                        the executor: no HTTP, no step derivation (the agent modes')
//	config/…                        the language: no planner, backend, provider, node or boot
//	                                server, and no table printer (views render its diagnostics)
//	model                           plain data: imports nothing of mcp and no language
//	cmd/mcp, cmd/mcp-agent          no OPA, no terraform-json (test-only, in examples/ci), no
//	                                providers/record (test-only)
//	cmd/mcp, cmd/mcp-agent          no Go plugin loader, no kubectl, cli-runtime or kustomize
//	cmd/mcp                         no typed Clientset, no informer factory: kubeclient's groups
//	cmd/mcp-agent                   no text/template: the linker's dead-code elimination stays whole
//
// Rooms: an outside system's packages that only the room named for it imports directly
// (other packages ask the room):
//
//	Ignition's config/v3_*          ignition, and Butane's translation (config/butane)
package layering

import (
	"fmt"
	"maps"
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

// Rule forbids the packages Of (module-relative paths; a trailing "/..." is the package and
// every package under it) to import what Forbid matches and Except does not.
type Rule struct {
	Of []string
	// Direct limits the rule to the packages' own imports (for "does no I/O": the
	// standard library's os is fine deep inside a dependency, not in the package itself).
	Direct bool
	// Forbid are import paths; a trailing "/..." matches the path and everything under it,
	// a trailing "*" every path that starts with what is before it.
	Forbid []string
	Except []string // import paths Forbid matches that are allowed (the same patterns)
	Why    string
}

// Rules are mcp's layering.
var Rules = []Rule{
	{Of: []string{"engine/...", "clusters/...", "planner/...", "state/...", "steps/...", "model/...", "kubeapi/...", "bootsrv/...", "agent/..."},
		Forbid: []string{Module + "/providers/..."}, Except: []string{Module + "/providers", Module + "/providers/providertest"},
		Why: "the core knows providers by their interfaces (and their specs); cmd composes the concrete ones, wherever under providers/ they are"},
	{Of: []string{"kubeapi/..."},
		Forbid: []string{Module + "/providers/...", Module + "/state/...", Module + "/bootsrv/...", Module + "/agent/...",
			Module + "/nodeexec/...", Module + "/engine/...", Module + "/planner/...", Module + "/config/...", "k8s.io/kubectl/..."},
		Why: "kubeapi is talking to an apiserver (mcp's protocol over Node annotations and Secrets, and its clients): the " +
			"provider, the state backend, the boot source and the agent stand on it, so it knows none of them"},
	{Of: []string{"providers/..."},
		Forbid: []string{Module + "/agent/...", Module + "/bootsrv/..."},
		Why: "a provider reaches nodes through kubeapi's protocol (or, simulated, runs nodeexec in-process): it links no " +
			"agent mode and no boot server"},
	{Of: []string{"engine/...", "clusters/...", "state"},
		Forbid: []string{Module + "/state/...", "k8s.io/client-go/...", "k8s.io/kubectl/..."}, Except: []string{Module + "/state"},
		Why: "the engine knows state backends by their interface; cmd composes them"},
	{Of: []string{"engine"},
		Forbid: []string{Module + "/bootsrv/...", "github.com/valyala/fasthttp/...", "github.com/prometheus/..."},
		Why:    "the engine asks the ignition room for Ignition configs (user_data's pointer config); the boot server, its HTTP and its metrics are mcp serve's"},
	{Of: []string{"bootsrv"},
		Forbid: []string{"k8s.io/client-go/...", Module + "/engine/..."},
		Why:    "the boot server serves what a Source gives; the sources live with their backends"},
	{Of: []string{"planner", "steps"}, Direct: true,
		Forbid: []string{"os", "os/exec", "io/fs", "io/ioutil", "net/...", "syscall"},
		Why:    "the planner is pure: the same input gives the same plan, and it touches nothing"},
	{Of: []string{"planner", "steps"},
		Forbid: []string{"k8s.io/client-go/...", Module + "/providers/...", Module + "/engine/..."},
		Why:    "the planner is pure: it reaches no cluster and no engine"},
	{Of: []string{"planner/..."},
		Forbid: []string{"github.com/hashicorp/hcl/...", "github.com/coreos/vcontext/...", "github.com/coreos/ignition/...",
			Module + "/ignition", Module + "/internal/hclpos", Module + "/config/..."},
		Why: "the core speaks model diagnostics (model.Diagnostic): the language converts its own at its edge, and render " +
			"is handed the ignition room (planner.Ignition), so the planner links neither the language nor Ignition's parsers"},
	{Of: []string{"engine", "engine/planfile", "engine/health", "engine/alerts"}, Direct: true,
		Forbid: []string{"github.com/hashicorp/hcl/...", "github.com/coreos/vcontext/...", Module + "/internal/hclpos"},
		Why: "the engine speaks model diagnostics: it reaches the language only through config's Load, " +
			"and Ignition only through the ignition room"},
	{Of: []string{"nodeexec/...", "agent/...", "cmd/mcp-agent"},
		Forbid: []string{"github.com/hashicorp/hcl/...", "github.com/zclconf/go-cty/...", "k8s.io/kubectl/...",
			"github.com/coreos/ignition/v2/config/v3_*", Module + "/ignition",
			Module + "/planner", Module + "/engine/...", Module + "/config/...", Module + "/state/...", Module + "/bootsrv/..."},
		Why: "every node runs the agent: it links the step derivation and ignition/content, not the language, the engine, " +
			"the state backends, the boot server, kubectl or Ignition's parsers"},
	{Of: []string{"nodeexec"},
		Forbid: []string{"net/http/...", Module + "/steps"},
		Why:    "the executor applies the steps it is given to a root; fetching configs and deriving steps are the agent modes' (agent/standalone, agent/kagent), over nodeexec/bootclient"},
	{Of: []string{"agent/...", "cmd/mcp-agent"},
		Forbid: []string{"k8s.io/client-go/kubernetes/..."},
		Why:    "the agent asks for its Node alone (kubeapi/nodeclient): the typed Clientset registers every API group, ~10 MB on every node"},
	{Of: []string{"cmd/mcp", "cmd/mcp-agent"},
		Forbid: []string{"github.com/open-policy-agent/...", "github.com/hashicorp/terraform-json/..."},
		Why:    "OPA and terraform-json check mcp's plan JSON in examples/ci's tests; the binaries write that JSON themselves"},
	{Of: []string{"cmd/mcp-agent"},
		Forbid: []string{"text/template", "html/template"},
		Why: "a template calls methods by a name known only at run time, so the linker keeps every exported method of " +
			"every type the binary links (mcp's case, through Butane): the agent keeps its dead-code elimination"},
	{Of: []string{"cmd/mcp", "cmd/mcp-agent"},
		Forbid: []string{"plugin", "k8s.io/kubectl/...", "k8s.io/cli-runtime/...", "sigs.k8s.io/kustomize/..."},
		Why: "a binary that links Go's plugin loader (kustomize's, through kubectl and cli-runtime) keeps every method of " +
			"every type it links: mcp was 88 MB stripped with kubectl's drain, 65 MB without (docs/decisions.md, \"Binary size\")"},
	{Of: []string{"cmd/mcp"},
		Forbid: []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers/..."},
		Why: "mcp talks to the API groups it uses through kubeapi/kubeclient: client-go's Clientset and informer " +
			"factory reach every API group, whose methods the linker keeps (Butane runs text/template, which calls methods by name): 10 MB of the stripped binary"},
	{Of: []string{"cmd/mcp", "cmd/mcp-agent"},
		Forbid: []string{Module + "/providers/record/..."},
		Why:    "the record provider is for tests: cmd/mcp's tests add it to the parts, the binaries do not link it"},
	{Of: []string{"config/..."},
		Forbid: []string{Module + "/planner/...", Module + "/state/...", Module + "/providers/...", Module + "/nodeexec/...",
			Module + "/bootsrv/...", "k8s.io/client-go/...", "github.com/olekukonko/tablewriter/..."},
		Why: "the language reads what users write into the model: it knows no planner, backend, provider or node, and " +
			"prints nothing (its problems are model diagnostics; cmd/mcp/views renders them)"},
	{Of: []string{"model"},
		Forbid: []string{Module + "/...", "github.com/hashicorp/hcl/...", "github.com/zclconf/go-cty/..."},
		Why:    "the model is plain data every package may import"},
}

// Room gives an outside system one room: only the packages Of (module-relative paths)
// import what Imports matches, directly. Others reach it through them.
type Room struct {
	Imports []string // import paths; a trailing "/..." or "*" matches as in Rule.Forbid
	Of      []string
	Why     string
}

// Rooms are mcp's rooms for outside systems.
var Rooms = []Room{
	{Imports: []string{"github.com/prometheus/client_golang/api/..."}, Of: []string{"engine/alerts"},
		Why: "Prometheus' API has one room: the alert gate's questions go through engine/alerts, which the engine knows as an AlertSource"},
	{Imports: []string{"github.com/coreos/ignition/v2/config/v3_*"}, Of: []string{"ignition", "config/butane"},
		Why: "Ignition has one room: spec versions, render's check, pointer, served and read-back configs are the ignition package's; Butane translates to Ignition's types"},
}

// CheckRooms returns every direct import of a room's outside system by a module package
// outside the room, and every room member that is not in graph.
func CheckRooms(graph map[string]Package, rooms []Room) []string {
	var out []string
	for _, room := range rooms {
		in := map[string]bool{}
		for _, of := range room.Of {
			in[Module+"/"+of] = true
			if _, ok := graph[Module+"/"+of]; !ok {
				out = append(out, fmt.Sprintf("%s: not in the import graph (room %q names it)", of, room.Why))
			}
		}
		for _, path := range slices.Sorted(maps.Keys(graph)) {
			if in[path] || !strings.HasPrefix(path, Module+"/") {
				continue
			}
			for _, imp := range graph[path].Imports {
				if slices.ContainsFunc(room.Imports, func(f string) bool { return matches(f, imp) }) {
					out = append(out, fmt.Sprintf("%s imports %s, which only %s may: %s",
						strings.TrimPrefix(path, Module+"/"), imp, strings.Join(room.Of, " and "), room.Why))
				}
			}
		}
	}
	return out
}

// Floors are the module's top-level folders, from the ground up (the package comment says
// what stands on each). A folder that is on no floor is reported: place it when adding it.
var Floors = [][]string{
	{"model"},
	{"internal", "steps", "ignition"},
	{"kubeapi"},
	{"state", "nodeexec", "planner", "config"},
	{"bootsrv", "agent"},
	{"providers"},
	{"engine"},
	{"clusters"},
	{"testkit"},
	{"cmd", "scripts", "acceptance", "examples", "deploy"},
}

// CheckFloors returns every import of graph's module packages that does not run down: to a
// folder on the same floor or a higher one. Test files' imports are not in the graph: a
// test may use testkit from any floor.
func CheckFloors(graph map[string]Package, floors [][]string) []string {
	floor := map[string]int{}
	for i, folders := range floors {
		for _, f := range folders {
			floor[f] = i + 1
		}
	}
	var out []string
	unplaced := map[string]bool{}
	for _, path := range slices.Sorted(maps.Keys(graph)) {
		from, ok := folder(path)
		if !ok {
			continue
		}
		if floor[from] == 0 {
			if !unplaced[from] {
				unplaced[from] = true
				out = append(out, fmt.Sprintf("folder %s/ is on no floor: add it to layering.Floors above all it imports", from))
			}
			continue
		}
		for _, imp := range graph[path].Imports {
			to, ok := folder(imp)
			if !ok || to == from || floor[to] == 0 {
				continue
			}
			if floor[to] >= floor[from] {
				out = append(out, fmt.Sprintf("%s (floor %d, %s/) imports %s (floor %d, %s/): a folder imports only folders on lower floors",
					strings.TrimPrefix(path, Module+"/"), floor[from], from, strings.TrimPrefix(imp, Module+"/"), floor[to], to))
			}
		}
	}
	return out
}

// folder is the top-level folder of a module package's import path.
func folder(importPath string) (string, bool) {
	rel, ok := strings.CutPrefix(importPath, Module+"/")
	if !ok {
		return "", false
	}
	top, _, _ := strings.Cut(rel, "/")
	return top, true
}

// Check returns every edge of graph that breaks a rule, and every Of that names no package.
func Check(graph map[string]Package, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		for _, of := range r.Of {
			pkgs := packagesOf(graph, of)
			if len(pkgs) == 0 {
				out = append(out, fmt.Sprintf("%s: not in the import graph (rule %q names it)", of, r.Why))
			}
			for _, p := range pkgs {
				reach := p.Deps
				if r.Direct {
					reach = p.Imports
				}
				for _, dep := range reach {
					if dep != p.ImportPath && matchesAny(r.Forbid, dep) && !matchesAny(r.Except, dep) {
						out = append(out, fmt.Sprintf("%s reaches %s: %s", strings.TrimPrefix(p.ImportPath, Module+"/"), dep, r.Why))
					}
				}
			}
		}
	}
	return out
}

// packagesOf are the packages of graph that of (module-relative, perhaps a pattern) names.
func packagesOf(graph map[string]Package, of string) []Package {
	var out []Package
	for _, path := range slices.Sorted(maps.Keys(graph)) {
		if matches(Module+"/"+of, path) {
			out = append(out, graph[path])
		}
	}
	return out
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) })
}

func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(path, prefix)
	}
	return path == pattern
}
