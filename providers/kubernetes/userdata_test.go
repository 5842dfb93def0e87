package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/providers"
)

func TestUserDataCreateUpdateAndStale(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	p := NewForClient(c, Options{})
	if _, ok, err := p.UserData(ctx, "m", "worker-user-data", "userData"); ok || err != nil {
		t.Fatalf("absent secret: ok %v err %v", ok, err)
	}
	if err := p.SetUserData(ctx, "m", "worker-user-data", "userData", []byte("v1"), ""); err != nil {
		t.Fatal(err)
	}
	// MachineSets read another key beside userData: it must survive an update.
	s, _ := c.CoreV1().Secrets("m").Get(ctx, "worker-user-data", metav1.GetOptions{})
	s.Data["disableTemplating"] = []byte("true")
	c.CoreV1().Secrets("m").Update(ctx, s, metav1.UpdateOptions{})

	if err := p.SetUserData(ctx, "m", "worker-user-data", "userData", []byte("v2"), providers.Digest([]byte("v1"))); err != nil {
		t.Fatal(err)
	}
	v, ok, _ := p.UserData(ctx, "m", "worker-user-data", "userData")
	s, _ = c.CoreV1().Secrets("m").Get(ctx, "worker-user-data", metav1.GetOptions{})
	if !ok || string(v) != "v2" || string(s.Data["disableTemplating"]) != "true" {
		t.Errorf("after update: %q %v, other key %q", v, ok, s.Data["disableTemplating"])
	}
	// The plan saw v1: the Secret moved on since, and is not overwritten.
	err := p.SetUserData(ctx, "m", "worker-user-data", "userData", []byte("v3"), providers.Digest([]byte("v1")))
	if err == nil || !strings.Contains(err.Error(), "changed since it was read") || strings.Contains(err.Error(), "sha256:") {
		t.Errorf("stale: %v (want the change named, and no digest: they hash the token)", err)
	}
	if v, _, _ := p.UserData(ctx, "m", "worker-user-data", "userData"); string(v) != "v2" {
		t.Errorf("stale write changed it to %q", v)
	}
	// A plan that saw the Secret: its deletion since is an error, not a silent create.
	c.CoreV1().Secrets("m").Delete(ctx, "worker-user-data", metav1.DeleteOptions{})
	if err := p.SetUserData(ctx, "m", "worker-user-data", "userData", []byte("v3"), providers.Digest([]byte("v2"))); err == nil {
		t.Error("a Secret deleted since the plan was created again")
	}
}

func TestUserDataForbiddenNamesTheRule(t *testing.T) {
	c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: "s"}})
	c.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", errors.New("rbac"))
	})
	_, _, err := NewForClient(c, Options{}).UserData(context.Background(), "m", "s", "userData")
	if err == nil || !strings.Contains(err.Error(), "get secret m/s: forbidden: mcp apply needs get on it") {
		t.Errorf("err %v", err)
	}
}
