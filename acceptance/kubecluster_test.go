package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/deploy"
	"github.com/mcpfleet/mcp/nodeexec"
)

// The kube tests share one control plane (k8senv.Shared, stopped by TestMain) with deploy/
// applied once. Each test is a fleet of its own on it, as docs/kubernetes.md's "Several
// configurations on one cluster" says: its Nodes are named and labelled for it
// (fleetLabel), its configuration's provider block selects them alone (fleet_selector),
// and its state, command checks and workloads are in namespaces of its own, with deploy/'s
// Roles copied into them. So tests run side by side, and adding one adds no control plane.
// A test that stops, pauses or starves the apiserver, or changes what is cluster-wide
// (CRDs, deploy/ itself), starts its own with newPrivateKubeCluster or k8senv.Start, saying
// why where it does.

// fleetLabel is the label of a test's Nodes; its value is the test's id.
const fleetLabel = "acceptance.mcpfleet.io/test"

// sharedOptions start the shared plane. The validatingadmissionpolicy status controller
// type-checks deploy/'s policy for TestKubeAgentPolicy.
var sharedOptions = k8senv.Options{Controllers: []string{"disruption", "serviceaccount", "validatingadmissionpolicy-status-controller"}}

var (
	deployOnce sync.Once
	deployErr  error
	fleetIDs   atomic.Int32
)

// sharedKube is the shared plane with deploy/ applied.
func sharedKube(t *testing.T) *k8senv.Env {
	t.Helper()
	env := k8senv.Shared(t, sharedOptions)
	deployOnce.Do(func() {
		if deployErr = createObjects(env, deploy.Manifests, nil); deployErr == nil {
			deployErr = createObjects(env, fleetLockManifests(), nil)
		}
	})
	if deployErr != nil {
		t.Fatalf("applying deploy/ to the shared control plane: %v", deployErr)
	}
	return env
}

// kubeCluster is a test's fleet on a real control plane with mcp deployed as deploy/ says:
// the manifests applied, `mcp serve` running as the mcp-server service account, one `mcp
// agent` process per node running as mcp-agent (each with a scratch root and a boot-id
// file, restarted with a new boot id when it exits for a reboot), and plan/apply running as
// mcp-apply. Everything mcp does here goes through the RBAC of deploy/.
//
// Tests name nodes as their pools do ("worker-0") to the harness (node, agents, startAgent);
// on the cluster and in what mcp prints they are name("worker-0"), which is unique to the
// test ("t07-worker-0").
type kubeCluster struct {
	env    *k8senv.Env
	bin    string
	dir    string // the configuration
	server string // the boot server's URL
	kc     map[string]string
	agents map[string]*kubeAgent // by the test's name of the node
	// id names the test's fleet: its nodes' prefix and fleetLabel value, its namespaces'
	// prefix ("" for a harness that names its own, as the conformance suite's).
	id string
	// stateNS holds the state, mcpNS the command checks (the provider's namespace), demo
	// the test's workloads (pods, PDBs).
	stateNS, mcpNS, demo string
	// stateBlock is main.hcl's state block (header).
	stateBlock string
	// nextRebootDelay is how long the next node to reboot stays down (its agent exited for
	// the reboot) before its agent starts again; it is used once, then zero.
	nextRebootDelay atomic.Int64
}

type kubeAgent struct {
	root, bootID string
	boots        atomic.Int32
	log          string

	mu      sync.Mutex
	reboots map[string]int // reboots by the rendered config they were into (the pending record's target)
}

// rebootsInto returns how many times the node rebooted into each rendered config.
func (a *kubeAgent) rebootsInto() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.reboots)
}

// recordReboot counts a reboot under the target of the agent's pending reboot record,
// which the agent writes before it asks for the reboot.
func (a *kubeAgent) recordReboot() {
	target := "(no pending record)"
	var p struct {
		Target struct {
			Name string `json:"name"`
		} `json:"target"`
	}
	if b, err := os.ReadFile(filepath.Join(a.root, nodeexec.PendingPath)); err == nil && json.Unmarshal(b, &p) == nil {
		target = p.Target.Name
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reboots[target]++
}

// kubeMain is a configuration's provider and state blocks as docs/kubernetes.md installs
// them (a cluster of one fleet); the tests' own are kubeCluster.header's.
const kubeMain = `provider "kubernetes" {}

state {
  backend   = "kubernetes"
  namespace = "mcp-state"
}

variable "ntp_server" { default = "time.example.com" }
`

// newKubeCluster makes the test's fleet on the shared plane: writes the configuration
// (header and the pools and configs given), creates the nodes — pools maps a pool to its
// node count —, starts the boot server and an agent on every node but those named silent.
func newKubeCluster(t *testing.T, hcl string, pools map[string]int, silent ...string) *kubeCluster {
	t.Helper()
	return newKubeClusterOn(t, sharedKube(t), hcl, pools, silent)
}

// newPrivateKubeCluster is newKubeCluster on a control plane of the test's own, with
// deploy/ applied, for a test that must stop, pause or starve the apiserver; setup, when
// given, changes the fleet before its configuration is written and its boot server starts.
func newPrivateKubeCluster(t *testing.T, hcl string, pools map[string]int, setup ...func(*kubeCluster)) *kubeCluster {
	t.Helper()
	env := k8senv.Start(t, k8senv.Options{})
	t.Logf("private control plane up in %v", env.StartupTime.Round(time.Millisecond))
	applyManifests(t, env, deploy.Manifests)
	return newKubeClusterOn(t, env, hcl, pools, nil, setup...)
}

func newKubeClusterOn(t *testing.T, env *k8senv.Env, hcl string, pools map[string]int, silent []string, setup ...func(*kubeCluster)) *kubeCluster {
	t.Helper()
	c := newFleet(t, env)
	for _, s := range setup {
		s(c)
	}
	c.writeConfig(t, hcl)
	zones := []string{"a", "b"}
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		for i := range pools[pool] {
			c.addNode(t, fmt.Sprintf("%s-%d", pool, i), pool, zones[i%len(zones)])
		}
	}
	c.startServer(t)
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		for i := range pools[pool] {
			if node := fmt.Sprintf("%s-%d", pool, i); !slices.Contains(silent, node) {
				c.startAgent(t, node)
			}
		}
	}
	// As on a fleet that runs: every agent's first report is in before the test plans (one
	// landing between a plan and its apply moves the fleet on, and apply starts nothing).
	c.waitAnnounced(t)
	return c
}

// newFleet makes the test's fleet on env, with no nodes yet: its id, its namespaces with
// deploy/'s Roles, the kubeconfigs of deploy/'s identities, and the removal of its nodes
// when the test ends.
func newFleet(t *testing.T, env *k8senv.Env) *kubeCluster {
	t.Helper()
	id := fmt.Sprintf("t%02d", fleetIDs.Add(1))
	c := &kubeCluster{bin: mcpBinary(t), env: env, dir: t.TempDir(), kc: map[string]string{}, agents: map[string]*kubeAgent{},
		id: id, stateNS: id + "-state", mcpNS: id + "-system", demo: id + "-demo",
		stateBlock: fmt.Sprintf("state {\n  backend   = \"kubernetes\"\n  namespace = %q\n}\n", id+"-state")}
	t.Logf("fleet %s: nodes %s-*, namespaces %s, %s, %s", id, id, c.stateNS, c.mcpNS, c.demo)
	c.namespaces(t)
	for _, sa := range []string{"mcp-apply", "mcp-server", "mcp-agent", "mcp-fleetlock"} {
		c.kc[sa] = env.KubeconfigFor(t, "mcp-system", sa)
	}
	t.Cleanup(func() { c.removeNodes(t) }) // after the agents stop (cleanups run last first)
	return c
}

// name is the cluster's name of the test's node ("worker-0" → "t07-worker-0").
func (c *kubeCluster) name(node string) string {
	if c.id == "" {
		return node
	}
	return c.id + "-" + node
}

// short is the test's name of a node the cluster names ("t07-worker-0" → "worker-0").
func (c *kubeCluster) short(name string) string {
	if c.id == "" {
		return name
	}
	return strings.TrimPrefix(name, c.id+"-")
}

// fleet is the label selector of the test's Nodes.
func (c *kubeCluster) fleet() string { return fleetLabel + "=" + c.id }

// addNode creates the test's Node in pool (its node-role label) and zone, in its fleet.
func (c *kubeCluster) addNode(t *testing.T, node, pool, zone string) *corev1.Node {
	t.Helper()
	labels := map[string]string{fleetLabel: c.id, "node-role.kubernetes.io/" + pool: ""}
	if zone != "" {
		labels["topology.kubernetes.io/zone"] = zone
	}
	return c.env.AddNode(t, c.name(node), labels)
}

// addPod creates a Running, Ready pod in the test's workload namespace on its node (see
// k8senv.Env.AddPod).
func (c *kubeCluster) addPod(t *testing.T, name, node string, labels map[string]string, daemonSet bool) {
	t.Helper()
	c.env.AddPod(t, c.demo, name, c.name(node), labels, daemonSet)
}

// addPDB creates a PodDisruptionBudget in the test's workload namespace (k8senv.Env.AddPDB).
func (c *kubeCluster) addPDB(t *testing.T, name string, selector map[string]string, minAvailable int) {
	t.Helper()
	c.env.AddPDB(t, c.demo, name, selector, minAvailable)
}

// header is main.hcl's provider and state blocks: the provider selects the test's fleet
// alone and keeps the command checks in its namespace; provider adds settings to it.
func (c *kubeCluster) header(provider ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"kubernetes\" {\n  fleet_selector = %q\n  namespace      = %q\n", c.fleet(), c.mcpNS)
	for _, p := range provider {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	fmt.Fprintf(&b, "}\n\n%s\nvariable \"ntp_server\" { default = \"time.example.com\" }\n", c.stateBlock)
	return b.String()
}

// writeConfig writes main.hcl: the header (with the provider settings given) and hcl.
func (c *kubeCluster) writeConfig(t *testing.T, hcl string, provider ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "main.hcl"), []byte(c.header(provider...)+hcl), 0o644); err != nil {
		t.Fatal(err)
	}
}

// namespaces creates the test's namespaces, with deploy/'s and deploy/fleetlock's Roles and
// RoleBindings of mcp-state in its state namespace and those of mcp-system in its mcpNS
// (their subjects stay the service accounts of mcp-system), as a second configuration on a
// cluster has them.
func (c *kubeCluster) namespaces(t *testing.T) {
	t.Helper()
	for _, ns := range []string{c.stateNS, c.mcpNS, c.demo} {
		c.env.EnsureNamespace(t, ns)
	}
	rbac := map[string]string{"mcp-state": c.stateNS, "mcp-system": c.mcpNS}
	for _, fsys := range []fs.FS{deploy.Manifests, fleetLockManifests()} {
		if err := createObjects(c.env, fsys, func(u *unstructured.Unstructured) bool {
			ns, ok := rbac[u.GetNamespace()]
			if k := u.GetKind(); !ok || k != "Role" && k != "RoleBinding" {
				return false
			}
			u.SetNamespace(ns)
			return true
		}); err != nil {
			t.Fatalf("copying deploy/'s Roles into the test's namespaces: %v", err)
		}
	}
}

// fleetLockManifests is deploy/fleetlock, the opt-in identity of mcp serve -fleetlock.
func fleetLockManifests() fs.FS {
	sub, err := fs.Sub(deploy.FleetLock, "fleetlock")
	if err != nil {
		panic(err) // an embed's own directory
	}
	return sub
}

// removeNodes deletes the test's Nodes, the pods bound to them and its workloads' pods,
// so that kwok, and every other test's refresh, has less to do. The namespaces stay (no
// namespace controller runs); their names are the test's alone.
func (c *kubeCluster) removeNodes(t *testing.T) {
	if c.id == "" {
		return
	}
	ctx := context.Background()
	nodes := c.env.Client.CoreV1().Nodes()
	list, err := nodes.List(ctx, metav1.ListOptions{LabelSelector: c.fleet()})
	if err != nil {
		t.Logf("listing the test's nodes to remove them: %v", err)
		return
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	for _, n := range list.Items {
		if err := nodes.Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("removing node %s: %v", n.Name, err)
		}
		pods, _ := c.env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		for _, p := range pods.Items {
			c.env.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, now)
		}
	}
	c.env.Client.CoreV1().Pods(c.demo).DeleteCollection(ctx, now, metav1.ListOptions{})
}

// copyQuickstart puts the quickstart's configs (not its local provider and fleet) in dir.
func copyQuickstart(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"configs.hcl", "chrony.conf.tpl", "node-exporter.service"} {
		b, err := os.ReadFile(filepath.Join("../examples/quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mcp runs the mcp command in the configuration's directory as the service account sa.
// An apply runs once: agents' reports landing between its plan and its first node no
// longer make it start nothing (docs/decisions.md, "An apply's own plan, derived again").
func (c *kubeCluster) mcp(t *testing.T, sa string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kc[sa])
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mcp %v: %v", args, err)
	}
	return string(out), code
}

func (c *kubeCluster) startServer(t *testing.T) {
	t.Helper()
	c.server = c.startServe(t, "mcp-server")
}

// startServe runs `mcp serve` with args as the service account sa until the test ends, and
// returns its URL once it answers /healthz.
func (c *kubeCluster) startServe(t *testing.T, sa string, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, _ := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	cmd := exec.Command(c.bin, append([]string{"serve", "-listen", addr}, args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = c.dir, logf, logf
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kc[sa])
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("mcp serve %v log:\n%s", args, lastLines(string(b), 30))
		}
	})
	url := "http://" + addr
	waitUntil(t, 30*time.Second, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, func() string { return fmt.Sprintf("mcp serve %v did not answer /healthz in 30s", args) })
	return url
}

// waitUntil polls cond until it holds, failing the test with failure() after within.
func waitUntil(t *testing.T, within time.Duration, cond func() bool, failure func() string) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(failure())
		}
	}
}

// agentKubeconfig is the agent's credential on node (the cluster's name): as in the
// DaemonSet, a token of mcp-agent bound to its pod on the node (owned by deploy/'s
// DaemonSet mcp-agent, so a drain leaves it), which the ValidatingAdmissionPolicy
// mcp-agent-own-node holds to that Node. A cluster built without deploy/ (c.kc["mcp-agent"]
// set to another identity) keeps it.
func (c *kubeCluster) agentKubeconfig(t *testing.T, node string) string {
	t.Helper()
	if c.kc["mcp-agent"] != "" && c.kc["mcp-agent"] == c.env.Kubeconfig {
		return c.env.Kubeconfig
	}
	ds, err := c.env.Client.AppsV1().DaemonSets("mcp-system").Get(context.Background(), "mcp-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agent's DaemonSet: %v", err)
	}
	yes := true
	return c.env.KubeconfigForPod(t, "mcp-system", "mcp-agent", node, &metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes})
}

// startAgent runs the agent of the test's node as a DaemonSet would, restarting it when it
// exits; an exit for a reboot (75) comes back with a new boot id, as the machine would.
func (c *kubeCluster) startAgent(t *testing.T, node string) {
	t.Helper()
	root, bootID := scratchRoot(t)
	a := &kubeAgent{root: root, bootID: bootID, log: filepath.Join(t.TempDir(), node+".log"), reboots: map[string]int{}}
	a.boots.Store(1)
	c.agents[node] = a
	logf, err := os.Create(a.log)
	if err != nil {
		t.Fatal(err)
	}
	bin := agentBinary(t)
	kc := c.agentKubeconfig(t, c.name(node))
	args := []string{"-node", c.name(node), "-server", c.server, "-root", root,
		"-host=record", "-boot-id-file", bootID, "-interval", "2s"}
	if c.mcpNS != "" {
		args = append(args, "-namespace", c.mcpNS)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
			cmd.Stdout, cmd.Stderr = logf, logf
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 75 {
				a.recordReboot()
				select { // the machine is down
				case <-ctx.Done():
				case <-time.After(time.Duration(c.nextRebootDelay.Swap(0))):
				}
				n := a.boots.Add(1)
				os.WriteFile(bootID, []byte(fmt.Sprintf("boot-%d\n", n)), 0o644)
				continue
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second): // crashed: the DaemonSet would restart it
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(a.log)
			t.Logf("agent %s log:\n%s", node, lastLines(string(b), 15))
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// node is the test's node as the cluster has it now.
func (c *kubeCluster) node(t *testing.T, node string) *corev1.Node {
	t.Helper()
	n, err := c.env.Client.CoreV1().Nodes().Get(context.Background(), c.name(node), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// applyManifests creates every object of the manifests, in file order, as
// `kubectl apply -f deploy/` would on a new cluster.
func applyManifests(t *testing.T, env *k8senv.Env, fsys fs.FS) {
	t.Helper()
	if err := createObjects(env, fsys, nil); err != nil {
		t.Fatal(err)
	}
}

// createObjects creates the objects of the manifests in fsys, in file order, that keep
// accepts (which may change them first; nil: every one). One that exists is left as it is.
func createObjects(env *k8senv.Env, fsys fs.FS, keep func(*unstructured.Unstructured) bool) error {
	client, err := objectClients(env)
	if err != nil {
		return err
	}
	files, _ := fs.Glob(fsys, "*.yaml")
	for _, f := range files {
		b, _ := fs.ReadFile(fsys, f)
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err == io.EOF {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 || keep != nil && !keep(&u) {
				continue
			}
			gvk := u.GroupVersionKind()
			ri, err := client(&u)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if _, err := ri.Create(context.Background(), &u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: creating %s %s: %w", f, gvk.Kind, u.GetName(), err)
			}
		}
	}
	return nil
}

// objectClients returns what gives, for an object, the dynamic client of its resource (in
// its namespace, if it has one), found through the apiserver's discovery.
func objectClients(env *k8senv.Env) (func(u *unstructured.Unstructured) (dynamic.ResourceInterface, error), error) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.RESTConfig)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		return nil, err
	}
	return func(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gvk, err)
		}
		if ns := u.GetNamespace(); ns != "" {
			return dyn.Resource(m.Resource).Namespace(ns), nil
		}
		return dyn.Resource(m.Resource), nil
	}, nil
}
