package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// describeRefusal says who refused r's eviction: "eviction of demo/db-0 refused by
// PodDisruptionBudget demo/db-pdb (needs 1 healthy, has 1)". The budgets are those of the
// pod's namespace whose selector matches the pod's labels, with the numbers of their
// status now. When none matches (or they cannot be read), or the refusal was not a
// budget's (a 403 in a namespace being deleted), the API server's own message is given.
func (p *Provider) describeRefusal(ctx context.Context, r *refusedError) string {
	pod := r.pod
	head := fmt.Sprintf("eviction of %s/%s refused", pod.Namespace, pod.Name)
	if !apierrors.IsTooManyRequests(r.last) {
		return head + ": " + serverReason(r.last)
	}
	var by []string
	pdbs, err := p.client.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, b := range pdbs.Items {
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			s := fmt.Sprintf("PodDisruptionBudget %s/%s (needs %d healthy, has %d)",
				b.Namespace, b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy)
			if b.Status.ObservedGeneration < b.Generation {
				s = fmt.Sprintf("PodDisruptionBudget %s/%s (its status is not computed yet: is the disruption controller running?)",
					b.Namespace, b.Name)
			}
			by = append(by, s)
		}
	}
	if len(by) > 0 {
		return head + " by " + strings.Join(by, " and ")
	}
	return head + ": " + serverReason(r.last)
}

// serverReason is the API server's explanation of a refusal: its message and the causes it
// gives (for a PDB: "The disruption budget db-pdb needs 1 healthy pods and has 1 currently").
func serverReason(err error) string {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return err.Error()
	}
	st := se.Status()
	msg := st.Message
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Message != "" && c.Type != corev1.NamespaceTerminatingCause {
				msg += " " + c.Message
			}
		}
	}
	return msg
}
