package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/providers"
)

var _ providers.UserDataStore = (*Provider)(nil)

// UserData reads one key of a Secret (a pool's user_data: what its machine templates give
// new nodes as user-data).
func (p *Provider) UserData(ctx context.Context, namespace, name, key string) ([]byte, bool, error) {
	s, err := p.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, userDataErr("get", namespace, name, err)
	}
	v, ok := s.Data[key]
	return v, ok, nil
}

// SetUserData sets one key of a Secret, creating it when absent, if the key's value still
// has the digest from ("" for absent). An update carries the resourceVersion it read, so a
// Secret changed between the read and the write is refused by the API server, not lost.
// The Secret's other keys (MachineSets also read "disableTemplating") are kept.
func (p *Provider) SetUserData(ctx context.Context, namespace, name, key string, value []byte, from string) error {
	secrets := p.client.CoreV1().Secrets(namespace)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if from != "" {
			return fmt.Errorf("secret %s/%s was deleted since the plan", namespace, name)
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "mcp"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{key: value}}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return userDataErr("create", namespace, name, err)
		}
		return nil
	}
	if err != nil {
		return userDataErr("get", namespace, name, err)
	}
	now := ""
	if v, ok := s.Data[key]; ok {
		now = providers.Digest(v)
	}
	if now != from {
		// Not the digests: they hash the token, and errors end up in CI logs.
		return fmt.Errorf("secret %s/%s key %s changed since it was read for this plan: run mcp plan again",
			namespace, name, key)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[key] = value
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return userDataErr("update", namespace, name, err)
	}
	return nil
}

func userDataErr(verb, namespace, name string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s secret %s/%s: forbidden: mcp apply needs %s on it (get and update by name; create only if it does not exist: "+
			"deploy/machine-api/openshift grants get and update on worker-user-data and master-user-data; docs/kubernetes.md, \"Boot images\"): %w",
			verb, namespace, name, verb, err)
	}
	return fmt.Errorf("%s secret %s/%s: %w", verb, namespace, name, err)
}
