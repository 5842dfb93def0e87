package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// The fleet of BenchmarkKubePlan: kubeBenchNodes nodes, round-robin over the pools,
// kubeBenchPodsPerNode pods each spread over the namespaces, kubeBenchPDBs PDBs.
const (
	kubeBenchNodes       = 1000
	kubeBenchFirst       = 100 // the nodes of the first, single plan (requests vs. size)
	kubeBenchPodsPerNode = 3
	kubeBenchPDBs        = 10
	kubeBenchRuns        = 7
	kubeBenchWorkers     = 16
)

var (
	kubeBenchPools = []string{"worker", "infra", "storage", "gpu"}
	kubeBenchZones = []string{"a", "b", "c"}
	kubeBenchNS    = []string{"web", "batch", "data", "monitoring"}
)

const kubeBenchHCL = `provider "kubernetes" {}

# Only the refresh talks to the apiserver.
state {
  backend = "local"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = "10%"
}

pool "infra" {
  node_selector   = { "node-role.kubernetes.io/infra" = "" }
  max_unavailable = 1
}

pool "storage" {
  node_selector   = { "node-role.kubernetes.io/storage" = "" }
  max_unavailable = "5%"
}

pool "gpu" {
  node_selector   = { "node-role.kubernetes.io/gpu" = "" }
  max_unavailable = 2
}

config "00-motd" {
  pools = ["worker", "infra", "storage", "gpu"]
  file "/etc/motd" {
    content   = "This node's configuration is managed by mcp.\n"
    on_change = ["none"]
  }
}

config "50-chrony" {
  pools = ["worker", "infra", "storage", "gpu"]
  file "/etc/chrony.conf" {
    content   = "server time.example.com iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n"
    on_change = ["restart:chronyd.service"]
  }
}

config "60-node-exporter" {
  pools = ["worker", "storage", "gpu"]
  file "/etc/sysconfig/node-exporter" {
    mode      = "0600"
    content   = "OPTIONS=--collector.systemd --web.listen-address=:9100\n"
    on_change = ["restart:node-exporter.service"]
  }
  unit "node-exporter.service" {
    enabled  = true
    contents = "[Service]\nExecStart=/usr/bin/node_exporter\n[Install]\nWantedBy=multi-user.target\n"
  }
}

config "70-storage-sysctl" {
  pools = ["storage"]
  file "/etc/sysctl.d/70-storage.conf" {
    content = "vm.dirty_ratio = 10\nvm.dirty_background_ratio = 5\n"
  }
}

config "80-gpu-kargs" {
  pools       = ["gpu"]
  kernel_args = ["iommu=pt", "intel_iommu=on"]
}
`

// BenchmarkKubePlan measures `mcp plan` against a real kube-apiserver holding 1,000 nodes,
// 3,000 pods and 10 PDBs, alternating with `kubectl get nodes,pods -A -o json` against the
// same apiserver, and writes the "kube" section of docs/benchmarks.md. It is a benchmark so
// that `make test` never runs it: `make bench-kube`. The whole measurement is one
// iteration (-benchtime 1x); b.N is ignored.
func BenchmarkKubePlan(b *testing.B) {
	mcp := kubeBenchMCP(b)
	env := k8senv.Start(b, k8senv.Options{})
	kubectl := os.Getenv("MCP_KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join(env.BinDir, "kubectl")
	}
	if _, err := os.Stat(kubectl); err != nil {
		b.Fatalf("kubectl not found (%v): run `scripts/build-k8s-tools.sh kubectl` (make bench-kube does), or set MCP_KUBECTL", err)
	}
	sv, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("control plane %s up in %v", sv.GitVersion, env.StartupTime.Round(time.Millisecond))

	// A client of our own without client-side rate limits: the apiserver is ours alone.
	rc := rest.CopyConfig(env.RESTConfig)
	rc.QPS, rc.Burst = 5000, 10000
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	for _, ns := range kubeBenchNS {
		env.EnsureNamespace(b, ns)
	}

	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(kubeBenchHCL), 0o644); err != nil {
		b.Fatal(err)
	}
	home := b.TempDir() // kubectl's discovery cache
	runEnv := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "HOME="+home)

	// First 100 nodes, their pods and the PDBs; one plan.
	t0 := time.Now()
	kubeBenchCreate(b, client, 0, kubeBenchFirst)
	kubeBenchPDBsCreate(b, env, client)
	b.Logf("created %d nodes, %d pods, %d PDBs in %v", kubeBenchFirst, kubeBenchFirst*kubeBenchPodsPerNode,
		kubeBenchPDBs, time.Since(t0).Round(time.Millisecond))
	small := kubeBenchPlan(b, mcp, dir, runEnv, "")
	kubeBenchCheck(b, small.stats, kubeBenchFirst)
	b.Logf("plan at %d nodes: %v, %d API requests", kubeBenchFirst, small.wall.Round(time.Millisecond), small.stats.APIRequests)

	// The rest.
	t0 = time.Now()
	kubeBenchCreate(b, client, kubeBenchFirst, kubeBenchNodes)
	b.Logf("created %d more nodes and %d pods in %v", kubeBenchNodes-kubeBenchFirst,
		(kubeBenchNodes-kubeBenchFirst)*kubeBenchPodsPerNode, time.Since(t0).Round(time.Millisecond))

	// One run of each first, not measured: kubectl fills its discovery cache (as it would
	// have on an operator's machine), both binaries are in the page cache.
	kubeBenchCheck(b, kubeBenchPlan(b, mcp, dir, runEnv, "").stats, kubeBenchNodes)
	kubeBenchKubectl(b, kubectl, dir, runEnv)
	kubectlRequests := kubeBenchKubectlRequests(b, kubectl, dir, runEnv)

	var plans []kubePlanRun
	var kwalls, kcpus []time.Duration
	var ksize int64
	for i := 0; i < kubeBenchRuns; i++ {
		p := kubeBenchPlan(b, mcp, dir, runEnv, "")
		kubeBenchCheck(b, p.stats, kubeBenchNodes)
		plans = append(plans, p)
		kw, kc, size := kubeBenchKubectl(b, kubectl, dir, runEnv)
		kwalls, kcpus, ksize = append(kwalls, kw), append(kcpus, kc), size
		b.Logf("run %d: mcp plan %v (CPU %v, refresh %v, %d requests, RSS %.1f MB), kubectl get %v (CPU %v)", i+1,
			p.wall.Round(time.Millisecond), p.cpu.Round(time.Millisecond), p.stats.Duration.Round(time.Millisecond),
			p.stats.APIRequests, float64(p.rss)/1024, kw.Round(time.Millisecond), kc.Round(time.Millisecond))
	}
	// MCP_KUBE_BENCH_HOLD=DURATION keeps the control plane up that long after the runs, to
	// look at it by hand with the kubeconfig logged here.
	if d, err := time.ParseDuration(os.Getenv("MCP_KUBE_BENCH_HOLD")); err == nil && d > 0 {
		b.Logf("holding the control plane for %v: KUBECONFIG=%s HOME=%s, configuration in %s", d, env.Kubeconfig, home, dir)
		fmt.Fprintf(os.Stderr, "KUBECONFIG=%s HOME=%s DIR=%s\n", env.Kubeconfig, home, dir)
		time.Sleep(d)
	}
	if prof := os.Getenv("MCP_KUBE_BENCH_CPUPROFILE"); prof != "" {
		p := kubeBenchPlan(b, mcp, dir, runEnv, prof)
		b.Logf("profiled plan: %v; CPU profile in %s", p.wall.Round(time.Millisecond), prof)
	}

	var walls, refreshes, cpus []time.Duration
	var reqs []int64
	var peak int64
	for _, p := range plans {
		walls = append(walls, p.wall)
		refreshes = append(refreshes, p.stats.Duration)
		cpus = append(cpus, p.cpu)
		reqs = append(reqs, p.stats.APIRequests)
		peak = max(peak, p.rss)
	}
	slices.Sort(walls)
	slices.Sort(refreshes)
	slices.Sort(kwalls)
	slices.Sort(cpus)
	slices.Sort(kcpus)
	slices.Sort(reqs)
	med, worst := walls[len(walls)/2], walls[len(walls)-1]
	kmed, kworst := kwalls[len(kwalls)/2], kwalls[len(kwalls)-1]
	ratio := float64(med) / float64(kmed)
	last := plans[len(plans)-1].stats
	b.ReportMetric(float64(med)/1e6, "mcp-plan-ms")
	b.ReportMetric(float64(kmed)/1e6, "kubectl-get-ms")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(reqs[len(reqs)-1]), "api-requests/plan")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	reqRange := fmt.Sprint(reqs[0])
	if reqs[0] != reqs[len(reqs)-1] {
		reqRange = fmt.Sprintf("%d–%d", reqs[0], reqs[len(reqs)-1])
	}
	pages := func(n int) int { return (n + 499) / 500 }
	// The machine templates' two LISTs (MachineSets, MachineDeployments) are one page each
	// here, where none exist (mcp status shows templates even when no pool manages them).
	const templateLists = 2
	expected := int64(pages(last.Nodes) + pages(last.Pods) + pages(last.PDBs) + templateLists)
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }

	var s strings.Builder
	fmt.Fprintf(&s, "## mcp plan against a real apiserver\n\n")
	fmt.Fprintf(&s, "Measured %s by `make bench-kube` (acceptance/bench_kube_test.go, BenchmarkKubePlan): a real\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&s, "control plane (etcd, kube-apiserver %s, kube-controller-manager; acceptance/k8senv) on\n", sv.GitVersion)
	fmt.Fprintf(&s, "loopback holding %d Ready nodes in %d pools and 3 zones, %d pods bound to them (Running,\n", last.Nodes, len(kubeBenchPools), last.Pods)
	fmt.Fprintf(&s, "Ready) in %d namespaces and %d PodDisruptionBudgets. The real `mcp plan -json -lock=false`\n", len(kubeBenchNS), last.PDBs)
	fmt.Fprintf(&s, "(kubernetes provider, local state, %d pools and 5 configs, every node needing an update) and\n", len(kubeBenchPools))
	fmt.Fprintf(&s, "`kubectl get nodes,pods -A -o json` (kubectl %s built from the same release) ran against\n", sv.GitVersion)
	fmt.Fprintf(&s, "the same apiserver in the same run, alternately, %d times each after one unmeasured run of\n", kubeBenchRuns)
	fmt.Fprintf(&s, "each; wall time is the process's, output to a file. The apiserver, etcd and both clients\n")
	fmt.Fprintf(&s, "share the 2 cores. mcp's wall time includes loading and rendering the configuration,\n")
	fmt.Fprintf(&s, "the refresh (nodes, pods and PDBs: paged LISTs of 500, side by side), planning and\n")
	fmt.Fprintf(&s, "writing the plan JSON.\n\n")
	fmt.Fprintf(&s, "| measure | result | target |\n|---|---|---|\n")
	fmt.Fprintf(&s, "| mcp plan wall, median of %d | %s | |\n", kubeBenchRuns, ms(med))
	fmt.Fprintf(&s, "| mcp plan wall, worst | %s | |\n", ms(worst))
	fmt.Fprintf(&s, "| of which refresh (median) | %s | |\n", ms(refreshes[len(refreshes)/2]))
	fmt.Fprintf(&s, "| mcp plan CPU, user + system (median) | %s | |\n", ms(cpus[len(cpus)/2]))
	fmt.Fprintf(&s, "| kubectl get nodes,pods -A -o json wall, median of %d | %s | |\n", kubeBenchRuns, ms(kmed))
	fmt.Fprintf(&s, "| kubectl get wall, worst | %s | |\n", ms(kworst))
	fmt.Fprintf(&s, "| kubectl get CPU, user + system (median); output | %s; %.1f MB of JSON | |\n", ms(kcpus[len(kcpus)/2]), float64(ksize)/1e6)
	fmt.Fprintf(&s, "| ratio of medians, mcp plan / kubectl get | %.2f× | ≤ 1.5× (%s) |\n", ratio, verdict(ratio <= 1.5))
	fmt.Fprintf(&s, "| API requests per plan, %d nodes | %s | a constant few, paged (%s) |\n", last.Nodes, reqRange,
		verdict(reqs[0] == reqs[len(reqs)-1] && reqs[len(reqs)-1] <= expected))
	fmt.Fprintf(&s, "| API requests per plan, %d nodes (%d pods, same PDBs) | %d | |\n", small.stats.Nodes, small.stats.Pods, small.stats.APIRequests)
	if kubectlRequests > 0 {
		fmt.Fprintf(&s, "| API requests of kubectl get (discovery cached), %d nodes | %d | |\n", last.Nodes, kubectlRequests)
	}
	fmt.Fprintf(&s, "| mcp plan peak RSS, worst run | %.1f MB | |\n\n", float64(peak)/1024)
	fmt.Fprintf(&s, "API requests: one LIST per page of 500, so %d nodes, %d pods and %d PDBs are %d + %d + %d, and the two LISTs\n",
		last.Nodes, last.Pods, last.PDBs, pages(last.Nodes), pages(last.Pods), pages(last.PDBs))
	fmt.Fprintf(&s, "of machine templates (MachineSets, MachineDeployments; none here) %d more: %d\n", templateLists, expected)
	fmt.Fprintf(&s, "pages; the count grows with pages, never with nodes one by one (no per-node or per-pod GET).\n")
	fmt.Fprintf(&s, "kubectl pages its LISTs the same way (--chunk-size 500); compare the CPU rows for where each\n")
	fmt.Fprintf(&s, "process spends its time.\n")
	if err := benchdoc.WriteSection("../docs/benchmarks.md", "kube", s.String()); err != nil {
		b.Fatal(err)
	}
	b.Logf("\n%s", s.String())
}

// kubeBenchMCP is $MCP (make bench-kube passes bin/mcp), else a fresh build.
func kubeBenchMCP(b *testing.B) string {
	if p := os.Getenv("MCP"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			b.Fatal(err)
		}
		return abs
	}
	p := filepath.Join(b.TempDir(), "mcp")
	if out, err := exec.Command("go", "build", "-o", p, "../cmd/mcp").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return p
}

// kubeBenchNode is the i-th node: pools round-robin, zones in turn within a pool.
func kubeBenchNode(i int) (name, pool, zone string) {
	pool = kubeBenchPools[i%len(kubeBenchPools)]
	n := i / len(kubeBenchPools)
	return fmt.Sprintf("%s-%03d", pool, n), pool, kubeBenchZones[n%len(kubeBenchZones)]
}

// kubeBenchCreate creates nodes [from, to) with kubeBenchWorkers workers: each node not
// managed by kwok, made Ready through its status, then its pods, bound and made Running and
// Ready through their status (no kubelet runs: these are objects only).
func kubeBenchCreate(b *testing.B, c kubernetes.Interface, from, to int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	work := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for w := 0; w < kubeBenchWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if ctx.Err() != nil {
					continue // drain after a failure
				}
				if err := kubeBenchCreateNode(ctx, c, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func kubeBenchCreateNode(ctx context.Context, c kubernetes.Interface, i int) error {
	name, pool, zone := kubeBenchNode(i)
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname":          name,
			"kubernetes.io/os":                "linux",
			"kubernetes.io/arch":              "amd64",
			"node-role.kubernetes.io/" + pool: "",
			"topology.kubernetes.io/zone":     zone,
			"topology.kubernetes.io/region":   "bench",
		}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
	}
	n, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure",
				LastHeartbeatTime: now, LastTransitionTime: now},
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.1.%d.%d", i/256, i%256)},
			{Type: corev1.NodeHostName, Address: name}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("%032x", i), BootID: fmt.Sprintf("boot-%d", i),
			KernelVersion: "6.12.0", OSImage: "Fedora CoreOS 42", ContainerRuntimeVersion: "cri-o://1.34.0",
			KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64",
		},
	}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("making node %s Ready: %w", name, err)
	}
	for k := 0; k < kubeBenchPodsPerNode; k++ {
		m := i*kubeBenchPodsPerNode + k
		ns := kubeBenchNS[m%len(kubeBenchNS)]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, k), Namespace: ns,
				Labels: map[string]string{"app": fmt.Sprintf("app-%d", m%kubeBenchPDBs)}},
			Spec: corev1.PodSpec{
				NodeName: name,
				Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
			},
		}
		p, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, pod.Name, err)
		}
		p.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: n.Status.Addresses[0].Address, StartTime: &now,
			PodIP: fmt.Sprintf("10.%d.%d.%d", 64+i/256, i%256, 10+k),
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, Image: "registry.k8s.io/pause:3.10",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
		}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("making pod %s/%s Running: %w", ns, pod.Name, err)
		}
	}
	return nil
}

// kubeBenchPDBsCreate creates the PDBs: PDB j selects app-j in namespace j%len(NS) (pod m
// has app-(m%10) in namespace m%4, so each PDB has a share of the pods), minAvailable 1.
func kubeBenchPDBsCreate(b *testing.B, env *k8senv.Env, c kubernetes.Interface) {
	b.Helper()
	one := intstr.FromInt32(1)
	for j := 0; j < kubeBenchPDBs; j++ {
		ns := kubeBenchNS[j%len(kubeBenchNS)]
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", j), Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", j)}}},
		}
		if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating PDB %s/%s: %v", ns, pdb.Name, err)
		}
	}
	for j := 0; j < kubeBenchPDBs; j++ {
		env.WaitPDB(b, kubeBenchNS[j%len(kubeBenchNS)], fmt.Sprintf("app-%d", j), func(*policyv1.PodDisruptionBudget) bool { return true })
	}
}

type kubePlanRun struct {
	wall, cpu time.Duration // cpu: user + system
	rss       int64         // KiB
	stats     model.RefreshStats
}

// cpuTime is a finished process's user + system time.
func cpuTime(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// kubeBenchPlan runs `mcp plan -json -lock=false` once; with prof, under MCP_CPUPROFILE.
func kubeBenchPlan(b *testing.B, mcp, dir string, env []string, prof string) kubePlanRun {
	b.Helper()
	out := filepath.Join(dir, "plan.json")
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(mcp, "plan", "-json", "-lock=false")
	cmd.Dir, cmd.Env, cmd.Stdout = dir, env, f
	if prof != "" {
		cmd.Env = append(slices.Clone(env), "MCP_CPUPROFILE="+prof)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rss := peakRSS(cmd.Process.Pid)
	err = cmd.Wait()
	wall := time.Since(start)
	peak := rss()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 2) {
		b.Fatalf("mcp plan: %v\n%s", err, stderr.String())
	}
	body, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	var doc struct {
		MCP struct {
			Refresh *model.RefreshStats `json:"refresh"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		b.Fatalf("mcp plan -json: %v\n%.500s", err, body)
	}
	if doc.MCP.Refresh == nil {
		b.Fatalf("mcp plan -json has no mcp.refresh:\n%.500s", body)
	}
	return kubePlanRun{wall: wall, cpu: cpuTime(cmd.ProcessState), rss: peak, stats: *doc.MCP.Refresh}
}

// kubeBenchCheck fails unless the plan saw the whole fleet.
func kubeBenchCheck(b *testing.B, rs model.RefreshStats, nodes int) {
	b.Helper()
	if rs.Nodes != nodes || rs.Pods != nodes*kubeBenchPodsPerNode || rs.PDBs != kubeBenchPDBs {
		b.Fatalf("plan refreshed %d nodes, %d pods, %d PDBs; want %d, %d, %d", rs.Nodes, rs.Pods, rs.PDBs,
			nodes, nodes*kubeBenchPodsPerNode, kubeBenchPDBs)
	}
}

// kubeBenchKubectl runs `kubectl get nodes,pods -A -o json` once and returns its wall and
// CPU time and the size of its output.
func kubeBenchKubectl(b *testing.B, kubectl, dir string, env []string) (wall, cpu time.Duration, size int64) {
	b.Helper()
	f, err := os.Create(filepath.Join(dir, "kubectl.json"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(kubectl, "get", "nodes,pods", "-A", "-o", "json")
	cmd.Dir, cmd.Env, cmd.Stdout = dir, env, f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("kubectl get: %v\n%s", err, stderr.String())
	}
	wall = time.Since(start)
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return wall, cpuTime(cmd.ProcessState), st.Size()
}

// kubeRequestLine is a request in kubectl's -v=6 log: `"Response" verb="GET" url="https://…"`
// (structured logging), or `GET https://… 200 OK` (older releases).
var kubeRequestLine = regexp.MustCompile(`(?m)(verb="[A-Z]+" url="https?://|\b(GET|POST|PUT|PATCH|DELETE) https?://)`)

// kubeBenchKubectlRequests counts the HTTP requests of one (unmeasured) kubectl get, from
// its -v=6 log; 0 if the log cannot be read.
func kubeBenchKubectlRequests(b *testing.B, kubectl, dir string, env []string) int {
	b.Helper()
	cmd := exec.Command(kubectl, "get", "nodes,pods", "-A", "-o", "json", "-v=6")
	cmd.Dir, cmd.Env, cmd.Stdout = dir, env, nil
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("kubectl get -v=6: %v\n%s", err, stderr.String())
	}
	return len(kubeRequestLine.FindAllIndex(stderr.Bytes(), -1))
}
