package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.TemplatePatcher = (*Provider)(nil)

// maxErrorAnnotation bounds the refusal recorded on a template (annotations are small).
const maxErrorAnnotation = 1024

// SetTemplateImage implements providers.TemplatePatcher: one JSON patch that tests each of
// t.Field's string fields for from and replaces it with to (imagePatch). The API server
// applies it whole or not at all, so nothing but the field changes, and a template changed
// since it was observed is left alone. When the patch fails the template is read again to
// say why: its field holds something else now (an error naming what), or the API server
// (an admission webhook, the CRD's validation, RBAC) refused the new value — then the
// refusal is recorded on the template (the protocol.BootImageError annotation) for mcp status, and a
// later set that succeeds removes it.
func (p *Provider) SetTemplateImage(ctx context.Context, t model.MachineTemplate, from, to string) error {
	id := "machine template " + t.ID()
	if t.Unsupported != "" {
		return fmt.Errorf("%s: mcp cannot set its image: %s", id, t.Unsupported)
	}
	if p.dyn == nil {
		return fmt.Errorf("%s: the provider has no dynamic client to patch it with", id)
	}
	patch, err := imagePatch(t.Field, from, to)
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	gvr, err := p.templateResource(t)
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	r := p.dyn.Resource(gvr).Namespace(t.Namespace)
	_, err = r.Patch(ctx, t.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err == nil {
		if t.LastError != "" {
			// The set succeeded; a stale refusal left on the template would only say
			// "degraded" where mcp status shows the image reconciled anyway.
			_ = p.annotateRefusal(ctx, gvr, t, nil)
		}
		return nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s no longer exists", id)
	case ctx.Err() != nil:
		return fmt.Errorf("setting the image of %s: %w", id, err)
	}
	now, gerr := r.Get(ctx, t.Name, metav1.GetOptions{})
	if gerr != nil {
		return fmt.Errorf("setting the image of %s: %w (reading it again to see why: %v)", id, err, gerr)
	}
	if held, rerr := readImage(now.Object, t.Field); rerr != nil || held != from {
		what := fmt.Sprintf("holds %q", held)
		if rerr != nil {
			what = rerr.Error()
		}
		return fmt.Errorf("%s changed since it was observed: %s %s now, not %q; nothing was changed (plan again)",
			id, t.Field, what, from)
	}
	why := serverReason(err)
	if apierrors.IsForbidden(err) {
		// RBAC's refusal and an admission webhook's (controller-runtime denies with 403)
		// are both Forbidden; the message says which.
		why += fmt.Sprintf(" (when RBAC refused it: the identity needs \"patch\" on %s, which deploy/04-rbac-apply.yaml grants)", resourceName(gvr))
	}
	if aerr := p.annotateRefusal(ctx, gvr, t, &why); aerr != nil {
		why += fmt.Sprintf(" (recording the refusal on it failed too: %v)", aerr)
	}
	return fmt.Errorf("setting %s of %s from %q to %q was refused: %s", t.Field, id, from, to, why)
}

// annotateRefusal writes why on the template (the BootImageError annotation), or removes
// it when why is nil: a JSON merge patch of that one annotation.
func (p *Provider) annotateRefusal(ctx context.Context, gvr schema.GroupVersionResource, t model.MachineTemplate, why *string) error {
	var v any // null removes it
	if why != nil {
		s := *why
		if len(s) > maxErrorAnnotation {
			s = s[:maxErrorAnnotation] + "…"
		}
		v = s
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{protocol.BootImageError: v}}})
	if err != nil {
		return err
	}
	_, err = p.dyn.Resource(gvr).Namespace(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// templateResource is the resource of t's kind: MachineSets are known, infrastructure
// templates are found by discovery.
func (p *Provider) templateResource(t model.MachineTemplate) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("apiVersion %q: %w", t.APIVersion, err)
	}
	if t.Kind == "MachineSet" && gv.Group == machineSetGVR.Group {
		return gv.WithResource(machineSetGVR.Resource), nil
	}
	gvr, err := p.resourceFor(gv.WithKind(t.Kind).GroupKind(), gv.Version)
	if err != nil {
		return gvr, fmt.Errorf("finding the resource of %s: %w", gv.WithKind(t.Kind), err)
	}
	return gvr, nil
}
