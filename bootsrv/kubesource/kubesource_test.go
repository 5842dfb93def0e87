package kubesource

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// rendered is a rendered config of pool, named by its content (the source verifies names);
// variant makes configs of one pool differ.
func rendered(variant, pool string) *model.Rendered {
	r := &model.Rendered{Pool: pool, IgnitionVersion: "3.4.0", Sources: []string{variant}}
	r.Name = content.Name(r)
	return r
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
	b := kubestate.New(cs, "mcp-system", kubestate.Options{ChunkSize: 200})
	st := state.New()
	st.Serial = 3
	a := rendered("a", "worker")
	st.Pointers["worker"] = a.Name
	st.Rendered[a.Name] = a
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
	bw := rendered("b", "worker")
	st.Pointers["worker"] = bw.Name
	for i := range 20 {
		st.Pointers["pool-"+string(rune('a'+i))] = bw.Name
	}
	st.Rendered[bw.Name] = bw
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

// TestSourceRefusesChangedRenderedConfig: a rendered config's Secret changed after it was
// stored is not served: the pool pointing at it fails naming the Secret, and the other
// pools are served (one pool's damaged Secret does not stop the others' machines booting).
func TestSourceRefusesChangedRenderedConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	st := state.New()
	r, other := rendered("a", "worker"), rendered("b", "infra")
	st.Pointers["worker"], st.Pointers["infra"] = r.Name, other.Name
	st.Rendered[r.Name], st.Rendered[other.Name] = r, other
	if err := kubestate.New(cs, "mcp-system", kubestate.Options{}).Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	name := protocol.RenderedSecretName(r.Name)
	sec, err := cs.CoreV1().Secrets("mcp-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data[protocol.RenderedKey] = bytes.Replace(sec.Data[protocol.RenderedKey], []byte(`"3.4.0"`), []byte(`"3.5.0"`), 1)
	if _, err := cs.CoreV1().Secrets("mcp-system").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := New(cs, "mcp-system")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	snap, err := src.Load(ctx)
	if err != nil {
		t.Fatalf("load with one pool's rendered config changed: %v", err)
	}
	_, err = snap.PoolConfig("worker", bootsrv.IgnitionAccept)
	if err == nil || !strings.Contains(err.Error(), "secret mcp-system/"+name) || !strings.Contains(err.Error(), "does not match its content") {
		t.Errorf("the pool of the changed config: %v, want an error naming secret %s", err, name)
	}
	if _, err := snap.PoolConfig("infra", bootsrv.IgnitionAccept); err != nil {
		t.Errorf("the other pool: %v", err)
	}
}
