package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/engine/config"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
)

// secretStore is a provider with user-data Secrets in memory, around the local provider.
type secretStore struct {
	providers.Provider
	mu      sync.Mutex
	secrets map[string][]byte // "ns/name/key"
}

func (s *secretStore) UserData(_ context.Context, ns, name, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.secrets[ns+"/"+name+"/"+key]
	return v, ok, nil
}

func (s *secretStore) SetUserData(_ context.Context, ns, name, key string, v []byte, from string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := ""
	if old, ok := s.secrets[ns+"/"+name+"/"+key]; ok {
		now = providers.Digest(old)
	}
	if now != from {
		return fmt.Errorf("changed since the plan")
	}
	s.secrets[ns+"/"+name+"/"+key] = v
	return nil
}

func TestUserDataPlannedAppliedAndStale(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qs")
	if err := os.CopyFS(dir, os.DirFS("../examples/quickstart")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "token"), []byte("t0k3n-1\n"), 0o600)
	f, _ := os.OpenFile(filepath.Join(dir, "main.hcl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`
boot_image "fcos" { os_image = "quay.io/fedora/fedora-coreos:stable" }
pool "edge" {
  node_selector = { "node-role.kubernetes.io/edge" = "" }
  os_image      = "quay.io/fedora/fedora-coreos:stable"
  boot_image {
    user_data {
      secret     = "openshift-machine-api/edge-user-data"
      url        = "https://boot.example:8443"
      token_file = "token"
    }
  }
}
`)
	f.Close()
	ctx := context.Background()
	load := func() (*Workspace, *secretStore) {
		w, _, diags := Load(dir, config.Options{}, localParts)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return w, nil
	}
	w, _ := load()
	store := &secretStore{Provider: w.Provider, secrets: map[string][]byte{}}
	w.Provider = store
	st, _ := w.ReadState(ctx)
	userData := func(w *Workspace) *planner.UserDataPlan {
		t.Helper()
		pf, err := w.Plan(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range pf.Plan.BootImages {
			if b.Pool == "edge" {
				return b.UserData
			}
		}
		t.Fatal("no boot image plan for pool edge")
		return nil
	}
	if u := userData(w); u.Action != planner.UserDataCreate || u.From != "" {
		t.Fatalf("first plan: %+v", u)
	}
	pf, _ := w.Plan(ctx, st)
	if _, err := w.Apply(ctx, st, pf, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	v := string(store.secrets["openshift-machine-api/edge-user-data/userData"])
	for _, want := range []string{`"source": "https://boot.example:8443/config/edge"`, `"value": "Bearer t0k3n-1"`} {
		if !strings.Contains(v, want) {
			t.Errorf("secret lacks %s:\n%s", want, v)
		}
	}
	if u := userData(w); u.Action != planner.UserDataNoOp {
		t.Errorf("after apply: %+v", u)
	}

	// A renewed token is a planned update of the Secret.
	os.WriteFile(filepath.Join(dir, "token"), []byte("t0k3n-2\n"), 0o600)
	u := userData(w)
	if u.Action != planner.UserDataUpdate || u.From != providers.Digest([]byte(v)) {
		t.Errorf("renewed token: %+v", u)
	}
	// The Secret edited by hand after the plan: the saved plan is stale, nothing written.
	pf, _ = w.Plan(ctx, st)
	store.secrets["openshift-machine-api/edge-user-data/userData"] = []byte("hand-edited")
	if _, err := w.Apply(ctx, st, pf, ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "saved plan") {
		t.Errorf("apply of a stale plan: %v", err)
	}
	if got := string(store.secrets["openshift-machine-api/edge-user-data/userData"]); got != "hand-edited" {
		t.Errorf("stale apply overwrote the Secret: %s", got)
	}
}
