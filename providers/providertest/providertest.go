// Package providertest is the provider conformance suite: every provider's tests call Run,
// which checks the Provider contract, and each optional capability the provider
// implements, through the interfaces alone — so that every provider behaves the same to
// the engine. One function checks one promise; a capability the provider does not
// implement is skipped, naming it. The local and kubernetes providers (on a fake clientset
// and on a real API server) and the record provider run it.
package providertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// New builds a provider over a fresh fleet holding the fixture f.
type New func(t *testing.T, f Fixture) providers.Provider

// Fixture is the fleet a harness must create before handing over its provider.
type Fixture struct {
	Nodes []FixtureNode
	Pods  []model.Pod // Node names the node; pods start Ready
	PDBs  []FixturePDB
	// Templates are machine templates; only the promises of providers.TemplatePatcher
	// give any, and only a harness of a provider that implements it need create them.
	Templates []FixtureTemplate
}

// FixtureNode is a node of the fixture.
type FixtureNode struct {
	Name   string
	Zone   string
	Labels map[string]string
	Ready  bool
}

// FixturePDB is a PodDisruptionBudget of the fixture.
type FixturePDB struct {
	Namespace, Name string
	Selector        map[string]string
	MinAvailable    int
}

// FixtureTemplate is an OpenShift MachineSet for AWS (machine.openshift.io/v1beta1) in
// TemplateNamespace: its name, and the AMI of its providerSpec (ami.id).
type FixtureTemplate struct {
	Name  string
	Image string
}

// The namespaces the promises put objects in: a harness whose provider needs a namespace
// to exist creates them.
const (
	TemplateNamespace = "openshift-machine-api" // FixtureTemplate's MachineSets
	Namespace         = "mcp-system"            // the user-data Secrets of providers.UserDataStore
)

// Standard is the fixture most promises use: three workers; web pods on w-0 and w-1
// guarded by a PDB that allows one disruption; a DaemonSet pod on every node; a db pod on
// w-2 whose PDB allows none.
func Standard() Fixture {
	f := Fixture{
		PDBs: []FixturePDB{
			{Namespace: "demo", Name: "web-pdb", Selector: map[string]string{"app": "web"}, MinAvailable: 1},
			{Namespace: "demo", Name: "db-pdb", Selector: map[string]string{"app": "db"}, MinAvailable: 1},
		},
	}
	for i, z := range []string{"a", "b", "c"} {
		name := "w-" + string(rune('0'+i))
		f.Nodes = append(f.Nodes, FixtureNode{Name: name, Zone: z, Ready: true,
			Labels: map[string]string{"node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": z}})
		f.Pods = append(f.Pods, model.Pod{Namespace: "kube-system", Name: "agent-" + name, Node: name,
			Labels: map[string]string{"app": "agent"}, DaemonSet: true, Ready: true})
	}
	f.Pods = append(f.Pods,
		model.Pod{Namespace: "demo", Name: "web-0", Node: "w-0", Labels: map[string]string{"app": "web"}, Ready: true},
		model.Pod{Namespace: "demo", Name: "web-1", Node: "w-1", Labels: map[string]string{"app": "web"}, Ready: true},
		model.Pod{Namespace: "demo", Name: "db-0", Node: "w-2", Labels: map[string]string{"app": "db"}, Ready: true})
	return f
}

// promise is one thing every provider (or every provider with a capability) does.
type promise struct {
	name  string
	check func(t *testing.T, newProvider New)
}

// promises are Run's, in order: the Provider contract, then each optional capability.
var promises = []promise{
	{"RefreshObservesNodesPodsAndPDBs", refreshObserves},
	{"CordonAndUncordon", cordonUncordon},
	{"ActionsOnAnUnknownNodeNameIt", unknownNode},
	{"DrainEvictsAndKeepsDaemonSets", drainEvicts},
	{"DrainBlockedByPDBNamesIt", drainBlocked},
	{"RunNodeStepsReportsEachStepAndTheTarget", runNodeSteps},
	{"NodeObserver/SeesTheNamedNodesAsTheyAreNow", observeNodes},
	{"NodeObserver/UnknownNodeIsAnError", observeUnknown},
	{"DriftReporter/DriftAgainstTheConfigANodeRuns", driftReported},
	{"ConfigObserver/AdoptsOnlyANodeThatCarriesTheConfig", configObserved},
	{"HealthGater/PassOnAHealthyNode", healthyPasses},
	{"HealthGater/NotReadyFailsTheReadyGate", notReadyFails},
	{"HealthGater/NodeAddress", nodeAddress},
	{"DegradedMarker/MarkedUntilTheNextUpdate", degradedMarked},
	{"CommandChecker/RunsOnlyWhatWasPublished", commandChecks},
	{"Claimer/OneApplyAtATime", claimsOneApply},
	{"Claimer/IntentsRideTheirAction", intentsRideTheirAction},
	{"WatchSharer/SharedWatchesSeeChanges", sharedWatches},
	{"RequestCounter/NeverGoesBack", requestsCounted},
	{"TemplatePatcher/SetsTheImageOnlyFromWhatWasObserved", templatePatched},
	{"UserDataStore/SetOnlyOverWhatWasObserved", userDataStored},
	{"Adapter/FindsWhatTheProviderImplements", adapterFindsCapabilities},
	{"Adapter/FallbacksOfAProviderWithoutCapabilities", adapterFallbacks},
}

// Run checks every promise against providers built by newProvider, each on a fleet of its
// own (most on the Standard fixture).
func Run(t *testing.T, newProvider New) {
	for _, p := range promises {
		t.Run(p.name, func(t *testing.T) { p.check(t, newProvider) })
	}
}

// capability is p as a C, or the test skipped naming C when p does not implement it.
func capability[C any](t *testing.T, p providers.Provider, name, does string) C {
	t.Helper()
	c, ok := p.(C)
	if !ok {
		t.Skipf("the provider %s (it does not implement providers.%s)", does, name)
	}
	return c
}

var ctx = context.Background()

func findPDB(f *model.Fleet, name string) *model.PDB {
	for i := range f.PDBs {
		if f.PDBs[i].Name == name {
			return &f.PDBs[i]
		}
	}
	return nil
}

func node(t *testing.T, p providers.Provider, name string) model.Node {
	t.Helper()
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return model.Node{}
}

// FromSpec builds the provider spec declares from settings given as Go values (as
// model.BlockSpec.With takes them), checked as the configuration language checks a
// block: for a provider's tests of its Spec.
func FromSpec[P providers.Provider](spec providers.Spec, given map[string]any) (P, error) {
	var none P
	s, err := spec.With(given)
	if err != nil {
		return none, err
	}
	p, err := spec.New(s)
	if err != nil {
		return none, err
	}
	built, ok := p.(P)
	if !ok {
		return none, fmt.Errorf("spec %s built a %T", spec.Name, p)
	}
	return built, nil
}
