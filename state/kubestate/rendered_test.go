package kubestate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// TestRenderedRoundTripKeepsName: a really rendered config stored in a Secret and read back
// still hashes to its name.
func TestRenderedRoundTripKeepsName(t *testing.T) {
	ctx := context.Background()
	out, diags := planner.Render(&model.Desired{
		Pools: []model.Pool{{Name: "worker", KernelArgs: []string{"a=<b>&c"}}},
		Configs: []model.Config{{Name: "10-a", Pools: []string{"worker"},
			Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: []byte("<html> & \u2028 \xff\n")}},
			Units: []model.Unit{{Name: "u.service", Contents: "[Service]\nExecStart=/bin/true <&>\n"}}}},
	}, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b := New(fake.NewClientset(), ns, Options{})
	s := sample()
	s.Rendered = map[string]*model.Rendered{out["worker"].Name: out["worker"]}
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := New(b.Client(), ns, Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Rendered[out["worker"].Name]; r == nil || content.Check(r) != nil {
		t.Fatalf("read back: %v", r)
	}
}

// TestReadRefusesChangedRenderedConfig: a rendered config's Secret whose content does not
// give its name, or whose label or Secret name is another config's, is refused, naming it.
func TestReadRefusesChangedRenderedConfig(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		change func(cs *fake.Clientset) string // returns the Secret that should be named
		want   string
	}{
		{"content edited", func(cs *fake.Clientset) string {
			s := secret(t, cs, protocol.RenderedSecretName(workerName))
			s.Data[protocol.RenderedKey] = []byte(strings.Replace(string(s.Data[protocol.RenderedKey]), `"3.4.0"`, `"3.5.0"`, 1))
			cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
			return s.Name
		}, "does not match its content"},
		{"label of another config", func(cs *fake.Clientset) string {
			s := secret(t, cs, protocol.RenderedSecretName(workerName))
			s.Labels[protocol.RenderedLabel] = infraName
			cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
			return s.Name
		}, infraName},
		{"copied under another name", func(cs *fake.Clientset) string {
			s := secret(t, cs, protocol.RenderedSecretName(workerName))
			c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mcp-rendered-worker-0000", Namespace: ns,
				Labels: objectLabels(KindRendered)}, Data: s.Data}
			cs.CoreV1().Secrets(ns).Create(ctx, c, metav1.CreateOptions{})
			return c.Name
		}, workerName},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			if err := New(cs, ns, Options{}).Write(ctx, sample()); err != nil {
				t.Fatal(err)
			}
			bad := c.change(cs)
			_, err := New(cs, ns, Options{}).Read(ctx)
			if err == nil || !strings.Contains(err.Error(), "secret "+ns+"/"+bad) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("read: %v, want an error naming secret %s and %q", err, bad, c.want)
			}
		})
	}
}

// TestReadsConfigsStoredWithIgnition: a rendered config an older mcp stored in its Secret
// with its Ignition config beside its content reads, under its name, in the content-once
// form.
func TestReadsConfigsStoredWithIgnition(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	st := sample()
	if err := New(cs, ns, Options{}).Write(ctx, st); err != nil {
		t.Fatal(err)
	}
	s := secret(t, cs, protocol.RenderedSecretName(workerName))
	old, err := json.Marshal(content.FullOf(st.Rendered[workerName]))
	if err != nil {
		t.Fatal(err)
	}
	s.Data[protocol.RenderedKey] = old
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := New(cs, ns, Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(st.Rendered[workerName])
	if b, _ := json.Marshal(got.Rendered[workerName]); string(b) != string(want) {
		t.Errorf("read %s, stored %s", b, want)
	}
}
