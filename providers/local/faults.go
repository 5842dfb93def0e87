package local

import (
	"fmt"

	"github.com/mcpfleet/mcp/model"
)

// faults are the failures injected into a node: node.json's "faults", set with
// mcp fleet set NODE fault.KIND=VALUE and removed with fault.KIND- (docs/fleet-format.md).
// The crash harness and the tests use them to make one node fail one way.
type faults struct {
	Write   string `json:"write,omitempty"`   // a write step on this path or unit (* for any) fails
	Restart string `json:"restart,omitempty"` // a restart of this unit (* for any) fails
	Reboot  string `json:"reboot,omitempty"`  // "hang": a reboot never comes back
	Drain   string `json:"drain,omitempty"`   // "pdb": evictions are refused as by a PodDisruptionBudget
}

// setFault sets one fault, or with del removes it.
func setFault(f *faults, kind, value string, del bool) error {
	var field *string
	only := "" // the one value the fault takes, if it takes one
	switch kind {
	case "write":
		field = &f.Write
	case "restart":
		field = &f.Restart
	case "reboot":
		field, only = &f.Reboot, "hang"
	case "drain":
		field, only = &f.Drain, "pdb"
	default:
		return fmt.Errorf("fault.%s: no such fault (want fault.write=PATH|*, fault.restart=UNIT|*, fault.reboot=hang or fault.drain=pdb)", kind)
	}
	switch {
	case del:
		*field = ""
	case only != "" && value != only:
		return fmt.Errorf("fault.%s: want %s, not %q", kind, only, value)
	case value == "":
		return fmt.Errorf("fault.%s: want a value (* for any)", kind)
	default:
		*field = value
	}
	return nil
}

// hits says whether a fault set to want applies to target.
func hits(want, target string) bool { return want != "" && (want == "*" || want == target) }

// injected is the error of an injected fault: it names where the fault is set, so that
// nobody takes it for a real failure.
func injected(node, kind string) error {
	return fmt.Errorf("injected fault (fault.%s in %s)", kind, relNodeFile(node, "node.json"))
}

// injectWrite is the executor's Inject hook: a write step the node's fault.write names
// fails (the agent then names the step and rolls back, as for a real failure).
func (p *Provider) injectWrite(node string) func(model.Step) error {
	return func(s model.Step) error {
		if s.Kind != model.StepWrite {
			return nil
		}
		r, err := p.readNode(node)
		if err != nil {
			return err
		}
		if hits(r.Faults.Write, s.Target) {
			return injected(node, "write")
		}
		return nil
	}
}

// drainFault is why the node's drain is refused when fault.drain is set ("" when not).
func (p *Provider) drainFault(node string) (string, error) {
	r, err := p.readNode(node)
	if err != nil || r.Faults.Drain == "" {
		return "", err
	}
	return "evictions refused as by a PodDisruptionBudget: " + injected(node, "drain").Error(), nil
}
