package acceptance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// stateMoveSection is the heading of docs/kubernetes.md's section that moves an earlier
// install's state from mcp-system to mcp-state.
const stateMoveSection = "### Moving the state of an earlier install to mcp-state"

// TestStateMoveToOwnNamespace runs every command of docs/kubernetes.md's "Moving the state
// of an earlier install to mcp-state" against the real apiserver, on an install as deploy/
// left it before mcp-state: the state (its head, chunks and rendered configs) and the lock
// in mcp-system, the Roles that let the boot server and the drift runner read mcp-system's
// Secrets, and the drift runner's configuration naming mcp-system. After them the state
// reads back the same from mcp-state, nothing of it is left in mcp-system but the command
// checks, and the boot server and the drift runner may read no Secret there.
func TestStateMoveToOwnNamespace(t *testing.T) {
	waiting(t)
	cmds := sectionCommands(t, stateMoveSection)
	// A control plane of its own: an install as deploy/ left it before mcp-state, whose
	// Roles in mcp-system the page deletes.
	env := k8senv.Start(t, k8senv.Options{})
	kubectlBinary(t, env)
	ctx := context.Background()
	env.EnsureNamespace(t, "mcp-system")

	// The earlier install's state, cut into chunks, with two rendered configs; its lock; and
	// the command checks, which stay.
	old := kubestate.New(env.Client, "mcp-system", kubestate.Options{ChunkSize: 64})
	st := state.New()
	for _, pool := range []string{"worker", "infra"} {
		r := &model.Rendered{Pool: pool, IgnitionVersion: "3.4.0", Sources: []string{"10-" + pool}}
		r.Name = content.Name(r)
		st.Rendered[r.Name] = r
		st.Pointers[pool] = r.Name
	}
	if err := old.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	before, err := kubestate.New(env.Client, "mcp-system", kubestate.Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := countKinds(t, env, "mcp-system")[kubestate.KindChunk]; n == 0 {
		t.Fatal("the earlier state has no chunks: the move would not be tested on them")
	}
	if _, err := env.Client.CoordinationV1().Leases("mcp-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: protocol.LockLease, Namespace: "mcp-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checks := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: protocol.HealthSecret, Namespace: "mcp-system",
		Labels: map[string]string{protocol.ManagedByLabel: protocol.ManagedByValue, protocol.KindLabel: protocol.KindHealthChecks}},
		Data: map[string][]byte{protocol.HealthKey: []byte("{}")}}
	if _, err := env.Client.CoreV1().Secrets("mcp-system").Create(ctx, checks, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The earlier Roles of deploy/03-rbac-server.yaml and 30-drift.yaml, in mcp-system.
	for name, verbs := range map[string][]string{"mcp-server": {"list", "watch"}, "mcp-drift": {"get", "list"}} {
		rbac := env.Client.RbacV1()
		if _, err := rbac.Roles("mcp-system").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mcp-system"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbs}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.RoleBindings("mcp-system").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mcp-system"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "mcp-system"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The reader's configuration, its state block already changed (the page's prose step),
	// and the drift runner's ConfigMap as the earlier install made it.
	work := t.TempDir()
	repo, _ := filepath.Abs("..")
	if err := os.Symlink(filepath.Join(repo, "deploy"), filepath.Join(work, "deploy")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(work, "config"), 0o755)
	if err := os.WriteFile(filepath.Join(work, "config", "main.hcl"), []byte(kubeMain), 0o644); err != nil {
		t.Fatal(err)
	}
	earlier := strings.Replace(kubeMain, `namespace = "mcp-state"`, `namespace = "mcp-system"`, 1)
	if _, err := env.Client.CoreV1().ConfigMaps("mcp-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "mcp-config", Namespace: "mcp-system"}, Data: map[string]string{"main.hcl": earlier},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	path := env.BinDir + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, c := range cmds {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", c)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docs/kubernetes.md: %s: %v\n%s", c, err, out)
		}
	}

	after, err := kubestate.New(env.Client, "mcp-state", kubestate.Options{}).Read(ctx)
	if err != nil {
		t.Fatalf("the state in mcp-state after the move: %v", err)
	}
	if b, a := stateJSON(t, before), stateJSON(t, after); a != b {
		t.Errorf("the state moved to mcp-state differs:\nbefore %s\nafter  %s", b, a)
	}
	if got := countKinds(t, env, "mcp-system"); len(got) != 1 || got[protocol.KindHealthChecks] != 1 {
		t.Errorf("mcp's Secrets left in mcp-system by kind: %v; want the command checks alone", got)
	}
	if got := countKinds(t, env, "mcp-state"); got[protocol.KindHealthChecks] != 0 || got[kubestate.KindRendered] != 2 {
		t.Errorf("mcp's Secrets in mcp-state by kind: %v", got)
	}
	if _, err := env.Client.CoordinationV1().Leases("mcp-system").Get(ctx, protocol.LockLease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the earlier lock in mcp-system: %v, want it deleted", err)
	}
	cm, err := env.Client.CoreV1().ConfigMaps("mcp-system").Get(ctx, "mcp-config", metav1.GetOptions{})
	if err != nil || cm.Data["main.hcl"] != kubeMain {
		t.Errorf("ConfigMap mcp-config after the move: %v; main.hcl %q", err, cm.Data["main.hcl"])
	}
	for _, sa := range []string{"mcp-server", "mcp-drift"} {
		cs := env.ClientAs(t, "system:serviceaccount:mcp-system:"+sa, "system:serviceaccounts", "system:serviceaccounts:mcp-system")
		if selfCan(t, cs, "list", "", "secrets", "", "mcp-system") || selfCanNamed(t, cs, "get", "", "secrets", "mcp-server-token", "mcp-system") {
			t.Errorf("%s may still read Secrets of mcp-system after the move", sa)
		}
		if !selfCan(t, cs, "list", "", "secrets", "", "mcp-state") {
			t.Errorf("%s may not list the Secrets of mcp-state after the move", sa)
		}
	}
}

// countKinds counts mcp's Secrets in ns by their kind label.
func countKinds(t *testing.T, env *k8senv.Env, ns string) map[string]int {
	t.Helper()
	l, err := env.Client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kubestate.ManagedSelector().String()})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, s := range l.Items {
		n[s.Labels[protocol.KindLabel]]++
	}
	return n
}

// stateJSON is the state with its rendered configs, as JSON, for comparing.
func stateJSON(t *testing.T, st *state.State) string {
	t.Helper()
	b, err := json.Marshal(struct {
		State    *state.State
		Rendered map[string]*model.Rendered
	}{st, st.Rendered})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
