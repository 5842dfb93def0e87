package kubesource

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/mcpfleet/mcp/engine/state"
	"github.com/mcpfleet/mcp/engine/state/kube"
	"github.com/mcpfleet/mcp/planner/model"
)

func rendered(name, pool string) *model.Rendered {
	return &model.Rendered{Name: name, Pool: pool, IgnitionVersion: "3.4.0",
		Ignition: []byte(`{"ignition":{"version":"3.4.0"}}`)}
}

// waitToken waits for the token to differ from old.
func waitToken(t *testing.T, s *Source, old string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tok, err := s.Token()
		if err == nil && tok != old {
			return tok
		}
		if time.Now().After(deadline) {
			t.Fatalf("token still %q (err %v)", tok, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSourceFollowsTheState(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	b := kube.New(cs, "mcp-system", kube.Options{ChunkSize: 200})
	st := state.New()
	st.Serial = 3
	st.Pointers["worker"] = "rendered-worker-a"
	st.Rendered["rendered-worker-a"] = rendered("rendered-worker-a", "worker")
	if err := b.Write(ctx, st); err != nil {
		t.Fatal(err)
	}

	src, err := New(cs, "mcp-system")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Serial != 3 {
		t.Errorf("serial = %d, want 3", snap.Serial)
	}
	again, _ := src.Token()
	if again != tok {
		t.Errorf("token changed without a change: %q → %q", tok, again)
	}

	// Moving the pointer (with a chunked head) shows in the token and the next load.
	st.Serial = 4
	st.Pointers["worker"] = "rendered-worker-b"
	for i := range 20 {
		st.Pointers["pool-"+string(rune('a'+i))] = "rendered-worker-b"
	}
	st.Rendered["rendered-worker-b"] = rendered("rendered-worker-b", "worker")
	if err := b.Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	waitToken(t, src, tok)
	deadline := time.Now().Add(5 * time.Second)
	for {
		snap, err = src.Load(ctx)
		if err == nil && snap.Serial == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("load after write: serial %v, %v", snap, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
