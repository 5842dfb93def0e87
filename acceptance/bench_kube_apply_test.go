package acceptance

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/kubernetes/kagent"
	"github.com/mcpfleet/mcp/providers/kubernetes/protocol"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// The rollout of BenchmarkKubeApply: kubeApplyNodes kwok nodes in the four pools of
// kubeBenchPools, each pool's max_unavailable kubeApplyBudget, every agent taking
// kubeApplyStep for its update.
const (
	kubeApplyNodes  = 1000
	kubeApplyBudget = 25
	kubeApplyStep   = 5 * time.Second
)

// kubeApplyHCL is the configuration; %s is chrony's server, the change rolled out.
const kubeApplyHCL = `provider "kubernetes" {}

state {
  backend = "local"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = %[1]d
}

pool "infra" {
  node_selector   = { "node-role.kubernetes.io/infra" = "" }
  max_unavailable = %[1]d
}

pool "storage" {
  node_selector   = { "node-role.kubernetes.io/storage" = "" }
  max_unavailable = %[1]d
}

pool "gpu" {
  node_selector   = { "node-role.kubernetes.io/gpu" = "" }
  max_unavailable = %[1]d
}

config "50-chrony" {
  pools = ["worker", "infra", "storage", "gpu"]
  file "/etc/chrony.conf" {
    content   = "server %[2]s iburst\n"
    on_change = ["restart:chronyd.service"]
  }
}
`

// BenchmarkKubeApply measures `mcp apply` of an in-place change on 1,000 kwok nodes of a
// real apiserver through the agent protocol. The agents' side is one goroutine that
// answers each Node's hand-over as mcp-agent does (kagent.NodeState: Working, each step's
// progress, Done), taking kubeApplyStep per update. It reports the API requests mcp made
// per node updated and the makespan against the limit the budgets set, ceil(N/k)·T, and
// writes the "kube-apply" section of docs/benchmarks.md. `make bench-kube` runs it.
func BenchmarkKubeApply(b *testing.B) {
	mcp := kubeBenchMCP(b)
	env := k8senv.Start(b, k8senv.Options{})
	sv, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		b.Fatal(err)
	}
	rc := rest.CopyConfig(env.RESTConfig)
	rc.QPS, rc.Burst = 5000, 10000
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	kubeApplyCreate(b, client)
	b.Logf("%d kwok nodes Ready in %v", kubeApplyNodes, time.Since(t0).Round(time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agents := &benchAgents{client: client}
	agents.run(ctx, b)

	dir := b.TempDir()
	write := func(server string) {
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(kubeApplyHCL, kubeApplyBudget, server)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	runEnv := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	parallelism := fmt.Sprint(kubeApplyBudget * len(kubeBenchPools))

	// The fleet onto its first config, agents answering at once: not measured.
	write("time.example.com")
	t0 = time.Now()
	first := kubeApplyRun(b, mcp, dir, runEnv, parallelism)
	b.Logf("first rollout (agents instant): %d nodes in %v, %d API requests", first.updated, time.Since(t0).Round(time.Millisecond), first.requests)

	// The measured change.
	write("time2.example.com")
	agents.step.Store(int64(kubeApplyStep))
	before := agents.handovers.Load()
	r := kubeApplyRun(b, mcp, dir, runEnv, parallelism)
	if r.updated != kubeApplyNodes || agents.handovers.Load()-before != kubeApplyNodes {
		b.Fatalf("updated %d nodes through %d hand-overs, want %d", r.updated, agents.handovers.Load()-before, kubeApplyNodes)
	}
	kubeApplyCheck(b, client, dir, mcp, runEnv)

	perPool := kubeApplyNodes / len(kubeBenchPools)
	limit := time.Duration(math.Ceil(float64(perPool)/kubeApplyBudget)) * kubeApplyStep
	ratio := float64(r.makespan) / float64(limit)
	perNode := float64(r.requests) / float64(r.updated)
	b.ReportMetric(perNode, "api-requests/node")
	b.ReportMetric(ratio, "makespan/limit")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var s strings.Builder
	fmt.Fprintf(&s, "## mcp apply against a real apiserver\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-kube` (acceptance/bench_kube_apply_test.go, BenchmarkKubeApply):\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "the control plane of acceptance/k8senv (etcd, kube-apiserver %s, kube-controller-manager,\n", sv.GitVersion)
	fmt.Fprintf(&s, "kwok) on loopback with %d kwok nodes in %d pools, each pool's `max_unavailable = %d`\n", kubeApplyNodes, len(kubeBenchPools), kubeApplyBudget)
	fmt.Fprintf(&s, "(k = %d nodes at once per pool, `-parallelism %s`), local state. The change is in place\n", kubeApplyBudget, parallelism)
	fmt.Fprintf(&s, "(a file and a unit restart: no cordon, no drain). The agents' side is one process that\n")
	fmt.Fprintf(&s, "answers each node's hand-over through the agent protocol as mcp-agent does (Working,\n")
	fmt.Fprintf(&s, "each step's progress, Done), taking T = %s per update. The real `mcp apply -auto-approve\n", kubeApplyStep)
	fmt.Fprintf(&s, "-json` counts its own API requests (after its refresh and plan) and timestamps its events;\n")
	fmt.Fprintf(&s, "the makespan is from the first node's first step to the last node's end, after its\n")
	fmt.Fprintf(&s, "health gates. Everything shares the 2 cores.\n\n")
	fmt.Fprintf(&s, "| measure | result | target |\n|---|---|---|\n")
	fmt.Fprintf(&s, "| nodes updated | %d | |\n", r.updated)
	fmt.Fprintf(&s, "| API requests of the rollout | %d | |\n", r.requests)
	fmt.Fprintf(&s, "| API requests per node updated | %.2f | ≤ 10 (%s) |\n", perNode, verdict(perNode <= 10))
	fmt.Fprintf(&s, "| makespan | %s | |\n", ms(r.makespan))
	fmt.Fprintf(&s, "| limit ceil(N/k)·T, N = %d per pool | %s | |\n", perPool, ms(limit))
	fmt.Fprintf(&s, "| makespan / limit | %.3f× | ≤ 1.1× (%s) |\n", ratio, verdict(ratio <= 1.1))
	fmt.Fprintf(&s, "| mcp apply wall (with refresh, plan, state) | %s | |\n\n", ms(r.wall))
	fmt.Fprintf(&s, "Per node the rollout patches its hand-over and lists its pods from the API server's watch\n")
	fmt.Fprintf(&s, "cache (the DaemonSet gate; a watch only while one is not Ready). The start-of-node budget checks, the look for an earlier hand-over,\n")
	fmt.Fprintf(&s, "the waits for the agents and the Ready gates read one shared watch of the nodes\n")
	fmt.Fprintf(&s, "(providers/kubernetes/watch.go). mcp's client allows 200 requests a second. The agent\n")
	fmt.Fprintf(&s, "reports a step's progress off the steps' path, and the last step's progress goes out with\n")
	fmt.Fprintf(&s, "Done in one patch (kagent.NodeState): 3 patches per update where there were 4, none of\n")
	fmt.Fprintf(&s, "them in the way of the next step.\n")
	if err := benchdoc.WriteSection("../docs/benchmarks.md", "kube-apply", s.String()); err != nil {
		b.Fatal(err)
	}
	b.Logf("\n%s", s.String())
}

// kubeApplyCreate creates kubeApplyNodes kwok nodes (pools round-robin, as kubeBenchNode
// names them) and waits until kwok has made every one Ready.
func kubeApplyCreate(b *testing.B, c kubernetes.Interface) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	work := make(chan int)
	errs := make(chan error, kubeBenchWorkers)
	var wg sync.WaitGroup
	for range kubeBenchWorkers {
		wg.Go(func() {
			for i := range work {
				name, pool, zone := kubeBenchNode(i)
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
					Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
						"node-role.kubernetes.io/" + pool: "", "topology.kubernetes.io/zone": zone},
					Annotations: map[string]string{k8senv.FakeNodeAnnotation: "fake"}}}
				if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- fmt.Errorf("creating node %s: %w", name, err):
					default:
					}
				}
			}
		})
	}
	for i := range kubeApplyNodes {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	for {
		list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ready := 0
		for i := range list.Items {
			if k8senv.NodeReady(&list.Items[i]) {
				ready++
			}
		}
		if ready == kubeApplyNodes {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("only %d of %d kwok nodes Ready", ready, kubeApplyNodes)
		case <-time.After(time.Second):
		}
	}
}

// benchAgents plays every node's agent: on a hand-over it has not answered, it reports
// Working, then each step's progress and Done, through kagent.NodeState (the agent's own
// reporting code), spread over step.
type benchAgents struct {
	client    kubernetes.Interface
	step      atomic.Int64 // time.Duration per update
	handovers atomic.Int64 // updates answered

	mu   sync.Mutex
	busy map[string]string // node → update id being answered
}

func (a *benchAgents) run(ctx context.Context, b *testing.B) {
	a.busy = map[string]string{}
	handle := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		h, ok, err := protocol.ReadHandover(n.Annotations)
		if !ok || err != nil || protocol.ReadReport(n.Annotations).ObservedUpdateID == h.UpdateID {
			return
		}
		a.mu.Lock()
		if a.busy[n.Name] == h.UpdateID {
			a.mu.Unlock()
			return
		}
		a.busy[n.Name] = h.UpdateID
		a.mu.Unlock()
		go a.answer(ctx, b, n.Name, h)
	}
	lw := cache.NewListWatchFromClient(a.client.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, fields.Everything())
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, o any) { handle(o) }}})
	go ctrl.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		b.Fatal("the agents' watch of the nodes did not sync")
	}
}

func (a *benchAgents) answer(ctx context.Context, b *testing.B, node string, h protocol.Handover) {
	s := &kagent.NodeState{Nodes: a.client.CoreV1().Nodes(), Node: node,
		ReportError: func(err error) { b.Errorf("agent of %s: %v", node, err) }}
	s.Begin(h.UpdateID, 0)
	if err := s.Working(h.Desired); err != nil {
		b.Errorf("agent of %s: %v", node, err)
		return
	}
	per := time.Duration(a.step.Load()) / time.Duration(max(len(h.Steps), 1))
	for _, st := range h.Steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(per):
		}
		s.StepDone(st)
	}
	if len(h.Steps) == 0 {
		time.Sleep(per)
	}
	if err := s.Done(h.Desired); err != nil {
		b.Errorf("agent of %s: %v", node, err)
		return
	}
	a.handovers.Add(1)
}

// kubeApplyResult is what one `mcp apply -json` reported.
type kubeApplyResult struct {
	updated  int
	requests int64
	makespan time.Duration // first step start to last node-done
	wall     time.Duration
}

func kubeApplyRun(b *testing.B, mcp, dir string, env []string, parallelism string) kubeApplyResult {
	b.Helper()
	cmd := exec.Command(mcp, "apply", "-auto-approve", "-json", "-parallelism", parallelism, "-budget-wait", "30m")
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := kubeApplyResult{wall: time.Since(start)}
	if err != nil {
		b.Fatalf("mcp apply: %v\n%s\n%s", err, lastLines(stdout.String(), 20), stderr.String())
	}
	t, err := benchdoc.ReadApplyTrace(&stdout)
	if err != nil || t.Updated == 0 || t.APIRequests <= 0 {
		b.Fatalf("%v; %d updated, %d requests:\n%s", err, t.Updated, t.APIRequests, lastLines(stdout.String(), 20))
	}
	r.updated, r.requests, r.makespan = t.Updated, t.APIRequests, t.Makespan
	return r
}

// kubeApplyCheck: every node runs its pool's config, Done, and a new plan has nothing to do.
func kubeApplyCheck(b *testing.B, c kubernetes.Interface, dir, mcp string, env []string) {
	b.Helper()
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range list.Items {
		r := protocol.ReadReport(n.Annotations)
		if r.State != model.StateDone || r.Current == "" || r.Current != n.Annotations[protocol.DesiredConfig] {
			b.Fatalf("node %s: state %q current %q desired %q", n.Name, r.State, r.Current, n.Annotations[protocol.DesiredConfig])
		}
	}
	cmd := exec.Command(mcp, "plan", "-detailed-exitcode", "-no-color", "-lock=false")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("plan after the rollout: %v\n%s", err, lastLines(string(out), 20))
	}
}
