package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// graph reads the module's real import graph.
func graph(t *testing.T) map[string]Package {
	t.Helper()
	statSources(t)
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps", Module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := map[string]Package{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		g[p.ImportPath] = p
	}
	return g
}

func TestLayering(t *testing.T) {
	for _, v := range Check(graph(t), Rules) {
		t.Error(v)
	}
}

// TestCheckFindsForbiddenEdges: the checker itself reports a forbidden edge, direct or deep,
// and a package a rule names that no longer exists — so TestLayering can fail.
func TestCheckFindsForbiddenEdges(t *testing.T) {
	g := map[string]Package{
		Module + "/engine":  {ImportPath: Module + "/engine", Imports: []string{Module + "/planner"}, Deps: []string{Module + "/planner", Module + "/providers/local"}},
		Module + "/planner": {ImportPath: Module + "/planner", Imports: []string{"fmt", "os"}, Deps: []string{"fmt", "os"}},
		Module + "/model":   {ImportPath: Module + "/model", Imports: []string{"fmt"}, Deps: []string{"fmt"}},
	}
	rules := []Rule{
		{Of: []string{"engine"}, Forbid: []string{Module + "/providers/local/..."}, Why: "composed by cmd"},
		{Of: []string{"planner"}, Direct: true, Forbid: []string{"os"}, Why: "pure"},
		{Of: []string{"model"}, Forbid: []string{Module + "/..."}, Why: "plain"},
		{Of: []string{"gone"}, Forbid: []string{"os"}, Why: "renamed"},
	}
	got := strings.Join(Check(g, rules), "\n")
	for _, want := range []string{"engine reaches " + Module + "/providers/local", "planner reaches os", "gone: not in the import graph"} {
		if !strings.Contains(got, want) {
			t.Errorf("Check missed %q; got:\n%s", want, got)
		}
	}
	if strings.Contains(got, "model reaches") {
		t.Errorf("Check reported an allowed edge:\n%s", got)
	}
}

func TestRooms(t *testing.T) {
	for _, v := range CheckRooms(graph(t), Rooms) {
		t.Error(v)
	}
}

// TestCheckRoomsFindsImportsFromOutside: a package outside a room importing its outside
// system, directly, is reported, and a room member that no longer exists; the room's own
// imports, and a package that reaches the system only through the room, are not.
func TestCheckRoomsFindsImportsFromOutside(t *testing.T) {
	const v34 = "github.com/coreos/ignition/v2/config/v3_4"
	g := map[string]Package{
		Module + "/ignition":        {ImportPath: Module + "/ignition", Imports: []string{v34, v34 + "/types"}},
		Module + "/planner":         {ImportPath: Module + "/planner", Imports: []string{Module + "/ignition"}, Deps: []string{Module + "/ignition", v34}},
		Module + "/providers/local": {ImportPath: Module + "/providers/local", Imports: []string{"fmt", v34 + "/types"}},
		v34:                         {ImportPath: v34, Imports: []string{"github.com/coreos/ignition/v2/config/v3_3"}},
	}
	rooms := []Room{{Imports: []string{"github.com/coreos/ignition/v2/config/v3_*"}, Of: []string{"ignition", "gone"}, Why: "one room"}}
	got := CheckRooms(g, rooms)
	want := []string{
		"gone: not in the import graph",
		"providers/local imports " + v34 + "/types, which only ignition and gone may",
	}
	if len(got) != len(want) {
		t.Fatalf("CheckRooms reported %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d: got %q, want it to start with %q", i, got[i], w)
		}
	}
}

// TestRulesCoverNewParts: mcp's own Rules, over a graph with parts that do not exist yet —
// a provider under providers/ and a state backend under state/ that no rule names —
// report every package of the core that reaches one, and leave the interfaces, their
// suite and the state's interface package allowed.
func TestRulesCoverNewParts(t *testing.T) {
	expectReaches(t, []Package{
		modPkg("engine", "providers", "providers/providertest", "state", "model"),
		modPkg("engine/newroom", "providers/newcloud", "model"),
		modPkg("planner/inner", "providers/cloud/api"),
		modPkg("state/newbackend", "providers/newcloud/helpers"),
		modPkg("model/inner", "providers/fake"),
		modPkg("config", "state/s3state"),
		modPkg("providers/newcloud", "providers", "model"),
		modPkg("cmd/mcp", "providers/newcloud", "state/s3state", "engine"),
	}, []string{
		"engine/newroom reaches " + Module + "/providers/newcloud",
		"planner/inner reaches " + Module + "/providers/cloud/api",
		"state/newbackend reaches " + Module + "/providers/newcloud/helpers",
		"model/inner reaches " + Module + "/providers/fake",
		"config reaches " + Module + "/state/s3state",
	}, func(e string) bool {
		return strings.HasPrefix(e, "engine reaches") || strings.HasPrefix(e, "cmd/mcp reaches")
	})
}

// TestRulesKeepTheLanguageAtItsEdge: mcp's own Rules report the planner reaching HCL or
// Ignition's vcontext, however deep, and the engine importing either itself, but not the
// engine reaching them through the language (config) or the ignition room.
func TestRulesKeepTheLanguageAtItsEdge(t *testing.T) {
	hcl, vcontext := "github.com/hashicorp/hcl/v2", "github.com/coreos/vcontext/report"
	pkg := func(path string, imports []string, deps ...string) Package {
		return Package{ImportPath: Module + "/" + path, Imports: imports, Deps: append(slices.Clone(imports), deps...)}
	}
	expectReaches(t, []Package{
		pkg("planner", []string{Module + "/model", Module + "/internal/helper"}, hcl),
		pkg("planner/inner", []string{Module + "/ignition"}, vcontext),
		pkg("engine", []string{Module + "/config", Module + "/ignition"}, hcl, vcontext),
		pkg("engine/planfile", []string{hcl}),
		pkg("engine/health", []string{Module + "/internal/hclpos"}, hcl),
	}, []string{
		"planner reaches " + hcl,
		"planner/inner reaches " + Module + "/ignition",
		"planner/inner reaches " + vcontext,
		"engine/planfile reaches " + hcl,
		"engine/health reaches " + Module + "/internal/hclpos",
	}, func(e string) bool { return strings.HasPrefix(e, "engine reaches") })
}

// TestRulesKeepKubernetesByRole: mcp's own Rules report the apiserver's client floor
// (kubeapi) reaching what stands on it, the state backend, the boot source and an agent mode
// reaching a provider, an agent mode reaching the engine, the language or the typed
// Clientset, and a provider linking an agent mode; and leave each role's own edges allowed.
func TestRulesKeepKubernetesByRole(t *testing.T) {
	hcl, clientset := "github.com/hashicorp/hcl/v2", "k8s.io/client-go/kubernetes"
	allowed := []string{
		"providers/kubernetes reaches " + Module + "/kubeapi/",
		"state/kubestate reaches " + Module + "/kubeapi/",
		"state/kubestate reaches " + Module + "/state",
		"bootsrv/kubesource reaches " + Module + "/state/kubestate",
		"bootsrv/kubesource reaches " + Module + "/bootsrv",
		"agent/kagent reaches " + Module + "/kubeapi/",
		"agent/kagent reaches " + Module + "/nodeexec",
		"agent/newmode reaches " + Module + "/nodeexec",
	}
	expectReaches(t, []Package{
		modPkg("kubeapi/protocol", "model", "providers/kubernetes"),
		modPkg("kubeapi/kubeclient", "state/kubestate"),
		modPkg("kubeapi/nodeclient", "agent/kagent"),
		modPkg("state/kubestate", "state", "kubeapi/kubeclient", "kubeapi/protocol", "providers/kubernetes"),
		modPkg("bootsrv/kubesource", "bootsrv", "state/kubestate", "kubeapi/kubeclient", "providers/kubernetes/helpers"),
		modPkg("agent/kagent", "nodeexec", "kubeapi/nodeclient", "kubeapi/protocol", "engine", clientset),
		modPkg("agent/newmode", "nodeexec", "nodeexec/bootclient", "state/localstate", hcl),
		modPkg("providers/kubernetes", "providers", "kubeapi/protocol", "kubeapi/kubeclient", "agent/kagent"),
	}, []string{
		"kubeapi/protocol reaches " + Module + "/providers/kubernetes",
		"kubeapi/kubeclient reaches " + Module + "/state/kubestate",
		"kubeapi/nodeclient reaches " + Module + "/agent/kagent",
		"state/kubestate reaches " + Module + "/providers/kubernetes",
		"bootsrv/kubesource reaches " + Module + "/providers/kubernetes/helpers",
		"agent/kagent reaches " + Module + "/engine",
		"agent/kagent reaches " + clientset,
		"agent/newmode reaches " + Module + "/state/localstate",
		"agent/newmode reaches " + hcl,
		"providers/kubernetes reaches " + Module + "/agent/kagent",
	}, func(e string) bool {
		return slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(e, a) && (strings.HasSuffix(a, "/") || e == a) })
	})
}

func TestFloors(t *testing.T) {
	for _, v := range CheckFloors(graph(t), Floors) {
		t.Error(v)
	}
}

// TestCheckFloorsFindsImportsThatRunUp: an import up a floor, one across a floor to another
// folder, and a folder on no floor are reported; imports down and within a folder are not.
func TestCheckFloorsFindsImportsThatRunUp(t *testing.T) {
	g := map[string]Package{}
	for _, p := range []Package{
		modPkg("model"),
		modPkg("steps", "model"),
		modPkg("planner", "steps", "model", "planner/inner"),
		modPkg("planner/inner", "model"),
		modPkg("nodeexec", "planner"),       // across: planner is on nodeexec's floor
		modPkg("internal/helper", "engine"), // up
		modPkg("engine", "planner", "internal/helper"),
		modPkg("newroom", "model"), // on no floor
		{ImportPath: "fmt"},
	} {
		g[p.ImportPath] = p
	}
	floors := [][]string{{"model"}, {"internal", "steps"}, {"nodeexec", "planner"}, {"engine"}}
	got := CheckFloors(g, floors)
	want := []string{
		"internal/helper (floor 2, internal/) imports engine (floor 4, engine/)",
		"folder newroom/ is on no floor",
		"nodeexec (floor 3, nodeexec/) imports planner (floor 3, planner/)",
	}
	if len(got) != len(want) {
		t.Fatalf("CheckFloors reported %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d: got %q, want it to start with %q", i, got[i], w)
		}
	}
}

// statSources looks at every Go file and go.mod of the module. go test caches a result by
// the files the test touched, and go list runs in a child it cannot see: without this, an
// import added later would be checked against the cached graph and pass.
func statSources(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || d.Name() == "go.mod") {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// expectReaches checks mcp's own Rules over the graph of pkgs: each edge of want ("A reaches
// B") is reported, and no reported edge is one allowed says may be.
func expectReaches(t *testing.T, pkgs []Package, want []string, allowed func(edge string) bool) {
	t.Helper()
	g := map[string]Package{}
	for _, p := range pkgs {
		g[p.ImportPath] = p
	}
	var got []string
	for _, v := range Check(g, Rules) {
		if strings.Contains(v, " reaches ") {
			got = append(got, v[:strings.Index(v, ":")])
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("Rules missed %q; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
	for _, e := range got {
		if allowed(e) {
			t.Errorf("Rules reported an allowed edge: %s", e)
		}
	}
}

// modPkg is a package of the module at path whose imports are deps: module-relative paths,
// or outside packages (a path with a dot).
func modPkg(path string, deps ...string) Package {
	p := Package{ImportPath: Module + "/" + path}
	for _, d := range deps {
		if !strings.Contains(d, ".") {
			d = Module + "/" + d
		}
		p.Imports = append(p.Imports, d)
		p.Deps = append(p.Deps, d)
	}
	return p
}
