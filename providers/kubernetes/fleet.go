package kubernetes

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcpfleet/mcp/model"
)

// fleetSelector parses the provider's fleet_selector, a label selector as `kubectl get
// nodes -l` takes it ("mcpfleet.io/fleet=blue", "team in (a,b),!control-plane"); "" is
// every Node (nil).
func fleetSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("not a label selector: %w", err)
	}
	if sel.Empty() {
		return nil, nil
	}
	return sel, nil
}

// checkFleetSelector is fleet_selector's model.SettingSpec.Check.
func checkFleetSelector(v model.SettingValue) error {
	_, err := fleetSelector(v.String)
	return err
}

// inFleet reports whether a Node with these labels is in the fleet. The LIST already
// asks the API server for the fleet's Nodes alone; this holds it for clients that do
// not filter (fakes).
func (p *Provider) inFleet(l map[string]string) bool {
	return p.o.FleetSelector == nil || p.o.FleetSelector.Matches(labels.Set(l))
}

// fleetNodes are the ListOptions of a LIST of the fleet's Nodes.
func (p *Provider) fleetNodes() metav1.ListOptions {
	if p.o.FleetSelector == nil {
		return metav1.ListOptions{}
	}
	return metav1.ListOptions{LabelSelector: p.o.FleetSelector.String()}
}

// fleetPods keeps the pods bound to the fleet's nodes: a pod on a Node outside the fleet
// is no drain's and no health gate's.
func fleetPods(pods []model.Pod, nodes []model.Node) []model.Pod {
	on := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		on[n.Name] = true
	}
	kept := pods[:0]
	for _, p := range pods {
		if on[p.Node] {
			kept = append(kept, p)
		}
	}
	return kept
}
