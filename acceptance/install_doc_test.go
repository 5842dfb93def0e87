package acceptance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/deploy"
	"github.com/mcpfleet/mcp/ignition"
)

// installSection is the heading of the page's section whose commands TestInstallFromZero runs.
const installSection = "## deploy/: install from zero"

// installCommands are the commands of the ```sh blocks of docs/kubernetes.md's install
// section, in order, a line ending in a backslash joined with the next: the test reads the
// page, so the page and the test cannot drift apart.
func installCommands(t *testing.T) []string { return sectionCommands(t, installSection) }

// sectionCommands are the commands of the ```sh blocks of docs/kubernetes.md's section
// under the heading (up to the next ## or ### heading), as installCommands.
func sectionCommands(t *testing.T, heading string) []string {
	return pageCommands(t, "../docs/kubernetes.md", heading)
}

// pageCommands are the commands of the ```sh blocks of the page under the heading ("": the
// whole page), as installCommands. A block tagged otherwise (```sh mco: what acts on a
// system the tests do not have) is not a command to run.
func pageCommands(t *testing.T, page, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in, block, cont := heading == "", false, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			in = true
			continue
		case in && heading != "" && !block && (strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ")):
			in = false
		}
		if !in {
			continue
		}
		l := strings.TrimSpace(line)
		switch {
		case !block && l == "```sh":
			block = true
		case block && l == "```":
			block = false
		case block && strings.HasSuffix(l, `\`):
			cont += strings.TrimSuffix(l, `\`)
		case block && l != "":
			cmds = append(cmds, cont+l)
			cont = ""
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("%s: no ```sh blocks under %q", page, heading)
	}
	return cmds
}

// TestInstallFromZero runs every command of docs/kubernetes.md's "deploy/: install from
// zero" against the real apiserver — openssl, kubectl (the real one, of the apiserver's
// release), mcp — in a scratch directory with the checkout's deploy/, and judges from the
// apiserver and the files: the Secrets hold a certificate chain the boot server can serve
// for the names the page gives, every manifest was server-side applied by kubectl with the
// images by digest, the drift runner's configuration is there, and the first node's
// pointer config reaches `mcp serve` (run as its service account with those Secrets) over
// verified TLS with the token.
func TestInstallFromZero(t *testing.T) {
	waiting(t)
	cmds := installCommands(t)
	// A control plane of its own: the page installs deploy/ on a cluster that has none.
	env := k8senv.Start(t, k8senv.Options{})
	kubectlBinary(t, env)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	// What the page names that this machine has not: the boot server's address (the API
	// load balancer's internal name and a control-plane host) becomes loopback, its port a
	// free one. Each entry must be used, so the table follows the page.
	substitutions := []struct{ example, here string }{
		{"api-int.example.com:22623", "localhost:" + strconv.Itoa(port)},
		{"DNS:api-int.example.com", "DNS:localhost"},
		{"IP:10.0.0.10", "IP:127.0.0.1"},
	}
	// Commands proven elsewhere, and where: each must be on the page.
	elsewhere := map[string]string{
		"make image IMAGE_REPO=registry.example/mcp": "scripts/image TestImage builds the index as make image does (twice: one digest; validated; entrypoint, user, version)",
	}

	work := t.TempDir()
	repo, _ := filepath.Abs("..")
	if err := os.Symlink(filepath.Join(repo, "deploy"), filepath.Join(work, "deploy")); err != nil {
		t.Fatal(err)
	}
	// config/ is the reader's configuration (step 4): one like apply runs in the cluster.
	os.Mkdir(filepath.Join(work, "config"), 0o755)
	userConfig := kubeMain + "\npool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker\" = \"\" }\n}\n"
	if err := os.WriteFile(filepath.Join(work, "config", "main.hcl"), []byte(userConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env.EnsureNamespace(t, "openshift-machine-api") // an OpenShift cluster has it
	path := filepath.Dir(mcpBinary(t)) + string(os.PathListSeparator) + env.BinDir + string(os.PathListSeparator) + os.Getenv("PATH")
	used := map[string]bool{}
	start := time.Now()
	for _, c := range cmds {
		if why, ok := elsewhere[c]; ok {
			used[c] = true
			t.Logf("not run here: %s — %s", c, why)
			continue
		}
		run := c
		for _, s := range substitutions {
			if strings.Contains(run, s.example) {
				run, used[s.example] = strings.ReplaceAll(run, s.example, s.here), true
			}
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", run)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docs/kubernetes.md: %s\n(run as: %s): %v\n%s", c, run, err, out)
		}
	}
	t.Logf("%d commands of the page run in %v", len(cmds)-len(elsewhere), time.Since(start).Round(time.Millisecond))
	for _, s := range substitutions {
		if !used[s.example] {
			t.Errorf("the substitution of %q is for no command of the page", s.example)
		}
	}
	for c := range elsewhere {
		if !used[c] {
			t.Errorf("%q is not on the page any more", c)
		}
	}

	// The Secrets: a certificate the CA signed for the Service and the substituted names.
	tlsSec, err := env.Client.CoreV1().Secrets("mcp-system").Get(ctx, "mcp-server-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(tlsSec.Data["ca.crt"]) || len(tlsSec.Data["tls.key"]) == 0 {
		t.Fatalf("Secret mcp-server-tls: no CA in ca.crt, or no tls.key (keys %v)", keysOf(tlsSec.Data))
	}
	blk, _ := pem.Decode(tlsSec.Data["tls.crt"])
	if blk == nil {
		t.Fatal("Secret mcp-server-tls: tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mcp-server.mcp-system.svc", "localhost", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("the boot server's certificate for %s: %v", name, err)
		}
	}
	tokSec, err := env.Client.CoreV1().Secrets("mcp-system").Get(ctx, "mcp-server-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokSec.Data["token"]))
	if raw, err := base64.StdEncoding.DecodeString(token); err != nil || len(raw) != 32 {
		t.Errorf("Secret mcp-server-token: token %q is not 32 random bytes in base64 (%v)", token, err)
	}

	// Every object of deploy/, server-side applied by kubectl, the images by digest.
	objs, err := deploy.Render()
	if err != nil {
		t.Fatal(err)
	}
	_, images, _ := deploy.Kustomization()
	if !strings.Contains(images[0].Ref(), "@sha256:") {
		t.Fatalf("deploy/kustomization.yaml names the image %s, not by digest", images[0].Ref())
	}
	client, err := objectClients(env)
	if err != nil {
		t.Fatal(err)
	}
	role := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": "mcp-apply-machinesets", "namespace": "openshift-machine-api"}}
	for _, o := range append(objs, role) {
		u := &unstructured.Unstructured{Object: o}
		gvk := u.GroupVersionKind()
		ri, err := client(u)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s/%s after the page's commands: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
			continue
		}
		applied := false
		for _, f := range got.GetManagedFields() {
			applied = applied || (f.Manager == "kubectl" && f.Operation == metav1.ManagedFieldsOperationApply)
		}
		if !applied {
			t.Errorf("%s %s/%s was not server-side applied by kubectl", gvk.Kind, u.GetNamespace(), u.GetName())
		}
		cs, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			if img := c.(map[string]any)["image"]; img != images[0].Ref() {
				t.Errorf("%s %s: image %v, want %s", gvk.Kind, u.GetName(), img, images[0].Ref())
			}
		}
	}
	cm, err := env.Client.CoreV1().ConfigMaps("mcp-system").Get(ctx, "mcp-config", metav1.GetOptions{})
	if err != nil || cm.Data["main.hcl"] != userConfig {
		t.Errorf("ConfigMap mcp-config: %v; main.hcl %q", err, cm.Data["main.hcl"])
	}

	// The first node's user-data: the pool's config at the substituted address, the CA and
	// the token of the Secrets.
	ign, err := os.ReadFile(filepath.Join(work, "worker.ign"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ignition.ParseAny(ign)
	if err != nil || len(cfg.Ignition.Config.Merge) != 1 || len(cfg.Ignition.Security.TLS.CertificateAuthorities) != 1 {
		t.Fatalf("worker.ign: %v\n%s", err, ign)
	}
	url := "https://localhost:" + strconv.Itoa(port) + "/config/worker"
	merge := cfg.Ignition.Config.Merge[0]
	if *merge.Source != url || len(merge.HTTPHeaders) != 1 || *merge.HTTPHeaders[0].Value != "Bearer "+token {
		t.Errorf("worker.ign fetches %s with headers %v; want %s with the token of mcp-server-token", *merge.Source, merge.HTTPHeaders, url)
	}
	ca := *cfg.Ignition.Security.TLS.CertificateAuthorities[0].Source
	if pemCA, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(ca, "data:;base64,")); err != nil || !bytes.Equal(pemCA, tlsSec.Data["ca.crt"]) {
		t.Errorf("worker.ign trusts %.60s…, not the CA of mcp-server-tls (%v)", ca, err)
	}

	// And it reaches the boot server: mcp serve as the Deployment runs it (its ConfigMap,
	// the Secrets' files, as mcp-server), over TLS verified with the pointer's CA alone.
	srv := t.TempDir()
	scm, err := env.Client.CoreV1().ConfigMaps("mcp-system").Get(ctx, "mcp-server-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(scm.Data["main.hcl"], `namespace = "mcp-state"`) {
		t.Errorf("ConfigMap mcp-server-config does not keep the state in mcp-state:\n%s", scm.Data["main.hcl"])
	}
	for name, data := range scm.Data {
		os.WriteFile(filepath.Join(srv, name), []byte(data), 0o644)
	}
	for name, data := range map[string][]byte{"tls.crt": tlsSec.Data["tls.crt"], "tls.key": tlsSec.Data["tls.key"], "token": tokSec.Data["token"]} {
		os.WriteFile(filepath.Join(srv, name), data, 0o600)
	}
	serve := exec.Command(mcpBinary(t), "-chdir="+srv, "serve", "-listen", "127.0.0.1:"+strconv.Itoa(port),
		"-tls-cert", filepath.Join(srv, "tls.crt"), "-tls-key", filepath.Join(srv, "tls.key"), "-token-file", filepath.Join(srv, "token"))
	serve.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigFor(t, "mcp-system", "mcp-server"))
	var log bytes.Buffer
	serve.Stdout, serve.Stderr = &log, &log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Signal(os.Interrupt); serve.Wait() })
	pool := x509.NewCertPool()
	pointerCA, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(ca, "data:;base64,"))
	pool.AppendCertsFromPEM(pointerCA)
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	status := func(path, auth string) (int, error) {
		req, _ := http.NewRequest("GET", "https://localhost:"+strconv.Itoa(port)+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var last error
	waitUntil(t, 30*time.Second, func() bool { _, last = status("/healthz", ""); return last == nil },
		func() string { return "mcp serve with the page's certificate: " + last.Error() + "\n" + log.String() })
	// No apply has run: not ready (Ignition retries a 503), and /config wants the token.
	for _, c := range []struct {
		path, auth string
		want       int
	}{{"/readyz", "", 503}, {"/config/worker", "", 401}, {"/config/worker", "Bearer wrong", 401}} {
		if got, err := status(c.path, c.auth); err != nil || got != c.want {
			t.Errorf("GET %s (Authorization %q): %d %v, want %d", c.path, c.auth, got, err, c.want)
		}
	}
	// Once apply (as mcp-apply, with the page's configuration) has written the state to
	// mcp-state, the server, as mcp-server, reads it there and serves the pool's config.
	apply := exec.Command(mcpBinary(t), "-chdir="+filepath.Join(work, "config"), "apply", "-auto-approve", "-no-color")
	apply.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigFor(t, "mcp-system", "mcp-apply"))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("mcp apply as mcp-apply: %v\n%s", err, out)
	}
	waitUntil(t, 30*time.Second, func() bool { got, _ := status("/readyz", ""); return got == 200 },
		func() string { return "mcp serve as mcp-server never read the state in mcp-state\n" + log.String() })
	if got, err := status("/config/worker", "Bearer "+token); err != nil || got != 200 {
		t.Errorf("GET /config/worker with the token: %d %v, want 200\n%s", got, err, log.String())
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
