package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine/planfile"
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
		pf, err := w.Plan(ctx, st, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range pf.File.Rollout.BootImages {
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
	pf, _ := w.Plan(ctx, st, PlanOptions{})
	if _, _, err := w.Apply(ctx, st, pf, ApplyOptions{}); err != nil {
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
	if u.Action != planner.UserDataUpdate || !u.TokenChanged || u.From != u.To {
		t.Errorf("renewed token: %+v", u)
	}
	// Neither the token nor an unkeyed hash of anything holding it is in the saved plan:
	// nothing against which a guessed token could be checked offline.
	pf, _ = w.Plan(ctx, st, PlanOptions{})
	saved := filepath.Join(t.TempDir(), "plan")
	if err := planfile.Write(saved, pf.File); err != nil {
		t.Fatal(err)
	}
	planBytes, _ := os.ReadFile(saved)
	want, _ := w.pointerConfigs()
	for what, secret := range map[string][]byte{"the token": []byte("t0k3n-2"), "the old token": []byte("t0k3n-1"),
		"the Secret's value": []byte(v), "the pointer config": want["edge"]} {
		if what == "the token" || what == "the old token" {
			if bytes.Contains(planBytes, secret) {
				t.Errorf("the saved plan holds %s", what)
			}
		}
		sum := sha256.Sum256(secret)
		for _, enc := range []string{hex.EncodeToString(sum[:]), base64.StdEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:])} {
			if bytes.Contains(planBytes, []byte(enc)) {
				t.Errorf("the saved plan holds the SHA-256 of %s (%s)", what, enc)
			}
		}
	}
	// The Secret edited by hand after the plan: the saved plan is stale, nothing written.
	pf, _ = w.Plan(ctx, st, PlanOptions{})
	store.secrets["openshift-machine-api/edge-user-data/userData"] = []byte("hand-edited")
	if _, _, err := w.Apply(ctx, st, Saved(pf.File), ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "saved plan") {
		t.Errorf("apply of a stale plan: %v", err)
	}
	if got := string(store.secrets["openshift-machine-api/edge-user-data/userData"]); got != "hand-edited" {
		t.Errorf("stale apply overwrote the Secret: %s", got)
	}

	// A token rotated with nothing else changed: the update is planned and applied, once.
	store.secrets["openshift-machine-api/edge-user-data/userData"] = []byte(v)
	if u := userData(w); u.Action != planner.UserDataUpdate || !u.TokenChanged {
		t.Fatalf("rotated token: %+v", u)
	}
	pf, _ = w.Plan(ctx, st, PlanOptions{})
	if _, _, err := w.Apply(ctx, st, pf, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := string(store.secrets["openshift-machine-api/edge-user-data/userData"]); !strings.Contains(got, `"value": "Bearer t0k3n-2"`) {
		t.Errorf("after the rotation's apply the Secret holds:\n%s", got)
	}
	if u := userData(w); u.Action != planner.UserDataNoOp || u.TokenChanged {
		t.Errorf("after the rotation's apply: %+v", u)
	}
}
