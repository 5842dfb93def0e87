// Package k8senv starts a real Kubernetes control plane on loopback for acceptance tests:
// etcd, kube-apiserver (RBAC, service-account tokens), kube-controller-manager running the
// disruption and serviceaccount controllers (so PodDisruptionBudget status is computed the
// real way), and kwok, which plays the kubelet for fake nodes: it makes them Ready, makes
// their pods Running and Ready, and deletes evicted pods.
//
// The binaries come from `make bin/k8s` (scripts/build-k8s-tools.sh), found through
// MCP_K8S_BIN or <module root>/bin/k8s. When they are missing a test is skipped, unless CI
// is set or MCP_REQUIRE_K8S=1, in which case it fails. Everything Start creates is stopped
// and removed on t.Cleanup; when the test failed, the tail of every process log is printed.
package k8senv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Binaries (and the kwok stages file) that must be in the bin directory.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok", StagesFile}

// StagesFile is kwok's Stage configuration (node and pod "fast" stages from kwok's module),
// written next to the binaries by scripts/build-k8s-tools.sh.
const StagesFile = "kwok-stages.yaml"

// FakeNodeAnnotation marks the nodes kwok manages; AddNode sets it.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// Options tune Start. The zero value is what most tests want.
type Options struct {
	// StartTimeout bounds the whole start-up (default 90s: a loaded 2-core machine).
	StartTimeout time.Duration
	// APIServerArgs are appended to kube-apiserver's flags (later flags win).
	APIServerArgs []string
	// Controllers for kube-controller-manager (default disruption,serviceaccount).
	Controllers []string
}

// Env is a running control plane. Its fields are read-only.
type Env struct {
	// Kubeconfig is the path of a kubeconfig file with admin (system:masters) credentials,
	// for subprocesses such as `mcp` or kubectl.
	Kubeconfig string
	// RESTConfig holds the same admin credentials.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// BinDir is where the binaries were found.
	BinDir string
	// Dir is the scratch directory (PKI, logs, etcd data); removed on cleanup.
	Dir string
	// StartupTime is how long Start took, from the first process to a usable plane.
	StartupTime time.Duration

	pki      *pki
	procs    []*process
	stopOnce sync.Once
}

// Start starts etcd, kube-apiserver, kube-controller-manager and kwok, waits until the
// apiserver is ready and the controller manager works, and returns the Env, stopped on
// t.Cleanup. It calls t.Skip or t.Fatal when the binaries are missing (see the package
// comment), and t.Fatal when the plane does not come up. A test that does not stop, pause
// or starve its plane, nor change what is cluster-wide, should use Shared instead.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	bin := binDir(t)
	e, err := start(bin, opts)
	if e != nil {
		t.Cleanup(func() { // runs before the scratch directory is removed (Stop)
			if t.Failed() {
				t.Log(e.LogTails(40))
			}
			e.Stop()
		})
	}
	if err != nil {
		t.Fatalf("k8senv: starting the control plane (binaries in %s): %v", bin, err)
	}
	return e
}

// shared is the plane Shared starts once for the test binary.
var shared struct {
	once sync.Once
	env  *Env
	err  error
}

// Shared returns the test binary's one plane, started by the first test that asks for it
// (with that test's opts: every caller should pass the same) and stopped by StopShared,
// which the package's TestMain calls after its tests. Tests on it share one apiserver, so
// each keeps to Nodes, namespaces and cluster-wide objects of its own; a test that stops,
// pauses or starves the apiserver, or changes what is cluster-wide, uses Start. It skips or
// fails as Start does when the binaries are missing; when the plane did not come up, every
// test that asks fails.
func Shared(t testing.TB, opts Options) *Env {
	t.Helper()
	bin := binDir(t)
	shared.once.Do(func() { shared.env, shared.err = start(bin, opts) })
	if shared.err != nil {
		t.Fatalf("k8senv: starting the shared control plane (binaries in %s): %v", bin, shared.err)
	}
	return shared.env
}

// StopShared stops the plane Shared started, if it did; when failed (the tests' exit code
// is not zero) it first prints the tail of each process's log to stderr.
func StopShared(failed bool) {
	if shared.env == nil {
		return
	}
	if failed || shared.err != nil {
		fmt.Fprint(os.Stderr, shared.env.LogTails(40))
	}
	shared.env.Stop()
}

// start starts a plane from the binaries in bin. On an error the Env returned (when not
// nil) holds what did start, for its logs and Stop.
func start(bin string, opts Options) (*Env, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if len(opts.Controllers) == 0 {
		opts.Controllers = []string{"disruption", "serviceaccount"}
	}
	began := time.Now()
	dir, err := scratchDir()
	if err != nil {
		return nil, err
	}
	e := &Env{BinDir: bin, Dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := e.start(ctx, opts); err != nil {
		return e, err
	}
	e.StartupTime = time.Since(began)
	return e, nil
}

// Stop ends every process of the plane (the last started first) and removes its scratch
// directory. It may be called more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		for _, p := range slices.Backward(e.procs) {
			p.stop()
		}
		os.RemoveAll(e.Dir)
	})
}

// LogTails is the last n lines of every process's log, for a failure's report.
func (e *Env) LogTails(n int) string {
	var b strings.Builder
	for _, p := range e.procs {
		fmt.Fprintf(&b, "k8senv: last lines of %s (%s):\n%s\n", p.name, p.logPath, tailFile(p.logPath, n))
	}
	return b.String()
}

func (e *Env) start(ctx context.Context, opts Options) error {
	dirs := map[string]string{}
	for _, d := range []string{"pki", "etcd", "logs", "home"} {
		dirs[d] = filepath.Join(e.Dir, d)
		if err := os.MkdirAll(dirs[d], 0o700); err != nil {
			return err
		}
	}
	p, err := newPKI(dirs["pki"])
	if err != nil {
		return fmt.Errorf("generating PKI: %w", err)
	}
	e.pki = p
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	host := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := e.writeAdminConfig(host); err != nil {
		return err
	}

	run := func(name string, args ...string) (*process, error) {
		pr, err := startProcess(name, filepath.Join(e.BinDir, name), e.Dir, dirs["logs"], []string{"HOME=" + dirs["home"]}, args...)
		if err == nil {
			e.procs = append(e.procs, pr)
		}
		return pr, err
	}
	// etcd and the apiserver start together: the apiserver retries etcd until it answers.
	if _, err := run("etcd",
		"--name=k8senv", "--data-dir="+dirs["etcd"],
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=k8senv="+peerURL, "--initial-cluster-state=new",
		"--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return err
	}
	apiArgs := append(apiserverArgs(p, etcdURL, ports[2], dirs["pki"]), opts.APIServerArgs...)
	if _, err := run("kube-apiserver", apiArgs...); err != nil {
		return err
	}
	if err := e.waitReady(ctx); err != nil {
		return err
	}
	if _, err := run("kube-controller-manager",
		"--kubeconfig="+e.Kubeconfig,
		"--controllers="+strings.Join(opts.Controllers, ","),
		"--leader-elect=false", "--secure-port=0"); err != nil {
		return err
	}
	if _, err := run("kwok",
		"--kubeconfig="+e.Kubeconfig,
		"--config="+filepath.Join(e.BinDir, StagesFile),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		"--node-ip=10.1.0.1", "--cidr=10.2.0.0/16",
		"--node-port=0"); err != nil { // no kwok server: nothing here needs exec/logs
		return err
	}
	// The serviceaccount controller creates "default" in every namespace; pods cannot be
	// admitted without it, so it is the controller manager's readiness signal.
	if hasController(opts.Controllers, "serviceaccount") {
		if err := e.waitServiceAccount(ctx, "default", "default"); err != nil {
			return fmt.Errorf("waiting for the controller manager: %w", err)
		}
	}
	return e.alive()
}

// apiserverArgs are kube-apiserver's flags: loopback, the PKI's certificates, RBAC,
// service-account tokens.
func apiserverArgs(p *pki, etcdURL string, port int, certDir string) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + p.path(servingCertFile), "--tls-private-key-file=" + p.path(servingKeyFile),
		"--client-ca-file=" + p.path(caCertFile),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.path(saPubFile),
		"--service-account-signing-key-file=" + p.path(saKeyFile),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC", "--allow-privileged=true",
		// No kubelet and loopback only: don't maintain the kubernetes Endpoints (it would
		// log "may not be in the loopback range" forever).
		"--endpoint-reconciler-type=none",
	}
}

// alive returns an error if any process has exited.
func (e *Env) alive() error {
	var errs []error
	for _, p := range e.procs {
		errs = append(errs, p.dead())
	}
	return errors.Join(errs...)
}

// waitReady polls /readyz with the admin credential until it answers "ok".
func (e *Env) waitReady(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := e.alive(); err != nil {
			return false, err
		}
		body, err := e.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return strings.TrimSpace(string(body)) == "ok", nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("kube-apiserver not ready (last /readyz error: %v): %w", last, err)
	}
	return err
}

func (e *Env) waitServiceAccount(ctx context.Context, ns, name string) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := e.alive(); err != nil {
			return false, err
		}
		_, err := e.Client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// writeAdminConfig writes the admin kubeconfig and builds RESTConfig and Client from it.
func (e *Env) writeAdminConfig(host string) error {
	cfg := kubeconfig(host, e.pki.caPEM, &clientcmdapi.AuthInfo{
		ClientCertificateData: e.pki.adminCertPEM,
		ClientKeyData:         e.pki.adminKey,
	})
	e.Kubeconfig = filepath.Join(e.Dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, e.Kubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400 // tests are bursty; the apiserver is ours alone
	e.RESTConfig = rc
	e.Client, err = kubernetes.NewForConfig(rc)
	return err
}

func kubeconfig(host string, ca []byte, user *clientcmdapi.AuthInfo) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["k8senv"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["user"] = user
	cfg.Contexts["k8senv"] = &clientcmdapi.Context{Cluster: "k8senv", AuthInfo: "user", Namespace: corev1.NamespaceDefault}
	cfg.CurrentContext = "k8senv"
	return cfg
}

// RSS returns the resident set size in bytes of each control-plane process, by name.
func (e *Env) RSS() (map[string]uint64, error) {
	out := map[string]uint64{}
	var errs []error
	for _, p := range e.procs {
		n, err := p.rss()
		out[p.name] = n
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// Pid returns the process id of the named control-plane process ("etcd", "kube-apiserver",
// "kube-controller-manager", "kwok"), or 0 when there is none.
func (e *Env) Pid(name string) int {
	if p := e.proc(name); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Pause stops the named control-plane process with SIGSTOP: it stays alive and keeps its
// sockets, so the kernel still accepts connections and acknowledges what clients send, but
// nothing answers — a hung or partitioned server, which no client notices by a refused
// connection. The returned resume sends SIGCONT; it may be called more than once, and it is
// called on cleanup in any case.
func (e *Env) Pause(t testing.TB, name string) (resume func()) {
	t.Helper()
	p := e.proc(name)
	if p == nil {
		t.Fatalf("k8senv: no process %q to pause", name)
	}
	if err := p.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("k8senv: pausing %v", err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := p.signal(syscall.SIGCONT); err != nil {
				t.Errorf("k8senv: resuming %v", err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

func (e *Env) proc(name string) *process {
	for _, p := range e.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

func hasController(cs []string, name string) bool {
	for _, c := range cs {
		if c == name || c == "*" {
			return true
		}
	}
	return false
}

// binDir finds the control-plane binaries, or skips or fails the test when they are missing.
func binDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MCP_K8S_BIN")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			missing(t, err)
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing(t, fmt.Errorf("%s: %w", b, err))
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func missing(t testing.TB, err error) {
	t.Helper()
	msg := fmt.Sprintf("the Kubernetes control-plane binaries are not built (%v): run `make bin/k8s` "+
		"(make test does), or point MCP_K8S_BIN at a directory with etcd, kube-apiserver, "+
		"kube-controller-manager, kwok and %s", err, StagesFile)
	if os.Getenv("CI") != "" || os.Getenv("MCP_REQUIRE_K8S") == "1" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPING the real-Kubernetes acceptance test: " + msg + "; set MCP_REQUIRE_K8S=1 to make this a failure")
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// scratchDir is a fresh directory on tmpfs (/dev/shm) when there is one, so etcd's writes
// cost nothing; otherwise under the system's temporary directory. Stop removes it.
func scratchDir() (string, error) {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "k8senv-"); err == nil {
			return d, nil
		}
	}
	return os.MkdirTemp("", "k8senv-")
}
